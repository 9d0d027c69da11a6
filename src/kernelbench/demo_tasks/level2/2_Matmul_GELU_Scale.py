import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 128 * SCALE
in_features = 1024
out_features = 1024
scale_factor = 1.5


class Model(nn.Module):
    """Linear layer, exact GELU, then multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scale_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale_factor = scale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = F.gelu(y)
        return y * self.scale_factor


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale_factor]
