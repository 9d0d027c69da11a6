import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 32 * SCALE
reduce_len = 256
features = 256
reduce_dim = 1


class Model(nn.Module):
    """Mean over one dimension (the middle one of a 3-D tensor)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


def get_inputs():
    x = torch.rand(batch_size, reduce_len, features)
    return [x]


def get_init_inputs():
    return [reduce_dim]
