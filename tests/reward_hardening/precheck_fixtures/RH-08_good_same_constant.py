# ruff: noqa
"""Repeats the reference constant with the same value and a verbatim get_inputs; no inheritance."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

N = 2048
batch_size = 16


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


class ModelBase(nn.Module):
    pass


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(ModelBase):
    def forward(self, A, B):
        out = torch.empty_like(A)
        copy_kernel[(triton.cdiv(A.numel(), 1024),)](A, out, A.numel(), BLOCK=1024)
        return out
