"""Helpers shared by the hardened-path tests."""

from __future__ import annotations

import pytest

_ADD = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.rand({rows}, {cols}), torch.rand({rows}, {cols})]


def get_init_inputs():
    return []
'''


@pytest.fixture
def add_problem():
    """``add_problem(rows, cols)``: an element-wise add reference that reads nothing from its environment."""
    return lambda rows, cols: _ADD.format(rows=rows, cols=cols)


@pytest.fixture
def host_sums(monkeypatch):
    """Host tensors above 1 MiB digested by the reductions (as on a host with many threads), not SHA-256."""
    from kernelbench.reward_hardening.ipc import lending

    monkeypatch.setattr(lending, "_HASH_MAX_THREADS", 0)
