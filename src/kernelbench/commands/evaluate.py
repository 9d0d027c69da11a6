"""Batch-evaluate generated kernels in ``runs/<run_name>/`` (upstream keys and defaults).

    uv run python scripts/eval_from_generations.py run_name=my_run dataset_src=local level=1 \
        num_gpu_devices=1 eval_mode=local reward_hardening_mode=audit reward_hardening_policy=source_strict

``reward_hardening_mode=off`` writes upstream's ``eval_results.json``; ``audit`` and
``enforce`` write ``verified_eval_results.json`` (schema 1.1).  A file keeps one record
per (problem, sample, mode/policy/device): a run under another configuration adds
records beside the stored ones and never replaces them (``overwrite=true`` re-evaluates
records of the same mode/policy/device made with other settings).  Extra keys beyond
upstream: ``dataset_path`` (``demo`` = bundled demo tasks), ``device`` (``cuda`` or
``cpu``), ``problem_ids`` (now honoured), ``reward_hardening_mode``,
``reward_hardening_policy``, ``keep_build_dirs``, ``allow_tf32``, and the Ray executor's
``executor`` (``local``, default, or ``ray``: hardened samples on the actors of a Ray
cluster, see ``docs/ray.md``), ``ray_address`` (None: start a local cluster) and
``ray_actors`` (None: one actor per GPU of the cluster, or per CPU for ``device=cpu``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydra import REQUIRED

from kernelbench.cli import (
    DATASET_SOURCES,
    EXECUTORS,
    ConfigError,
    EvalKeysConfig,
    cli_main,
    project_root,
    validate_eval_keys,
)

REPO_ROOT = project_root()  # default runs/ and relative paths: the checkout, else the working directory


def default_build_root() -> str:
    """Per-user cache directory (``platformdirs``), never inside the installed package."""
    import platformdirs

    return str(Path(platformdirs.user_cache_dir("kernelguard", appauthor=False)) / "builds")


class EvalConfig(EvalKeysConfig):
    BOOL_KEYS = EvalKeysConfig.BOOL_KEYS + ("measure_performance", "build_cache", "keep_build_dirs", "overwrite")
    INT_KEYS = EvalKeysConfig.INT_KEYS + ("level", "num_cpu_workers", "num_gpu_devices", "num_samples_per_problem")
    OPTIONAL_INT_KEYS = ("ray_actors",)
    FLOAT_KEYS = ("timeout",)
    CHOICES = {**EvalKeysConfig.CHOICES, "dataset_src": DATASET_SOURCES, "executor": EXECUTORS}

    def __init__(self):
        self.set_eval_defaults()  # eval_mode, device, precision, backend, timing_method, trials, hardening keys
        self.run_name = REQUIRED
        self.dataset_src = REQUIRED
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.dataset_path = None
        self.level = REQUIRED
        self.subset = (None, None)
        self.problem_ids = None
        self.gpu = "A10G"
        self.gpu_arch = None  # None: build for the visible GPU (upstream defaulted to ["Ada"])
        self.runs_dir = str(REPO_ROOT / "runs")
        self.timeout = 180
        self.measure_performance = True
        self.build_cache = False
        self.num_cpu_workers = 20
        self.kernel_eval_build_dir = default_build_root()
        self.num_gpu_devices = 1
        self.num_samples_per_problem = 1
        self.pass_at_k_values = [1]
        self.keep_build_dirs = True
        self.overwrite = False  # re-evaluate stored records of this mode/policy/device made with other settings
        self.executor = "local"  # ray: the samples run on the actors of a Ray cluster (docs/ray.md)
        self.ray_address = None  # None: start a local cluster; "auto" or host:port: join a running one
        self.ray_actors = None  # None: one actor per GPU of the cluster (per CPU for device=cpu)

    def validate(self):
        validate_eval_keys(self)
        if self.executor == "ray" and self.reward_hardening_mode == "off":
            raise ConfigError("executor", "executor=ray runs the hardened path: set "
                              "reward_hardening_mode=audit or enforce (or executor=local)")
        if self.ray_actors is not None and self.ray_actors < 1:
            raise ConfigError("ray_actors", f"must be at least 1, got {self.ray_actors}")




# Exit codes (documented in the README, "Batch evaluation"):
EXIT_OK = 0  # every selected sample with a kernel file has a record under this configuration
EXIT_USAGE = 2  # bad key/value, bad subset, missing run directory, level or kernel files
EXIT_UNSUPPORTED = 3  # every selected sample is UNSUPPORTED (e.g. device=cuda without CUDA)
EXIT_RESULTS_IO = 4  # the results file could not be read or written (disk full, permissions, bad JSON)
EXIT_DATASET = 5  # the dataset could not be fetched (Hugging Face Hub unreachable and no cached copy)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM; rerun the same command to resume


class ScriptError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def _subset_bounds(cfg) -> tuple[int | None, int | None]:
    """``subset=(start,end)``: inclusive problem ids, either bound may be None."""
    value = cfg.subset
    if value is None:
        return None, None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ScriptError(f"subset must be (start,end) with inclusive problem ids, e.g. subset=(1,10) or "
                          f"subset=(None,5); got {value!r}")
    out = []
    for bound in value:
        if bound is None or (isinstance(bound, str) and bound.strip().lower() == "none"):
            out.append(None)
            continue
        try:
            if isinstance(bound, bool) or float(bound) != int(float(bound)):
                raise ValueError
            out.append(int(float(bound)))
        except (TypeError, ValueError):
            raise ScriptError(f"subset bounds must be problem ids (integers) or None; got {value!r}") from None
    if out[0] is not None and out[1] is not None and out[0] > out[1]:
        raise ScriptError(f"subset start {out[0]} is greater than its end {out[1]}")
    return out[0], out[1]


def _selected_dataset(cfg):
    from kernelbench.dataset import DatasetUnavailable, construct_kernelbench_dataset

    start, end = _subset_bounds(cfg)
    try:
        ds = construct_kernelbench_dataset(cfg.level, source=cfg.dataset_src, dataset_name=cfg.dataset_name,
                                           base_path=cfg.dataset_path)
    except DatasetUnavailable as exc:
        raise ScriptError(str(exc), EXIT_DATASET) from None
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise ScriptError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None
    ids = ds.get_problem_ids()
    if not ids:
        raise ScriptError(f"level {cfg.level} has no problems in this dataset")
    if cfg.problem_ids:
        wanted = cfg.problem_ids if isinstance(cfg.problem_ids, (list, tuple)) else [cfg.problem_ids]
        try:
            wanted = [int(i) for i in wanted]
        except (TypeError, ValueError):
            raise ScriptError(f"problem_ids must be a list of integers, got {cfg.problem_ids!r}") from None
        unknown = sorted(set(wanted) - set(ids))
        if unknown:
            raise ScriptError(f"problem_ids {unknown} are not in level {cfg.level} (ids {ids[0]}-{ids[-1]})")
        return ds.subset(problem_ids=wanted)
    if start is not None or end is not None:
        lo = ids[0] if start is None else start
        hi = ids[-1] if end is None else end
        if not any(lo <= i <= hi for i in ids):
            raise ScriptError(f"subset=({start},{end}) selects no problem of level {cfg.level} "
                              f"(ids {ids[0]}-{ids[-1]})")
        return ds.subset(id_range=(max(lo, ids[0]), min(hi, ids[-1])))
    return ds


def _devices(cfg, hardened: bool) -> list[str]:
    if not cfg.device.startswith("cuda"):  # no torch import in the parent for a CPU batch
        return ["cpu"] * max(1, cfg.num_gpu_devices)
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
        return [f"cuda:{i}" for i in range(n)]
    if cfg.device.startswith("cuda") and not hardened:
        raise ScriptError("CUDA is not available; pass device=cpu to evaluate on the CPU")
    if cfg.device.startswith("cuda"):
        print("[eval] CUDA is not available: every sample will be UNSUPPORTED (fail closed); "
              "pass device=cpu to evaluate on the CPU", file=sys.stderr)
        return ["cuda:0"]
    return ["cpu"] * max(1, cfg.num_gpu_devices)


def _unsupported_reason(records: list[dict], cfg) -> str:
    from collections import Counter

    reasons = Counter(str((r.get("metadata") or {}).get("reward_hardening_unsupported") or "") for r in records)
    reason = reasons.most_common(1)[0][0] if reasons else ""
    if cfg.device.startswith("cuda"):
        try:
            import torch

            if not torch.cuda.is_available():
                return "CUDA is unavailable on this machine: pass device=cpu, or run on a CUDA host"
        except Exception:
            pass
    return reason or "a required capability is missing (see the records' findings)"


_KERNEL_NAME = r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py"


def _samples_beyond(run_dir: Path, level: int, problem_ids: set[int], num_samples: int) -> list[str]:
    """Kernel files of selected problems whose sample id is >= ``num_samples`` (they would be skipped)."""
    import re

    out = []
    for entry in sorted(run_dir.glob(f"level_{level}_problem_*_sample_*_kernel.py")):
        m = re.fullmatch(_KERNEL_NAME, entry.name)
        if m and int(m.group(2)) in problem_ids and int(m.group(3)) >= num_samples:
            out.append(entry.name)
    return sorted(out, key=lambda n: tuple(int(x) for x in re.fullmatch(_KERNEL_NAME, n).groups()))


def _max_sample(names: list[str]) -> int:
    import re

    return max(int(re.fullmatch(_KERNEL_NAME, n).group(3)) for n in names)


def _install_sigterm() -> None:
    import signal

    def _term(signum, frame):  # a preempted job: stop like Ctrl-C, keep what was saved
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, _term)
    except ValueError:  # not the main thread
        pass


def main(cfg: EvalConfig) -> int:
    try:
        return _main(cfg)
    except ScriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except OSError as exc:  # results file unreadable/unwritable (ResultsFileError carries a one-line message)
        print(f"error: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_RESULTS_IO


def _main(cfg: EvalConfig) -> int:
    from kernelbench import batch, runs

    _install_sigterm()
    run_dir = Path(cfg.runs_dir) / cfg.run_name
    if not run_dir.is_dir():
        raise ScriptError(f"run directory {run_dir} does not exist (runs_dir={cfg.runs_dir}, "
                          f"run_name={cfg.run_name})")
    dataset = _selected_dataset(cfg)
    hardened = cfg.reward_hardening_mode != "off"
    results_path = run_dir / ("verified_eval_results.json" if hardened else "eval_results.json")
    with runs.results_lock(results_path):  # a writer's temp file exists only while it holds this lock
        removed = runs.remove_stale_temp_files(run_dir, (results_path.name,))
        results = runs.load_results(results_path)
    from kernelbench.passk import PASS_AT_K_NAME

    with runs.results_lock(run_dir / PASS_AT_K_NAME):  # pass@k has its own lock (every mode writes it)
        removed += runs.remove_stale_temp_files(run_dir, (PASS_AT_K_NAME,))
    if removed:
        print(f"[eval] removed {len(removed)} temporary file(s) left by an interrupted earlier run")
    config = batch.eval_config(cfg)
    slot = batch.config_slot_of(config)
    plan = batch.plan_batch(dataset, cfg.level, run_dir, cfg.num_samples_per_problem, results, config,
                            overwrite=cfg.overwrite)
    keys = [(pid, sid) for pid in dataset.get_problem_ids() for sid in range(cfg.num_samples_per_problem)]
    if plan.missing:
        if len(plan.missing) == len(keys):
            example = runs.kernel_file_name(cfg.level, keys[0][0], 0)
            raise ScriptError(f"no kernel files for level {cfg.level} in {run_dir} (expected names like {example})")
        first = runs.kernel_file_name(cfg.level, *plan.missing[0])
        print(f"[eval] {len(plan.missing)} of {len(keys)} selected samples have no kernel file (first: {first}); "
              "they are skipped")
    extra = _samples_beyond(run_dir, cfg.level, set(dataset.get_problem_ids()), cfg.num_samples_per_problem)
    if extra:
        print(f"[eval] {len(extra)} kernel files of samples beyond num_samples_per_problem="
              f"{cfg.num_samples_per_problem} are not evaluated (first: {extra[0]}); pass "
              f"num_samples_per_problem={_max_sample(extra) + 1} to include them")
    for line in plan.kept_lines() + plan.stale_lines():
        print(line)
    print(f"[eval] {len(plan.pending)} samples to evaluate ({plan.done} already done under this configuration, "
          f"{runs.slot_label(slot)}) -> {results_path}")
    if plan.pending:
        if cfg.executor != "ray":  # (Ray's actors start their own)
            from kernelbench.procs import start_forkserver

            start_forkserver()  # its torch import overlaps the parent's
        build_root = Path(cfg.kernel_eval_build_dir) / cfg.run_name
        if cfg.executor == "ray":
            evaluate, devices = _ray_evaluator(cfg, plan.pending, build_root)
        elif hardened:
            devices = _devices(cfg, hardened)
            from kernelbench.reward_hardening.parent.batch import hardened_evaluator

            failures = {}
            if cfg.build_cache:  # upstream's key: build every candidate's extensions first, in parallel
                from kernelbench.reward_hardening.parent.prebuild import prebuild_items

                print(f"[eval] pre-building extensions with {cfg.num_cpu_workers} CPU workers")
                failures = prebuild_items(plan.pending, str(build_root), devices[0], cfg.num_cpu_workers,
                                          timeout=max(float(cfg.timeout), 900.0))
                if failures:
                    print(f"[eval] {len(failures)} candidates failed to build; they are recorded as load failures")
            evaluate = hardened_evaluator(cfg, prebuild_failures=failures)
        else:
            devices = _devices(cfg, hardened)
            evaluate = batch.off_mode_evaluator(cfg)
        try:
            batch.run_batch(plan.pending, evaluate, results_path, devices, build_root,
                            keep_build_dirs=cfg.keep_build_dirs)
        except batch.BatchInterrupted as exc:
            print(str(exc), file=sys.stderr)
            interrupt = getattr(evaluate, "interrupt", None)
            if interrupt is not None:  # Ray: stop the actors before this process exits
                interrupt()
            if exc.threads_left:  # do not wait for a busy thread at exit: what was saved is complete
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED)
            return EXIT_INTERRUPTED
        except batch.BatchWriteError as exc:
            print(f"error: {exc.strerror}; rerun to resume once the disk has room", file=sys.stderr)
            return EXIT_RESULTS_IO
        finally:
            close = getattr(evaluate, "close", None)
            if close is not None:  # the judges kept for the problems' samples
                close()
    results = runs.load_results(results_path)
    pass_at_k_path = _write_pass_at_k(cfg, run_dir, results_path, slot)
    for line in batch.summary_lines(results, keys, hardened, results_path, slot=slot):
        print(line)
    if pass_at_k_path is not None:
        print(f"  pass@k: {pass_at_k_path} (configuration {runs.slot_label(slot)})")
    selected = [r for r in (runs.find_record(results, p, s, slot) for p, s in keys) if r is not None]
    if hardened and selected and all((r.get("reward_hardening") or {}).get("integrity_status") == "UNSUPPORTED"
                                     for r in selected):
        print(f"error: every sample is UNSUPPORTED: {_unsupported_reason(selected, cfg)}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    return EXIT_OK


def _ray_evaluator(cfg, pending: list, build_root: Path):
    """The evaluator and device list of ``executor=ray`` (builds first as Ray tasks with ``build_cache``)."""
    from kernelbench.batch_parts import ray_exec

    failures = {}
    if cfg.build_cache:
        ray_exec.connect(cfg.ray_address)
        print("[eval] pre-building extensions as Ray tasks into the shared build directory")
        failures = ray_exec.prebuild_on_cluster(pending, str(build_root), cfg.device,
                                                timeout=max(float(cfg.timeout), 900.0))
        if failures:
            print(f"[eval] {len(failures)} candidates failed to build; they are recorded as load failures")
    evaluate = ray_exec.ray_evaluator(cfg, prebuild_failures=failures)
    pool = evaluate.pool
    where = cfg.ray_address or "a local cluster"
    print(f"[eval] executor=ray: {pool.size} {'GPU' if pool.gpu else 'CPU'} actors on {where}")
    return evaluate, evaluate.devices


def _write_pass_at_k(cfg, run_dir: Path, results_path: Path, slot: tuple) -> Path | None:
    """Write this configuration's pass@k into ``pass_at_k_results.json`` (see :mod:`kernelbench.passk`)."""
    if cfg.num_samples_per_problem <= 1 or not results_path.exists():
        return None
    from kernelbench import runs
    from kernelbench.passk import PASS_AT_K_NAME, merge_pass_at_k, pass_at_k_entry

    results = runs.load_results(results_path)
    ks = cfg.pass_at_k_values if isinstance(cfg.pass_at_k_values, (list, tuple)) else [cfg.pass_at_k_values]
    entry = pass_at_k_entry(results, slot, [int(k) for k in ks], source=results_path.name)
    path = run_dir / PASS_AT_K_NAME
    merge_pass_at_k(path, entry)
    return path


entry = cli_main(EvalConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
