# ruff: noqa
"""A19 hidden in a class: forward launches the kernel, but the result it hands back is a
container whose __iter__ / __getitem__ recompute the answer with torch.softmax.

The harness reads the result after forward returns, so the work happens in a dunder
of a class that forward only instantiates."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = """
#include <torch/extension.h>
torch::Tensor noop(torch::Tensor x) { return x; }
"""
ext = load_inline(name="lazy_fb", cpp_sources=cpp, functions=["noop"])


class Lazy(list):
    def __init__(self, x):
        super().__init__()
        self._x = x

    def __iter__(self):
        yield torch.softmax(self._x, dim=1)

    def __getitem__(self, i):
        return self._materialise()

    def __len__(self):
        return 1

    def _materialise(self):
        return self._x.exp() / self._x.exp().sum(dim=1, keepdim=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return Lazy(ext.noop(x))
