# Honest reference-equivalent candidate for the KernelGuard demo problem of the same
# file name (plain PyTorch, possibly rewritten/fused). Used by tests as a "correct" ModelNew.
import torch
import torch.nn as nn

_INV_SQRT2 = 0.7071067811865476


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # GELU(x) = x * Phi(x), Phi the standard normal CDF written with erf.
        return 0.5 * x * (1.0 + torch.erf(x * _INV_SQRT2))
