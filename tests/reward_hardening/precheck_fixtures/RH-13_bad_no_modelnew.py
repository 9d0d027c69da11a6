# ruff: noqa
"""No ModelNew class: only a helper function."""
import torch


def fast(a, b):
    return torch.mm(a, b)
