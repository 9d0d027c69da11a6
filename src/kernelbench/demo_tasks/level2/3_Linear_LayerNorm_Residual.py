import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 128 * SCALE
hidden = 1024


class Model(nn.Module):
    """Square linear layer, layer normalisation, then a residual connection."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x)) + x


def get_inputs():
    x = torch.randn(batch_size, hidden)
    return [x]


def get_init_inputs():
    return [hidden]
