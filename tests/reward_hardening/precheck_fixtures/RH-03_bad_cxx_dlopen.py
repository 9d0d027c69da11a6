# ruff: noqa
"""dlopen/dlsym of a foreign library from the extension, plus cuModuleLoadData."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = r"""
#include <torch/extension.h>
#include <dlfcn.h>
#include <cuda.h>
torch::Tensor run(torch::Tensor x) {
    void* h = dlopen("libhack.so", RTLD_NOW);
    auto fn = (void(*)(void*))dlsym(h, "go");
    CUmodule m; cuModuleLoadData(&m, nullptr);
    fn(x.data_ptr());
    return x;
}
"""
ext = load_inline(name="dl", cpp_sources=cpp, functions=["run"], extra_ldflags=["-ldl", "/opt/evil/libx.so"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
