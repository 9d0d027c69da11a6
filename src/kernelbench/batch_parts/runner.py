"""Running a batch's work list: concurrent samples, per-problem claims, record merging (parent process).

:func:`run_batch` evaluates the pending items with one thread per device, each sample
in the evaluator's own worker process; every record is merged into the results file
under its cross-process lock as soon as it exists, so a stopped batch resumes where it
stopped and two batches on one run directory keep each other's records.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from pathlib import Path
from typing import Callable

from kernelbench import runs
from kernelbench.batch_parts.plan import WorkItem, config_slot_of, is_unsupported, stored_config

def upstream_record(sample_id: int, record: dict) -> dict:
    return {
        "sample_id": sample_id,
        "compiled": bool(record.get("compiled", False)),
        "correctness": bool(record.get("correctness", False)),
        "metadata": record.get("metadata", {}),
        "runtime": float(record.get("runtime", -1.0)),
        "runtime_stats": record.get("runtime_stats", {}),
    }


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
        return lambda old: item.config is not None and stored_config(old) == item.config and not is_unsupported(old)

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
            if old is not None and same_config(item)(old) and not is_unsupported(old):
                return  # another process evaluated it meanwhile
        build_dir = build_root / str(item.problem_id) / str(item.sample_id)
        try:
            try:
                record = evaluate(item, dev, str(build_dir))
            except Exception as exc:  # evaluator fault: fail closed for this sample only
                record = upstream_record(item.sample_id, {"compiled": False, "metadata": {
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
