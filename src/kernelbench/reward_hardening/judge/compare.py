"""Output comparison (trusted side only: the judge on the device, or detectors in the parent).

The match rule is KernelBench's: ``torch.allclose(reference, output, atol=tol,
rtol=tol)`` with the precision's tolerance (fp32 1e-4, fp16/bf16 1e-2), shapes equal.
Comparisons run in float64 over fixed-size chunks of the flattened tensors, so an
output of several GiB is compared on its device with bounded temporaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
_CHUNK = 1 << 22  # elements per comparison chunk (32 MiB of float64 per temporary)


VALUES_DIFFER = "values differ beyond tolerance"


@dataclass
class Comparison:
    match: bool  # allclose at the precision's tolerance, shapes equal
    rel_error: float  # ||out - ref|| / ||ref|| (inf when shapes differ)
    max_abs: float
    reason: str = ""
    mean_abs: float | None = None  # mean |out - ref| over the elements (finite ones)
    non_finite: int = 0  # NaN/inf elements in the output where the reference is finite
    mismatched: int = 0  # elements outside the tolerance
    numel: int = 0

    def as_dict(self) -> dict:
        return {"match": self.match, "rel_error": self.rel_error, "max_abs": self.max_abs, "reason": self.reason,
                "mean_abs": self.mean_abs, "non_finite": self.non_finite, "mismatched": self.mismatched,
                "numel": self.numel}


def tolerance(precision: str) -> float:
    return _TOL.get(precision, 1e-4)


def _finite_or_inf(x: float) -> float:
    return x if math.isfinite(x) else float("inf")


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: float) -> tuple[bool, float, float, float, dict]:
    """(allclose, max |out - ref|, ||out - ref||^2, ||ref||^2, counts), chunked, on the tensors' device.

    The match is ``torch.allclose(ref, out, atol=tol, rtol=tol)`` in the outputs' own
    floating dtype, as KernelBench computes it (equal values, infinities included,
    are close; NaN never is); the error norms accumulate in float64.  ``counts`` has
    the mismatched elements, the output's non-finite elements where the reference
    is finite, and the sum of the finite absolute errors.
    """
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    if not (o.is_floating_point() and o.dtype == r.dtype):
        o, r = o.to(torch.float64), r.to(torch.float64)
    ok, max_abs, num, den = True, 0.0, 0.0, 0.0
    counts = {"mismatched": 0, "non_finite": 0, "abs_sum": 0.0}
    for start in range(0, r.numel(), _CHUNK):
        oc, rc = o[start: start + _CHUNK], r[start: start + _CHUNK]
        d = (oc - rc).abs()
        d64 = d.to(torch.float64)
        # the chunk's scalars in one read from the device (one synchronisation, not four)
        m, sq, ref_sq, abs_sum = torch.stack([
            d.max().to(torch.float64), torch.dot(d64, d64),
            torch.linalg.vector_norm(rc, dtype=torch.float64) ** 2, d64.sum()]).tolist()
        if not m <= tol:  # only then can an element be outside tol + tol * |out| (NaN included)
            # as torch.isclose: equal values (infinities included) are close, and otherwise only a
            # finite error within tol + tol * |out| is (an infinite output is never close to a finite one)
            close = (oc == rc) | (torch.isfinite(d) & (d <= tol + tol * oc.abs()))
            bad = int((~close).sum())
            if bad:
                ok = False
                counts["mismatched"] += bad
        if not math.isfinite(m):  # a finite max error: no output element is non-finite where the reference is finite
            counts["non_finite"] += int((~torch.isfinite(oc) & torch.isfinite(rc)).sum())
        max_abs = max(max_abs, m if m == m else float("inf"))  # NaN counts as unbounded error
        num += sq  # inf or NaN errors make it inf or NaN, as a sum of squares does
        den += ref_sq
        counts["abs_sum"] += abs_sum if math.isfinite(m) else float(d64.nan_to_num(nan=0.0, posinf=0.0).sum())
    return ok, max_abs, num, den, counts


def compare(outputs: list, refs: list, precision: str) -> Comparison:
    tol = tolerance(precision)
    if len(outputs) != len(refs):
        return Comparison(False, float("inf"), float("inf"), f"{len(outputs)} outputs, expected {len(refs)}")
    worst_rel, worst_abs, ok = 0.0, 0.0, True
    mismatched = non_finite = numel = 0
    abs_sum = 0.0
    for out, ref in zip(outputs, refs):
        if not isinstance(out, torch.Tensor) or not isinstance(ref, torch.Tensor):
            if out != ref:
                return Comparison(False, float("inf"), float("inf"), "non-tensor output differs")
            continue
        if tuple(out.shape) != tuple(ref.shape):
            return Comparison(False, float("inf"), float("inf"),
                              f"shape {list(out.shape)}, expected {list(ref.shape)}")
        if ref.numel() == 0:
            continue
        close, max_abs, num, den, counts = compare_tensor(out, ref, tol)
        ok = ok and close
        mismatched += counts["mismatched"]
        non_finite += counts["non_finite"]
        abs_sum += counts["abs_sum"]
        numel += ref.numel()
        num, den = math.sqrt(num) if math.isfinite(num) else float("inf"), math.sqrt(den)
        rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
        worst_rel = max(worst_rel, _finite_or_inf(rel))
        worst_abs = max(worst_abs, _finite_or_inf(max_abs))
    return Comparison(ok, worst_rel, worst_abs, "" if ok else VALUES_DIFFER,
                      mean_abs=abs_sum / numel if numel else 0.0, non_finite=non_finite,
                      mismatched=mismatched, numel=numel)


def same_values(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not torch.equal(x.to(torch.float64), y.to(torch.float64)):
                return False
        elif x != y:
            return False
    return True
