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


# elements per chunk of a perturbation's random draws: the temporaries stay at a few times
# 16 Mi elements whatever the input's size (a 6 GiB input would otherwise need ~30 GiB more)
_CHUNK = 1 << 24


def _simplex_rows(v: torch.Tensor) -> bool:
    """Non-negative rows that sum to one (probabilities): the input of KL/NLL-style losses.

    Reductions only, no copy of ``v``: a sum with another ``dtype`` would cast the whole
    input first (float32 to float64 doubles it), so the sums stay in the input's own
    float type (half and bfloat16 accumulate in float32 without a cast).
    """
    if v.dim() < 1 or v.shape[-1] < 2 or v.numel() == 0 or bool(v.amin() < 0):
        return False
    s = v.sum(-1, dtype=torch.float32) if v.dtype in (torch.float16, torch.bfloat16) else v.sum(-1)
    return bool(((s.double() - 1).abs() < 1e-3).all())


def _perturbed_tensor(v: torch.Tensor, kind: str, rng: torch.Generator) -> torch.Tensor:
    """A new tensor: ``v`` perturbed by ``kind``, computed chunk by chunk (bounded temporaries).

    The result is allocated where the caller allocates (the judge's lent pool); only it
    is input-sized.  The random draws are made per chunk of ``_CHUNK`` elements in order,
    so one seed gives the same values every time.
    """
    src = v.detach().contiguous().reshape(-1)
    out = torch.empty_like(src)
    negatives = kind == "heavy_tail" and bool(src.amin() < 0)  # the input's contract, decided once
    for start in range(0, src.numel(), _CHUNK):
        x, y = src[start: start + _CHUNK], out[start: start + _CHUNK]
        if kind == "scale_up":
            torch.mul(x, 3.0, out=y)
        elif kind == "scale_down":
            torch.mul(x, 0.01, out=y)
        elif kind == "negate":
            torch.neg(x, out=y)
        elif kind == "shift":
            torch.where(x != 0, x + 0.5, x, out=y)
        else:  # heavy_tail, heavy_tail_signed: Pareto-like magnitudes, zeros kept
            u = torch.rand(x.shape, generator=rng, device=x.device).clamp_min_(1e-3)
            y.copy_(u.pow_(-1.0 / 1.5).mul_(0.01))
            del u
            if kind == "heavy_tail_signed" or negatives:
                flip = torch.rand(x.shape, generator=rng, device=x.device) < 0.5
                # random signs on every non-zero value (signed), or the input's signs flipped at random
                sign = torch.where(flip, -1.0, 1.0).to(x.dtype)
                if kind == "heavy_tail_signed":
                    sign.mul_(x != 0)
                else:
                    sign.mul_(torch.sign(x))
                y.mul_(sign)
            else:
                y.mul_(x != 0)
    return out.view(v.shape)


def perturb(values: list, kind: str, rng: torch.Generator) -> tuple[list, list[str]]:
    """A perturbed copy of an input set, keeping the problem's input contract.

    Zeros stay zero (triangular, masked and sparse inputs keep their structure), a
    non-negative input stays non-negative under ``heavy_tail`` (``heavy_tail_signed``
    gives every non-zero value a random sign), and probability rows
    (non-negative, summing to one) are left alone.  Returns the values and the reasons
    for every tensor that was left unchanged.  Each perturbed tensor is computed in
    chunks: besides the result, the judge holds a few chunk-sized temporaries, never a
    multiple of the input.
    """
    out, skipped = [], []
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 1:
            if _simplex_rows(v):
                skipped.append(f"input {i}: rows are probabilities (non-negative, summing to 1)")
            elif kind in ("scale_up", "scale_down", "negate", "shift", "heavy_tail", "heavy_tail_signed"):
                v = _perturbed_tensor(v, kind, rng)
        out.append(v)
    return out, skipped
