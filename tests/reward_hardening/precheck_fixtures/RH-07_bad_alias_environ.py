# ruff: noqa
"""A24 through aliases: the seed from the environment, files via an aliased pathlib."""
from os import environ as E
import pathlib as pl
import torch.nn as nn

SEED = int(E.get("KB_SEED", "42"))
E["CUDA_LAUNCH_BLOCKING"] = "0"
TESTS = pl.Path("tests").read_text()


class ModelNew(nn.Module):
    def forward(self, x):
        return x
