# Honest reference-equivalent candidate for the KernelGuard demo problem of the same
# file name (plain PyTorch, possibly rewritten/fused). Used by tests as a "correct" ModelNew.
import torch
import torch.nn as nn

_BLOCK = 128


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Two-level scan: prefix sums inside blocks, then add the running block totals.
        moved = x.movedim(self.dim, -1)
        n = moved.shape[-1]
        if n % _BLOCK != 0:
            return torch.cumsum(x, dim=self.dim)
        blocks = moved.reshape(*moved.shape[:-1], n // _BLOCK, _BLOCK)
        inner = blocks.cumsum(dim=-1)
        totals = inner[..., -1]
        offsets = totals.cumsum(dim=-1) - totals
        out = inner + offsets.unsqueeze(-1)
        return out.reshape(moved.shape).movedim(-1, self.dim)
