# ruff: noqa
"""A47: rebind the reference's size constant (shared exec namespace) and use global."""
import torch
import torch.nn as nn

N = 16
batch_size = 16


def shrink():
    global N
    N = 8


globals()["batch_size"] = 1


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
