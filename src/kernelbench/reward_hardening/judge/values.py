"""Pure helpers over the reference's values: perturbed input sets, output structure, sizes.

Runs in the judge (trusted).  No state: :mod:`.data` and :mod:`.worker` call these on
the hidden inputs and reference outputs they hold.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelbench.reward_hardening.ipc.framing import value_to_json
from kernelbench.reward_hardening.ipc.lending import dtype_name

__all__ = ["flat_outputs", "nbytes", "perturb", "structure_of"]


def structure_of(out: Any) -> dict:
    """Container kind and per-tensor meta of a reference output."""
    kind = "tensor" if isinstance(out, torch.Tensor) else ("tuple" if isinstance(out, tuple) else
                                                            "list" if isinstance(out, list) else "other")
    tensors = [out] if kind == "tensor" else (list(out) if kind in ("tuple", "list") else [])
    return {"container": kind, "outputs": [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)}
                                           if isinstance(t, torch.Tensor) else {"value": value_to_json(t)}
                                           for t in tensors]}


def flat_outputs(out: Any) -> list:
    """A result as a flat list: a tensor alone, a tuple's or list's items, or any other value alone."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def nbytes(obj: Any) -> int:
    """Bytes of the tensors in a value (a tensor, or a nested tuple/list of them)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(o) for o in obj)
    return 0


def _simplex_rows(v: torch.Tensor) -> bool:
    """Non-negative rows that sum to one (probabilities): the input of KL/NLL-style losses."""
    if v.dim() < 1 or v.shape[-1] < 2 or bool((v < 0).any()):
        return False
    s = v.double().sum(-1)
    return bool(((s - 1).abs() < 1e-3).all())


def perturb(values: list, kind: str, rng: torch.Generator) -> tuple[list, list[str]]:
    """A perturbed copy of an input set, keeping the problem's input contract.

    Zeros stay zero (triangular, masked and sparse inputs keep their structure), a
    non-negative input stays non-negative under ``heavy_tail`` (``heavy_tail_signed``
    gives every non-zero value a random sign), and probability rows
    (non-negative, summing to one) are left alone.  Returns the values and the reasons
    for every tensor that was left unchanged.
    """
    out, skipped = [], []
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 1:
            if _simplex_rows(v):
                skipped.append(f"input {i}: rows are probabilities (non-negative, summing to 1)")
            elif kind == "scale_up":
                v = v * 3.0
            elif kind == "scale_down":
                v = v * 0.01
            elif kind == "negate":
                v = -v
            elif kind in ("heavy_tail", "heavy_tail_signed"):  # Pareto-like magnitudes, zeros kept
                u = torch.rand(v.shape, generator=rng, device=v.device).clamp_min(1e-3)
                mag = (0.01 * u.pow(-1.0 / 1.5)).to(v.dtype)
                if kind == "heavy_tail_signed":  # random signs: sums cancel, relative errors show
                    flip = torch.rand(v.shape, generator=rng, device=v.device) < 0.5
                    sign = torch.where(flip, -1.0, 1.0).to(v.dtype) * (v != 0).to(v.dtype)
                elif bool((v < 0).any()):
                    sign = torch.sign(v)
                    flip = torch.rand(v.shape, generator=rng, device=v.device) < 0.5
                    sign = torch.where(flip, -sign, sign)
                else:
                    sign = (v != 0).to(v.dtype)
                v = mag * sign.to(v.dtype)
            elif kind == "shift":
                v = torch.where(v != 0, v + 0.5, v)
        out.append(v)
    return out, skipped
