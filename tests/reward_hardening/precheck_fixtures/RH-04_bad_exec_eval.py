# ruff: noqa
"""A45: run dynamically built code."""
import torch.nn as nn

_SRC = "def fast(x):\n    return x\n"
_ns = {}
exec(compile(_SRC, "<kernel>", "exec"), _ns)
scale = eval("2.0")


class ModelNew(nn.Module):
    def forward(self, x):
        return _ns["fast"](x)
