# ruff: noqa
"""The word compile in text, re.compile and a method named compile_kernels are fine."""
import re
import torch.nn as nn
import triton
import triton.language as tl

PATTERN = re.compile(r"\d+")


@triton.jit
def neg_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def compile_kernels(self):
        return "compile happens lazily"

    def forward(self, x):
        y = x.new_empty(x.shape)
        neg_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
