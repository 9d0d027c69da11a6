# ruff: noqa
"""Literal getattr on torch, getattr on objects, and .eval() are all fine; eval() in text is not code."""
import torch
import torch.nn as nn

DTYPE = getattr(torch, "float32")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(2):
            setattr(self, f"w{i}", nn.Parameter(torch.zeros(4)))
        self.eval()

    def evaluate(self, name):
        return getattr(self, name)

    def forward(self, x):
        return x
