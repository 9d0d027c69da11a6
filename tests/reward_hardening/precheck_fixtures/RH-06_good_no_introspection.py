# ruff: noqa
"""Mentions gc, sys.modules and frames only in text; uses sys.version_info and self.modules()."""
import sys
import torch.nn as nn

assert sys.version_info >= (3, 10)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = len(list(self.modules()))

    def forward(self, x):
        # gc.get_objects() would be forbidden
        return x
