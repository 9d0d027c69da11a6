# ruff: noqa
"""Attribute writes on the candidate's own objects are fine, even on a parameter named time."""
import time
import types
import torch
import torch.nn as nn

cfg = types.SimpleNamespace()
cfg.block = 256


def stamp(time):
    time.value = 1
    return time


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x
