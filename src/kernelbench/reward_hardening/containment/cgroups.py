"""cgroup v2: the evaluator's hierarchy, worker leaves, ``cgroup.kill`` and the memory controller.

Parent side.
"""

from __future__ import annotations

import os
import signal

from kernelbench.reward_hardening.containment.procfs import _children_map, _descendants


def _cgroup2_mount() -> str | None:
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        pass
    return None


def _own_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def _cgroup_procs(path: str) -> list[int]:
    pids: list[int] = []
    for dirpath, _dirs, files in os.walk(path):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as fh:
                    pids += [int(x) for x in fh.read().split()]
            except (OSError, ValueError):
                continue
    return pids


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _words(path: str) -> list[str]:
    try:
        with open(path) as fh:
            return fh.read().split()
    except OSError:
        return []


def _enable_memory_controller(base: str) -> tuple[bool, str]:
    """Enable the memory controller for the worker leaves under ``base`` where the host allows.

    cgroup v2's no-internal-process rule: a cgroup's ``subtree_control`` can name a
    controller only while the cgroup itself holds no process.  ``base`` never does; its
    parent (the evaluator's own cgroup) usually does, so the evaluator first moves itself
    and its own descendants into a leaf of their own, and only where nothing else shares
    that cgroup (other processes are never moved).
    """
    parent = os.path.dirname(base)
    if "memory" not in _words(os.path.join(parent, "cgroup.controllers")):
        return False, f"no memory controller delegated to {parent}"
    if "memory" not in _words(os.path.join(parent, "cgroup.subtree_control")):
        me = os.getpid()
        mine = {me, *_descendants(me, _children_map())}
        procs = [int(x) for x in _words(os.path.join(parent, "cgroup.procs")) if x.isdigit()]
        others = [p for p in procs if p not in mine]
        if others:
            return False, (f"{parent} also holds {len(others)} process(es) that are not the evaluator's; "
                           "they are not moved, so the memory controller cannot be enabled below it")
        leaf = os.path.join(parent, f"kernelguard-evaluator-{me}")
        try:
            os.makedirs(leaf, exist_ok=True)
            for p in procs:
                _write(os.path.join(leaf, "cgroup.procs"), str(p))
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")
        except OSError as exc:
            for p in procs:  # undo: back where they were
                try:
                    _write(os.path.join(parent, "cgroup.procs"), str(p))
                except OSError:
                    pass
            _rmdir_quiet(leaf)
            return False, f"cannot enable the memory controller in {parent}: {exc.strerror or exc}"
    try:
        _write(os.path.join(base, "cgroup.subtree_control"), "+memory")
    except OSError as exc:
        return False, f"cannot enable the memory controller in {base}: {exc.strerror or exc}"
    return True, f"memory controller enabled for the worker leaves under {base}"


def _rmdir_quiet(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _kill_cgroup(path: str) -> None:
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as fh:
            fh.write("1")
    except OSError:
        for pid in _cgroup_procs(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _memcg_bytes(cgroup: str) -> int | None:
    try:
        with open(os.path.join(cgroup, "memory.stat")) as fh:
            stat = dict(line.split() for line in fh if len(line.split()) == 2)
        return int(stat.get("anon", 0)) + int(stat.get("shmem", 0))
    except (OSError, ValueError):
        return None
