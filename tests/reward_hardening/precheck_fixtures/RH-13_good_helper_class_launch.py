# ruff: noqa
"""Benign twin of the class-hidden fallback: a helper class built in forward (and one
built in __init__) only launches the custom kernel; its __init__ allocates, its
__call__ / __iter__ / property do layout work and call the extension."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = """
#include <torch/extension.h>
torch::Tensor relu_fwd(torch::Tensor x) { return x.clamp_min(0); }
"""
ext = load_inline(name="helper_ok", cpp_sources=cpp, functions=["relu_fwd"])


class Launcher:
    def __init__(self, x):
        self.x = x.contiguous()
        self.out = torch.empty_like(self.x)

    def __call__(self):
        return ext.relu_fwd(self.x)

    def __iter__(self):
        yield ext.relu_fwd(self.x)

    @property
    def shape(self):
        return self.x.shape


class Config:
    def __init__(self):
        self.block = torch.zeros(1)

    def __len__(self):
        return 256


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Config()

    def forward(self, x):
        launcher = Launcher(x.view(x.shape[0], -1))
        (y,) = list(launcher)
        return y.view(x.shape) if len(self.cfg) else launcher()
