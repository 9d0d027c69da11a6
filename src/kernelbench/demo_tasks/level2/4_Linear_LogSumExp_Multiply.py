import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 64 * SCALE
in_features = 512
out_features = 2048
multiplier = 0.5


class Model(nn.Module):
    """Linear layer reduced by log-sum-exp over the features, then scaled."""

    def __init__(self, in_features: int, out_features: int, multiplier: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.multiplier = multiplier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = torch.logsumexp(y, dim=1, keepdim=True)
        return y * self.multiplier


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, multiplier]
