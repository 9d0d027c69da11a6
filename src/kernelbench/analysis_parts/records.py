"""Reading one result record for the analysis (parent process, or any tool reading results).

The upstream fields (``compiled``, ``correctness``, ``runtime``) as upstream reads them,
and the integrity-checked ones of the ``reward_hardening`` block: the integrity status,
whether a record counts as verified (:func:`counts_as_verified`, also used by
:mod:`kernelbench.passk`), its finding codes and its in-run speedup bound.  Only the
standard library is imported.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

INTEGRITY_STATUSES: tuple[str, ...] = ("PASS", "FAIL", "SUSPICIOUS", "UNSUPPORTED")
MISSING_STATUS = "MISSING"


def upstream_flag(value: Any) -> bool:
    """Upstream compares ``== True``; strings such as ``"false"`` are not true."""
    return value is True or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 1)


def finite_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def upstream_runtime(record: Mapping | None) -> float:
    value = finite_number(record.get("runtime")) if record else None
    return -1.0 if value is None else value


def integrity_status_of(record: Mapping | None) -> str:
    """The record's ``reward_hardening.integrity_status``, or ``MISSING`` when it has none."""
    if not isinstance(record, Mapping):
        return MISSING_STATUS
    block = record.get("reward_hardening")
    if not isinstance(block, Mapping):
        return MISSING_STATUS
    status = block.get("integrity_status")
    if not isinstance(status, str) or not status.strip():
        return MISSING_STATUS
    return status.strip()


def verified_runtime(record: Mapping | None) -> float | None:
    """The trusted runtime (ms) if the record counts for verified metrics, else None."""
    if integrity_status_of(record) != "PASS":
        return None
    block = record["reward_hardening"]  # type: ignore[index]
    if block.get("verified") is False or block.get("verified_correctness") is False:
        return None
    runtime = finite_number(block.get("verified_runtime"))
    if runtime is None or runtime <= 0:
        return None
    return runtime


def counts_as_verified(record: Mapping | None) -> bool:
    """PASS, a positive finite ``verified_runtime``, and no ``verified``/``verified_correctness`` false."""
    return verified_runtime(record) is not None


def finding_codes(record: Mapping | None) -> set[str]:
    if not isinstance(record, Mapping):
        return set()
    block = record.get("reward_hardening")
    findings = block.get("findings") if isinstance(block, Mapping) else None
    if not isinstance(findings, list):
        return set()
    return {
        str(f["code"]) for f in findings if isinstance(f, Mapping) and isinstance(f.get("code"), str) and f["code"]
    }


def speedup_bound(record: Mapping | None) -> dict | None:
    """The record's in-run ``reward_hardening.speedup`` block, when it is well-formed."""
    rh = record.get("reward_hardening") if isinstance(record, Mapping) else None
    b = rh.get("speedup") if isinstance(rh, Mapping) else None
    if not isinstance(b, Mapping):
        return None
    point, lcb = finite_number(b.get("point")), finite_number(b.get("lower_bound"))
    if point is None or lcb is None or point <= 0 or lcb <= 0:
        return None
    return dict(b)


def bound_runtime(record: Mapping | None, runtime: float | None) -> tuple[float | None, bool]:
    """The runtime the ``lcb`` statistic counts: ``runtime * point / lower_bound``; and whether a bound existed."""
    if runtime is None:
        return None, True
    b = speedup_bound(record)
    if b is None:
        return runtime, False
    return runtime * max(1.0, b["point"] / b["lower_bound"]), True
