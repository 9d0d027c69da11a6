# ruff: noqa
"""Honest custom operator registered in its own namespace (twin of RH-05_bad_cxx_aten_copy_override).

``TORCH_LIBRARY(kg_ops, m)`` declares the schema and ``TORCH_LIBRARY_IMPL(kg_ops, CPU, m)``
binds the CPU kernel with ``m.impl("relu_sum", relu_sum_cpu)``; forward calls it through
``torch.ops.kg_ops.relu_sum``.  Nothing in ``aten``, ``prims`` or the catch-all namespace
is touched, so RH-05 must stay quiet; and ``m.impl`` is a registration, not a pybind
export, so the backend-provenance rule (RH-13) must find the kernel reachable.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <torch/library.h>

torch::Tensor relu_sum_cpu(const torch::Tensor& x, const torch::Tensor& y) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto out = torch::empty_like(xc);
    const float* a = xc.data_ptr<float>();
    const float* b = yc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) {
        const float s = a[i] + b[i];
        o[i] = s > 0.0f ? s : 0.0f;
    }
    return out;
}

TORCH_LIBRARY(kg_ops, m) {
    m.def("relu_sum(Tensor x, Tensor y) -> Tensor");
}

TORCH_LIBRARY_IMPL(kg_ops, CPU, m) {
    m.impl("relu_sum", relu_sum_cpu);
}
"""

load_inline(name="kg_ops_ext", cpp_sources=[CPP_SRC], is_python_module=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.ops.kg_ops.relu_sum(x, y)
