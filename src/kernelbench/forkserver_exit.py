"""Forkserver preload: when the forkserver exits, kill its workers' process groups.

Imported only as a preload of the multiprocessing forkserver (see
:func:`kernelbench.procs.get_context`).  The forkserver exits when the evaluator that
started it dies, even by SIGKILL (its alive-pipe reaches end of file); at that exit
this hook SIGKILLs the process group of every worker it forked (each worker leads its
own group), so neither a worker nor a process the candidate started in the worker's
group outlives the evaluator.  A candidate that leaves its process group on purpose
is out of this hook's reach; the worker's own PR_SET_PDEATHSIG covers the worker.
It is the first preload, so its watchdog also covers the evaluator dying while torch is imported.
"""

from __future__ import annotations

import atexit
import os
import select
import signal

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


def _alive_fd() -> int | None:
    """The forkserver's alive-pipe (read end): ``main(listener_fd, alive_r, ...)`` in its command line."""
    import re
    import stat

    try:
        with open("/proc/self/cmdline", "rb") as fh:
            cmd = fh.read().decode(errors="replace")
        m = re.search(r"forkserver import main; main\((\d+), (\d+)", cmd)
        if m and stat.S_ISFIFO(os.fstat(int(m.group(2))).st_mode):
            return int(m.group(2))
    except (OSError, ValueError):
        pass
    return None


def _start_watchdog() -> tuple[int, int] | None:
    """Fork a small watchdog that kills this forkserver if the evaluator dies during the preload.

    Until the preload (torch) is imported the forkserver is not reading its alive-pipe,
    and a Python thread cannot watch either (the import holds the GIL for seconds), so
    without this the forkserver would outlive a SIGKILLed evaluator by the rest of its
    torch import.  The watchdog is forked before torch is imported (a light process),
    waits on the alive-pipe itself (end of file: the evaluator is gone, even if it died
    before this module was imported), and exits when :func:`preload_done` closes its
    pipe or the forkserver dies.
    """
    alive = _alive_fd()
    if alive is None:
        return None
    server, parent = os.getpid(), os.getppid()
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(r)
        return pid, w
    try:  # the watchdog (imports nothing after the fork)
        os.close(w)
        while True:
            ready, _, _ = select.select([r, alive], [], [], 0.2)
            if r in ready:  # the preload is done, or the forkserver died
                break
            # the evaluator died: its alive-pipe reached end of file, or (when a request of
            # its is still queued, holding the pipe open) the forkserver was reparented
            if alive in ready or _parent_of(server) not in (parent, None):
                try:
                    os.kill(server, signal.SIGKILL)
                except OSError:
                    pass
                break
    finally:
        os._exit(0)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            raw = fh.read()
    except OSError:
        return None
    return int(raw[raw.rfind(")") + 2:].split()[1])


_WATCHDOG = _start_watchdog()


def _exit_now() -> None:
    """The forkserver's first exit handler: kill the workers and skip the interpreter's teardown.

    Tearing down an interpreter with torch loaded takes seconds of CPU, tens of seconds of
    wall time on a loaded machine; the forkserver has nothing to flush, so it exits at once.
    """
    if os.getpid() != _SERVER_PID:
        return
    _kill_workers()
    os._exit(0)


def preload_done() -> None:
    """Called at the end of ``kernelbench.procs``'s import (the last preload): stop the watchdog."""
    global _WATCHDOG
    if os.getpid() != _SERVER_PID:
        return
    atexit.register(_exit_now)  # registered last, so it runs first
    if _WATCHDOG is None:
        return
    pid, w = _WATCHDOG
    _WATCHDOG = None
    os.close(w)
    try:  # reap it here, before the forkserver's SIGCHLD loop would report an unknown child
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


atexit.register(_kill_workers)
