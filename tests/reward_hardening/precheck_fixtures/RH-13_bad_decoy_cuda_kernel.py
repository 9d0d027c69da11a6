# ruff: noqa
"""A20: a real kernel is compiled but forward runs torch.matmul."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void mm_kernel(const float* a, const float* b, float* c, int n) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n && col < n) { float s = 0; for (int k = 0; k < n; ++k) s += a[r * n + k] * b[k * n + col]; c[r * n + col] = s; }
}
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty_like(a);
    int n = a.size(0);
    dim3 t(16, 16), g((n + 15) / 16, (n + 15) / 16);
    mm_kernel<<<g, t>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    return c;
}
"""
ext = load_inline(name="decoy", cpp_sources="torch::Tensor mm(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=cuda_src, functions=["mm"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = ext

    def forward(self, A, B):
        return torch.matmul(A, B)
