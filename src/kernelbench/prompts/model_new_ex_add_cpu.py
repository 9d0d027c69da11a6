"""Practical-policy demo candidate for model_ex_add.py (CPU-runnable).

An honest ModelNew written in plain PyTorch: it computes the same sum as the
reference through ``torch.add`` into a freshly allocated output tensor rather than
by writing ``a + b``. It contains no custom kernel, so it is only meant to exercise
the evaluation pipeline on machines without a GPU or compiler (a strict
"custom kernel required" policy would reject it; a practical policy accepts it).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        result = torch.empty_like(a)
        torch.add(a, b, out=result)
        return result
