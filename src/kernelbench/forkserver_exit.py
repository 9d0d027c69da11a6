"""Forkserver preload: when the forkserver exits, kill its workers' process groups.

Imported only as a preload of the multiprocessing forkserver (see
:func:`kernelbench.procs.get_context`).  The forkserver exits when the evaluator that
started it dies, even by SIGKILL (its alive-pipe reaches end of file); at that exit
this hook SIGKILLs the process group of every worker it forked (each worker leads its
own group), so neither a worker nor a process the candidate started in the worker's
group outlives the evaluator.  A candidate that leaves its process group on purpose
is out of this hook's reach; the worker's own PR_SET_PDEATHSIG covers the worker.
It is the first preload, so it also watches the evaluator while torch is imported.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading

_SERVER_PID = os.getpid()


def _children(pid: int) -> list[int]:
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(name))
    return out


def _kill_workers() -> None:
    if os.getpid() != _SERVER_PID:  # a forked worker inherits the registration
        return
    for child in _children(_SERVER_PID):
        for kill in (os.killpg, os.kill):
            try:
                kill(child, signal.SIGKILL)
            except OSError:
                pass


def _watch_parent_during_preload(parent: int) -> None:
    """Exit as soon as the evaluator dies while the forkserver is still importing torch.

    Until the preload is done the forkserver is not reading its alive-pipe, so without
    this watch it would outlive a SIGKILLed evaluator by the rest of its torch import
    (tens of seconds on a loaded machine).  The thread ends when the preload has
    finished, before the forkserver forks its first worker.
    """
    import sys
    import time

    while True:
        if os.getppid() != parent:
            _kill_workers()
            os._exit(0)
        procs = sys.modules.get("kernelbench.procs")
        spec = getattr(procs, "__spec__", None)
        if procs is not None and not getattr(spec, "_initializing", False):
            return
        time.sleep(0.1)


atexit.register(_kill_workers)
threading.Thread(target=_watch_parent_during_preload, args=(os.getppid(),), daemon=True,
                 name="kernelguard-parent-watch").start()
