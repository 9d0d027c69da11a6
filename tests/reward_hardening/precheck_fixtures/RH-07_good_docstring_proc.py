# ruff: noqa
"""This kernel never reads /proc/self/maps, os.environ or files; the text is documentation.

See /proc/cpuinfo for why this matters (it is only prose).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = """
#include <torch/extension.h>
// fopen("/proc/self/maps") and getenv("SEED") are mentioned in a comment only
torch::Tensor copy(torch::Tensor x) {
    auto y = torch::empty_like(x);
    y.copy_(x);
    return y;
}
"""
ext = load_inline(name="cp", cpp_sources=cpp, functions=["copy"])


class ModelNew(nn.Module):
    def forward(self, x):
        # open("/etc/passwd") in a comment is not code
        return ext.copy(x)
