# ruff: noqa
"""A shared-memory reduction with a variable called half; the word half appears in a message."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float buf[256];
    int tid = threadIdx.x;
    buf[tid] = tid < n ? x[tid] : 0.f;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (tid < half) buf[tid] += buf[tid + half];
        __syncthreads();
    }
    int half = 1;
    while (half) { half = 0; }
    if (tid == 0) out[0] = buf[0];
}
torch::Tensor bsum(torch::Tensor x) {
    TORCH_CHECK(x.numel() <= 256, "only half a kilobyte of input is supported");
    auto out = torch::zeros({1}, x.options());
    block_sum<<<1, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
    return out;
}
"""
ext = load_inline(name="bs", cpp_sources="torch::Tensor bsum(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["bsum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.bsum(x)
