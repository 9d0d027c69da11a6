# ruff: noqa
"""Honest CUDA kernel: elementwise add compiled with load_inline and launched from forward.

Mentions of a forward pass, /proc, threads or streams in this docstring are not code.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

// A comment mentioning cudaStreamCreate and std::thread must not count.
__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    auto out = torch::empty_like(a);
    int n = a.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    auto stream = at::cuda::getCurrentCUDAStream();
    add_kernel<<<blocks, threads, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                               out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"

try:
    add_ext = load_inline(
        name="add_ext",
        cpp_sources=cpp_source,
        cuda_sources=cuda_source,
        functions=["add_cuda"],
        verbose=False,
    )
except Exception as exc:  # a build failure is reported, never silently replaced
    raise RuntimeError("failed to build the extension") from exc


class ModelNew(nn.Module):
    """Adds two tensors with a custom CUDA kernel (one forward pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.ext = add_ext

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.ext.add_cuda(a.contiguous(), b.contiguous())
