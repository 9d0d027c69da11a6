"""pass@k of a batch run, per configuration (``runs/<run_name>/pass_at_k_results.json``).

Upstream writes one ``pass_at_k_results.json`` (``averages``, ``metadata``,
``problems``) whenever a run has more than one sample per problem.  Runs of one
``run_name`` under several configurations would overwrite each other's file, so
KernelGuard keeps one entry per configuration under ``configurations``, keyed by the
slot label (``enforce/practical/cpu``, ``off/cuda``), each naming the results file
it was computed from.  The top-level upstream fields hold the off-mode entry (CUDA
first), so upstream readers of the file see what upstream would have written;
a run without an off-mode entry has only ``configurations``.

In each entry, ``averages`` and the per-problem ``pass@k`` count a sample as
correct when its upstream fields say ``compiled`` and ``correctness``, exactly as
upstream does.  Under ``audit`` and ``enforce`` that correctness is the candidate's
observed behaviour, not a verdict, so those entries also carry
``verified_averages`` and per-problem ``verified_pass@k``: a sample counts there only
when it earned a verified runtime (integrity ``PASS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from kernelbench import runs
from kernelbench.analysis_parts.inputs import PASS_AT_K_NAME
from kernelbench.analysis_parts.records import counts_as_verified
from kernelbench.score import pass_at_k

__all__ = ["PASS_AT_K_NAME", "merge_pass_at_k", "pass_at_k_entry", "select_pass_at_k"]

_UPSTREAM_FIELDS = ("averages", "metadata", "problems")


def pass_at_k_entry(results: dict[str, list[dict]], slot: tuple, ks: Iterable[int], source: str) -> dict[str, Any]:
    """The pass@k entry of one configuration ``slot`` of a parsed results file."""
    ks = [int(k) for k in ks]
    mode, policy, device = slot
    hardened = mode != "off"
    problems: dict[str, dict] = {}
    totals = {k: [] for k in ks}
    vtotals = {k: [] for k in ks}
    n_samples = n_correct = n_verified = 0
    for pid, samples in results.items():
        mine = [r for r in samples if isinstance(r, dict) and runs.config_slot(r) == tuple(slot)]
        if not mine:
            continue
        n = len(mine)
        c = sum(1 for r in mine if r.get("compiled") and r.get("correctness"))
        n_samples += n
        n_correct += c
        entry: dict[str, Any] = {"total_samples": n, "correct_samples": c}
        for k in ks:
            entry[f"pass@{k}"] = pass_at_k(n, c, k)
            totals[k].append(entry[f"pass@{k}"])
        if hardened:
            v = sum(1 for r in mine if counts_as_verified(r))
            n_verified += v
            entry["verified_samples"] = v
            for k in ks:
                entry[f"verified_pass@{k}"] = pass_at_k(n, v, k)
                vtotals[k].append(entry[f"verified_pass@{k}"])
        problems[pid] = entry
    out: dict[str, Any] = {
        "source": source,
        "mode": mode,
        "policy": policy,
        "device": device,
        "correct_means": ("compiled and correctness true in the upstream fields"
                          + (" (observed, not integrity-checked; see verified_averages)" if hardened else "")),
        "averages": {f"avg_pass@{k}": (sum(v) / len(v) if v else 0.0) for k, v in totals.items()},
        "metadata": {"total_problems": len(problems), "problems_with_samples": len(problems),
                     "total_evaluated_samples": n_samples, "total_correct_samples": n_correct,
                     "pass@k_count": len(ks)},
        "problems": problems,
    }
    if hardened:
        out["verified_averages"] = {f"avg_verified_pass@{k}": (sum(v) / len(v) if v else 0.0)
                                    for k, v in vtotals.items()}
        out["metadata"]["total_verified_samples"] = n_verified
    return out


def _top_level(configurations: dict[str, dict]) -> dict[str, Any]:
    for label in ("off/cuda", "off/cpu", *sorted(configurations)):
        entry = configurations.get(label)
        if entry is not None and entry.get("mode") == "off":
            return {k: entry[k] for k in _UPSTREAM_FIELDS}
    return {}


def merge_pass_at_k(path: str | Path, entry: dict[str, Any]) -> dict[str, Any]:
    """Add or replace ``entry``'s configuration in the file at ``path``, keeping the others."""
    import json

    path = Path(path)
    label = runs.slot_label((entry["mode"], entry["policy"], entry["device"]))
    with runs.results_lock(path):
        data: dict[str, Any] = {}
        if path.exists():
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                data = {}
        configurations = data.get("configurations") if isinstance(data, dict) else None
        configurations = dict(configurations) if isinstance(configurations, dict) else {}
        configurations[label] = entry
        out = {**_top_level(configurations), "configurations": dict(sorted(configurations.items()))}
        runs.atomic_write_json(path, out)
    return out


def select_pass_at_k(data: Any, slot: tuple | None) -> dict | None:
    """The entry of ``slot`` in a parsed file (an upstream file without ``configurations``: its top level)."""
    if not isinstance(data, dict):
        return None
    configurations = data.get("configurations")
    if not isinstance(configurations, dict):  # upstream's (or an older version's) file: one unnamed entry
        return {k: data.get(k, {}) for k in ("metadata", "averages")}
    if slot is None:
        return None
    entry = configurations.get(runs.slot_label(slot))
    return entry if isinstance(entry, dict) else None
