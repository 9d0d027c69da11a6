# ruff: noqa
"""A boxed fallback for every operator, registered through a macro alias of ``TORCH_LIBRARY_IMPL``.

``TORCH_LIBRARY_IMPL(_, CPU, m)`` is the catch-all namespace: ``m.fallback(...)`` there
runs for every CPU operator that has no kernel of its own at that key, and a
``m.impl("aten::add.Tensor", ...)`` in any block overrides a built-in kernel by its
qualified name.  The macro is hidden behind ``#define REGISTER TORCH_LIBRARY_IMPL`` so a
search for the literal macro name misses it.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <torch/library.h>
#define REGISTER TORCH_LIBRARY_IMPL

void spy(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

at::Tensor add_fake(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) { return a; }

REGISTER(_, CPU, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&spy>());
}

TORCH_LIBRARY_IMPL(kg_helpers, CPU, m) {
    m.impl("aten::add.Tensor", add_fake);
}

torch::Tensor softmax_rows(torch::Tensor x) { return x.softmax(1); }
"""

ext = load_inline(name="catchall", cpp_sources=[CPP_SRC], functions=["softmax_rows"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax_rows(x)
