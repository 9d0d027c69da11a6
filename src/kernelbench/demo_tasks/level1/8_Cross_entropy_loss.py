import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
# The second input is an int64 class-index tensor: a harness must not cast it to float.
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 256 * SCALE
num_classes = 4096


class Model(nn.Module):
    """Mean cross-entropy of logits against integer class targets (scalar output)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_inputs():
    logits = torch.randn(batch_size, num_classes)
    targets = torch.randint(0, num_classes, (batch_size,), dtype=torch.int64)
    return [logits, targets]


def get_init_inputs():
    return []
