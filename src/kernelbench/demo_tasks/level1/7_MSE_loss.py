import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 64 * SCALE
dim = 16384


class Model(nn.Module):
    """Mean squared error between predictions and targets (scalar output)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    predictions = torch.rand(batch_size, dim)
    targets = torch.rand(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
