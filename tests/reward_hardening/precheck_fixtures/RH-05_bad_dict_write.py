# ruff: noqa
"""Writes through vars()/__dict__, builtins and sys.path, and an aten override."""
import builtins
import sys
import torch
import torch.nn as nn

vars(torch)["allclose"] = lambda *a, **k: True
torch.__dict__.update({"equal": lambda *a: True})
builtins.print = lambda *a, **k: None
sys.path.insert(0, "/tmp/shadow")
_lib = torch.library.Library("aten", "IMPL")
_lib.impl("mm", lambda a, b: a, "CUDA")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
