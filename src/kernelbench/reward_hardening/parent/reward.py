"""The reward a trainer may take from a hardened record.

``verified_speedup(record)`` is the candidate's speedup over the reference timed
beside it, only for a verified record (integrity PASS with correctness and timing
evidence), else ``default``.  ``statistic``:

* ``lcb`` (default): the speedup's one-sided lower confidence bound
  (``reward_hardening.speedup.lower_bound``, level 0.99 by default): a speedup that
  is only noise earns about 1 or less, never 4x.  A verified record without the
  bound (written before it existed, or timed without interleaving) earns ``default``;
* ``mean``: the point estimate the analysis has always used,
  ``verified_reference_runtime / verified_runtime`` (ratio of the means).
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["SPEEDUP_STATISTICS", "verified_speedup"]

SPEEDUP_STATISTICS = ("lcb", "mean")


def _positive(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and v == v and v != float("inf") else None


def verified_speedup(record: Mapping | None, statistic: str = "lcb", default: float = 0.0) -> float:
    """The verified speedup of ``record`` under ``statistic`` (``lcb`` or ``mean``), else ``default``."""
    if statistic not in SPEEDUP_STATISTICS:
        raise ValueError(f"speedup_statistic must be one of {SPEEDUP_STATISTICS}, got {statistic!r}")
    rh = (record or {}).get("reward_hardening") if isinstance(record, Mapping) else None
    if not isinstance(rh, Mapping) or rh.get("verified") is not True or rh.get("integrity_status") != "PASS":
        return default
    if statistic == "lcb":
        bound = rh.get("speedup")
        if not isinstance(bound, Mapping) or bound.get("verified") is not True:
            return default
        lcb = _positive(bound.get("lower_bound"))
        return lcb if lcb is not None else default
    cand, ref = _positive(rh.get("verified_runtime")), _positive(rh.get("verified_reference_runtime"))
    return ref / cand if cand and ref else default
