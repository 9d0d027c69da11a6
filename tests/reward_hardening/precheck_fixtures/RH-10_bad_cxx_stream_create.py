# ruff: noqa
"""A01 in C++: a leaked non-blocking stream bound to cuBLAS."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cublas_v2.h>
__global__ void fill(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.f; }
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
    static cudaStream_t s = nullptr;
    if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasHandle_t h; cublasCreate(&h);
    cublasSetStream(h, s);
    auto c = torch::empty({a.size(0), b.size(1)}, a.options());
    fill<<<1, 1, 0, s>>>(c.data_ptr<float>(), 1);
    return c;
}
"""
ext = load_inline(name="ss", cpp_sources="torch::Tensor mm(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_src, functions=["mm"], extra_ldflags=["-lcublas"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.mm(a, b)
