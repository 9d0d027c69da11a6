"""Locating and reading an analysis's inputs (parent process, or any tool reading results).

Paths relative to the repository root, JSON files (:class:`AnalysisError` when one is
missing or malformed), the problem names of a local dataset level, the sample-0 record
of each problem, and the records of one configuration slot of a results file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

EVAL_RESULTS_NAME = "eval_results.json"
VERIFIED_RESULTS_NAME = "verified_eval_results.json"
#: Written by :mod:`kernelbench.passk`, read here.
PASS_AT_K_NAME = "pass_at_k_results.json"
BASELINE_ENVIRONMENT_NAME = "environment.json"  # written by generate_baseline_time.py beside the baseline

Warn = Callable[[str], None]


class AnalysisError(ValueError):
    """Inputs that cannot be analysed (missing or malformed files, empty dataset)."""


def repo_root() -> Path:
    """The source checkout this package lives in (``<repo>/src/kernelbench/..``)."""
    return Path(__file__).resolve().parents[3]


def resolve_repo_path(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """``~`` expanded; a relative path is taken relative to ``root`` (the repo root)."""
    p = Path(os.path.expanduser(str(path)))
    if p.is_absolute():
        return p
    return Path(root if root is not None else repo_root()) / p


def load_json_file(path: str | os.PathLike, what: str) -> Any:
    path = Path(path)
    try:
        with open(path) as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise AnalysisError(f"{what} does not exist: {path}") from None
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{what} is not valid JSON ({path}): {exc}") from None
    except OSError as exc:
        raise AnalysisError(f"cannot read {what} {path}: {exc}") from None


def load_problem_names(level: int, dataset_path: str | os.PathLike | None = None) -> dict[int, str]:
    """Problem id -> file name (with ``.py``) of the local dataset of ``level``.

    Upstream always uses the local dataset here (HF names lack ``.py`` and would not
    match the baseline).  ``dataset_path`` is passed to
    ``construct_kernelbench_dataset(level, source="local", base_path=...)``; None
    means the dataset module's default (``<repo>/KernelBench``), ``"demo"`` the
    bundled demo tasks.
    """
    from kernelbench.dataset import construct_kernelbench_dataset

    base = None if dataset_path is None else str(dataset_path)
    try:
        dataset = construct_kernelbench_dataset(level, source="local", base_path=base)
        names = {int(pid): str(dataset.get_problem_by_id(pid).name) for pid in dataset.get_problem_ids()}
    except (OSError, ValueError, KeyError) as exc:
        raise AnalysisError(f"cannot load the level {level} dataset ({base or 'default path'}): {exc}") from None
    if not names:
        raise AnalysisError(f"the level {level} dataset ({base or 'default path'}) has no problems")
    return names


def select_sample0(results: Any, source: str, warn: Warn | None = None) -> dict[int, dict]:
    """Problem id -> its ``sample_id == 0`` record (upstream: other samples are ignored).

    ``results`` is a parsed ``eval_results.json``-style object.  More than one
    sample-0 record for a problem is an error, as upstream's assert; a problem with
    none is simply absent from the returned mapping.
    """
    if not isinstance(results, Mapping):
        raise AnalysisError(f"{source}: expected a JSON object keyed by problem id")
    selected: dict[int, dict] = {}
    for key, samples in results.items():
        try:
            pid = int(str(key).strip())
        except ValueError:
            if warn:
                warn(f"{source}: ignoring non-numeric problem key {key!r}")
            continue
        if not isinstance(samples, list):
            raise AnalysisError(f"{source}: problem {key}: expected a list of sample records")
        zero = [r for r in samples if isinstance(r, Mapping) and _is_sample_zero(r.get("sample_id"))]
        if len(zero) > 1:
            raise AnalysisError(f"{source}: problem {key} has {len(zero)} records with sample_id 0")
        if zero:
            selected[pid] = dict(zero[0])
    return selected


def _is_sample_zero(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0


def results_slots(results: Any) -> list[tuple]:
    """The configuration slots (mode, policy, device) present in a parsed results file."""
    from kernelbench.runs import config_slot

    found = set()
    if isinstance(results, Mapping):
        for samples in results.values():
            if isinstance(samples, list):
                found.update(config_slot(r) for r in samples if isinstance(r, dict))
    return sorted(found, key=lambda t: tuple(str(x) for x in t))


def select_configuration(results: Any, source: str, mode: str | None = None, policy: str | None = None,
                         device: str | None = None) -> tuple[Any, tuple | None]:
    """The records of one configuration slot of a results file, and that slot.

    A batch results file keeps one record per (problem, sample, mode/policy/device);
    the keys given narrow the slots down, and exactly one must remain (a file with a
    single slot needs no keys).  Otherwise the error names the slots and the keys
    that choose them.
    """
    from kernelbench.runs import config_slot, slot_label

    if not isinstance(results, Mapping):
        return results, None
    slots = results_slots(results)
    want = [s for s in slots
            if (mode is None or s[0] == mode) and (policy is None or s[1] == policy)
            and (device is None or s[2] == str(device).split(":", 1)[0])]

    def keys(slot: tuple) -> str:
        out = [] if slot[0] == "off" else [f"reward_hardening_mode={slot[0]}", f"reward_hardening_policy={slot[1]}"]
        return " ".join(out + [f"device={slot[2]}"])

    if not slots:
        return results, None
    if not want:
        given = " ".join(f"{k}={v}" for k, v in (("reward_hardening_mode", mode), ("reward_hardening_policy", policy),
                                                  ("device", device)) if v is not None)
        raise AnalysisError(f"{source} has no records for {given}; it has: "
                            + "; ".join(f"{slot_label(s)} ({keys(s)})" for s in slots))
    if len(want) > 1:
        raise AnalysisError(f"{source} holds records of {len(want)} configurations; choose one with its keys: "
                            + "; ".join(keys(s) for s in want))
    slot = want[0]
    chosen = {k: [r for r in v if isinstance(r, dict) and config_slot(r) == slot] if isinstance(v, list) else v
              for k, v in results.items()}
    return chosen, slot
