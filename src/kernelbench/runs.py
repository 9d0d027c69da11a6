"""Run-directory layout and crash-safe result files (upstream-compatible formats).

``runs/<run_name>/level_{L}_problem_{P}_sample_{S}_kernel.py`` hold candidates;
``eval_results.json`` (off mode) and ``verified_eval_results.json`` (hardened modes)
map the problem id (a string) to a list of per-sample records, sorted numerically.

Every JSON or text file KernelGuard writes goes through :func:`atomic_write_text`, the
one writer of the code base: the data goes to a temporary file ``.<name>.<random>.tmp``
in the same directory, is flushed and ``fsync``-ed, gets the mode a plain ``open``
would give it (0666 minus the umask, so teammates on a shared cluster can read
results), and replaces the target with ``os.replace``; the directory is then
``fsync``-ed so the rename itself survives a power cut.  A process killed at any
moment leaves either the old or the new complete file, never a torn one; a temporary
file it left behind is removed by :func:`remove_stale_temp_files` on the next start.

Results files are shared between processes through a lock file ``.<name>.lock``
beside them (``filelock``, an ``flock`` on Linux, released by the kernel when its
holder dies).  :func:`merge_record` re-reads the file under that lock before merging
one record, so two batches writing the same run directory never lose each other's
records.  Resume works per (problem, sample), not per problem as upstream's check did.

A batch file holds one record per (problem, sample, :func:`config_slot`): the mode,
policy and device a record was made under.  Runs of one ``run_name`` under another
configuration add their records beside the others instead of replacing them; the
analysis chooses a slot by its keys.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = [
    "ResultsFileError",
    "atomic_write_json",
    "atomic_write_text",
    "config_slot",
    "find_record",
    "kernel_file_name",
    "load_results",
    "lock_path",
    "merge_record",
    "record_exists",
    "remove_stale_temp_files",
    "results_lock",
    "slot_label",
    "upsert_record",
]

# Test hook (used by the kill-and-resume tests only): seconds the writer pauses after
# writing the first half of a temporary file, so a random SIGKILL lands mid-write often.
_WRITE_PAUSE_ENV = "KERNELGUARD_TEST_WRITE_PAUSE_S"
# Test hook: raise OSError(ENOSPC) at the N-th results write of this process (1-based).
_ENOSPC_ENV = "KERNELGUARD_TEST_ENOSPC_AT_WRITE"
_writes = 0


class ResultsFileError(OSError):
    """A results file could not be read or written; ``str()`` is a one-line message."""


def kernel_file_name(level: int, problem_id: int, sample_id: int) -> str:
    return f"level_{level}_problem_{problem_id}_sample_{sample_id}_kernel.py"


def _umask() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # not thread-safe, hence only the fallback
    os.umask(mask)
    return mask


def _disk_note(directory: Path) -> str:
    try:
        free = shutil.disk_usage(directory).free
        return f"{free // (1 << 20)} MiB free on the filesystem of {directory}"
    except OSError:
        return f"filesystem of {directory}"


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file + fsync + ``os.replace``).

    Raises :class:`ResultsFileError` (an ``OSError`` with the original ``errno`` and a
    one-line message naming the file and its filesystem) when the write fails; the
    previous content of ``path`` is then untouched.
    """
    global _writes
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _writes += 1
        if os.environ.get(_ENOSPC_ENV) and _writes >= int(os.environ[_ENOSPC_ENV]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        pause = float(os.environ.get(_WRITE_PAUSE_ENV) or 0)
        with os.fdopen(fd, "wb") as fh:
            if pause > 0:
                fh.write(data[: len(data) // 2])
                fh.flush()
                time.sleep(pause)
                fh.write(data[len(data) // 2:])
            else:
                fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, ResultsFileError):
            reason = exc.strerror or str(exc)
            raise ResultsFileError(exc.errno, f"cannot write {path}: {reason} ({_disk_note(path.parent)})") from exc
        raise
    try:  # make the rename durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def atomic_write_json(path: str | os.PathLike, data: Any, indent: int = 4) -> None:
    atomic_write_text(path, json.dumps(data, indent=indent) + "\n")


def remove_stale_temp_files(directory: str | os.PathLike, names: tuple[str, ...]) -> list[str]:
    """Delete temporary files the atomic writer left for ``names`` (a killed earlier run).

    Call it while holding the results lock of those files: a live writer's temporary
    file only exists while that writer holds the lock.
    """
    removed = []
    directory = Path(directory)
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        if any(entry.name.startswith(f".{n}.") and entry.name.endswith(".tmp") for n in names):
            try:
                entry.unlink()
                removed.append(entry.name)
            except FileNotFoundError:
                pass
    return removed


def lock_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


@contextmanager
def results_lock(path: str | os.PathLike, timeout: float = 600.0) -> Iterator[None]:
    """Cross-process exclusive lock of one results file (and its temporary files)."""
    from filelock import FileLock, Timeout

    lp = lock_path(path)
    lp.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lp), mode=0o666 & ~_umask())
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise ResultsFileError(errno.EAGAIN, f"{path}: another process has held its lock {lp} for more than "
                                             f"{timeout:.0f} s") from None
    try:
        yield
    finally:
        lock.release()


def load_results(path: str | os.PathLike) -> dict[str, list[dict]]:
    path = Path(path)
    if not path.exists():
        return {}
    try:
        with open(path) as fh:
            data = json.load(fh)
    except ValueError as exc:
        raise ResultsFileError(errno.EINVAL, f"{path} is not valid JSON ({exc}); move it away to start over") \
            from None
    except OSError as exc:
        raise ResultsFileError(exc.errno, f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ResultsFileError(errno.EINVAL, f"{path}: expected a JSON object mapping problem ids to lists of "
                                             "records; move it away to start over")
    return data


def config_slot(record: dict) -> tuple[str, str | None, str]:
    """``(mode, policy, device kind)`` a record was evaluated under: its place in a results file.

    A results file keeps one record per (problem, sample, slot), so runs of one
    ``run_name`` under another mode, policy or device never replace each other's
    records.  The slot comes from ``metadata.eval_config``; a record written before
    that existed falls back to its ``reward_hardening`` block and ``metadata.device``
    (upstream records, which have neither, are off-mode CUDA records).
    """
    meta = record.get("metadata") if isinstance(record, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    conf = meta.get("eval_config")
    if isinstance(conf, dict) and conf.get("mode"):
        device = str(conf.get("device") or "cuda").split(":", 1)[0]
        return str(conf["mode"]), conf.get("policy"), device
    rh = record.get("reward_hardening") if isinstance(record, dict) else None
    device = str(meta.get("device") or "cuda").strip().lower().split(":", 1)[0] or "cuda"
    if isinstance(rh, dict) and rh.get("mode"):
        return str(rh["mode"]), rh.get("policy"), device
    return "off", None, device


def slot_label(slot: tuple[str, str | None, str]) -> str:
    """``enforce/practical/cpu`` (``off/cpu`` for off mode)."""
    return "/".join(str(part) for part in slot if part is not None)


def record_exists(results: dict[str, list[dict]], problem_id: int, sample_id: int,
                  slot: tuple | None = None) -> bool:
    return find_record(results, problem_id, sample_id, slot) is not None


def find_record(results: dict[str, list[dict]], problem_id: int, sample_id: int,
                slot: tuple | None = None) -> dict | None:
    """The record of ``(problem_id, sample_id)``; with ``slot``, only one made under that slot."""
    for r in results.get(str(problem_id), []):
        if isinstance(r, dict) and r.get("sample_id") == sample_id and (slot is None or config_slot(r) == slot):
            return r
    return None


def _sorted(results: dict[str, list[dict]]) -> dict[str, list[dict]]:
    def key(k: str):
        return (0, int(k)) if k.isdigit() else (1, k)

    def record_key(r: dict):
        mode, policy, device = config_slot(r)
        return r.get("sample_id", 0), mode, policy or "", device

    return {k: sorted(results[k], key=record_key) for k in sorted(results, key=key)}


def merge_record(path: str | os.PathLike, problem_id: int, record: dict,
                 keep_existing: Callable[[dict], bool] | None = None, by_slot: bool = False) -> bool:
    """Merge one record into a results file under its lock; ``False`` if it was not written.

    The file is re-read under the lock, so records another process wrote since this
    one last read it are kept.  When a record for the same sample is already there
    and ``keep_existing(old)`` is true, the file is left as it is (first writer wins).
    With ``by_slot`` only a record of the same sample *and* the same
    :func:`config_slot` is replaced; records of that sample made under another mode,
    policy or device stay beside it.
    """
    with results_lock(path):
        results = load_results(path)
        sid = record.get("sample_id")
        slot = config_slot(record) if by_slot else None
        old = find_record(results, problem_id, sid, slot)
        if old is not None and keep_existing is not None and keep_existing(old):
            return False
        samples = [r for r in results.get(str(problem_id), [])
                   if not (r.get("sample_id") == sid and (slot is None or config_slot(r) == slot))]
        samples.append(record)
        results[str(problem_id)] = samples
        atomic_write_json(path, _sorted(results))
        return True


def upsert_record(path: str | os.PathLike, problem_id: int, record: dict) -> dict[str, list[dict]]:
    """Insert or replace the record of ``(problem_id, record['sample_id'])`` atomically."""
    merge_record(path, problem_id, record)
    return load_results(path)
