# ruff: noqa
"""Honest extension with a long source and standard link flags (cuBLAS)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
// A long but ordinary source: the lookup table below is float data, not a payload.
__constant__ float kTable[8] = {0.0f, 0.125f, 0.25f, 0.375f, 0.5f, 0.625f, 0.75f, 0.875f};

__global__ void quant_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        int idx = (int)(v * 8.0f);
        idx = idx < 0 ? 0 : (idx > 7 ? 7 : idx);
        y[i] = kTable[idx];
    }
}

torch::Tensor quant(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    quant_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="quant_ext", cpp_sources="torch::Tensor quant(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["quant"], extra_ldflags=["-lcublas", "-lcudart"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.quant(x)
