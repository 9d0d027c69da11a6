"""Benchmark scores: fast_p, geometric-mean speedups and pass@k.

The speed metrics keep upstream KernelBench's exact semantics and positional
signatures ``(is_correct, baseline_speed, actual_speed, n[, p])``:

* ``speedup = baseline_speed / actual_speed`` (both in ms), computed only for the
  entries whose ``is_correct`` is truthy;
* :func:`fastp` counts correct entries whose speedup is **strictly greater** than
  ``p`` and divides by ``n`` (the number of aligned problems, not the number of
  correct ones); it is 0 when ``n == 0``;
* the geometric means are 0 when no entry qualifies.

The only intended difference from upstream is numerical: upstream takes the raw
``np.prod`` of the speedups, which overflows to ``inf`` or underflows to ``0`` for
long or extreme lists.  Here the product is used only when every partial product is
a finite normal float (then the result is bit-for-bit upstream's
``prod ** (1 / k)``); otherwise the mean of the logarithms is used.  See
:func:`geometric_mean_speed_ratio_correct_only` for non-positive speedups.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = [
    "fastp",
    "geometric_mean_speed_ratio_correct_only",
    "geometric_mean_speed_ratio_correct_and_faster_only",
    "pass_at_k",
]

_TINY = np.finfo(np.float64).tiny


def _correct_speedups(is_correct, baseline_speed, actual_speed) -> np.ndarray:
    """Speedups (baseline / actual) of the entries flagged correct, as float64."""
    mask = np.asarray(is_correct).astype(bool).reshape(-1)
    baseline = np.asarray(baseline_speed, dtype=np.float64).reshape(-1)
    actual = np.asarray(actual_speed, dtype=np.float64).reshape(-1)
    if not (len(mask) == len(baseline) == len(actual)):
        raise ValueError(
            "is_correct, baseline_speed and actual_speed must have the same length "
            f"(got {len(mask)}, {len(baseline)}, {len(actual)})"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        return baseline[mask] / actual[mask]


def _geometric_mean(values: np.ndarray) -> float:
    """Geometric mean of ``values`` (non-empty) with upstream's results where defined.

    * Any negative or NaN value -> NaN.  (Upstream's ``np.prod(x) ** (1/k)`` is NaN
      when an odd number of speedups is negative and a meaningless positive number
      when the count is even; a negative speedup only arises from a correct record
      with the ``-1.0`` "not timed" runtime, so it is always reported as NaN here.)
    * A zero value (and no infinity) -> 0.0, as upstream (product 0).
    * ``inf`` together with ``0`` -> NaN, as upstream (``inf * 0``).
    * Otherwise the product formula when all partial products stay finite and
      normal (bit-identical to upstream), else ``exp(mean(log(values)))``.
    """
    k = len(values)
    if np.isnan(values).any() or (values < 0).any():
        return float("nan")
    has_zero = bool((values == 0).any())
    has_inf = bool(np.isinf(values).any())
    if has_zero and has_inf:
        return float("nan")
    if has_zero:
        return 0.0
    if has_inf:
        return float("inf")
    with np.errstate(over="ignore", under="ignore"):
        partial = np.cumprod(values)
    if np.isfinite(partial).all() and (partial >= _TINY).all():
        return float(partial[-1] ** (1 / k))
    return float(math.exp(math.fsum(np.log(values).tolist()) / k))


def geometric_mean_speed_ratio_correct_only(
    is_correct: Sequence, baseline_speed: Sequence, actual_speed: Sequence, n: int
) -> float:
    """Geometric mean of the speedups of the correct entries; 0 if none is correct.

    ``n`` is accepted for signature compatibility and, as upstream, not used: the
    root is taken over the number of correct entries.

    Non-positive speedups among the correct entries: a negative one (a correct
    record whose runtime is the ``-1.0`` placeholder) makes the result NaN, like
    upstream's ``prod ** (1/k)`` does for a negative product; a zero speedup (zero
    baseline) gives 0.0 and an infinite one (zero runtime) gives ``inf``, also as
    upstream.  Upstream's accidental positive result for an *even* number of
    negative speedups is not reproduced (NaN instead).
    """
    speedups = _correct_speedups(is_correct, baseline_speed, actual_speed)
    if len(speedups) == 0:
        return 0.0
    return _geometric_mean(speedups)


def geometric_mean_speed_ratio_correct_and_faster_only(
    is_correct: Sequence, baseline_speed: Sequence, actual_speed: Sequence, n: int
) -> float:
    """Geometric mean of the speedups that are correct and strictly greater than 1.

    0 when no entry qualifies.  ``n`` is unused (upstream signature).  All kept
    speedups are > 1, so the result is always >= 1 (or ``inf``).
    """
    speedups = _correct_speedups(is_correct, baseline_speed, actual_speed)
    faster = speedups[speedups > 1]
    if len(faster) == 0:
        return 0.0
    return _geometric_mean(faster)


def fastp(
    is_correct: Sequence, baseline_speed: Sequence, actual_speed: Sequence, n: int, p: float
) -> float:
    """Fraction of the ``n`` problems that are correct and have speedup ``> p``.

    Strict inequality; the denominator is ``n``; 0 when ``n == 0``.  A correct entry
    with a ``-1.0`` runtime has a negative speedup and never counts (so ``fast_0``
    equals the correctness rate only when every correct entry was timed); a NaN
    speedup never counts either.
    """
    speedups = _correct_speedups(is_correct, baseline_speed, actual_speed)
    if n <= 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        count = int(np.sum(speedups > p))
    return count / n


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (HumanEval): ``1 - C(n-c, k) / C(n, k)``.

    ``n`` samples of which ``c`` are correct; ``k`` is clamped to ``n``.  Returns 1.0
    when ``n - c < k`` and 0.0 when ``n == 0``.  Computed as
    ``1 - prod(1 - k / i for i in n-c+1 .. n)`` to avoid large binomials.
    """
    n, c, k = int(n), int(c), int(k)
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"pass_at_k needs k >= 1, got k={k}")
    if n == 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))
