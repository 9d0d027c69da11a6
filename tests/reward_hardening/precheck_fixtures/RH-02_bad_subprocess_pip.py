# ruff: noqa
"""A44: install a package at import time."""
import subprocess
import sys
import torch.nn as nn

subprocess.run([sys.executable, "-m", "pip", "install", "flash-attn"], check=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
