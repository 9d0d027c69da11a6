"""Device helpers shared by the evaluator, the timing methods and the hardened records (any process).

``resolve_device`` turns the user's device setting into a ``torch.device`` when it is
called (never at import time), ``device_name`` names the hardware for records and
``synchronize`` waits for a CUDA device (a no-op on the CPU).  The upstream module
paths ``kernelbench.timing`` and ``kernelbench.eval`` re-export them.
"""

from __future__ import annotations

import platform
from typing import Any

import torch

__all__ = ["device_name", "resolve_device", "synchronize"]


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
