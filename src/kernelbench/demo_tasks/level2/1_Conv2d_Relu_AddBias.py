import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 4 * SCALE
in_channels = 16
out_channels = 32
height = 64
width = 64
kernel_size = 3
bias_shape = (out_channels, 1, 1)


class Model(nn.Module):
    """Valid 2-D convolution, then ReLU, then a learned per-channel bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = torch.relu(y)
        return y + self.bias


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
