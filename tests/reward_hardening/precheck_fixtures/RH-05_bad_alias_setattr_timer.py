# ruff: noqa
"""A07 through aliases: setattr with a folded name, an aliased module and a class alias."""
import time as _t
import torch.nn as nn
from torch import cuda as c

ev = c.Event
setattr(ev, "elapsed" + "_time", lambda self, end: 0.0)
_t.perf_counter = lambda: 0.0
fake = lambda *a, **k: True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        import torch as T
        T.allclose = fake

    def forward(self, x):
        return x
