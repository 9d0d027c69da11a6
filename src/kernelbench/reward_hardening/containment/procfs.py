"""Reading processes from ``/proc``: status fields, the process-tree walk, memory, mounts.

Parent side (the sweep, memory accounting, the load reading); ``_status`` also serves
the capability check of any process.
"""

from __future__ import annotations

import os
from typing import Any


def _status(pid: int | str = "self") -> dict[str, str]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def _proc_info(pid: int) -> dict[str, Any]:
    st = _status(pid)
    info: dict[str, Any] = {"pid": pid, "ppid": int(st.get("PPid", "0") or 0), "name": st.get("Name", "?"),
                            "seccomp": st.get("Seccomp", "?")}
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            info["cmdline"] = fh.read(300).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        info["cmdline"] = ""
    try:
        info["sid"] = os.getsid(pid)
    except OSError:
        info["sid"] = None
    return info


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            state = stat[stat.rindex(")") + 2]
        except (OSError, ValueError, IndexError):
            continue
        if state not in "ZX":
            kids.setdefault(ppid, []).append(int(name))
    return kids


def _descendants(pid: int, kids: dict[int, list[int]]) -> list[int]:
    out, work = [], list(kids.get(pid, []))
    while work:
        p = work.pop()
        out.append(p)
        work.extend(kids.get(p, []))
    return out


def _reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def _proc_memory(pid: int) -> int:
    st = _status(pid)
    total = 0
    for key in ("RssAnon", "RssShmem"):
        try:
            total += int(st.get(key, "0 kB").split()[0]) * 1024
        except (ValueError, IndexError):
            pass
    return total


def _mountpoints() -> set[str]:
    try:
        with open("/proc/self/mountinfo") as fh:
            return {line.split()[4] for line in fh if len(line.split()) > 4}
    except OSError:
        return set()
