"""Batch-evaluate generated kernels in ``runs/<run_name>/`` (upstream keys and defaults).

    uv run python scripts/eval_from_generations.py run_name=my_run dataset_src=local level=1 \
        num_gpu_devices=1 eval_mode=local reward_hardening_mode=audit reward_hardening_policy=source_strict

``reward_hardening_mode=off`` writes upstream's ``eval_results.json``; ``audit`` and
``enforce`` write ``verified_eval_results.json`` (schema 1.1).  Extra keys beyond
upstream: ``dataset_path`` (``demo`` = bundled demo tasks), ``device`` (``cuda`` or
``cpu``), ``problem_ids`` (now honoured), ``reward_hardening_mode``,
``reward_hardening_policy``, ``keep_build_dirs``, ``allow_tf32``.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import sys
from pathlib import Path

from pydra import REQUIRED

from kernelbench.cli import (
    BACKENDS,
    DATASET_SOURCES,
    EVAL_MODES,
    HARDENING_MODES,
    HARDENING_POLICIES,
    PRECISIONS,
    TIMING_METHODS,
    KBConfig,
    cli_main,
    validate_eval_keys,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


class EvalConfig(KBConfig):
    BOOL_KEYS = ("verbose", "measure_performance", "build_cache", "keep_build_dirs", "allow_tf32")
    INT_KEYS = ("level", "num_correct_trials", "num_perf_trials", "num_cpu_workers", "num_gpu_devices",
                "num_samples_per_problem")
    FLOAT_KEYS = ("timeout",)
    CHOICES = {
        "dataset_src": DATASET_SOURCES,
        "eval_mode": EVAL_MODES,
        "timing_method": TIMING_METHODS,
        "backend": BACKENDS,
        "precision": PRECISIONS,
        "reward_hardening_mode": HARDENING_MODES,
        "reward_hardening_policy": HARDENING_POLICIES,
    }

    def __init__(self):
        self.run_name = REQUIRED
        self.dataset_src = REQUIRED
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.dataset_path = None
        self.level = REQUIRED
        self.subset = (None, None)
        self.problem_ids = None
        self.eval_mode = "local"
        self.gpu = "A10G"
        self.gpu_arch = None  # None: build for the visible GPU (upstream defaulted to ["Ada"])
        self.runs_dir = str(REPO_ROOT / "runs")
        self.verbose = False
        self.num_correct_trials = 5
        self.num_perf_trials = 100
        self.timeout = 180
        self.measure_performance = True
        self.timing_method = "cuda_event"
        self.build_cache = False
        self.num_cpu_workers = 20
        self.kernel_eval_build_dir = str(REPO_ROOT / "cache")
        self.num_gpu_devices = 1
        self.backend = "cuda"
        self.precision = "fp32"
        self.num_samples_per_problem = 1
        self.pass_at_k_values = [1]
        self.device = "cuda"
        self.reward_hardening_mode = "off"
        self.reward_hardening_policy = "source_strict"
        self.keep_build_dirs = True
        self.allow_tf32 = False

    def validate(self):
        validate_eval_keys(self)



def _selected_dataset(cfg):
    from kernelbench.dataset import construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(cfg.level, source=cfg.dataset_src, dataset_name=cfg.dataset_name,
                                       base_path=cfg.dataset_path)
    if cfg.problem_ids:
        ids = cfg.problem_ids if isinstance(cfg.problem_ids, (list, tuple)) else [cfg.problem_ids]
        return ds.subset(problem_ids=[int(i) for i in ids])
    start, end = cfg.subset if cfg.subset else (None, None)
    if start is not None or end is not None:
        ids = ds.get_problem_ids()
        lo = ids[0] if start is None else int(start)
        hi = ids[-1] if end is None else int(end)
        return ds.subset(id_range=(lo, hi))
    return ds


def main(cfg: EvalConfig) -> int:
    from kernelbench import batch, runs

    run_dir = Path(cfg.runs_dir) / cfg.run_name
    if not run_dir.is_dir():
        print(f"error: run directory {run_dir} does not exist", file=sys.stderr)
        return 2
    dataset = _selected_dataset(cfg)
    hardened = cfg.reward_hardening_mode != "off"
    results_path = run_dir / ("verified_eval_results.json" if hardened else "eval_results.json")
    results = runs.load_results(results_path)
    items, missing = batch.work_list(dataset, cfg.level, run_dir, cfg.num_samples_per_problem, results)
    if missing and cfg.verbose:
        print(f"[eval] {len(missing)} (problem, sample) pairs have no kernel file and are skipped")
    print(f"[eval] {len(items)} samples to evaluate -> {results_path}")
    if not items:
        _write_pass_at_k(cfg, run_dir, results_path)
        return 0

    import torch

    cuda_ok = torch.cuda.is_available()
    if cfg.device.startswith("cuda") and cuda_ok:
        try:
            from kernelbench.utils import set_gpu_arch

            if cfg.gpu_arch:
                set_gpu_arch(cfg.gpu_arch)
        except Exception as exc:  # a bad arch list must not stop evaluation
            print(f"[eval] gpu_arch ignored: {exc}")
        n = min(cfg.num_gpu_devices, torch.cuda.device_count())
        if n < cfg.num_gpu_devices:
            print(f"[eval] only {torch.cuda.device_count()} CUDA devices visible; using {n}")
        devices = [f"cuda:{i}" for i in range(n)]
    elif cfg.device.startswith("cuda") and not hardened:
        print("error: CUDA is not available; pass device=cpu to evaluate on the CPU", file=sys.stderr)
        return 2
    elif cfg.device.startswith("cuda"):
        devices = ["cuda:0"]  # hardened: every sample becomes UNSUPPORTED (fail closed)
    else:
        devices = ["cpu"] * max(1, cfg.num_gpu_devices)

    build_root = Path(cfg.kernel_eval_build_dir) / cfg.run_name
    if hardened:
        from kernelbench.reward_hardening.batch import hardened_evaluator

        evaluate = hardened_evaluator(cfg)
    else:
        evaluate = batch.off_mode_evaluator(cfg)
    batch.run_batch(items, evaluate, results_path, devices, build_root, keep_build_dirs=cfg.keep_build_dirs)
    _write_pass_at_k(cfg, run_dir, results_path)
    return 0


def _write_pass_at_k(cfg, run_dir: Path, results_path: Path) -> None:
    if cfg.num_samples_per_problem <= 1 or not results_path.exists():
        return
    from kernelbench import runs
    from kernelbench.score import pass_at_k

    results = runs.load_results(results_path)
    ks = cfg.pass_at_k_values if isinstance(cfg.pass_at_k_values, (list, tuple)) else [cfg.pass_at_k_values]
    problems, totals = {}, {f"pass@{k}": [] for k in ks}
    n_samples = n_correct = 0
    for pid, samples in results.items():
        n = len(samples)
        c = sum(1 for s in samples if s.get("compiled") and s.get("correctness"))
        n_samples += n
        n_correct += c
        entry = {"total_samples": n, "correct_samples": c}
        for k in ks:
            entry[f"pass@{k}"] = pass_at_k(n, c, int(k))
            totals[f"pass@{k}"].append(entry[f"pass@{k}"])
        problems[pid] = entry
    out = {
        "averages": {f"avg_{k}": (sum(v) / len(v) if v else 0.0) for k, v in totals.items()},
        "metadata": {"total_problems": len(problems), "problems_with_samples": len(problems),
                     "total_evaluated_samples": n_samples, "total_correct_samples": n_correct,
                     "pass@k_count": len(ks)},
        "problems": problems,
    }
    runs.atomic_write_json(run_dir / "pass_at_k_results.json", out)


entry = cli_main(EvalConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
