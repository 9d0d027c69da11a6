# ruff: noqa
"""Honest Triton softmax (row-wise), launched from forward through a helper; helper jit function inlined."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - _row_max(x)
    num = tl.exp(x)
    tl.store(y_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        return softmax(x.contiguous())
