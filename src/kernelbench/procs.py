"""Disposable worker processes: the forkserver, worker handles and one-shot calls.

Workers are forked from a *forkserver* that has imported torch but never initialised
CUDA, so a fresh, isolated process costs tens of milliseconds instead of the 4-6 s of
a new interpreter (``bench/bench_hardening_overhead.py`` measures it).  Every worker
gets its own workspace directory, a scrubbed environment, stdout/stderr redirected to
a log file, and is killed (whole process group) when it overruns its deadline.

This module is the parent side (the context, :class:`WorkerHandle`, one-shot calls);
what runs in the child before its target is :mod:`kernelbench.worker_child`.

Messages are framed bytes, never pickles: a worker may run adversarial code, and
unpickling its replies would hand it code execution in the trusted parent.  A frame is
``<u32 header length><JSON header><blob 0><blob 1>...`` with the blob lengths listed
in the header; tensors travel as raw little-endian bytes plus dtype and shape.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kernelbench.reward_hardening.ipc.framing import (  # noqa: F401  (re-exported)
    FrameError,
    ResponseTooLarge,
    decode_frame,
    encode_frame,
    make_spill_dir,
    recv_frame,
    send_frame,
    tensor_from_wire,
    tensor_to_wire,
    value_from_json,
    value_to_json,
    values_from_wire,
    values_to_wire,
)
from kernelbench.worker_child import bootstrap

__all__ = [
    "FrameError",
    "WorkerCrashed",
    "WorkerHandle",
    "WorkerTimeout",
    "ResponseTooLarge",
    "WorkerMemoryExceeded",
    "decode_frame",
    "encode_frame",
    "get_context",
    "private_rss_bytes",
    "start_forkserver",
    "tensor_from_wire",
    "tensor_to_wire",
]

_CTX: Any = None

# Environment variables a worker may inherit; everything else is dropped.
ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH", "CC", "CXX", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "NVIDIA_VISIBLE_DEVICES",
    "KERNELBENCH_DEMO_SCALE", "TRITON_CACHE_DIR", "TRITON_PTXAS_PATH", "PYTHONHASHSEED",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
)


class WorkerTimeout(RuntimeError):
    """The worker did not answer before its deadline."""


class WorkerCrashed(RuntimeError):
    """The worker exited or closed its channel before answering."""


class WorkerMemoryExceeded(RuntimeError):
    """The worker's private resident memory went over its limit (it was killed)."""


def private_rss_bytes(pid: int) -> int | None:
    """Resident anonymous (private) memory of a process, from ``/proc/<pid>/status``.

    Shared mappings (the judge's lent tensors) are not counted: they belong to the
    judge's budget.  ``None`` where /proc cannot be read.
    """
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# --------------------------------------------------------------------------- context
_CTX_LOCK = threading.Lock()


def get_context() -> Any:
    """The forkserver context with torch preloaded (CUDA untouched in the server)."""
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            if "forkserver" in mp.get_all_start_methods():
                ctx = mp.get_context("forkserver")
                # torch and the harness modules (with what they would import on first use,
                # kernelbench._worker_preload) load once here instead of in every worker
                ctx.set_forkserver_preload(["kernelbench.forkserver_exit", "torch", "kernelbench.procs",
                                            "kernelbench._worker_preload", "kernelbench._forkserver_guard"])
                from multiprocessing import forkserver

                # Start the server now, with the scrubbed environment (workers can read its
                # /proc/<pid>/environ) and without re-importing the parent's __main__.
                # The server imports ``kernelbench`` from the same place as this process: Python
                # 3.11's forkserver ignores the parent's sys.path, so without this a checkout run
                # from source would hand its workers whatever copy is installed instead.
                import kernelbench

                env = scrubbed_env({"PYTHONPATH": os.path.dirname(os.path.dirname(
                    os.path.abspath(kernelbench.__file__)))})
                with _replaced_environ(env), _no_main_fixup():
                    forkserver.ensure_running()
            else:  # pragma: no cover - platforms without forkserver
                ctx = mp.get_context("spawn")
            _CTX = ctx
    return _CTX


def start_forkserver() -> None:
    """Start the workers' forkserver now, without waiting for it.

    The forkserver imports torch and the harness (2-3 s) in its own process; a command
    that calls this before importing torch itself overlaps the two imports, and its first
    worker starts in milliseconds instead of waiting for the server's imports.
    Idempotent; call it only once the command knows it will evaluate something.
    """
    get_context()


@contextlib.contextmanager
def _replaced_environ(env: dict[str, str]):
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def scrubbed_env(extra: dict[str, str] | None = None, workspace: str | None = None) -> dict[str, str]:
    """The allowlisted environment of a worker, with the interpreter's own bin directory first on PATH.

    Extension builds run ``ninja`` from PATH, and two ninja versions hash a build's
    command line differently: a build made under ``uv run`` (the environment's ninja)
    was rebuilt from scratch by a plain ``.venv/bin/python`` run (the system's ninja)
    and back, a minute each time on a GPU host.  The environment beside torch wins.
    """
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    bindir = os.path.dirname(sys.executable)
    parts = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != bindir]
    env["PATH"] = os.pathsep.join([bindir, *parts])
    if workspace:
        env["HOME"] = workspace
        env["TMPDIR"] = os.path.join(workspace, "tmp")
    if extra:
        env.update(extra)
    return env


# --------------------------------------------------------------------------- evaluator death
# A worker dies with its parent (see :func:`kernelbench.worker_child.die_with_parent`);
# it is told which pid that parent should have, so a worker forked just as its
# forkserver died learns it.
def _expected_parent(ctx: Any) -> int | None:
    """The pid a new worker's parent will have: the forkserver's, or ours under spawn."""
    if ctx.get_start_method() != "forkserver":
        return os.getpid()
    from multiprocessing import forkserver

    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    try:  # a dead forkserver is restarted by Process.start(): then the pid is not known here
        with open(f"/proc/{pid}/stat") as fh:
            raw = fh.read()
        if raw[raw.rfind(")") + 2:].split()[0] in ("Z", "X"):
            return None
    except (OSError, TypeError):
        return None
    return pid


_LIVE: dict[int, "WorkerHandle"] = {}
_LIVE_LOCK = threading.Lock()


def kill_live_workers() -> int:
    """Kill every worker this process started and has not yet killed (Ctrl-C in a batch)."""
    with _LIVE_LOCK:
        handles = list(_LIVE.values())
    for handle in handles:
        try:
            handle.kill()
        except Exception:
            pass
    return len(handles)


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def _no_main_fixup():
    """Start children without re-importing the parent's ``__main__`` in them.

    multiprocessing re-runs the parent's main script in every non-fork child (and in
    the forkserver) so that pickled references to its functions resolve.  Workers
    only call functions of installed modules, so that import is pure cost, and it
    would run a user's script inside every worker.
    """
    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        saved = {}
        for attr in ("__file__", "__spec__"):
            if main is not None and attr in vars(main):
                saved[attr] = vars(main)[attr]
        try:
            if main is not None:
                if "__file__" in saved:
                    del main.__file__
                main.__spec__ = None
            yield
        finally:
            if main is not None:
                for attr, value in saved.items():
                    setattr(main, attr, value)
                if "__spec__" not in saved and "__spec__" in vars(main):
                    del main.__spec__


@dataclass
class WorkerHandle:
    """Parent-side handle of one disposable worker process."""

    target: str  # "module:function" run in the child as function(conn, spec)
    spec: dict
    max_response_bytes: int = 512 * 1024 * 1024
    log_limit_bytes: int = 1024 * 1024
    process: Any = None
    conn: Any = None
    started_at: float = 0.0
    events: list = field(default_factory=list)
    max_rss_bytes: int | None = None  # private resident memory limit, watched while waiting
    peak_rss_bytes: int = 0  # largest private resident memory seen while waiting

    def start(self) -> "WorkerHandle":
        ctx = get_context()
        if self.spec.get("spill_dir") is None:
            self.spec["spill_dir"] = make_spill_dir()
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        try:
            self.spec["expected_parent"] = _expected_parent(ctx)
        except Exception:
            self.spec.pop("expected_parent", None)
        self.process = ctx.Process(target=bootstrap, args=(child_conn, self.target, self.spec), daemon=True)
        self.started_at = time.monotonic()
        with _no_main_fixup():
            self.process.start()
        child_conn.close()
        self.conn = parent_conn
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        return self

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def send(self, header: dict, blobs: list[bytes] | None = None) -> None:
        try:
            send_frame(self.conn, header, blobs, self.spec.get("spill_dir"))
        except (OSError, ValueError) as exc:
            raise WorkerCrashed(f"channel closed while sending: {exc}") from None

    def send_message(self, header: dict, fds: list[int] | None = None) -> None:
        """Send a frame with file descriptors (see :mod:`kernelbench.reward_hardening.ipc.wire`)."""
        from kernelbench.reward_hardening.ipc.wire import send_message

        try:
            send_message(self.conn, header, fds, self.spec.get("spill_dir"))
        except (OSError, ValueError) as exc:
            raise WorkerCrashed(f"channel closed while sending: {exc}") from None

    def receive_message(self, timeout: float, allow_fds: bool = False) -> tuple[dict, list[int]]:
        """Wait for a frame (and its descriptors where ``allow_fds``), watching memory."""
        from kernelbench.reward_hardening.ipc.wire import recv_message

        self._wait(timeout)
        return self._read(lambda: recv_message(self.conn, self.max_response_bytes, self.spec.get("spill_dir"),
                                               allow_fds))

    def _read(self, read: Callable[[], Any]) -> Any:
        """Run a channel read, mapping its failures onto the worker exceptions."""
        try:
            return read()
        except EOFError:
            raise WorkerCrashed(f"worker closed its channel (exit code {self.process.exitcode})") from None
        except OSError as exc:
            if "too long" in str(exc).lower() or "bad message length" in str(exc).lower():
                raise ResponseTooLarge(f"reply larger than {self.max_response_bytes} bytes") from None
            raise WorkerCrashed(f"channel error: {exc}") from None

    def _check_memory(self) -> None:
        if self.process is None or self.process.pid is None:
            return
        # a containment unit (attached by the pipeline as ``unit``) charges the whole worker:
        # its children, the shared memory it created and, where available, its cgroup's memory
        unit = getattr(self, "unit", None)
        meter = getattr(unit, "memory_bytes", None)
        rss = meter() if meter is not None else private_rss_bytes(self.process.pid)
        what = "resident memory (children and shared memory included)" if meter is not None and \
            getattr(unit, "role", "") == "candidate" else "private resident memory"
        if rss is None:
            return
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        if self.max_rss_bytes and rss > self.max_rss_bytes:
            self.kill()
            raise WorkerMemoryExceeded(f"{what} {rss / 2**30:.2f} GiB over the limit of "
                                       f"{self.max_rss_bytes / 2**30:.2f} GiB")

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            remaining = deadline - time.monotonic()
            try:
                ready = self.conn.poll(max(min(remaining, 0.05), 0.0))
            except (OSError, EOFError):
                raise WorkerCrashed("channel closed") from None
            if ready:
                break
            if not self.process.is_alive():
                # drain anything it managed to send before dying
                try:
                    if self.conn.poll(0):
                        break
                except (OSError, EOFError):
                    pass
                raise WorkerCrashed(f"worker exited with code {self.process.exitcode}")
            self._check_memory()  # first: a worker over its limit at the deadline is a memory kill
            if remaining <= 0:
                raise WorkerTimeout(f"no reply within {timeout:.3g} s")
        self._check_memory()

    def receive(self, timeout: float) -> tuple[dict, list[bytes]]:
        self._wait(timeout)
        return self._read(lambda: recv_frame(self.conn, self.max_response_bytes, self.spec.get("spill_dir")))

    def request(self, header: dict, blobs: list[bytes] | None = None, timeout: float = 10.0) -> tuple[dict, list[bytes]]:
        self.send(header, blobs)
        return self.receive(timeout)

    def kill(self) -> None:
        if self.process is None:
            return
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        pid = self.process.pid
        if self.process.is_alive():
            for sig in (signal.SIGKILL,):
                try:
                    os.killpg(pid, sig)
                except (ProcessLookupError, PermissionError, OSError):
                    pass
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError, OSError):
                    pass
        else:
            try:  # stragglers left in its process group
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass
        self.process.join(timeout=5)
        try:
            self.conn.close()
        except Exception:
            pass
        spill = self.spec.get("spill_dir")
        if spill:
            import shutil

            shutil.rmtree(spill, ignore_errors=True)

    def close(self, grace: float = 2.0) -> None:
        if self.process is None:
            return
        try:
            self.send({"cmd": "exit"})
        except WorkerCrashed:
            pass
        self.process.join(timeout=grace)
        self.kill()

    def read_log(self) -> tuple[str, int]:
        """Return (at most ``log_limit_bytes`` of the log, full size in bytes)."""
        path = self.spec.get("log_path")
        if not path or not os.path.exists(path):
            return "", 0
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            data = fh.read(self.log_limit_bytes)
        return data.decode(errors="replace"), size


# --------------------------------------------------------------------------- one-shot
def _oneshot_entry(conn: Any, spec: dict) -> None:
    import importlib

    module_name, _, func_name = spec["call"].partition(":")
    func: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
    result = func(**spec.get("kwargs", {}))
    conn.send_bytes(encode_frame({"ok": True, "result": result}))


def run_oneshot(call: str, kwargs: dict, timeout: float, workspace: str, env: dict | None = None,
                log_path: str | None = None, spec_extra: dict | None = None,
                on_start: Callable[[Any], None] | None = None) -> dict:
    """Run ``module:function(**kwargs)`` in a disposable worker; JSON result or error dict.

    Without ``env`` the worker gets the scrubbed environment of this moment (not the one
    the forkserver happened to start with), with ``HOME`` in ``workspace``.
    ``spec_extra`` adds worker-spec entries (``role``, ``containment``, ``build_dir``: an
    untrusted one-shot runs contained like a candidate worker); ``on_start`` gets the
    started handle (to attach its containment unit).
    """
    os.makedirs(workspace, exist_ok=True)
    if env is None:
        env = scrubbed_env(workspace=workspace)
    spec = {"call": call, "kwargs": kwargs, "workspace": workspace, "env": env, "log_path": log_path,
            **(spec_extra or {})}
    handle = WorkerHandle("kernelbench.procs:_oneshot_entry", spec).start()
    if on_start is not None:
        on_start(handle)
    try:
        header, _ = handle.receive(timeout)
        if header.get("ok"):
            return {"ok": True, "result": header.get("result")}
        return {"ok": False, "error": header.get("error", "worker failed"), "traceback": header.get("traceback")}
    except WorkerTimeout:
        return {"ok": False, "error": "Evaluation timed out", "timeout": True}
    except (WorkerCrashed, ResponseTooLarge, FrameError) as exc:
        return {"ok": False, "error": str(exc)}
    finally:
        handle.kill()


# The last forkserver preload: tell kernelbench.forkserver_exit that torch is imported.
if "kernelbench.forkserver_exit" in sys.modules:
    sys.modules["kernelbench.forkserver_exit"].preload_done()
