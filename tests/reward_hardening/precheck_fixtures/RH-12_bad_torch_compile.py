# ruff: noqa
"""A19: let Inductor write the kernel."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(torch.matmul, mode="max-autotune")

    def forward(self, a, b):
        return self.fn(a, b)
