import torch
import torch.nn as nn

# Example reference architecture used in prompts: element-wise addition.
batch_size = 16
dim = 4096


class Model(nn.Module):
    """Adds two tensors element by element."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs():
    # CPU tensors; the evaluator moves them to the target device.
    a = torch.randn(batch_size, dim)
    b = torch.randn(batch_size, dim)
    return [a, b]


def get_init_inputs():
    return []
