import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 64 * SCALE
dim = 16384


class Model(nn.Module):
    """Element-wise sum of two tensors of equal shape."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs():
    a = torch.rand(batch_size, dim)
    b = torch.rand(batch_size, dim)
    return [a, b]


def get_init_inputs():
    return []
