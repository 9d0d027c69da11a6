# ruff: noqa
"""Reference problem used by the precheck fixtures (KernelBench layout)."""
import torch
import torch.nn as nn

N = 2048
batch_size = 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
