# ruff: noqa
"""A03 with aliases: executor and a process class reached through getattr."""
import torch
import torch.nn as nn
from concurrent import futures as cf
import multiprocessing as _mp

_POOL = cf.ThreadPoolExecutor(max_workers=1)
_Proc = getattr(_mp, "Pro" + "cess")


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _POOL.submit(lambda: out.copy_(x.relu()))
        return out
