"""Runtime detectors: small functions that turn gathered evidence into findings.

Each detector is registered with :func:`detector` under the finding code it emits and
lives in the module of its family.  Detectors run in the trusted parent on the
:class:`~kernelbench.reward_hardening.parent.evidence.Evidence` of one evaluation; they
never talk to a worker.  A code listed in ``config.disabled_detectors`` is skipped
(used by the tests that prove every detector is load-bearing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kernelbench.reward_hardening.codes import CODES

__all__ = ["REGISTRY", "Detector", "detector", "run_all"]


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


def run_all(ev) -> list:
    from kernelbench.reward_hardening.findings import finding

    findings = []
    disabled = ev.config.disabled_detectors
    for code, det in sorted(REGISTRY.items()):
        if code in disabled:
            continue
        try:
            findings.extend(det.func(ev))
        except Exception as exc:  # a broken detector fails closed
            findings.append(finding("RH-32", ev.config.policy,
                                    {"detector": det.name, "error": f"{type(exc).__name__}: {exc}"}))
    return findings


# Register the families (import order is irrelevant; codes are unique).
from kernelbench.reward_hardening.detectors import (  # noqa: E402,F401
    containment,
    correctness,
    gpu,
    noise,
    output_integrity,
    process_state,
    provenance,
    reads,
    timing,
    worker_health,
)
