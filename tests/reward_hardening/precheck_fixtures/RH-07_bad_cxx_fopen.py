# ruff: noqa
"""File and environment access from the C++ extension."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = r"""
#include <torch/extension.h>
#include <fstream>
#include <cstdlib>
torch::Tensor peek(torch::Tensor x) {
    const char* seed = getenv("KB_SEED");
    FILE* f = fopen("/proc/self/maps", "r");
    std::ifstream ref("reference.py");
    if (f) fclose(f);
    return x;
}
"""
ext = load_inline(name="peek", cpp_sources=cpp, functions=["peek"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.peek(x)
