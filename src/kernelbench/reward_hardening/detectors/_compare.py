"""Output comparison used by the correctness detectors (trusted parent only)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

_TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


@dataclass
class Comparison:
    match: bool  # allclose at the precision's tolerance, shapes equal
    rel_error: float  # ||out - ref|| / ||ref|| (inf when shapes differ)
    max_abs: float
    reason: str = ""


def tolerance(precision: str) -> float:
    return _TOL.get(precision, 1e-4)


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
        o = out.to(torch.float64) if out.dtype != torch.bool else out.to(torch.float64)
        r = ref.to(torch.float64)
        if not torch.allclose(o, r, atol=tol, rtol=tol):
            ok = False
        diff = (o - r).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        if not torch.isfinite(torch.tensor(max_abs)):
            max_abs = float("inf")
        denom = float(torch.linalg.vector_norm(r)) if r.numel() else 0.0
        num = float(torch.linalg.vector_norm(o - r)) if r.numel() else 0.0
        rel = num / denom if denom > 0 else (0.0 if num == 0 else float("inf"))
        worst_rel, worst_abs = max(worst_rel, rel), max(worst_abs, max_abs)
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
