"""The human lines printed after a batch: counts, findings, speedups (parent process).

:func:`summary_lines` describes the records of the batch's selection in one
configuration slot: integrity statuses, the most frequent finding codes, the samples
without a verified result and the in-run speedups with their bounds (hardened modes),
or compiled / correct counts (off mode).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kernelbench import runs

def summary_lines(results: dict[str, list[dict]], keys: list[tuple[int, int]], hardened: bool,
                  results_path: Path, top: int = 5, slot: tuple | None = None) -> list[str]:
    """A few human lines about the records of ``keys`` (the batch's selection) in ``slot``."""
    records = [r for r in (runs.find_record(results, p, s, slot) for p, s in keys) if r is not None]
    n = len(records)
    lines = [f"[eval] summary: {n} of {len(keys)} selected samples have a record"]
    if hardened:
        status = Counter(((r.get("reward_hardening") or {}).get("integrity_status") or "?") for r in records)
        order = ["PASS", "SUSPICIOUS", "FAIL", "UNSUPPORTED"]
        parts = [f"{k} {status[k]}" for k in order if status[k]] + \
                [f"{k} {v}" for k, v in status.items() if k not in order]
        lines.append("  integrity: " + (", ".join(parts) or "none"))
        codes = Counter()
        for r in records:
            codes.update({f.get("code") for f in (r.get("reward_hardening") or {}).get("findings", [])
                          if isinstance(f, dict) and f.get("code")})
        if codes:
            try:
                from kernelbench.reward_hardening.codes import CODES
            except Exception:  # pragma: no cover - summary must never fail the batch
                CODES = {}
            lines.append("  most frequent findings (samples):")
            for code, c in codes.most_common(top):
                info = CODES.get(code)
                lines.append(f"    {code} x{c}: {info.summary if info else '(unknown code)'}")
            rank = {"error": 0, "warning": 1, "info": 2}
            worst = min(((rank.get(str(f.get("severity")), 3), -codes[f.get("code")], f.get("code"))
                         for r in records for f in (r.get("reward_hardening") or {}).get("findings", [])
                         if isinstance(f, dict) and f.get("code")), default=None)
            if worst is not None:
                lines.append(f"    details: uv run kernelguard explain {worst[2]} (the most severe, then most frequent)")
        pytorch_only = sum(1 for r in records if _strict_pytorch_fail(r))
        if pytorch_only:
            lines.append(f"  note: {pytorch_only} of {n} samples FAIL under source_strict because they run "
                         "high-level PyTorch rather than a kernel of their own (RH-13/RH-31); that policy trusts "
                         "only custom kernels, reward_hardening_policy=practical accepts plain PyTorch")
        failed = [(k, r) for k, r in zip(keys, (runs.find_record(results, p, s) for p, s in keys))
                  if r is not None and (r.get("reward_hardening") or {}).get("integrity_status") != "PASS"]
        if failed:
            lines.append("  samples without a verified result:")
            for (p, s), r in failed[:top * 4]:
                lines.append(f"    problem {p} sample {s}: {_reason(r)}")
            if len(failed) > top * 4:
                lines.append(f"    ... and {len(failed) - top * 4} more (see the results file)")
        fast = [r for r in records if _verified_speedup(r) is not None]
        if fast:
            faster = sum(1 for r in fast if _verified_speedup(r) > 1.0)
            lines.append(f"  verified fast_1: {faster / n:.3f} ({faster} of {n} samples verified and faster than "
                         "the reference timed beside each of them, in this run)")
            lines.append("    (the analysis's verified_fast_p counts problems, sample 0 only, against the "
                         "baseline file's times: its figures can differ)")
        lines.extend(speedup_bound_lines(records))
    else:
        compiled = sum(1 for r in records if r.get("compiled"))
        correct = sum(1 for r in records if r.get("compiled") and r.get("correctness"))
        lines.append(f"  compiled {compiled}, correct {correct}, failed {n - correct}")
    lines.append(f"  results: {results_path}")
    return lines


def _strict_pytorch_fail(record: dict) -> bool:
    """A source_strict FAIL whose errors are only the PyTorch-fallback codes (an honest plain-PyTorch candidate)."""
    rh = record.get("reward_hardening") or {}
    if rh.get("policy") != "source_strict" or rh.get("integrity_status") != "FAIL":
        return False
    errors = {f.get("code") for f in rh.get("findings", []) if isinstance(f, dict) and f.get("severity") == "error"}
    return bool(errors) and errors <= {"RH-13", "RH-31"}


def _reason(record: dict) -> str:
    """``STATUS RH-NN: one line of evidence`` for the most severe finding of a record."""
    rh = record.get("reward_hardening") or {}
    status = rh.get("integrity_status", "?")
    rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted((f for f in rh.get("findings") or [] if isinstance(f, dict)),
                      key=lambda f: rank.get(f.get("severity"), 3))
    if not findings:
        missing = [n for n, c in (rh.get("capabilities") or {}).items()
                   if isinstance(c, dict) and c.get("required") and c.get("status") != "AVAILABLE"]
        return f"{status}" + (f": missing {', '.join(missing)}" if missing else "")
    from kernelbench.reward_hardening.findings import describe

    f = findings[0]
    return f"{status} {f.get('code')}: {describe(f) or f.get('summary', '')}"[:240]


def speedup_bound_lines(records: list[dict]) -> list[str]:
    """The in-run speedup with its lower bound, and the count of noisy samples (RH-54)."""
    bounds = [b for b in ((r.get("reward_hardening") or {}).get("speedup") for r in records)
              if isinstance(b, dict) and b.get("verified") and isinstance(b.get("lower_bound"), (int, float))]
    noisy = sum(1 for r in records if any(isinstance(f, dict) and f.get("code") == "RH-54"
                                          for f in (r.get("reward_hardening") or {}).get("findings", [])))
    out = []
    if bounds:
        level = bounds[0].get("level")
        claimed = sum(1 for b in bounds if b["lower_bound"] > 1.0)
        slower = sum(1 for b in bounds if b.get("upper_bound", 2.0) < 1.0)
        points = sorted(b["point"] for b in bounds)
        lcbs = sorted(b["lower_bound"] for b in bounds)
        out.append(f"  speedup (point estimate, lower bound at level {level}): median {points[len(points) // 2]:.3g}x "
                   f"(>= {lcbs[len(lcbs) // 2]:.3g}x); {claimed} of {len(bounds)} verified samples are faster "
                   f"by their lower bound, {slower} slower by their upper bound")
    if noisy:
        out.append(f"  timing noise: {noisy} of {len(records)} samples were timed with too much spread or on a busy "
                   f"machine (RH-54, info): their bounds are wide; rerun on an idle machine")
    return out


def _verified_speedup(record: dict) -> float | None:
    rh = record.get("reward_hardening") or {}
    t, ref = rh.get("verified_runtime"), rh.get("verified_reference_runtime")
    if not rh.get("verified") or not isinstance(t, (int, float)) or not isinstance(ref, (int, float)) or t <= 0:
        return None
    return ref / t
