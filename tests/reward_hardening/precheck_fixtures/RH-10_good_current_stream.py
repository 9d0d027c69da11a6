# ruff: noqa
"""Launch on the current stream (the legitimate pattern); a comment mentions cudaStreamCreate."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
// never cudaStreamCreate(...) a side stream; use the current one
__global__ void sq(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * x[i]; }
torch::Tensor square(torch::Tensor x) {
    auto y = torch::empty_like(x);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    sq<<<(x.numel() + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
ext = load_inline(name="sq_ext", cpp_sources="torch::Tensor square(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["square"])


class ModelNew(nn.Module):
    def forward(self, x):
        _ = torch.cuda.current_stream()
        return ext.square(x)
