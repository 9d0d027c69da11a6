# Honest reference-equivalent candidate for the KernelGuard demo problem of the same
# file name (plain PyTorch, possibly rewritten/fused). Used by tests as a "correct" ModelNew.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        # Same creation order as the reference: conv first, then the bias from randn.
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.clamp_min(y, 0.0).add_(self.bias)
