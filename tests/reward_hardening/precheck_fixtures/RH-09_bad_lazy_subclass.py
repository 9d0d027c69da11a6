# ruff: noqa
"""A04/A05: a lazy tensor subclass whose comparisons always pass."""
import torch
import torch.nn as nn


class LazyOut(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.Tensor._make_subclass(LazyOut, torch.empty_like(x))
