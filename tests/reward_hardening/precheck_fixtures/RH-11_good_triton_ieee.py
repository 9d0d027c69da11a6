# ruff: noqa
"""fp32 Triton kernel using tl.dot(..., input_precision="ieee") and an explicit allow_tf32=False."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.dot(a, b, input_precision="ieee")
    acc += tl.dot(a, b, allow_tf32=False)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc.to(tl.float32))


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        assert a.dtype == torch.float32 and a.dtype != torch.float16
        mm_kernel[(1,)](a, b, c, BLOCK=32)
        return c
