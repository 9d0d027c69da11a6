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

Layout (this module is the upstream-style entry point and re-exports the public names)
    :mod:`kernelbench.analysis_parts.inputs` (paths, JSON files, sample 0,
    configuration slots), :mod:`~kernelbench.analysis_parts.records` (reading one
    record), :mod:`~kernelbench.analysis_parts.baseline` (baseline means and
    mismatch warnings), :mod:`~kernelbench.analysis_parts.metrics`
    (:func:`analyze_run`), :mod:`~kernelbench.analysis_parts.run_files`
    (:func:`analyze_run_files`), :mod:`~kernelbench.analysis_parts.report`
    (:func:`format_report`) and :mod:`~kernelbench.analysis_parts.plot`.
"""

from __future__ import annotations

from kernelbench.analysis_parts.baseline import (
    align_with_baseline,
    baseline_mismatches,
    level_baseline_means,
    timing_method_mismatch,
)
from kernelbench.analysis_parts.inputs import (
    BASELINE_ENVIRONMENT_NAME,
    EVAL_RESULTS_NAME,
    PASS_AT_K_NAME,
    VERIFIED_RESULTS_NAME,
    AnalysisError,
    Warn,
    load_json_file,
    load_problem_names,
    repo_root,
    resolve_repo_path,
    results_slots,
    select_configuration,
    select_sample0,
)
from kernelbench.analysis_parts.metrics import (
    FAST_P_THRESHOLDS,
    SPEEDUP_STATISTICS,
    TOP_FINDING_CODES_LIMIT,
    analyze_run,
    fast_p_key,
    pass_at_k_block,
)
from kernelbench.analysis_parts.plot import default_plot_path, parse_plot_option, plot_fast_p
from kernelbench.analysis_parts.records import (
    INTEGRITY_STATUSES,
    MISSING_STATUS,
    counts_as_verified,
    integrity_status_of,
    speedup_bound,
)
from kernelbench.analysis_parts.report import format_report
from kernelbench.analysis_parts.run_files import analyze_run_files

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
