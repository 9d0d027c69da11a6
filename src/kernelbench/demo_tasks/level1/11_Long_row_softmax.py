import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
# Deliberately degenerate: every output is ~1e-5 (at every scale: only the row count grows), below a
# typical fp32 atol, so an all-zero output passes a plain allclose check. Used to
# exercise zero-output / relative-error checks.
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 8 * SCALE
row_len = 131072


class Model(nn.Module):
    """Softmax over very long rows."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    x = torch.rand(batch_size, row_len)
    return [x]


def get_init_inputs():
    return []
