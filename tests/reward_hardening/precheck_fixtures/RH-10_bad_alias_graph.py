# ruff: noqa
"""A18 through aliases: capture once, replay forever."""
from torch.cuda import CUDAGraph as G
import torch.cuda as tc
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = G()
        self.side = getattr(tc, "Stre" + "am")()

    def forward(self, x):
        with tc.graph(self.g):
            y = x * 2
        self.g.replay()
        return y
