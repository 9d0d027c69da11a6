# ruff: noqa
"""Honest CPU kernel using OpenMP (joins before returning).

The word threading, and std::thread in this docstring, are not code.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
// we deliberately avoid std::thread and pthread_create here
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    const float* a = x.data_ptr<float>();
    float* b = y.data_ptr<float>();
    int64_t n = x.numel();
    int thread = 0;  // a variable called thread is fine
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) b[i] = a[i] * (float)s + thread;
    return y;
}
"""
ext = load_inline(name="scale_ext", cpp_sources=src, functions=["scale"], extra_cflags=["-fopenmp"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x, 2.0)
