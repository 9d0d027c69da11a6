# Honest reference-equivalent candidate for the KernelGuard demo problem of the same
# file name (plain PyTorch, possibly rewritten/fused). Used by tests as a "correct" ModelNew.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_sizes: list, output_size: int):
        super().__init__()
        # Same layer construction order as the reference so weights match under one seed.
        layers = []
        width = input_size
        for size in hidden_sizes:
            layers.append(nn.Linear(width, size))
            layers.append(nn.ReLU())
            width = size
        layers.append(nn.Linear(width, output_size))
        self.net = nn.Sequential(*layers)
        self.linears = [m for m in layers if isinstance(m, nn.Linear)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *hidden, head = self.linears
        for layer in hidden:
            x = torch.addmm(layer.bias, x, layer.weight.t()).relu_()
        return F.linear(x, head.weight, head.bias)
