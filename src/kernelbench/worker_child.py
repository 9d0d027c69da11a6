"""The child side of a disposable worker: what runs between the fork and the worker's target.

Runs in every worker (judge, candidate, one-shot), started by
:class:`kernelbench.procs.WorkerHandle`.  :func:`bootstrap` makes the process die with
its parent, leaves the forkserver's alive-pipe, starts a session of its own, sends its
output to the log file, installs the scrubbed environment and the workspace, imports
the trusted target and only then enters the OS containment (where the spec asks for
it) and hands the channel to the target.  :mod:`kernelbench.procs` imports this module,
so the forkserver has it loaded before it forks anyone.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any

from kernelbench.reward_hardening.ipc.framing import encode_frame

__all__ = ["bootstrap", "die_with_parent", "drop_alive_pipe"]


def bootstrap(conn: Any, target: str, spec: dict) -> None:
    """Runs in the worker: isolate, then hand the channel to ``target``."""
    die_with_parent(spec.pop("expected_parent", None))
    drop_alive_pipe()
    try:
        os.setsid()
    except OSError:
        pass
    workspace = spec.get("workspace")
    log_path = spec.get("log_path")
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
    env = spec.get("env")
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if workspace:
        os.makedirs(os.path.join(workspace, "tmp"), exist_ok=True)
        os.chdir(workspace)
        import tempfile

        tempfile.tempdir = os.path.join(workspace, "tmp")
    module_name, _, func_name = target.partition(":")
    try:
        import importlib

        func = getattr(importlib.import_module(module_name), func_name)
        if spec.get("containment"):  # OS containment, after the trusted import, before any candidate code
            from kernelbench.reward_hardening import containment

            containment.enter(spec)
        func(conn, spec)
    except SystemExit:
        raise
    except BaseException as exc:  # report, then die
        try:
            conn.send_bytes(encode_frame({"ok": False, "fatal": True, "error": f"{type(exc).__name__}: {exc}",
                                          "traceback": traceback.format_exc()[-4000:]}))
        except Exception:
            pass
        raise


# --------------------------------------------------------------------------- evaluator death
# The batch process can die at any moment (SIGKILL, preemption).  Its forkserver exits
# when its alive-pipe closes (multiprocessing does that) and, through the preloaded
# ``kernelbench.forkserver_exit``, kills its workers' process groups on the way out; a
# worker also asks the kernel to SIGKILL it when its parent (the forkserver) dies.
PR_SET_PDEATHSIG = 1


def die_with_parent(expected: int | None = None) -> None:
    """PR_SET_PDEATHSIG(SIGKILL) on Linux; exit at once if the parent is already gone.

    ``expected`` is the parent pid the evaluator saw when it asked for this worker: a
    worker forked just as its forkserver died would otherwise find itself reparented
    before the request took effect and never learn it.
    """
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    if expected is not None and parent != expected:
        os._exit(1)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def drop_alive_pipe() -> None:
    """Close the forkserver's alive-pipe write end that multiprocessing hands every worker.

    The forkserver exits when every holder of that pipe is gone; a worker holding it
    would keep the forkserver (and so itself) alive after the evaluator died.
    """
    try:
        from multiprocessing import forkserver

        server = getattr(forkserver, "_forkserver", None)
        fd = getattr(server, "_forkserver_alive_fd", None)
        if fd is not None:
            os.close(fd)
            server._forkserver_alive_fd = None
    except Exception:
        pass
