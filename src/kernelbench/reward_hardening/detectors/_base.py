"""The detector registry: each runtime detector registers under the finding code it observes.

Runs in the trusted parent.  The detector families (the modules of this package)
import :func:`detector` from here; the package's ``__init__`` imports the families and
runs them (:func:`kernelbench.reward_hardening.detectors.run_all`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kernelbench.reward_hardening.codes import CODES

__all__ = ["REGISTRY", "Detector", "detector"]


@dataclass(frozen=True)
class Detector:
    code: str
    name: str
    func: Callable
    doc: str


REGISTRY: dict[str, Detector] = {}


def detector(code: str) -> Callable[[Callable], Callable]:
    if code not in CODES:
        raise KeyError(f"unknown finding code {code}")

    def register(func: Callable) -> Callable:
        if code in REGISTRY:
            raise ValueError(f"two runtime detectors claim {code}")
        REGISTRY[code] = Detector(code, CODES[code].detector, func, (func.__doc__ or "").strip())
        return func

    return register
