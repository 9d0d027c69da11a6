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


@dataclass
class Comparison:
    match: bool  # allclose at the precision's tolerance, shapes equal
    rel_error: float  # ||out - ref|| / ||ref|| (inf when shapes differ)
    max_abs: float
    reason: str = ""

    def as_dict(self) -> dict:
        return {"match": self.match, "rel_error": self.rel_error, "max_abs": self.max_abs, "reason": self.reason}


def tolerance(precision: str) -> float:
    return _TOL.get(precision, 1e-4)


def _finite_or_inf(x: float) -> float:
    return x if math.isfinite(x) else float("inf")


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: float) -> tuple[bool, float, float, float]:
    """(allclose, max |out - ref|, ||out - ref||^2, ||ref||^2), chunked, on the tensors' device.

    The match is ``torch.allclose(ref, out, atol=tol, rtol=tol)`` in the outputs' own
    floating dtype, as KernelBench computes it (equal values, infinities included,
    are close; NaN never is); the error norms accumulate in float64.
    """
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    if not (o.is_floating_point() and o.dtype == r.dtype):
        o, r = o.to(torch.float64), r.to(torch.float64)
    ok, max_abs, num, den = True, 0.0, 0.0, 0.0
    for start in range(0, r.numel(), _CHUNK):
        oc, rc = o[start: start + _CHUNK], r[start: start + _CHUNK]
        d = (oc - rc).abs()
        if ok and not bool(((d <= tol + tol * oc.abs()) | (oc == rc)).all()):
            ok = False
        m = float(d.max())
        max_abs = max(max_abs, m if m == m else float("inf"))  # NaN counts as unbounded error
        num += float(d.to(torch.float64).square().sum())
        den += float(rc.to(torch.float64).square().sum())
    return ok, max_abs, num, den


def compare(outputs: list, refs: list, precision: str) -> Comparison:
    tol = tolerance(precision)
    if len(outputs) != len(refs):
        return Comparison(False, float("inf"), float("inf"), f"{len(outputs)} outputs, expected {len(refs)}")
    worst_rel, worst_abs, ok = 0.0, 0.0, True
    for out, ref in zip(outputs, refs):
        if not isinstance(out, torch.Tensor) or not isinstance(ref, torch.Tensor):
            if out != ref:
                return Comparison(False, float("inf"), float("inf"), "non-tensor output differs")
            continue
        if tuple(out.shape) != tuple(ref.shape):
            return Comparison(False, float("inf"), float("inf"),
                              f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        if ref.numel() == 0:
            continue
        close, max_abs, num, den = compare_tensor(out, ref, tol)
        ok = ok and close
        num, den = math.sqrt(num) if math.isfinite(num) else float("inf"), math.sqrt(den)
        rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
        worst_rel = max(worst_rel, _finite_or_inf(rel))
        worst_abs = max(worst_abs, _finite_or_inf(max_abs))
    return Comparison(ok, worst_rel, worst_abs, "" if ok else "values differ beyond tolerance")


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
