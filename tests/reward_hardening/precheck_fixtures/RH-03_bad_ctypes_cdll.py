# ruff: noqa
"""A10/A11: call into a prebuilt shared object through ctypes."""
import ctypes
import torch
import torch.nn as nn

_lib = ctypes.CDLL("/tmp/fast_gemm.so")


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty((a.shape[0], b.shape[1]), device=a.device)
        _lib.gemm(ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()))
        return c
