# ruff: noqa
"""A45: CUDA API names built with the ## token-paste operator."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.f; }
torch::Tensor go(torch::Tensor y) {
    cudaStream_t s;
    XCAT(cudaStream, CreateWithFlags)(&s, cudaStreamNonBlocking);
    k<<<1, 32, 0, s>>>(y.data_ptr<float>(), y.numel());
    return y;
}
"""
ext = load_inline(name="tp", cpp_sources="torch::Tensor go(torch::Tensor y);", cuda_sources=cuda_src,
                  functions=["go"])


class ModelNew(nn.Module):
    def forward(self, y):
        return ext.go(y)
