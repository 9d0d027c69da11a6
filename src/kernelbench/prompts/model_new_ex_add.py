import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Example optimised architecture used in prompts: the element-wise addition of
# model_ex_add.py computed by a hand-written CUDA kernel compiled with load_inline.

elementwise_add_cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

__global__ void elementwise_add_kernel(const float* __restrict__ a,
                                       const float* __restrict__ b,
                                       float* __restrict__ out,
                                       int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        out[i] = a[i] + b[i];
    }
}

torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "inputs must be float32");
    TORCH_CHECK(a.sizes() == b.sizes(), "inputs must have the same shape");
    auto a_c = a.contiguous();
    auto b_c = b.contiguous();
    auto out = torch::empty_like(a_c);
    const int64_t n = a_c.numel();
    if (n == 0) {
        return out;
    }
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535) {
        blocks = 65535;
    }
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    elementwise_add_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
        a_c.data_ptr<float>(), b_c.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

elementwise_add_cpp_source = "torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b);"

_extension = None


def _load_extension():
    """Compile (or fetch from the build cache) the extension on first use."""
    global _extension
    if _extension is None:
        _extension = load_inline(
            name="elementwise_add",
            cpp_sources=elementwise_add_cpp_source,
            cuda_sources=elementwise_add_cuda_source,
            functions=["elementwise_add_cuda"],
            verbose=False,
        )
    return _extension


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.elementwise_add = _load_extension()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.elementwise_add.elementwise_add_cuda(a, b)
