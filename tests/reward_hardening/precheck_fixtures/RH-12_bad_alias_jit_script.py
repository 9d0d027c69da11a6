# ruff: noqa
"""A19 through aliases: TorchScript via an aliased module and dynamo config via import-from."""
from torch import jit as J
import torch._dynamo as dyn
from torch import compile as c
import torch.nn as nn

dyn.config.suppress_errors = True


@J.script
def fused(x):
    return x * 2 + 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = c(fused)

    def forward(self, x):
        return self.f(x)
