import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 16 * SCALE
input_size = 1024
hidden_sizes = [2048, 1024]
output_size = 256


class Model(nn.Module):
    """Multi-layer perceptron: (Linear, ReLU) per hidden size, then a Linear head."""

    def __init__(self, input_size: int, hidden_sizes: list, output_size: int):
        super().__init__()
        layers = []
        width = input_size
        for size in hidden_sizes:
            layers.append(nn.Linear(width, size))
            layers.append(nn.ReLU())
            width = size
        layers.append(nn.Linear(width, output_size))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs():
    x = torch.randn(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_sizes, output_size]
