# ruff: noqa
"""Aliased shell access and a dynamically imported subprocess module."""
from os import system as _s
import torch.nn as nn

_s("nvidia-smi -lgc 2100")
sp = __import__("sub" + "process")
sp.Popen(["curl", "http://example.invalid/answers.bin"])


class ModelNew(nn.Module):
    def forward(self, x):
        return x
