"""Device helpers shared by the evaluator, the timing methods and the hardened records (any process).

``resolve_device`` turns the user's device setting into a ``torch.device`` when it is
called (never at import time), ``device_name`` names the hardware for records and
``synchronize`` waits for a CUDA device (a no-op on the CPU).  The upstream module
paths ``kernelbench.timing`` and ``kernelbench.eval`` re-export them.
"""

from __future__ import annotations

import os
import platform
from typing import Any

import torch

__all__ = ["device_name", "gpu_memory_report", "resolve_device", "synchronize"]


def resolve_device(device: Any = None) -> torch.device:
    """Turn ``None``/int/str/torch.device into a torch.device.

    ``None`` means the current CUDA device (resolved now, not at import time as
    upstream did) or raises if CUDA is unavailable.
    """
    if isinstance(device, torch.device):
        dev = device
    elif device is None:
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available; pass device='cpu' to evaluate on the CPU")
        dev = torch.device("cuda", torch.cuda.current_device())
    elif isinstance(device, int):
        dev = torch.device("cuda", device)
    else:
        dev = torch.device(str(device))
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return dev


def device_name(device: Any) -> str:
    dev = resolve_device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return platform.processor() or platform.machine() or "cpu"


def synchronize(device: Any = None) -> None:
    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _nvidia_smi_id(index: int) -> str:
    """The ``nvidia-smi -i`` name of CUDA device ``index`` of this process.

    ``nvidia-smi`` ignores ``CUDA_VISIBLE_DEVICES`` (it numbers every GPU of the host, in
    PCI bus order): the visible list's entry (an index or a UUID, both of which ``-i``
    takes) names the same card.  Without the variable, CUDA's numbering is taken to be
    the bus order (``CUDA_DEVICE_ORDER=PCI_BUS_ID``, or a host of identical GPUs).
    """
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def gpu_memory_report(device: int | str | None = None, run: Any = None) -> dict | None:
    """The GPU's used and total memory and every process holding some, from ``nvidia-smi``.

    ``device``: a CUDA index of this process, or a device name (``cuda`` is device 0,
    ``cuda:N``); ``None`` asks for every GPU of the host.

    Read without creating a CUDA context (the trusted parent never holds one): for the
    record of an evaluation that ran out of device memory, or after a problem's
    sessions closed, so that memory held by something outside the evaluation (a
    leftover process) shows.  ``None`` where ``nvidia-smi`` is missing or fails.
    ``run`` replaces :func:`subprocess.run` (tests).
    """
    import subprocess

    run = run or subprocess.run
    if isinstance(device, str):
        device = int(device.partition(":")[2] or 0)
    select = [] if device is None else ["-i", _nvidia_smi_id(int(device))]

    def query(what: str) -> list[list[str]]:
        out = run(["nvidia-smi", *select, f"--query-{what}", "--format=csv,noheader,nounits"],
                  capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip()[:200])
        return [[c.strip() for c in line.split(",")] for line in out.stdout.strip().splitlines() if line.strip()]

    try:
        gpu = query("gpu=memory.used,memory.total")
        apps = query("compute-apps=pid,used_memory")
        return {"used_mib": int(gpu[0][0]), "total_mib": int(gpu[0][1]),
                "processes": [{"pid": int(pid), "used_mib": int(mib) if mib.isdigit() else None}
                              for pid, mib in (row[:2] for row in apps if len(row) >= 2)]}
    except (OSError, subprocess.SubprocessError, RuntimeError, ValueError, IndexError):
        return None
