"""Helpers shared by the hardened-path tests."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "src" / "kernelbench" / "demo_tasks"

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


@pytest.fixture
def demo_judge(tmp_path):
    """``demo_judge(problem, device, load, probe_seed, source)``: a judge run in-process, and its peer's end of the pipe.

    The judge serves a demo problem (``level1/1_Elementwise_add.py`` by default, or the
    program ``source``) from a copy in ``tmp_path``; on CUDA it is set up as its command loop sets itself up.  With
    ``load`` the reference is loaded; with ``probe_seed`` one probe fixes the output
    structure (its descriptors closed, the probe dropped).
    """
    from kernelbench.reward_hardening.ipc.wire import recv_message
    from kernelbench.reward_hardening.judge.worker import Judge

    def make(problem: str = "level1/1_Elementwise_add.py", device: str = "cpu", load: bool = True,
             probe_seed: int | None = None, source: str | None = None):
        a, b = mp.Pipe(duplex=True)
        src = tmp_path / "ref.py"
        src.write_text(source if source is not None else (DEMO / problem).read_text())
        judge = Judge(a, {"device": device, "precision": "fp32", "source_path": str(src)})
        if device.startswith("cuda"):
            import torch

            from kernelbench.reward_hardening.worker_runtime import init_cuda_device

            judge.flush_buf = init_cuda_device(judge.device, None)
            judge.pool = torch.cuda.MemPool()
        if load:
            judge.cmd_load({"cmd": "load"})
            recv_message(b)
        if probe_seed is not None:
            judge.cmd_probe({"cmd": "probe", "seed": probe_seed})
            _, fds = recv_message(b)
            for fd in fds:
                os.close(fd)
            judge.current = None
        return judge, b

    return make
