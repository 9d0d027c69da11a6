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
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kernelbench import runs

__all__ = ["BatchInterrupted", "Plan", "WorkItem", "eval_config", "evaluate_single_sample", "plan_batch",
           "run_batch", "summary_lines", "work_list"]

# the keys of eval_config that are compared on resume, in the order they are reported
CONFIG_KEYS = ("mode", "policy", "device", "precision", "backend", "num_correct_trials", "num_perf_trials",
               "timing_method", "measure_performance", "allow_tf32", "kernelguard_version",
               "candidate_sha256", "reference_sha256")


@dataclass(frozen=True)
class WorkItem:
    problem_id: int
    sample_id: int
    kernel_path: str
    ref_path: str | None
    ref_code: str
    problem_name: str
    config: dict | None = field(default=None, compare=False)  # full eval_config of this sample


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def kernelguard_version() -> str:
    from kernelbench import __version__

    return __version__


def eval_config(cfg: Any) -> dict:
    """What a batch sample is evaluated under (stored as ``metadata.eval_config``).

    ``device`` is the device kind (``cpu`` or ``cuda``): which of several GPUs ran a
    sample does not change what it was evaluated under.  Keys that do not apply to a
    mode are ``None`` (the hardened path has its own timing protocol and ignores
    ``timing_method``; off mode has no policy).
    """
    hardened = cfg.reward_hardening_mode != "off"
    device = "cuda" if str(cfg.device).startswith("cuda") else str(cfg.device)
    return {
        "mode": cfg.reward_hardening_mode,
        "policy": cfg.reward_hardening_policy if hardened else None,
        "device": device,
        "precision": cfg.precision,
        "backend": cfg.backend,
        "num_correct_trials": int(cfg.num_correct_trials),
        "num_perf_trials": int(cfg.num_perf_trials),
        "timing_method": None if hardened else cfg.timing_method,
        "measure_performance": True if hardened else bool(cfg.measure_performance),
        "allow_tf32": bool(getattr(cfg, "allow_tf32", False)) if hardened else None,
        "kernelguard_version": kernelguard_version(),
    }


def stored_config(record: dict) -> dict | None:
    meta = record.get("metadata") if isinstance(record, dict) else None
    conf = meta.get("eval_config") if isinstance(meta, dict) else None
    return conf if isinstance(conf, dict) else None


def config_differences(stored: dict | None, current: dict) -> list[str]:
    """``key: old -> new`` for each key that differs (``[]`` when they match)."""
    if stored is None:
        return ["no stored configuration (written by an older version)"]
    out = []
    for key in CONFIG_KEYS:
        if stored.get(key) != current.get(key):
            if key.endswith("_sha256"):
                out.append(f"{key.replace('_sha256', '')} source changed")
            else:
                out.append(f"{key}: {stored.get(key)} -> {current.get(key)}")
    return out


def config_slot_of(config: dict) -> tuple[str, str | None, str]:
    """The results-file slot (:func:`kernelbench.runs.config_slot`) of an :func:`eval_config`."""
    return config["mode"], config.get("policy"), config["device"]


# differences that make a stored record describe another candidate (or reference) than
# the file now holds: such a record is evaluated again even without ``overwrite``
# a record made from other sources, or by another KernelGuard version (whose checks may have
# let through what the current ones catch), is evaluated again rather than kept
_SOURCE_KEYS = ("candidate_sha256", "reference_sha256", "kernelguard_version")


@dataclass
class Plan:
    """What a batch will do: pending items, re-evaluated records and kept records."""

    pending: list[WorkItem]
    missing: list[tuple[int, int]]  # (problem, sample) pairs without a kernel file
    done: int  # samples whose stored record matches the current configuration
    stale: Counter  # reason -> number of stored records evaluated again (and replaced)
    kept: Counter = field(default_factory=Counter)  # reason -> stored records of this slot left as they are
    other_slots: Counter = field(default_factory=Counter)  # slot label -> records of other configurations

    def stale_lines(self) -> list[str]:
        lines = []
        for reason, n in self.stale.most_common():
            what = "sample" if n == 1 else "samples"
            lines.append(f"[eval] re-evaluating {n} {what}: stored record differs ({reason})")
        return lines

    def kept_lines(self) -> list[str]:
        lines = []
        for reason, n in self.kept.most_common():
            what = "record" if n == 1 else "records"
            lines.append(f"[eval] kept {n} {what} made with other settings ({reason}); they count as done: "
                         "pass overwrite=true to re-evaluate and replace them, or use another run_name")
        if self.other_slots:
            parts = ", ".join(f"{label} ({n})" for label, n in sorted(self.other_slots.items()))
            lines.append(f"[eval] kept the records of other configurations in the same file: {parts}")
        return lines


def plan_batch(dataset: Any, level: int, run_dir: Path, num_samples: int, results: dict[str, list[dict]],
               config: dict | None = None, overwrite: bool = False) -> Plan:
    """The work list, in problem order with the samples of a problem consecutive.

    With ``config`` (from :func:`eval_config`), only stored records of the same slot
    (mode, policy, device) are considered; records of other slots are kept and
    counted in ``other_slots``.  A stored record of this slot counts as done when its
    ``metadata.eval_config`` equals ``config`` plus the current sha256 of the kernel
    and reference sources.  It is evaluated again (and replaced) when it is
    ``UNSUPPORTED`` (no verdict to lose) or its candidate or reference source
    changed; a record made with other settings (trial counts, precision, an older
    KernelGuard...) is kept and counts as done unless ``overwrite`` is true.
    Without ``config``, any stored record counts (upstream behaviour).
    """
    pending, missing, done, stale, kept, others = [], [], 0, Counter(), Counter(), Counter()
    slot = config_slot_of(config) if config is not None else None
    for pid in dataset.get_problem_ids():
        problem = dataset.get_problem_by_id(pid)
        ref_sha = sha256_text(problem.code)
        for sid in range(num_samples):
            path = run_dir / runs.kernel_file_name(level, pid, sid)
            old = runs.find_record(results, pid, sid, slot)
            if slot is not None:
                for r in results.get(str(pid), []):
                    if isinstance(r, dict) and r.get("sample_id") == sid and runs.config_slot(r) != slot:
                        others[runs.slot_label(runs.config_slot(r))] += 1
            if not path.exists():
                if old is None:
                    missing.append((pid, sid))
                continue
            full = None
            if config is not None:
                try:
                    cand_sha = sha256_text(path.read_text(errors="surrogateescape"))
                except OSError:
                    missing.append((pid, sid))
                    continue
                full = dict(config, candidate_sha256=cand_sha, reference_sha256=ref_sha)
            if old is not None:
                if full is None:
                    done += 1
                    continue
                stored = stored_config(old)
                diffs = config_differences(stored, full)
                rh = old.get("reward_hardening")
                if isinstance(rh, dict) and rh.get("integrity_status") == "UNSUPPORTED":
                    # no verdict to lose, and the machine may have what was missing now (a GPU)
                    stale["stored record is UNSUPPORTED"] += 1
                    pending.append(WorkItem(pid, sid, str(path), problem.path, problem.code, problem.name, full))
                    continue
                if not diffs:
                    done += 1
                    continue
                source_changed = stored is not None and any(stored.get(k) != full.get(k) for k in _SOURCE_KEYS)
                if source_changed or overwrite:
                    stale["; ".join(diffs)] += 1
                else:
                    kept["; ".join(diffs)] += 1
                    done += 1
                    continue
            pending.append(WorkItem(pid, sid, str(path), problem.path, problem.code, problem.name, full))
    return Plan(pending, missing, done, stale, kept, others)


def work_list(dataset: Any, level: int, run_dir: Path, num_samples: int, results: dict[str, list[dict]],
              config: dict | None = None) -> tuple[list[WorkItem], list[tuple[int, int]]]:
    """Pending items and the (problem, sample) pairs whose kernel file is missing."""
    plan = plan_batch(dataset, level, run_dir, num_samples, results, config)
    return plan.pending, plan.missing


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


class BatchInterrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped a batch; ``saved`` of ``total`` records were written."""

    def __init__(self, saved: int, total: int, threads_left: bool = False):
        super().__init__(f"interrupted: {saved} of {total} saved; rerun to resume")
        self.saved, self.total = saved, total
        self.threads_left = threads_left  # a sample thread is still busy (e.g. starting the forkserver)


class BatchWriteError(OSError):
    """The results file could not be written; the batch stopped."""

    def __init__(self, error: OSError, saved: int, total: int):
        super().__init__(error.errno, f"{error.strerror or error}; {saved} of {total} saved")
        self.saved, self.total = saved, total


def _unsupported(record: dict) -> bool:
    rh = record.get("reward_hardening") if isinstance(record, dict) else None
    return isinstance(rh, dict) and rh.get("integrity_status") == "UNSUPPORTED"


def _stamp(record: dict, item: WorkItem) -> dict:
    record["sample_id"] = item.sample_id
    if item.config is not None:
        meta = record.get("metadata")
        if not isinstance(meta, dict):
            meta = record["metadata"] = {}
        meta["eval_config"] = dict(item.config)
    return record


def run_batch(items: list[WorkItem], evaluate: Callable[[WorkItem, str, str], dict], results_path: Path,
              devices: list[str], build_root: Path, keep_build_dirs: bool = True,
              progress: bool = True, stop_grace_s: float = 5.0) -> int:
    """Evaluate ``items`` with ``len(devices)`` concurrent workers; returns how many were written.

    Each record is merged into ``results_path`` under its cross-process lock as soon as
    it exists.  Batches on one run directory cooperate: a process claims a problem
    (a lock file under ``build_root/.claims``) while it evaluates that problem's
    samples; a problem claimed by another process is put back and taken up at the
    end, when its samples are usually done.  When an item carries a configuration
    (:func:`plan_batch` with ``config``) and a record of that sample under the same
    configuration appeared meanwhile, that record is kept and the item skipped: a
    finished verdict is never silently replaced.

    Raises :class:`BatchInterrupted` on Ctrl-C / SIGTERM (running workers are killed,
    their unfinished samples are not written; after ``stop_grace_s`` it stops waiting
    for busy sample threads and says so in ``threads_left``) and :class:`BatchWriteError` when the
    results file cannot be written (disk full, permissions); what was written before
    stays valid in both cases.
    """
    from collections import deque

    from tqdm import tqdm

    from kernelbench.procs import kill_live_workers

    write_lock = threading.Lock()
    queue_lock = threading.Lock()
    stop = threading.Event()
    queue, deferred = deque(items), deque()
    written = 0
    view = _ResultsView(results_path)
    claims = _Claims(Path(build_root) / ".claims")
    bar = tqdm(total=len(items), desc="eval", unit="sample", disable=not progress, dynamic_ncols=True)

    def same_config(item: WorkItem) -> Callable[[dict], bool]:
        return lambda old: item.config is not None and stored_config(old) == item.config and not _unsupported(old)

    def slot(item: WorkItem) -> tuple | None:
        return config_slot_of(item.config) if item.config is not None else None

    def next_item() -> tuple[WorkItem, bool] | None:
        with queue_lock:
            if queue:
                return queue.popleft(), False
            if deferred:
                return deferred.popleft(), True
            return None

    def evaluate_one(item: WorkItem, dev: str) -> None:
        nonlocal written
        if item.config is not None:
            old = view.find(item.problem_id, item.sample_id, slot(item))
            if old is not None and same_config(item)(old) and not _unsupported(old):
                return  # another process evaluated it meanwhile
        build_dir = build_root / str(item.problem_id) / str(item.sample_id)
        try:
            try:
                record = evaluate(item, dev, str(build_dir))
            except Exception as exc:  # evaluator fault: fail closed for this sample only
                record = _upstream_record(item.sample_id, {"compiled": False, "metadata": {
                    "error": f"evaluator error: {type(exc).__name__}: {exc}", "device": dev}})
            if stop.is_set():  # interrupted: its worker was killed, the record is not a verdict
                return
            record = _stamp(record, item)
            with write_lock:
                if runs.merge_record(results_path, item.problem_id, record, keep_existing=same_config(item),
                                     by_slot=item.config is not None):
                    written += 1
        finally:
            if not keep_build_dirs:
                shutil.rmtree(build_dir, ignore_errors=True)

    def worker(dev: str) -> None:
        while not stop.is_set():
            got = next_item()
            if got is None:
                return
            item, last_round = got
            if not claims.acquire(item.problem_id, wait=last_round, stop=stop):
                if stop.is_set():
                    return
                with queue_lock:
                    deferred.append(item)
                continue
            try:
                evaluate_one(item, dev)
            finally:
                claims.release(item.problem_id)
            if not stop.is_set():
                bar.update(1)

    pool = ThreadPoolExecutor(max_workers=max(1, len(devices)))
    futures = [pool.submit(worker, dev) for dev in devices or ["cpu"]]
    try:
        for fut in as_completed(futures):
            fut.result()
    except BaseException as exc:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + stop_grace_s
        while not all(f.done() for f in futures) and time.monotonic() < deadline:
            kill_live_workers()  # a running sample may start another worker
            wait(futures, timeout=0.2)
        bar.close()
        stuck = not all(f.done() for f in futures)
        if not stuck:
            claims.release_all()
        if isinstance(exc, KeyboardInterrupt):
            raise BatchInterrupted(written, len(items), stuck) from None
        if isinstance(exc, OSError):
            raise BatchWriteError(exc, written, len(items)) from None
        raise
    pool.shutdown(wait=True)
    bar.close()
    return written


class _Claims:
    """Per-problem claims of this process (``flock`` files; the kernel drops them if we die)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.held: dict[int, list] = {}
        self.mutex = threading.Lock()

    def acquire(self, problem_id: int, wait: bool, stop: threading.Event) -> bool:
        from filelock import FileLock, Timeout

        while True:
            with self.mutex:
                if problem_id in self.held:
                    self.held[problem_id][1] += 1
                    return True
                try:
                    self.directory.mkdir(parents=True, exist_ok=True)
                    lock = FileLock(str(self.directory / f"problem_{problem_id}.lock"), thread_local=False)
                    lock.acquire(timeout=0)
                    self.held[problem_id] = [lock, 1]
                    return True
                except Timeout:
                    pass
                except OSError:  # an unusable claim directory must not stop the batch
                    self.held[problem_id] = [None, 1]
                    return True
            if not wait or stop.wait(0.25):
                return False

    def release(self, problem_id: int) -> None:
        with self.mutex:
            entry = self.held.get(problem_id)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self.held[problem_id]
                if entry[0] is not None:
                    entry[0].release()

    def release_all(self) -> None:
        with self.mutex:
            for lock, _ in self.held.values():
                if lock is not None:
                    lock.release()
            self.held.clear()


class _ResultsView:
    """The results file as last read, re-read only when its (inode, size, mtime) changed."""

    def __init__(self, path: Path):
        self.path, self.key, self.data = Path(path), None, {}

    def find(self, problem_id: int, sample_id: int, slot: tuple | None = None) -> dict | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key != self.key:
            try:
                self.data, self.key = runs.load_results(self.path), key
            except OSError:
                return None
        return runs.find_record(self.data, problem_id, sample_id, slot)


# --------------------------------------------------------------------------- summary
def summary_lines(results: dict[str, list[dict]], keys: list[tuple[int, int]], hardened: bool,
                  results_path: Path, top: int = 5, slot: tuple | None = None) -> list[str]:
    """A few human lines about the records of ``keys`` (the batch's selection) in ``slot``."""
    records = [r for r in (runs.find_record(results, p, s, slot) for p, s in keys) if r is not None]
    n = len(records)
    lines = [f"[eval] summary: {n} of {len(keys)} selected samples have a record"]
    if hardened:
        status = Counter(((r.get("reward_hardening") or {}).get("integrity_status") or "?") for r in records)
        order = ["PASS", "SUSPICIOUS", "FAIL", "UNSUPPORTED"]
        parts = [f"{k} {status[k]}" for k in order if status[k]] + \
                [f"{k} {v}" for k, v in status.items() if k not in order]
        lines.append("  integrity: " + (", ".join(parts) or "none"))
        codes = Counter()
        for r in records:
            codes.update({f.get("code") for f in (r.get("reward_hardening") or {}).get("findings", [])
                          if isinstance(f, dict) and f.get("code")})
        if codes:
            try:
                from kernelbench.reward_hardening.codes import CODES
            except Exception:  # pragma: no cover - summary must never fail the batch
                CODES = {}
            lines.append("  most frequent findings (samples):")
            for code, c in codes.most_common(top):
                info = CODES.get(code)
                lines.append(f"    {code} x{c}: {info.summary if info else '(unknown code)'}")
            rank = {"error": 0, "warning": 1, "info": 2}
            worst = min(((rank.get(str(f.get("severity")), 3), -codes[f.get("code")], f.get("code"))
                         for r in records for f in (r.get("reward_hardening") or {}).get("findings", [])
                         if isinstance(f, dict) and f.get("code")), default=None)
            if worst is not None:
                lines.append(f"    details: uv run kernelguard explain {worst[2]} (the most severe, then most frequent)")
        pytorch_only = sum(1 for r in records if _strict_pytorch_fail(r))
        if pytorch_only:
            lines.append(f"  note: {pytorch_only} of {n} samples FAIL under source_strict because they run "
                         "high-level PyTorch rather than a kernel of their own (RH-13/RH-31); that policy trusts "
                         "only custom kernels, reward_hardening_policy=practical accepts plain PyTorch")
        failed = [(k, r) for k, r in zip(keys, (runs.find_record(results, p, s) for p, s in keys))
                  if r is not None and (r.get("reward_hardening") or {}).get("integrity_status") != "PASS"]
        if failed:
            lines.append("  samples without a verified result:")
            for (p, s), r in failed[:top * 4]:
                lines.append(f"    problem {p} sample {s}: {_reason(r)}")
            if len(failed) > top * 4:
                lines.append(f"    ... and {len(failed) - top * 4} more (see the results file)")
        fast = [r for r in records if _verified_speedup(r) is not None]
        if fast:
            faster = sum(1 for r in fast if _verified_speedup(r) > 1.0)
            lines.append(f"  verified fast_1: {faster / n:.3f} ({faster} of {n} samples verified and faster than "
                         "the reference timed beside each of them, in this run)")
            lines.append("    (the analysis's verified_fast_p counts problems, sample 0 only, against the "
                         "baseline file's times: its figures can differ)")
        lines.extend(speedup_bound_lines(records))
    else:
        compiled = sum(1 for r in records if r.get("compiled"))
        correct = sum(1 for r in records if r.get("compiled") and r.get("correctness"))
        lines.append(f"  compiled {compiled}, correct {correct}, failed {n - correct}")
    lines.append(f"  results: {results_path}")
    return lines


def _strict_pytorch_fail(record: dict) -> bool:
    """A source_strict FAIL whose errors are only the PyTorch-fallback codes (an honest plain-PyTorch candidate)."""
    rh = record.get("reward_hardening") or {}
    if rh.get("policy") != "source_strict" or rh.get("integrity_status") != "FAIL":
        return False
    errors = {f.get("code") for f in rh.get("findings", []) if isinstance(f, dict) and f.get("severity") == "error"}
    return bool(errors) and errors <= {"RH-13", "RH-31"}
def _reason(record: dict) -> str:
    """``STATUS RH-NN: one line of evidence`` for the most severe finding of a record."""
    rh = record.get("reward_hardening") or {}
    status = rh.get("integrity_status", "?")
    rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted((f for f in rh.get("findings") or [] if isinstance(f, dict)),
                      key=lambda f: rank.get(f.get("severity"), 3))
    if not findings:
        missing = [n for n, c in (rh.get("capabilities") or {}).items()
                   if isinstance(c, dict) and c.get("required") and c.get("status") != "AVAILABLE"]
        return f"{status}" + (f": missing {', '.join(missing)}" if missing else "")
    from kernelbench.reward_hardening.findings import describe

    f = findings[0]
    return f"{status} {f.get('code')}: {describe(f) or f.get('summary', '')}"[:240]


def speedup_bound_lines(records: list[dict]) -> list[str]:
    """The in-run speedup with its lower bound, and the count of noisy samples (RH-54)."""
    bounds = [b for b in ((r.get("reward_hardening") or {}).get("speedup") for r in records)
              if isinstance(b, dict) and b.get("verified") and isinstance(b.get("lower_bound"), (int, float))]
    noisy = sum(1 for r in records if any(isinstance(f, dict) and f.get("code") == "RH-54"
                                          for f in (r.get("reward_hardening") or {}).get("findings", [])))
    out = []
    if bounds:
        level = bounds[0].get("level")
        claimed = sum(1 for b in bounds if b["lower_bound"] > 1.0)
        slower = sum(1 for b in bounds if b.get("upper_bound", 2.0) < 1.0)
        points = sorted(b["point"] for b in bounds)
        lcbs = sorted(b["lower_bound"] for b in bounds)
        out.append(f"  speedup (point estimate, lower bound at level {level}): median {points[len(points) // 2]:.3g}x "
                   f"(>= {lcbs[len(lcbs) // 2]:.3g}x); {claimed} of {len(bounds)} verified samples are faster "
                   f"by their lower bound, {slower} slower by their upper bound")
    if noisy:
        out.append(f"  timing noise: {noisy} of {len(records)} samples were timed with too much spread or on a busy "
                   f"machine (RH-54, info): their bounds are wide; rerun on an idle machine")
    return out


def _verified_speedup(record: dict) -> float | None:
    rh = record.get("reward_hardening") or {}
    t, ref = rh.get("verified_runtime"), rh.get("verified_reference_runtime")
    if not rh.get("verified") or not isinstance(t, (int, float)) or not isinstance(ref, (int, float)) or t <= 0:
        return None
    return ref / t
