# ruff: noqa
"""Obfuscated frame walk to the caller's locals, and __builtins__ access."""
import sys as _s
import torch.nn as nn

_get = getattr(_s, "_get" + "frame")


class ModelNew(nn.Module):
    def forward(self, x):
        caller = _get(1)
        expected = getattr(caller, "f_" + "back").f_locals.get("expected")
        _open = __builtins__["open"] if isinstance(__builtins__, dict) else None
        return expected if expected is not None else x
