"""Runtime detectors: small functions that turn gathered evidence into observations (code + evidence).

Each detector is registered with :func:`detector` under the finding code it emits and
lives in the module of its family.  Detectors run in the trusted parent on the
:class:`~kernelbench.reward_hardening.parent.evidence.Evidence` of one evaluation; they
never talk to a worker.  A code listed in ``config.disabled_detectors`` is skipped
(used by the tests that prove every detector is load-bearing).
"""

from __future__ import annotations

# the families register their detectors on import (import order is irrelevant; codes are unique)
from kernelbench.reward_hardening.detectors import (  # noqa: F401
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
from kernelbench.reward_hardening.detectors._base import REGISTRY, Detector, detector
from kernelbench.reward_hardening.findings import observe

__all__ = ["REGISTRY", "Detector", "detector", "run_all"]


def run_all(ev) -> list:
    """Every enabled detector's observations on ``ev`` (no severities: the policy gives those)."""
    observations = []
    disabled = ev.config.disabled_detectors
    for code, det in sorted(REGISTRY.items()):
        if code in disabled:
            continue
        try:
            observations.extend(det.func(ev))
        except Exception as exc:  # a broken detector fails closed
            observations.append(observe("RH-32", {"detector": det.name, "error": f"{type(exc).__name__}: {exc}"}))
    return observations

