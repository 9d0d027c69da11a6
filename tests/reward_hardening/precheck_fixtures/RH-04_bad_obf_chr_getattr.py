# ruff: noqa
"""Obfuscated: the name of exec assembled from character codes; dynamic getattr on a module."""
import builtins as _b
import importlib
import torch.nn as nn

_name = "".join(map(chr, [101, 120, 101, 99]))
_run = getattr(_b, "".join(map(chr, [101, 120, 101, 99])))
_mod = importlib.import_module("tor" + "ch")
_fn = getattr(_mod, _name)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
