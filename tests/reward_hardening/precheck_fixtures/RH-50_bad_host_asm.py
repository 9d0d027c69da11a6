# ruff: noqa
"""Host-side inline assembly in a CUDA source (outside any __device__/__global__ function):
x86 code can do anything a syscall can, so host asm is flagged whatever it contains."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void k(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
torch::Tensor run(torch::Tensor x) {
    unsigned long long t;
    asm volatile("rdtsc; shl $32, %%rdx; or %%rdx, %0" : "=a"(t) :: "rdx");
    auto y = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), x.data_ptr<float>(), x.numel());
    return y;
}
"""
ext = load_inline(name="hasm", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
