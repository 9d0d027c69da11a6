import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 256 * SCALE
length = 4096
scan_dim = 1


class Model(nn.Module):
    """Inclusive prefix sum along one dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    x = torch.rand(batch_size, length)
    return [x]


def get_init_inputs():
    return [scan_dim]
