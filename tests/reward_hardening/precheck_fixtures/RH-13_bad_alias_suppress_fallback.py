# ruff: noqa
"""A21 through aliases: a suppressed kernel call followed by an aliased functional fallback."""
from contextlib import suppress as quiet
import torch.nn as nn
import torch.nn.functional as Fn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = x.new_empty(x.shape)
        with quiet(Exception):
            gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            return y
        return Fn.gelu(x)
