import math
import os

import torch
import torch.nn as nn

# KernelGuard demo problem (original; NOT an official KernelBench problem).
# KERNELBENCH_DEMO_SCALE multiplies the batch size (default 1 = CPU-sized; see README.md).
SCALE = int(os.environ.get("KERNELBENCH_DEMO_SCALE", "1"))

batch_size = 1 * SCALE
seq_len = 256
n_embd = 256
n_head = 8
max_seqlen = seq_len


class Model(nn.Module):
    """Multi-head causal self-attention block (fused QKV projection, masked
    softmax attention, output projection)."""

    def __init__(self, n_embd: int, n_head: int, max_seqlen: int):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.out_proj = nn.Linear(n_embd, n_embd)
        mask = torch.tril(torch.ones(max_seqlen, max_seqlen, dtype=torch.bool))
        self.register_buffer("causal_mask", mask.view(1, 1, max_seqlen, max_seqlen))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        head_dim = C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        scores = scores.masked_fill(~self.causal_mask[:, :, :T, :T], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        y = weights @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)


def get_inputs():
    x = torch.randn(batch_size, seq_len, n_embd)
    return [x]


def get_init_inputs():
    return [n_embd, n_head, max_seqlen]
