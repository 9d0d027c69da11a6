"""Run-directory layout and crash-safe result files (upstream-compatible formats).

``runs/<run_name>/level_{L}_problem_{P}_sample_{S}_kernel.py`` hold candidates;
``eval_results.json`` (off mode) and ``verified_eval_results.json`` (hardened modes)
map the problem id (a string) to a list of per-sample records, sorted numerically.

Upstream rewrote the file in place after each batch; here every write goes to a
temporary file in the same directory followed by ``os.replace``, so a run killed at
any moment leaves either the old or the new complete file, never a torn one.
Resume works per (problem, sample), not per problem as upstream's check did.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write_json",
    "kernel_file_name",
    "load_results",
    "record_exists",
    "upsert_record",
]


def kernel_file_name(level: int, problem_id: int, sample_id: int) -> str:
    return f"level_{level}_problem_{problem_id}_sample_{sample_id}_kernel.py"


def atomic_write_json(path: str | os.PathLike, data: Any, indent: int = 4) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=indent)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_results(path: str | os.PathLike) -> dict[str, list[dict]]:
    path = Path(path)
    if not path.exists():
        return {}
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object keyed by problem id")
    return data


def record_exists(results: dict[str, list[dict]], problem_id: int, sample_id: int) -> bool:
    return any(r.get("sample_id") == sample_id for r in results.get(str(problem_id), []))


def _sorted(results: dict[str, list[dict]]) -> dict[str, list[dict]]:
    def key(k: str):
        return (0, int(k)) if k.isdigit() else (1, k)

    return {k: sorted(results[k], key=lambda r: r.get("sample_id", 0)) for k in sorted(results, key=key)}


def upsert_record(path: str | os.PathLike, problem_id: int, record: dict) -> dict[str, list[dict]]:
    """Insert or replace the record of ``(problem_id, record['sample_id'])`` atomically."""
    results = load_results(path)
    samples = [r for r in results.get(str(problem_id), []) if r.get("sample_id") != record.get("sample_id")]
    samples.append(record)
    results[str(problem_id)] = samples
    results = _sorted(results)
    atomic_write_json(path, results)
    return results
