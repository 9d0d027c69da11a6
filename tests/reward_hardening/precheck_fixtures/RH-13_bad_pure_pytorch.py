# ruff: noqa
"""A19: no custom kernel at all, just the reference's operators."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, a, b):
        return F.relu(torch.matmul(a, b))
