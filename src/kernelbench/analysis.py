"""Run analysis: upstream fast_p next to the integrity-checked verified_fast_p.

Used by ``scripts/benchmark_eval_analysis.py`` and by the tests.  Two metric
families are computed side by side and never mixed:

Upstream metrics (exactly as KernelBench's ``benchmark_eval_analysis.py``)
    Only the record with ``sample_id == 0`` of each problem is used (more than one
    such record is an error); dataset problems without one count as not compiled,
    incorrect, runtime ``-1.0``.  Problems are aligned with the baseline JSON by file
    name under ``level{L}``; problems missing from the baseline (absent, ``null`` or
    without a numeric ``mean``) are skipped with a warning and ``n`` is the number
    aligned.  ``fast_p`` uses :func:`kernelbench.score.fastp` on the upstream fields
    ``correctness`` and ``runtime``.  They come from ``eval_results.json``; only when
    that file is absent are they read from the same upstream fields of
    ``verified_eval_results.json`` (``fast_p_source`` says which).

Verified metrics (only when a verified results file exists)
    A problem counts only if its sample-0 record's ``reward_hardening`` block has
    ``integrity_status == "PASS"``, a positive finite ``verified_runtime`` (ms), and
    does not contradict itself (``verified`` / ``verified_correctness`` not
    ``false``).  Its speedup is ``baseline mean / verified_runtime``; everything
    else (FAIL, SUSPICIOUS, UNSUPPORTED, missing records or blocks) contributes
    nothing.  ``verified_fast_p`` uses the same aligned problems, the same
    denominator ``n`` and the same strict ``> p`` thresholds as ``fast_p``, so the
    two columns are directly comparable and ``verified_fast_p <= fast_p`` whenever
    both come from the same candidates.

Baseline checks
    A speedup is only meaningful against a baseline of the same machine and problem
    set.  :func:`baseline_mismatches` compares the baseline entries' ``hardware`` /
    ``device`` (or the ``environment.json`` beside the baseline) with the records'
    ``metadata.hardware`` / ``metadata.device``, and the baseline's problems and demo
    scale with the dataset of the analysis; every mismatch is a warning and is listed
    under ``baseline_warnings`` in the result.  The shipped
    ``results/timing/H200/`` baselines were measured on an NVIDIA H200 on the bundled
    demo set at ``KERNELBENCH_DEMO_SCALE=64``.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping

from kernelbench.score import fastp, geometric_mean_speed_ratio_correct_only

__all__ = [
    "AnalysisError",
    "FAST_P_THRESHOLDS",
    "INTEGRITY_STATUSES",
    "MISSING_STATUS",
    "TOP_FINDING_CODES_LIMIT",
    "align_with_baseline",
    "analyze_run",
    "analyze_run_files",
    "baseline_mismatches",
    "counts_as_verified",
    "fast_p_key",
    "format_report",
    "integrity_status_of",
    "level_baseline_means",
    "load_json_file",
    "load_problem_names",
    "pass_at_k_block",
    "default_plot_path",
    "parse_plot_option",
    "plot_fast_p",
    "repo_root",
    "resolve_repo_path",
    "select_sample0",
]

FAST_P_THRESHOLDS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
INTEGRITY_STATUSES: tuple[str, ...] = ("PASS", "FAIL", "SUSPICIOUS", "UNSUPPORTED")
MISSING_STATUS = "MISSING"
TOP_FINDING_CODES_LIMIT = 10

EVAL_RESULTS_NAME = "eval_results.json"
VERIFIED_RESULTS_NAME = "verified_eval_results.json"
PASS_AT_K_NAME = "pass_at_k_results.json"
BASELINE_ENVIRONMENT_NAME = "environment.json"  # written by generate_baseline_time.py beside the baseline

Warn = Callable[[str], None]


class AnalysisError(ValueError):
    """Inputs that cannot be analysed (missing or malformed files, empty dataset)."""


# ----------------------------------------------------------------------------- paths


def repo_root() -> Path:
    """The source checkout this package lives in (``<repo>/src/kernelbench/..``)."""
    return Path(__file__).resolve().parents[2]


def resolve_repo_path(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """``~`` expanded; a relative path is taken relative to ``root`` (the repo root)."""
    p = Path(os.path.expanduser(str(path)))
    if p.is_absolute():
        return p
    return Path(root if root is not None else repo_root()) / p


SPEEDUP_STATISTICS = ("lcb", "mean")


def fast_p_key(p: float) -> str:
    """JSON key of a threshold, as upstream writes it: ``str(float(p))``."""
    return str(float(p))


# ----------------------------------------------------------------------------- loading


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


def _is_sample_zero(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0


def _flag(value: Any) -> bool:
    """Upstream compares ``== True``; strings such as ``"false"`` are not true."""
    return value is True or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 1)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _runtime(record: Mapping | None) -> float:
    value = _number(record.get("runtime")) if record else None
    return -1.0 if value is None else value


def level_baseline_means(baseline: Any, level: int, source: str = "baseline") -> dict[str, float | None]:
    """File name -> baseline ``mean`` (ms) under ``level{L}``; None for unusable entries.

    A JSON ``null`` entry (a failed baseline measurement) or one without a finite
    numeric ``mean`` maps to None and is later treated as missing.
    """
    if not isinstance(baseline, Mapping):
        raise AnalysisError(f"{source}: expected a JSON object with level keys")
    key = f"level{level}"
    section = baseline.get(key)
    if section is None:
        raise AnalysisError(f"{source}: no '{key}' section (found: {', '.join(map(str, baseline)) or 'none'})")
    if not isinstance(section, Mapping):
        raise AnalysisError(f"{source}: '{key}' is not an object")
    means: dict[str, float | None] = {}
    for name, entry in section.items():
        mean = _number(entry.get("mean")) if isinstance(entry, Mapping) else None
        means[str(name)] = mean
    return means


def align_with_baseline(
    problem_names: Mapping[int, str], baseline_means: Mapping[str, float | None], warn: Warn | None = None
) -> list[tuple[int, str, float]]:
    """``(pid, name, baseline_mean)`` for each problem with a usable baseline, by pid."""
    aligned: list[tuple[int, str, float]] = []
    for pid in sorted(problem_names):
        name = problem_names[pid]
        if name not in baseline_means:
            if warn:
                warn(f"problem {pid} ({name}) is not in the baseline; skipped")
            continue
        mean = baseline_means[name]
        if mean is None:
            if warn:
                warn(f"problem {pid} ({name}) has a null or non-numeric baseline entry; skipped")
            continue
        aligned.append((pid, name, mean))
    return aligned


# ----------------------------------------------------------------------------- integrity


def integrity_status_of(record: Mapping | None) -> str:
    """The record's ``reward_hardening.integrity_status``, or ``MISSING`` when it has none."""
    if not isinstance(record, Mapping):
        return MISSING_STATUS
    block = record.get("reward_hardening")
    if not isinstance(block, Mapping):
        return MISSING_STATUS
    status = block.get("integrity_status")
    if not isinstance(status, str) or not status.strip():
        return MISSING_STATUS
    return status.strip()


def _verified_runtime(record: Mapping | None) -> float | None:
    """The trusted runtime (ms) if the record counts for verified metrics, else None."""
    if integrity_status_of(record) != "PASS":
        return None
    block = record["reward_hardening"]  # type: ignore[index]
    if block.get("verified") is False or block.get("verified_correctness") is False:
        return None
    runtime = _number(block.get("verified_runtime"))
    if runtime is None or runtime <= 0:
        return None
    return runtime


def counts_as_verified(record: Mapping | None) -> bool:
    """PASS, a positive finite ``verified_runtime``, and no ``verified``/``verified_correctness`` false."""
    return _verified_runtime(record) is not None


def _finding_codes(record: Mapping | None) -> set[str]:
    if not isinstance(record, Mapping):
        return set()
    block = record.get("reward_hardening")
    findings = block.get("findings") if isinstance(block, Mapping) else None
    if not isinstance(findings, list):
        return set()
    return {
        str(f["code"]) for f in findings if isinstance(f, Mapping) and isinstance(f.get("code"), str) and f["code"]
    }


# ----------------------------------------------------------------------------- baseline checks


def _device_kind(device: Any) -> str | None:
    text = str(device).strip().lower() if isinstance(device, str) else ""
    return text.split(":", 1)[0] or None


def _baseline_hardware(baseline: Any, level: int, environment: Mapping | None) -> list[str]:
    """Hardware names the baseline's ``level{L}`` entries were measured on."""
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    names = {str(e["hardware"]) for e in (section or {}).values()
             if isinstance(e, Mapping) and isinstance(e.get("hardware"), str) and e["hardware"]}
    if not names and isinstance(environment, Mapping) and isinstance(environment.get("gpu"), str):
        names = {environment["gpu"]}
    return sorted(names)


def baseline_mismatches(
    baseline: Any,
    level: int,
    records: list[Mapping],
    problem_names: Mapping[int, str],
    baseline_means: Mapping[str, float | None],
    environment: Mapping | None = None,
    dataset_is_demo: bool | None = None,
) -> list[str]:
    """One message per way the baseline does not fit the run (empty when it fits).

    * hardware: the records' ``metadata.hardware`` (or their device kind, ``cuda`` /
      ``cpu``) differs from the baseline entries' (or ``environment.json``'s);
    * problem set: dataset problems the baseline does not list, a demo-set baseline
      (``environment.json`` has ``demo_scale``) used with another dataset, or a demo
      scale other than this process's ``KERNELBENCH_DEMO_SCALE``.
    """
    out: list[str] = []
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    entries = [e for e in (section or {}).values() if isinstance(e, Mapping)]
    base_hw = set(_baseline_hardware(baseline, level, environment))
    base_dev = {k for k in (_device_kind(e.get("device")) for e in entries) if k}
    if not base_dev and isinstance(environment, Mapping):
        base_dev = {k for k in [_device_kind(environment.get("device"))] if k}
    meta = [r.get("metadata") for r in records if isinstance(r, Mapping)]
    meta = [m for m in meta if isinstance(m, Mapping)]
    run_hw = {str(m["hardware"]) for m in meta if isinstance(m.get("hardware"), str) and m["hardware"]}
    run_dev = {k for k in (_device_kind(m.get("device")) for m in meta) if k}
    hw_differs = bool(base_hw and run_hw and not run_hw <= base_hw)
    dev_differs = bool(base_dev and run_dev and not run_dev <= base_dev)
    if hw_differs or dev_differs:
        def side(hw: set[str], dev: set[str]) -> str:
            return ", ".join(sorted(hw) or ["unknown hardware"]) + (f" ({', '.join(sorted(dev))})" if dev else "")

        out.append(f"the baseline was measured on {side(base_hw, base_dev)} but the run's records were evaluated "
                   f"on {side(run_hw, run_dev)}: speedups compare different machines; measure a baseline on "
                   f"this machine with scripts/generate_baseline_time.py")

    absent = [name for name in problem_names.values() if name not in baseline_means]
    if absent:
        out.append(f"{len(absent)} of {len(problem_names)} problems of the level {level} dataset are not in the "
                   f"baseline (for example {absent[0]}): the baseline was measured on another problem set")
    scale = environment.get("demo_scale") if isinstance(environment, Mapping) else None
    if scale is not None:
        if dataset_is_demo is False:
            out.append(f"the baseline was measured on the bundled demo task set (KERNELBENCH_DEMO_SCALE={scale}), "
                       f"but this analysis uses another dataset")
        elif dataset_is_demo:
            here = os.environ.get("KERNELBENCH_DEMO_SCALE", "1")
            if str(scale).strip() != here.strip():
                out.append(f"the baseline was measured on the demo set at KERNELBENCH_DEMO_SCALE={scale}, this "
                           f"process has KERNELBENCH_DEMO_SCALE={here}: problem sizes differ unless the run was "
                           f"evaluated at the baseline's scale")
    return out


# ----------------------------------------------------------------------------- metrics


def pass_at_k_block(data: Any) -> dict | None:
    """Upstream's ``pass_at_k`` output entry: ``{metadata, averages}`` of pass_at_k_results.json."""
    if not isinstance(data, Mapping):
        return None
    block = {"metadata": data.get("metadata", {}), "averages": data.get("averages", {})}
    for key in ("verified_averages", "source", "mode", "policy", "device", "correct_means"):
        if key in data:
            block[key] = data[key]
    return block


def analyze_run(
    *,
    run_name: str,
    level: int,
    hardware: str,
    baseline: str,
    problem_names: Mapping[int, str],
    baseline_results: Any,
    eval_results: Any | None = None,
    verified_results: Any | None = None,
    pass_at_k_results: Any | None = None,
    baseline_environment: Mapping | None = None,
    dataset_is_demo: bool | None = None,
    warn: Warn | None = None,
    configuration: Mapping | None = None,
    speedup_statistic: str = "lcb",
) -> dict[str, Any]:
    """Compute the analysis dictionary from already-parsed inputs (no file access).

    ``speedup_statistic``: ``lcb`` (default) counts a verified problem in
    ``verified_fast_p`` at the baseline speedup scaled by the record's
    ``lower_bound / point`` (the in-run bound's relative width), so a speedup the
    bound does not support is not counted; ``mean`` uses the verified runtime alone.
    Records without a bound (older records) count at their mean in either case and
    are counted in ``records_without_bound``.

    ``eval_results`` drives the upstream metrics; when it is None they are taken
    from the upstream fields of ``verified_results``.  Verified keys are present
    only when ``verified_results`` is given.  ``baseline_environment`` (the
    ``environment.json`` beside the baseline) and ``dataset_is_demo`` (None:
    unknown) feed :func:`baseline_mismatches`.
    """
    if eval_results is None and verified_results is None:
        raise AnalysisError("no results to analyse (neither eval nor verified results)")
    if not problem_names:
        raise AnalysisError(f"the level {level} dataset has no problems")
    problem_ids = sorted(problem_names)
    known = set(problem_ids)

    upstream_source = EVAL_RESULTS_NAME if eval_results is not None else VERIFIED_RESULTS_NAME
    upstream_raw = eval_results if eval_results is not None else verified_results
    upstream = select_sample0(upstream_raw, upstream_source, warn)
    verified = select_sample0(verified_results, VERIFIED_RESULTS_NAME, warn) if verified_results is not None else None

    for source, selected in ((upstream_source, upstream), (VERIFIED_RESULTS_NAME, verified)):
        extra = sorted(set(selected or {}) - known)
        if extra and warn:
            warn(f"{source}: problem ids not in the level {level} dataset are ignored: {extra}")

    # Rates over the dataset, missing problems filled as not compiled / incorrect / -1.
    total_count = len(problem_ids)
    total_eval = sum(1 for pid in problem_ids if pid in upstream)
    compiled_count = sum(1 for pid in problem_ids if _flag(upstream.get(pid, {}).get("compiled")))
    correct_count = sum(1 for pid in problem_ids if _flag(upstream.get(pid, {}).get("correctness")))

    means = level_baseline_means(baseline_results, level, "baseline")
    aligned = align_with_baseline(problem_names, means, warn)
    n = len(aligned)
    baseline_speed = [mean for _, _, mean in aligned]
    is_correct = [_flag(upstream.get(pid, {}).get("correctness")) for pid, _, _ in aligned]
    actual_speed = [_runtime(upstream.get(pid)) for pid, _, _ in aligned]

    result: dict[str, Any] = {
        "run_name": run_name,
        "level": level,
        "hardware": hardware,
        "baseline": baseline,
        "total_count": total_count,
        "total_eval": total_eval,
        "compiled_count": compiled_count,
        "correct_count": correct_count,
        "compilation_rate": compiled_count / total_count,
        "correctness_rate": correct_count / total_count,
        "geo_mean_speedup": geometric_mean_speed_ratio_correct_only(is_correct, baseline_speed, actual_speed, n),
        "fast_p": {fast_p_key(p): fastp(is_correct, baseline_speed, actual_speed, n, p) for p in FAST_P_THRESHOLDS},
        "aligned_count": n,
        "fast_p_source": upstream_source,
    }
    if configuration is not None:
        result["configuration"] = dict(configuration)
    records = [r for sel in (upstream, verified or {}) for pid, r in sel.items() if pid in known]
    mismatches = baseline_mismatches(baseline_results, level, records, problem_names, means,
                                     baseline_environment, dataset_is_demo)
    for message in mismatches:
        if warn:
            warn(message)
    result["baseline_hardware"] = _baseline_hardware(baseline_results, level, baseline_environment)
    result["baseline_warnings"] = mismatches
    if pass_at_k_results is not None:
        block = pass_at_k_block(pass_at_k_results)
        if block is not None:
            result["pass_at_k"] = block
        elif warn:
            warn(f"{PASS_AT_K_NAME} is not a JSON object; ignored")

    if verified is not None:
        if speedup_statistic not in SPEEDUP_STATISTICS:
            raise AnalysisError(f"speedup_statistic must be one of {', '.join(SPEEDUP_STATISTICS)}, "
                                f"got {speedup_statistic!r}")
        result.update(_verified_metrics(problem_ids, verified, aligned, speedup_statistic))
        if speedup_statistic == "lcb" and result["records_without_bound"] and warn:
            warn(f"{result['records_without_bound']} verified record(s) carry no speedup bound (written before "
                 f"interleaved timing): verified_fast_p counts them at their mean")
        method = timing_method_mismatch(baseline_results, level, baseline_environment)
        result["timing_method_warning"] = method
        if method and warn:
            warn(method)
    result["per_problem"] = _per_problem(problem_names, means, upstream, upstream_raw, verified, verified_results)
    return result


def _std(stats: Any) -> float | None:
    return _number(stats.get("std")) if isinstance(stats, Mapping) else None


def _samples_of(raw: Any, pid: int) -> int:
    if not isinstance(raw, Mapping):
        return 0
    samples = raw.get(str(pid))
    return sum(1 for r in samples if isinstance(r, Mapping)) if isinstance(samples, list) else 0


def _per_problem(problem_names: Mapping[int, str], means: Mapping[str, float | None], upstream: Mapping[int, dict],
                 upstream_raw: Any, verified: Mapping[int, dict] | None, verified_raw: Any) -> list[dict[str, Any]]:
    """One row per dataset problem: samples, sample 0's runtimes and spread, baseline, speedups.

    Runtimes are in ms; ``spread`` is the standard deviation of the timed trials (of
    the verified runtime when there is one, else of the upstream runtime).
    ``speedup`` is baseline / upstream runtime of a correct sample 0;
    ``verified_speedup`` baseline / verified runtime, only for a verified sample 0.
    """
    rows = []
    for pid in sorted(problem_names):
        name = problem_names[pid]
        base = means.get(name)
        rec = upstream.get(pid)
        runtime = _runtime(rec) if rec else None
        runtime = runtime if runtime is not None and runtime > 0 else None
        correct = _flag((rec or {}).get("correctness"))
        row: dict[str, Any] = {
            "problem_id": pid,
            "name": name,
            "samples": _samples_of(upstream_raw, pid),
            "correct": correct,
            "runtime": runtime,
            "spread": _std((rec or {}).get("runtime_stats")),
            "baseline": base,
            "speedup": base / runtime if base and runtime and correct else None,
        }
        if verified is not None:
            vrec = verified.get(pid)
            vt = _verified_runtime(vrec)
            row["integrity_status"] = integrity_status_of(vrec)
            row["verified_runtime"] = vt
            row["verified_speedup"] = base / vt if base and vt else None
            b = speedup_bound(vrec) if vt is not None else None
            row["inrun_speedup"] = b["point"] if b else None
            row["inrun_speedup_lcb"] = b["lower_bound"] if b else None
            if vt is not None:
                row["spread"] = _std(vrec["reward_hardening"].get("verified_runtime_stats"))  # type: ignore[index]
            row["samples"] = _samples_of(verified_raw, pid) or row["samples"]
        rows.append(row)
    return rows


def speedup_bound(record: Mapping | None) -> dict | None:
    """The record's in-run ``reward_hardening.speedup`` block, when it is well-formed."""
    rh = record.get("reward_hardening") if isinstance(record, Mapping) else None
    b = rh.get("speedup") if isinstance(rh, Mapping) else None
    if not isinstance(b, Mapping):
        return None
    point, lcb = _number(b.get("point")), _number(b.get("lower_bound"))
    if point is None or lcb is None or point <= 0 or lcb <= 0:
        return None
    return dict(b)


def _bound_runtime(record: Mapping | None, runtime: float | None) -> tuple[float | None, bool]:
    """The runtime the ``lcb`` statistic counts: ``runtime * point / lower_bound``; and whether a bound existed."""
    if runtime is None:
        return None, True
    b = speedup_bound(record)
    if b is None:
        return runtime, False
    return runtime * max(1.0, b["point"] / b["lower_bound"]), True


def timing_method_mismatch(baseline: Any, level: int, environment: Mapping | None) -> str:
    """The warning that the baseline and the hardened records were timed by different methods.

    ``generate_baseline_time.py`` times with upstream's methods (its ``timing_method``,
    recorded in ``environment.json``), the hardened path with its own timed call:
    the message names the baseline's method.
    """
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    methods = {str(e.get("timing_method")) for e in (section or {}).values()
               if isinstance(e, Mapping) and e.get("timing_method")}
    if isinstance(environment, Mapping) and environment.get("timing_method"):
        methods.add(str(environment["timing_method"]))
    what = ", ".join(sorted(methods)) if methods else "an unrecorded method"
    return (f"the baseline was timed by {what} (scripts/generate_baseline_time.py: the same inputs every call, "
            f"in one process), the hardened records by KernelGuard's timed call (L2 flush and launch hold "
            f"before each call, a fresh input set per call, the candidate in its own worker): the two can differ "
            f"by more than any speedup, so verified speedups against this baseline are not like for like; the "
            f"records' in-run speedup and its bound compare the candidate with the reference timed beside it")


def _verified_metrics(
    problem_ids: list[int], verified: Mapping[int, dict], aligned: list[tuple[int, str, float]],
    speedup_statistic: str = "lcb",
) -> dict[str, Any]:
    n = len(aligned)
    baseline_speed = [mean for _, _, mean in aligned]
    runtimes = [_verified_runtime(verified.get(pid)) for pid, _, _ in aligned]
    is_verified = [r is not None for r in runtimes]
    without_bound = 0
    if speedup_statistic == "lcb":
        bounded = [_bound_runtime(verified.get(pid), r) for (pid, _, _), r in zip(aligned, runtimes)]
        without_bound = sum(1 for r, has in bounded if r is not None and not has)
        runtimes = [r for r, _ in bounded]
    verified_speed = [r if r is not None else -1.0 for r in runtimes]

    status_counts: Counter[str] = Counter({s: 0 for s in (*INTEGRITY_STATUSES, MISSING_STATUS)})
    codes: Counter[str] = Counter()
    verified_count = 0
    for pid in problem_ids:
        record = verified.get(pid)
        status_counts[integrity_status_of(record)] += 1
        codes.update(_finding_codes(record))
        verified_count += counts_as_verified(record)
    ordered_status = {s: status_counts[s] for s in (*INTEGRITY_STATUSES, MISSING_STATUS)}
    ordered_status.update({s: c for s, c in sorted(status_counts.items()) if s not in ordered_status})
    top = sorted(codes.items(), key=lambda item: (-item[1], item[0]))[:TOP_FINDING_CODES_LIMIT]

    return {
        "verified_count": verified_count,
        "verified_rate": verified_count / len(problem_ids),
        "verified_geo_mean_speedup": geometric_mean_speed_ratio_correct_only(
            is_verified, baseline_speed, verified_speed, n
        ),
        "verified_fast_p": {
            fast_p_key(p): fastp(is_verified, baseline_speed, verified_speed, n, p) for p in FAST_P_THRESHOLDS
        },
        "integrity_status_counts": ordered_status,
        "top_finding_codes": [{"code": code, "count": count} for code, count in top],
        "speedup_statistic": speedup_statistic,
        "records_without_bound": without_bound,
    }


def analyze_run_files(
    *,
    run_name: str,
    level: int,
    hardware: str,
    baseline: str,
    baseline_file: str | os.PathLike | None = None,
    verified_eval_file: str | os.PathLike | None = None,
    eval_results_dir: str | os.PathLike | None = None,
    dataset_path: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
    warn: Warn | None = None,
    mode: str | None = None,
    policy: str | None = None,
    device: str | None = None,
    speedup_statistic: str = "lcb",
) -> dict[str, Any]:
    """Locate and load a run's files, then :func:`analyze_run`.

    ``mode``, ``policy`` and ``device`` choose the configuration whose records are
    analysed (:func:`select_configuration`): the verified metrics come from that
    slot of the verified results, the upstream metrics from ``eval_results.json``
    (its records of ``device``) or, when that file is absent or ``mode`` names a
    hardened mode, from the upstream fields of the same verified records.

    Relative paths are resolved against ``root`` (default: the repo root), never the
    working directory.  Defaults: results in ``<root>/runs/<run_name>/``, baseline
    ``<root>/results/timing/<hardware>/<baseline>.json``, verified results
    ``<run dir>/verified_eval_results.json`` (an explicit ``verified_eval_file``
    must exist).  At least one of the two results files must exist.
    """
    root = Path(root) if root is not None else repo_root()
    runs_dir = resolve_repo_path(eval_results_dir, root) if eval_results_dir is not None else root / "runs"
    run_dir = runs_dir / str(run_name)
    baseline_path = (
        resolve_repo_path(baseline_file, root)
        if baseline_file is not None
        else root / "results" / "timing" / str(hardware) / f"{baseline}.json"
    )
    eval_path = run_dir / EVAL_RESULTS_NAME
    if verified_eval_file is not None:
        verified_path = resolve_repo_path(verified_eval_file, root)
        if not verified_path.is_file():
            raise AnalysisError(f"verified results file does not exist: {verified_path}")
    else:
        verified_path = run_dir / VERIFIED_RESULTS_NAME

    has_eval, has_verified = eval_path.is_file(), verified_path.is_file()
    if not has_eval and not has_verified:
        raise AnalysisError(f"no {EVAL_RESULTS_NAME} or {VERIFIED_RESULTS_NAME} in {run_dir}")
    eval_results = load_json_file(eval_path, "eval results") if has_eval else None
    verified_results = load_json_file(verified_path, "verified eval results") if has_verified else None
    if mode == "off":
        if eval_results is None:
            raise AnalysisError(f"reward_hardening_mode=off: no {EVAL_RESULTS_NAME} in {run_dir}")
        verified_results = None
    elif mode is not None and verified_results is None:
        raise AnalysisError(f"reward_hardening_mode={mode}: no {VERIFIED_RESULTS_NAME} in {run_dir}")
    verified_slot = off_slot = None
    if verified_results is not None:
        verified_results, verified_slot = select_configuration(verified_results, VERIFIED_RESULTS_NAME, mode,
                                                               policy, device)
    if eval_results is not None:
        off_device = device if device is not None else (verified_slot[2] if verified_slot else None)
        try:
            eval_results, off_slot = select_configuration(eval_results, EVAL_RESULTS_NAME, "off", None, off_device)
        except AnalysisError:
            if verified_results is None:
                raise
            eval_results = None  # no off-mode records on the verified records' device
    baseline_results = load_json_file(baseline_path, "baseline file")

    pass_at_k_path = run_dir / PASS_AT_K_NAME
    pass_at_k_results = None
    if pass_at_k_path.is_file():
        try:
            from kernelbench.passk import select_pass_at_k

            raw = load_json_file(pass_at_k_path, "pass@k results")
            pass_at_k_results = select_pass_at_k(raw, verified_slot or off_slot)
        except AnalysisError as exc:
            if warn:
                warn(f"{exc}; ignored")

    environment = None
    env_path = baseline_path.parent / BASELINE_ENVIRONMENT_NAME
    if env_path.is_file():
        try:
            environment = load_json_file(env_path, "baseline environment")
        except AnalysisError as exc:
            if warn:
                warn(f"{exc}; ignored")
    is_demo = dataset_path is not None and str(dataset_path).strip().lower() == "demo"
    if dataset_path is not None and str(dataset_path).strip().lower() not in ("", "demo"):
        dataset_path = resolve_repo_path(dataset_path, root)
    problem_names = load_problem_names(level, dataset_path)
    return analyze_run(
        run_name=run_name,
        level=level,
        hardware=hardware,
        baseline=baseline,
        problem_names=problem_names,
        baseline_results=baseline_results,
        eval_results=eval_results,
        verified_results=verified_results,
        pass_at_k_results=pass_at_k_results,
        baseline_environment=environment if isinstance(environment, Mapping) else None,
        dataset_is_demo=is_demo,
        warn=warn,
        configuration={"verified": _slot_dict(verified_slot), "upstream": _slot_dict(off_slot or verified_slot)},
        speedup_statistic=speedup_statistic,
    )


def _slot_dict(slot: tuple | None) -> dict | None:
    if slot is None:
        return None
    return {"mode": slot[0], "policy": slot[1], "device": slot[2]}


# ----------------------------------------------------------------------------- output


def _grid(headers: list[str], rows: list[list[str]]) -> str:
    """A boxed table (tabulate's ``grid`` format), cells as given: no number re-formatting."""
    from tabulate import tabulate

    return tabulate(rows, headers=headers, tablefmt="grid", disable_numparse=True)


def _conf_note(analysis: Mapping[str, Any], which: str) -> str:
    conf = (analysis.get("configuration") or {}).get(which)
    if not conf:
        return ""
    return ", " + "/".join(str(conf[k]) for k in ("mode", "policy", "device") if conf.get(k) is not None)


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_report(analysis: Mapping[str, Any]) -> str:
    """Human-readable summary: rates, a fast_p / verified_fast_p table, integrity counts."""
    total = analysis["total_count"]
    has_verified = "verified_fast_p" in analysis
    lines = [
        "-" * 80,
        f"Eval summary for {analysis['run_name']} (level {analysis['level']}, "
        f"hardware {analysis['hardware']}, baseline {analysis['baseline']})",
        "-" * 80,
        f"Total test cases with eval results: {analysis['total_eval']} out of {total}"
        f" (upstream metrics from {analysis['fast_p_source']}{_conf_note(analysis, 'upstream')})",
        f"Successfully compiled: {analysis['compiled_count']}",
        f"Functionally correct: {analysis['correct_count']}",
        f"Compilation rate: {analysis['compilation_rate'] * 100:.1f}%",
        f"Correctness rate: {analysis['correctness_rate'] * 100:.1f}%",
        f"Problems aligned with the baseline (fast_p denominator): {analysis['aligned_count']}",
        f"Geometric mean of speedup for correct samples: {_fmt(analysis['geo_mean_speedup'])}",
    ]
    if has_verified:
        lines += [
            f"Verified metrics from {VERIFIED_RESULTS_NAME}{_conf_note(analysis, 'verified')}",
            f"Verified (integrity PASS with a trusted runtime): {analysis['verified_count']} out of {total}",
            f"Geometric mean of verified speedup: {_fmt(analysis['verified_geo_mean_speedup'])}",
        ]
    verified_fp = analysis.get("verified_fast_p", {})
    rows = [
        [key, _fmt(value), _fmt(verified_fp.get(key)) if has_verified else "n/a"]
        for key, value in analysis["fast_p"].items()
    ]
    lines += ["", "Fast_p results (per problem, sample 0, against the baseline file's times; the batch's "
              "'verified fast_1' counts samples against the reference timed beside each one):",
              _grid(["p", "fast_p", "verified_fast_p"], rows)]
    if has_verified and analysis.get("speedup_statistic") == "lcb":
        lines.append("(verified_fast_p counts each verified problem at its baseline speedup times the in-run "
                     "bound's lower_bound / point: speedup_statistic=lcb; speedup_statistic=mean counts the mean)")
    if not has_verified:
        lines.append("(no verified_eval_results.json: verified metrics unavailable)")
    else:
        status_rows = [[s, str(c)] for s, c in analysis["integrity_status_counts"].items()]
        lines += ["", "Integrity status counts:", _grid(["status", "problems"], status_rows)]
        codes = analysis["top_finding_codes"]
        if codes:
            code_rows = [[c["code"], str(c["count"])] for c in codes]
            lines += ["", "Top finding codes:", _grid(["code", "problems"], code_rows)]
        else:
            lines += ["", "Top finding codes: none"]
    rows_pp = analysis.get("per_problem") or []
    if rows_pp:
        headers = ["id", "problem", "n", "runtime ms", "spread ms", "baseline ms", "speedup"]
        if has_verified:
            headers += ["integrity", "verified ms", "verified speedup", "in-run speedup (lower bound)"]
        table = []
        for r in rows_pp:
            row = [r["problem_id"], r["name"], r["samples"], _fmt_opt(r["runtime"]), _fmt_opt(r["spread"]),
                   _fmt_opt(r["baseline"]), _fmt_opt(r["speedup"], "x")]
            if has_verified:
                row += [r.get("integrity_status", ""), _fmt_opt(r.get("verified_runtime")),
                        _fmt_opt(r.get("verified_speedup"), "x"), _fmt_inrun(r)]
            table.append([str(c) for c in row])
        lines += ["", "Per problem (sample 0; n = samples with a record; spread = std of the timed trials; "
                  "speedup = baseline / runtime, correct or verified samples only):", _grid(headers, table)]
    block = analysis.get("pass_at_k")
    if block:
        where = block.get("source") or PASS_AT_K_NAME
        conf = "/".join(str(block[k]) for k in ("mode", "policy", "device") if block.get(k) is not None)
        lines += ["", f"Pass@k from {PASS_AT_K_NAME} (records of {where}" + (f", {conf}" if conf else "") + "):"]
        if block.get("correct_means"):
            lines.append(f"  correct = {block['correct_means']}")
        for title, key in (("Pass@k evaluation metadata:", "metadata"), ("Average pass@k metrics:", "averages"),
                           ("Average verified pass@k (integrity PASS only):", "verified_averages")):
            items = block.get(key) or {}
            if isinstance(items, Mapping) and items:
                lines += ["", title, _grid(["metric", "value"], [[str(k), _fmt(v)] for k, v in items.items()])]
    return "\n".join(lines)


def _fmt_inrun(row: Mapping[str, Any]) -> str:
    """``1.02x (>= 0.97x)``: the in-run point estimate and its lower confidence bound."""
    point, lcb = row.get("inrun_speedup"), row.get("inrun_speedup_lcb")
    if point is None:
        return "-"
    return f"{point:.3g}x (>= {lcb:.3g}x)"


def _fmt_opt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.3g}{unit}"


_PLOT_ON = {"true", "yes", "on", "1"}
_PLOT_OFF = {"", "none", "false", "no", "off", "0"}


def parse_plot_option(value: Any) -> bool | str | None:
    """The ``plot`` key: None/false -> no plot, true -> the default file, anything else a path.

    pydra parses ``plot=True`` into the boolean True (and ``plot=1`` into 1); those
    and ``true``/``yes``/``on`` in any case select the default file name.
    """
    if value is None or value is False:
        return None
    if value is True:
        return True
    text = str(value).strip()
    if text.lower() in _PLOT_OFF:
        return None
    if text.lower() in _PLOT_ON:
        return True
    return text


def default_plot_path(run_dir: str | os.PathLike, level: int, baseline: str,
                      output_file: str | os.PathLike | None = None) -> Path:
    """Beside the analysis JSON (``<output_file>`` with ``.png``) when there is one, else in the run dir."""
    if output_file is not None:
        return Path(output_file).with_suffix(".png")
    return Path(run_dir) / f"fast_p_level{level}_{baseline}.png"


def plot_fast_p(analysis: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write a PNG: fast_p (and verified_fast_p) against p, and the per-problem speedups.

    matplotlib is imported lazily with the Agg backend (``plot`` extra / dev group).
    """
    from kernelbench._optional import MissingExtra, require

    try:
        matplotlib = require("matplotlib")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except MissingExtra as exc:
        raise AnalysisError(str(exc)) from None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ps = [float(k) for k in analysis["fast_p"]]
    rows = analysis.get("per_problem") or []
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 1.4]})
    try:
        # fast_p wide and solid, verified_fast_p narrow and dashed on top: both stay visible where they coincide
        ax.plot(ps, list(analysis["fast_p"].values()), marker="o", markersize=9, linewidth=4, alpha=0.5,
                label="fast_p")
        if "verified_fast_p" in analysis:
            ax.plot(ps, [analysis["verified_fast_p"][k] for k in analysis["fast_p"]], marker="s", markersize=4,
                    linewidth=1.5, linestyle="--", color="black", label="verified_fast_p")
        ax.set_xlabel("speedup threshold p")
        ax.set_ylabel("fraction of problems")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{analysis['run_name']} level {analysis['level']} vs {analysis['baseline']}")
        ax.grid(True, alpha=0.3)
        ax.legend()
        # per-problem speedups against the baseline (0 where none: incorrect, unverified or no record)
        xs = list(range(len(rows)))
        verified = "verified_fast_p" in analysis
        width = 0.4 if verified else 0.8
        bx.bar([x - (width / 2 if verified else 0) for x in xs], [r.get("speedup") or 0.0 for r in rows],
               width=width, label="speedup")
        if verified:
            bx.bar([x + width / 2 for x in xs], [r.get("verified_speedup") or 0.0 for r in rows], width=width,
                   label="verified speedup")
        bx.axhline(1.0, color="grey", linewidth=1, linestyle=":")
        bx.set_xticks(xs)
        bx.set_xticklabels([str(r["problem_id"]) for r in rows])
        bx.set_xlabel("problem id")
        bx.set_ylabel("baseline / runtime")
        bx.set_title("per-problem speedup (sample 0)")
        bx.grid(True, axis="y", alpha=0.3)
        bx.legend()
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path
