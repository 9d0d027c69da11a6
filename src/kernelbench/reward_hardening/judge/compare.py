"""Output comparison (trusted side only: the judge on the device, or detectors in the parent).

The match rule is KernelBench's: ``torch.allclose(reference, output, atol=tol,
rtol=tol)`` with the precision's tolerance (fp32 1e-4, fp16/bf16 1e-2), shapes equal.
Comparisons run over fixed-size chunks of the flattened tensors, so an output of
several GiB is compared on its device with bounded temporaries: one pass for every
chunk's largest error and sums (rows summed in float32, the rows in float64), a second
only for chunks with an error above the tolerance or a value that is not finite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
_CHUNK = 1 << 22  # elements per float64 chunk of the exact pass (32 MiB per temporary)
_FAST_CHUNKS = 4  # exact chunks per chunk of the first pass (its one buffer: 16M elements)
_ROW = 2048  # elements one accumulator of the first pass adds (in float32 for float32 and half types)
_TINY = 1e-30  # a chunk's sum of squares below this is taken again in float64 (float32 squares underflow)


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


def _exact_chunk(oc: torch.Tensor, rc: torch.Tensor, tol: float) -> tuple[float, float, float, dict]:
    """One chunk's (max |out - ref|, ||out - ref||^2, ||ref||^2, counts), the error norms summed in float64."""
    d = (oc - rc).abs()
    d64 = d.to(torch.float64)
    # the chunk's scalars in one read from the device (one synchronisation, not four)
    m, sq, ref_sq, abs_sum = torch.stack([
        d.max().to(torch.float64), torch.dot(d64, d64),
        torch.linalg.vector_norm(rc, dtype=torch.float64) ** 2, d64.sum()]).tolist()
    counts = {"mismatched": 0, "non_finite": 0, "abs_sum": abs_sum}
    if not m <= tol:  # only then can an element be outside tol + tol * |out| (NaN included)
        # as torch.isclose: equal values (infinities included) are close, and otherwise only a
        # finite error within tol + tol * |out| is (an infinite output is never close to a finite one)
        close = (oc == rc) | (torch.isfinite(d) & (d <= tol + tol * oc.abs()))
        counts["mismatched"] = int((~close).sum())
    if not math.isfinite(m):  # a finite max error: no output element is non-finite where the reference is finite
        counts["non_finite"] = int((~torch.isfinite(oc) & torch.isfinite(rc)).sum())
        counts["abs_sum"] = float(d64.nan_to_num(nan=0.0, posinf=0.0).sum())
    return (m if m == m else float("inf")), sq, ref_sq, counts  # NaN counts as unbounded error


def _row_sum(x: torch.Tensor, acc: torch.dtype, square: bool) -> torch.Tensor:
    """Sum of ``x`` (of its squares when ``square``) as a float64 scalar on ``x``'s device.

    Each row of ``_ROW`` elements is summed in ``acc`` and the rows in float64: no
    float64 copy of ``x`` is made, and no single accumulator adds more than a row.
    """
    main = x.numel() // _ROW * _ROW
    parts = [x[:main].view(-1, _ROW), x[main:].view(1, -1)] if main < x.numel() else [x.view(-1, _ROW)]
    total = torch.zeros((), dtype=torch.float64, device=x.device)
    for p in parts:
        if p.numel():
            rows = torch.linalg.vector_norm(p, dim=1, dtype=acc) if square else p.sum(dim=1, dtype=acc)
            total = total + (rows.to(torch.float64).square().sum() if square else rows.to(torch.float64).sum())
    return total


def _common(o: torch.Tensor, r: torch.Tensor) -> torch.dtype | None:
    """The dtype both sides are compared in, chunk by chunk (``None``: their own, the same floating dtype).

    Two floating dtypes meet in the wider (a reduced-precision variant's half outputs against
    float32 references: the values widened, as a whole-tensor ``to`` would give); anything
    else (integers, booleans) in float64.
    """
    if o.is_floating_point() and r.is_floating_point():
        return None if o.dtype == r.dtype else torch.promote_types(o.dtype, r.dtype)
    return torch.float64


def _fast_stats(o: torch.Tensor, r: torch.Tensor) -> list[list[float]]:
    """Per chunk of ``_CHUNK * _FAST_CHUNKS`` elements: [max |out - ref|, ||out - ref||^2, ||ref||^2, sum |out - ref|].

    One pass over both tensors, the difference in one reused buffer, every row's sum in
    the outputs' own floating type (float32 for half types) and the rows' in float64,
    all chunks' values read from the device at once.  A chunk whose values need more
    (an error above the tolerance, a non-finite value, a row sum that overflowed) is
    read again by :func:`_exact_chunk`.
    """
    step = _CHUNK * _FAST_CHUNKS
    dtype = _common(o, r) or o.dtype
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    buf = torch.empty(min(step, o.numel()), dtype=dtype, device=o.device)
    rows = []
    for start in range(0, o.numel(), step):
        oc, rc = _chunk(o, r, start, start + step)
        d = torch.sub(oc, rc, out=buf[: oc.numel()]).abs_()
        rows.append(torch.stack([d.max().to(torch.float64), _row_sum(d, acc, True), _row_sum(rc, acc, True),
                                 _row_sum(d, acc, False)]))
    return torch.stack(rows).tolist()


def _chunk(o: torch.Tensor, r: torch.Tensor, a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Elements ``a:b`` of both sides in the dtype they are compared in (:func:`_common`)."""
    oc, rc = o[a:b], r[a:b]
    dtype = _common(o, r)
    return (oc, rc) if dtype is None else (oc.to(dtype), rc.to(dtype))


def _beyond(oc: torch.Tensor, rc: torch.Tensor, tol: float) -> int:
    """Elements whose (finite) error exceeds ``tol + tol * |out|``."""
    return int(((oc - rc).abs() > tol + tol * oc.abs()).sum())


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: float) -> tuple[bool, float, float, float, dict]:
    """(allclose, max |out - ref|, ||out - ref||^2, ||ref||^2, counts), chunked, on the tensors' device.

    The match is ``torch.allclose(ref, out, atol=tol, rtol=tol)`` in the outputs' own
    floating dtype (two different ones in the wider, other types in float64, converted a
    chunk at a time: no whole-tensor copy), as KernelBench computes it (equal values, infinities included,
    are close; NaN never is).  ``counts`` has the mismatched elements, the output's
    non-finite elements where the reference is finite, and the sum of the finite
    absolute errors.  A first pass (:func:`_fast_stats`) gives every chunk's maximum
    error and sums; a chunk is read again only where its maximum error is above ``tol``
    (to count the elements outside the tolerance), or a value is not finite, a sum
    overflowed or the values are too small for float32 squares (then with float64 sums,
    as every chunk was summed before: that read and wrote about twice the bytes and
    synchronised once per 4M elements).
    """
    o, r = out.detach(), ref.detach()
    if o.is_complex() or r.is_complex():  # real and imaginary parts both compared
        o, r = (torch.view_as_real(x.to(torch.promote_types(x.dtype, torch.complex64))) for x in (o, r))
    o, r = o.reshape(-1), r.reshape(-1)
    ok, max_abs, num, den = True, 0.0, 0.0, 0.0
    counts = {"mismatched": 0, "non_finite": 0, "abs_sum": 0.0}
    step = _CHUNK * _FAST_CHUNKS
    for i, (m, sq, ref_sq, s) in enumerate(_fast_stats(o, r) if r.numel() else []):
        end = min((i + 1) * step, r.numel())
        spans = [(a, min(a + _CHUNK, end)) for a in range(i * step, end, _CHUNK)]
        if not all(math.isfinite(x) for x in (m, sq, ref_sq, s)) or ref_sq < _TINY or (m > 0 and sq < _TINY):
            # a non-finite value, an overflowed row, or values so small that their float32
            # squares lose precision (below about 1e-19): read again with float64 sums
            parts = [_exact_chunk(*_chunk(o, r, a, b), tol) for a, b in spans]
        else:  # every error finite: an element is close exactly when within tol + tol * |out|
            bad = 0 if m <= tol else sum(_beyond(*_chunk(o, r, a, b), tol) for a, b in spans)
            parts = [(m, sq, ref_sq, {"mismatched": bad, "non_finite": 0, "abs_sum": s})]
        for m, sq, ref_sq, c in parts:
            ok = ok and c["mismatched"] == 0
            max_abs = max(max_abs, m)
            num += sq  # inf or NaN errors make it inf or NaN, as a sum of squares does
            den += ref_sq
            for k in counts:
                counts[k] += c[k]
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
            wide = torch.complex128 if x.is_complex() or y.is_complex() else torch.float64  # both parts
            if x.shape != y.shape or not torch.equal(x.to(wide), y.to(wide)):
                return False
        elif x != y:
            return False
    return True
