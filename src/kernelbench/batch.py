"""Batch evaluation of a runs directory (``scripts/eval_from_generations.py``).

Every (problem, sample) is evaluated in its own disposable worker process; the parent
merges each record into the results file atomically and under the file's lock
(:mod:`kernelbench.runs`), so a killed batch resumes exactly where it stopped (per
sample, not per problem as upstream did) and two batches on one run directory keep
each other's records.  Up to ``num_gpu_devices`` samples run at once, each on its
own device.  One misbehaving candidate (crash, hang, garbage) becomes that sample's
record; it never stops the batch.

Results are never destroyed by a run under another configuration.  Every record
carries ``metadata.eval_config`` (:func:`eval_config` plus the sha256 of the candidate
and reference sources); a results file keeps one record per (problem, sample, slot),
the slot being the record's mode, policy and device, so runs of one ``run_name``
under another mode, policy or device add records beside the stored ones.  Within a
slot a stored record counts as done when its configuration equals the current one;
one whose kernel (or reference) source changed since, or one that is
``UNSUPPORTED``, is evaluated again; one made with other settings (trial counts,
precision, timing method, backend, another KernelGuard version, or an older version
without ``eval_config``) is kept and reported, and replaced only with
``overwrite=true``.

This module is the entry point (and the worker target of off mode,
``kernelbench.batch:evaluate_single_sample``); the work is done in
:mod:`kernelbench.batch_parts` (``plan``: configurations and resume decisions,
``runner``: :func:`run_batch`, ``summary``: :func:`summary_lines`), whose public
names are re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from kernelbench.batch_parts.plan import (  # noqa: F401 - re-exported
    CONFIG_KEYS,
    Plan,
    WorkItem,
    config_differences,
    config_slot_of,
    eval_config,
    kernelguard_version,
    plan_batch,
    sha256_text,
    stored_config,
    work_list,
)
from kernelbench.batch_parts.runner import BatchInterrupted, BatchWriteError, run_batch, upstream_record  # noqa: F401
from kernelbench.batch_parts.summary import speedup_bound_lines, summary_lines  # noqa: F401 - re-exported

__all__ = ["BatchInterrupted", "Plan", "WorkItem", "eval_config", "evaluate_single_sample", "plan_batch",
           "run_batch", "summary_lines", "work_list"]


def evaluate_single_sample(ref_code: str, kernel_code: str, device: str, build_dir: str,
                           num_correct_trials: int, num_perf_trials: int, measure_performance: bool,
                           timing_method: str, backend: str, precision: str, verbose: bool) -> dict:
    """Off-mode evaluation of one sample (runs inside a worker); JSON-able record."""
    import torch

    from kernelbench.eval import check_metadata_serializable_all_types, eval_kernel_against_ref, get_error_name

    try:
        result = eval_kernel_against_ref(
            ref_code, kernel_code, num_correct_trials=num_correct_trials, num_perf_trials=num_perf_trials,
            measure_performance=measure_performance, timing_method=timing_method, verbose=verbose,
            build_dir=build_dir, device=device, backend=backend, precision=precision,
        )
        record = result.model_dump()
    except Exception as exc:  # upstream's worker-level categories
        text = str(exc)
        key = "cuda_error" if "CUDA error" in text else "other_error"
        record = {"compiled": False, "correctness": False, "runtime": -1.0, "runtime_stats": {},
                  "metadata": {key: text, f"{key}_name": get_error_name(exc), "device": device,
                               "hardware": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"}}
    record["metadata"] = check_metadata_serializable_all_types(record.get("metadata", {}))
    return record


def off_mode_evaluator(cfg: Any) -> Callable[[WorkItem, str, str], dict]:
    from kernelbench.procs import run_oneshot

    def evaluate(item: WorkItem, device: str, build_dir: str) -> dict:
        kernel_code = Path(item.kernel_path).read_text()
        workspace = os.path.join(build_dir, "workspace")
        os.makedirs(build_dir, exist_ok=True)
        out = run_oneshot(
            "kernelbench.batch:evaluate_single_sample",
            dict(ref_code=item.ref_code, kernel_code=kernel_code, device=device, build_dir=build_dir,
                 num_correct_trials=cfg.num_correct_trials, num_perf_trials=cfg.num_perf_trials,
                 measure_performance=cfg.measure_performance, timing_method=cfg.timing_method,
                 backend=cfg.backend, precision=cfg.precision, verbose=cfg.verbose),
            timeout=cfg.timeout, workspace=workspace, log_path=os.path.join(build_dir, "worker.log"),
        )
        if out["ok"]:
            return upstream_record(item.sample_id, out["result"])
        meta = {"error": out["error"]}
        if out.get("timeout"):
            meta = {"error": "Evaluation timed out"}
        meta["device"] = device
        return upstream_record(item.sample_id, {"compiled": False, "metadata": meta})

    return evaluate
