import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Example optimised architecture for model_ex_add.py that runs on the CPU: a C++
# loop over contiguous float32 data, compiled with load_inline (cpp_sources only).

elementwise_add_cpp_source = r"""
#include <torch/extension.h>

torch::Tensor elementwise_add_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "inputs must be CPU tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "inputs must be float32");
    TORCH_CHECK(a.sizes() == b.sizes(), "inputs must have the same shape");
    auto a_c = a.contiguous();
    auto b_c = b.contiguous();
    auto out = torch::empty_like(a_c);
    const float* pa = a_c.data_ptr<float>();
    const float* pb = b_c.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = a_c.numel();
    for (int64_t i = 0; i < n; ++i) {
        po[i] = pa[i] + pb[i];
    }
    return out;
}
"""

_extension = None


def _load_extension():
    """Compile (or fetch from the build cache) the extension on first use."""
    global _extension
    if _extension is None:
        _extension = load_inline(
            name="elementwise_add_cpu",
            cpp_sources=elementwise_add_cpp_source,
            functions=["elementwise_add_cpu"],
            extra_cflags=["-O3"],
            verbose=False,
        )
    return _extension


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.elementwise_add = _load_extension()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.elementwise_add.elementwise_add_cpu(a, b)
