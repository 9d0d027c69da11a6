# ruff: noqa
"""A37 through aliases: an aliased fp16 dtype and a bf16 dtype held in a variable."""
import torch
import torch.nn as nn
from torch import float16 as F16

LOW = torch.bfloat16


class ModelNew(nn.Module):
    def forward(self, a):
        tmp = torch.empty(a.shape, dtype=LOW, device=a.device)
        return a.to(F16).to(torch.float32) + tmp.float()
