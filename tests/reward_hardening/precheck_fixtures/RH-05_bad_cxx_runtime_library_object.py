# ruff: noqa
"""A C++ extension builds a ``torch::Library`` for ``aten`` at run time and replaces ``copy_``.

No ``TORCH_LIBRARY*`` macro appears: the library object is created on the heap by a
function the module calls at load time (``std::make_unique<torch::Library>(
torch::Library::IMPL, "aten", c10::DispatchKey::CPU, ...)``), then ``impl("copy_", ...)``
registers a kernel the harness's staging copy would dispatch to.  It is the same
dispatcher override as a ``TORCH_LIBRARY_IMPL(aten, CPU, m)`` block, spelled so that a
macro-only check misses it.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <torch/library.h>
#include <memory>

static std::unique_ptr<torch::Library> lib;

at::Tensor& lazy_copy(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
    return self;  // the result is computed elsewhere; the staging copy just returns
}

void arm() {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    lib->impl("copy_", lazy_copy);
}

torch::Tensor softmax_rows(torch::Tensor x) { arm(); return x.softmax(1); }
"""

ext = load_inline(name="runtime_library_object", cpp_sources=[CPP_SRC], functions=["softmax_rows"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax_rows(x)
