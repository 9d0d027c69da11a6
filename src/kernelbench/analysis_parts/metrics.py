"""The analysis's numbers from parsed inputs: fast_p beside verified_fast_p (parent process, or any tool).

:func:`analyze_run` reads no file: it takes the parsed results, baseline and pass@k
data and returns the analysis dictionary (rates, fast_p, geometric mean speedups,
integrity counts, top finding codes, one row per problem).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from kernelbench.analysis_parts.baseline import (
    align_with_baseline,
    baseline_hardware,
    baseline_mismatches,
    level_baseline_means,
    timing_method_mismatch,
)
from kernelbench.analysis_parts.inputs import (
    EVAL_RESULTS_NAME,
    PASS_AT_K_NAME,
    VERIFIED_RESULTS_NAME,
    AnalysisError,
    Warn,
    select_sample0,
)
from kernelbench.analysis_parts.records import (
    INTEGRITY_STATUSES,
    MISSING_STATUS,
    bound_runtime,
    counts_as_verified,
    finding_codes,
    finite_number,
    integrity_status_of,
    speedup_bound,
    upstream_flag,
    upstream_runtime,
    verified_runtime,
)
from kernelbench.score import fastp, geometric_mean_speed_ratio_correct_only

FAST_P_THRESHOLDS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
TOP_FINDING_CODES_LIMIT = 10
SPEEDUP_STATISTICS = ("lcb", "mean")


def fast_p_key(p: float) -> str:
    """JSON key of a threshold, as upstream writes it: ``str(float(p))``."""
    return str(float(p))


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
    compiled_count = sum(1 for pid in problem_ids if upstream_flag(upstream.get(pid, {}).get("compiled")))
    correct_count = sum(1 for pid in problem_ids if upstream_flag(upstream.get(pid, {}).get("correctness")))

    means = level_baseline_means(baseline_results, level, "baseline")
    aligned = align_with_baseline(problem_names, means, warn)
    n = len(aligned)
    baseline_speed = [mean for _, _, mean in aligned]
    is_correct = [upstream_flag(upstream.get(pid, {}).get("correctness")) for pid, _, _ in aligned]
    actual_speed = [upstream_runtime(upstream.get(pid)) for pid, _, _ in aligned]

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
    result["baseline_hardware"] = baseline_hardware(baseline_results, level, baseline_environment)
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
    return finite_number(stats.get("std")) if isinstance(stats, Mapping) else None


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
        runtime = upstream_runtime(rec) if rec else None
        runtime = runtime if runtime is not None and runtime > 0 else None
        correct = upstream_flag((rec or {}).get("correctness"))
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
            vt = verified_runtime(vrec)
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


def _verified_metrics(
    problem_ids: list[int], verified: Mapping[int, dict], aligned: list[tuple[int, str, float]],
    speedup_statistic: str = "lcb",
) -> dict[str, Any]:
    n = len(aligned)
    baseline_speed = [mean for _, _, mean in aligned]
    runtimes = [verified_runtime(verified.get(pid)) for pid, _, _ in aligned]
    is_verified = [r is not None for r in runtimes]
    without_bound = 0
    if speedup_statistic == "lcb":
        bounded = [bound_runtime(verified.get(pid), r) for (pid, _, _), r in zip(aligned, runtimes)]
        without_bound = sum(1 for r, has in bounded if r is not None and not has)
        runtimes = [r for r, _ in bounded]
    verified_speed = [r if r is not None else -1.0 for r in runtimes]

    status_counts: Counter[str] = Counter({s: 0 for s in (*INTEGRITY_STATUSES, MISSING_STATUS)})
    codes: Counter[str] = Counter()
    verified_count = 0
    for pid in problem_ids:
        record = verified.get(pid)
        status_counts[integrity_status_of(record)] += 1
        codes.update(finding_codes(record))
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
