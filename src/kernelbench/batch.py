"""Batch evaluation of a runs directory (``scripts/eval_from_generations.py``).

Every (problem, sample) is evaluated in its own disposable worker process; the parent
writes the result file atomically after each sample, so a killed batch resumes
exactly where it stopped (per sample, not per problem as upstream did).  Up to
``num_gpu_devices`` samples run at once, sample *i* of a wave on ``cuda:i``.
One misbehaving candidate (crash, hang, garbage) becomes that sample's record; it
never stops the batch.
"""

from __future__ import annotations

import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kernelbench import runs

__all__ = ["WorkItem", "evaluate_single_sample", "run_batch", "work_list"]


@dataclass(frozen=True)
class WorkItem:
    problem_id: int
    sample_id: int
    kernel_path: str
    ref_path: str | None
    ref_code: str
    problem_name: str


def work_list(dataset: Any, level: int, run_dir: Path, num_samples: int,
              results: dict[str, list[dict]]) -> tuple[list[WorkItem], list[tuple[int, int]]]:
    """Pending items and the (problem, sample) pairs whose kernel file is missing."""
    pending, missing = [], []
    for pid in dataset.get_problem_ids():
        problem = dataset.get_problem_by_id(pid)
        for sid in range(num_samples):
            if runs.record_exists(results, pid, sid):
                continue
            path = run_dir / runs.kernel_file_name(level, pid, sid)
            if not path.exists():
                missing.append((pid, sid))
                continue
            pending.append(WorkItem(pid, sid, str(path), problem.path, problem.code, problem.name))
    return pending, missing


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


def _upstream_record(sample_id: int, record: dict) -> dict:
    return {
        "sample_id": sample_id,
        "compiled": bool(record.get("compiled", False)),
        "correctness": bool(record.get("correctness", False)),
        "metadata": record.get("metadata", {}),
        "runtime": float(record.get("runtime", -1.0)),
        "runtime_stats": record.get("runtime_stats", {}),
    }


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
            return _upstream_record(item.sample_id, out["result"])
        meta = {"error": out["error"]}
        if out.get("timeout"):
            meta = {"error": "Evaluation timed out"}
        meta["device"] = device
        return _upstream_record(item.sample_id, {"compiled": False, "metadata": meta})

    return evaluate


def run_batch(items: list[WorkItem], evaluate: Callable[[WorkItem, str, str], dict], results_path: Path,
              devices: list[str], build_root: Path, keep_build_dirs: bool = True,
              progress: bool = True) -> int:
    """Evaluate ``items`` with ``len(devices)`` concurrent workers; returns how many were written."""
    from tqdm import tqdm

    lock = threading.Lock()
    free = list(devices)
    free_lock = threading.Condition()
    written = 0

    def take_device() -> str:
        with free_lock:
            while not free:
                free_lock.wait()
            return free.pop(0)

    def give_device(dev: str) -> None:
        with free_lock:
            free.append(dev)
            free_lock.notify()

    def one(item: WorkItem) -> None:
        nonlocal written
        dev = take_device()
        build_dir = build_root / str(item.problem_id) / str(item.sample_id)
        try:
            try:
                record = evaluate(item, dev, str(build_dir))
            except Exception as exc:  # evaluator fault: fail closed for this sample only
                record = _upstream_record(item.sample_id, {"compiled": False, "metadata": {
                    "error": f"evaluator error: {type(exc).__name__}: {exc}", "device": dev}})
            record["sample_id"] = item.sample_id
            with lock:
                runs.upsert_record(results_path, item.problem_id, record)
                written += 1
        finally:
            give_device(dev)
            if not keep_build_dirs:
                shutil.rmtree(build_dir, ignore_errors=True)

    bar = tqdm(total=len(items), desc="eval", unit="sample", disable=not progress)
    with ThreadPoolExecutor(max_workers=max(1, len(devices))) as pool:
        futures = [pool.submit(one, it) for it in items]
        for fut in as_completed(futures):
            fut.result()
            bar.update(1)
    bar.close()
    return written
