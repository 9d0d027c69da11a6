"""Which containment mechanisms this machine offers, probed once per evaluator process.

Parent side: each mechanism is tried in a forked child so the parent keeps its state;
``begin_evaluation`` also makes the parent a subreaper and non-dumpable.  ``_STATE``
holds what the probes found and the live worker units.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from kernelbench.reward_hardening.containment.cgroups import (
    _cgroup2_mount, _enable_memory_controller, _kill_cgroup, _own_cgroup, _rmdir_quiet)
from kernelbench.reward_hardening.containment.landlock import _apply_landlock, landlock_abi
from kernelbench.reward_hardening.containment.privileges import _drop_capabilities, protect_trusted_process
from kernelbench.reward_hardening.containment.seccomp import _install_seccomp
from kernelbench.reward_hardening.containment.syscalls import (
    _CLONE_NEWCGROUP, _CLONE_NEWIPC, _PR_SET_CHILD_SUBREAPER, _lib, _linux_x86_64, _prctl, _sys)

# the candidate's own group id: every file, SysV object or message queue it creates carries it
_GID_BASE, _GID_SPAN = 1_900_000_000, 100_000_000


@dataclass
class Mechanism:
    name: str
    active: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"active": self.active, "detail": self.detail}


_STATE: dict[str, Any] = {"caps": None, "base": None, "begun": False, "n": 0, "live": set(), "memcg": None}
_LOCK = threading.Lock()


def _probe_fork(fn) -> tuple[bool, str]:
    """Run ``fn`` in a forked child (so the parent keeps its state); (ok, error)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(r)
        try:
            fn()
            os.write(w, b"ok")
        except BaseException as exc:  # noqa: BLE001
            os.write(w, f"{type(exc).__name__}: {exc}".encode()[:500])
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1024)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if data == b"ok":
        return True, ""
    return False, data.decode(errors="replace") or f"probe child died (status {status})"


def _probe_cgroup() -> tuple[str | None, str]:
    mount, own = _cgroup2_mount(), _own_cgroup()
    if mount is None:
        return None, "no cgroup2 file system mounted"
    if own is None:
        return None, "process is not in a cgroup-v2 hierarchy"
    parent = os.path.join(mount, own.lstrip("/"))
    base = os.path.join(parent, f"kernelguard-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.mkdir(base)
    except OSError as exc:
        return None, f"cannot create a cgroup under {parent}: {exc.strerror}"
    if not os.path.exists(os.path.join(base, "cgroup.kill")):
        os.rmdir(base)
        return None, "kernel has no cgroup.kill (needs Linux >= 5.14)"
    probe = os.path.join(base, "probe")
    try:
        os.mkdir(probe)

        def join() -> None:
            with open(os.path.join(probe, "cgroup.procs"), "w") as fh:
                fh.write("0")
            _sys("unshare", ctypes.c_ulong(_CLONE_NEWCGROUP))

        ok, err = _probe_fork(join)
    finally:
        for _ in range(50):
            try:
                os.rmdir(probe)
                break
            except OSError:
                time.sleep(0.01)
    if not ok:
        os.rmdir(base)
        return None, f"cannot move a process into a new cgroup or cgroup namespace: {err}"
    return base, f"cgroup v2 leaf per worker under {base}, killed with cgroup.kill; candidate in a cgroup namespace"


def _ipc_namespace_probe() -> None:
    _sys("unshare", ctypes.c_ulong(_CLONE_NEWIPC))
    lib = _lib()
    ctypes.set_errno(0)
    shmid = lib.shmget(0x4B47, 4096, 0o1600)  # IPC_CREAT | 0600, inside the new namespace
    if shmid < 0:
        raise OSError(ctypes.get_errno(), "shmget in a new IPC namespace failed")


def _gid_probe() -> None:
    gid = _GID_BASE + secrets.randbelow(_GID_SPAN)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    if os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(errno.EPERM, "group ids did not change")


def capabilities(refresh: bool = False) -> dict[str, Mechanism]:
    """Which containment mechanisms are active on this machine, each with the reason."""
    with _LOCK:
        if _STATE["caps"] is not None and not refresh:
            return dict(_STATE["caps"])
        caps: dict[str, Mechanism] = {}
        if not _linux_x86_64():
            why = f"containment needs Linux on x86-64 (this is {sys.platform}/{os.uname().machine})"
            for name in ("cgroup_kill", "subreaper", "process_containment", "seccomp", "landlock",
                         "capability_drop", "trusted_not_dumpable", "ipc_namespace", "file_attribution",
                         "memory_accounting"):
                caps[name] = Mechanism(name, False, why)
            _STATE["caps"] = caps
            return dict(caps)
        base, detail = _probe_cgroup()
        if _STATE["base"] is None:
            _STATE["base"] = base
        elif base:
            _rmdir_quiet(base)
        caps["cgroup_kill"] = Mechanism("cgroup_kill", _STATE["base"] is not None, detail)
        try:
            _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            caps["subreaper"] = Mechanism("subreaper", True, "evaluator is a child subreaper: orphans of workers "
                                          "are re-parented to it, found by the sweep and reaped")
        except OSError as exc:
            caps["subreaper"] = Mechanism("subreaper", False, f"PR_SET_CHILD_SUBREAPER failed: {exc}")
        cg, sr = caps["cgroup_kill"], caps["subreaper"]
        caps["process_containment"] = Mechanism(
            "process_containment", cg.active or sr.active,
            "cgroup.kill per worker (exact attribution)" if cg.active else
            ("subreaper sweep (orphans attributed to every concurrently running candidate)" if sr.active
             else "neither cgroup.kill nor a subreaper is available"))
        ok, err = _probe_fork(_install_seccomp)
        caps["seccomp"] = Mechanism("seccomp", ok, "seccomp-BPF filter on the candidate: ptrace/process_vm_* "
                                    "kill it, namespace/mount/module/bpf/io_uring calls fail" if ok
                                    else f"seccomp filter cannot be installed: {err}")
        abi = landlock_abi()
        if abi:
            ok, err = _probe_fork(lambda: _apply_landlock(abi, [], []))
            what = "file system" + (", TCP" if abi >= 4 else "") + (", signal and abstract-socket scoping"
                                                                  if abi >= 6 else "")
            caps["landlock"] = Mechanism("landlock", ok, f"Landlock ABI {abi}: {what}" if ok
                                         else f"Landlock ABI {abi} but restricting failed: {err}")
        else:
            caps["landlock"] = Mechanism("landlock", False, "kernel has no Landlock (needs Linux >= 5.13 with "
                                         "landlock in the LSM list)")
        ok, err = _probe_fork(_drop_capabilities)
        caps["capability_drop"] = Mechanism("capability_drop", ok, "candidate drops every capability "
                                            "(bounding, ambient, effective, permitted)" if ok else err)
        ok, err = _probe_fork(_ipc_namespace_probe)
        caps["ipc_namespace"] = Mechanism(
            "ipc_namespace", ok, "candidate in an IPC namespace of its own: its System V objects and POSIX "
            "message queues are invisible to every other process and end with it; the sweep lists and removes "
            "them first" if ok else f"no IPC namespace ({err}): System V IPC and POSIX message queues are refused "
            "by the seccomp filter instead" + ("" if caps["seccomp"].active else " (but seccomp is unavailable too)"))
        ok, err = _probe_fork(_gid_probe)
        caps["file_attribution"] = Mechanism(
            "file_attribution", ok, "candidate runs under a group id of its own with no supplementary groups: every "
            "file, System V object and message queue it creates carries that group and is found by the sweep"
            if ok else f"cannot give the candidate its own group id ({err}): files it leaves in shared directories "
            "cannot be attributed to it")
        memcg = _STATE.get("memcg")
        if memcg is None:
            memcg = (False, "no cgroup leaves (cgroup v2 unavailable)")
            if _STATE["base"]:
                memcg = _enable_memory_controller(_STATE["base"])
            _STATE["memcg"] = memcg
        caps["memory_accounting"] = Mechanism(
            "memory_accounting", True,
            f"cgroup memory controller: anon + shmem of the worker's leaf ({memcg[1]})" if memcg[0] else
            "per process: RssAnon + RssShmem of every process in the worker's unit, plus detached System V segments "
            f"and /dev/shm files of the candidate (cgroup memory controller unavailable: {memcg[1]})")
        caps["trusted_not_dumpable"] = Mechanism("trusted_not_dumpable", True,
                                                 "PR_SET_DUMPABLE 0 on the evaluator, forkserver and trusted workers")
        yama = "/proc/sys/kernel/yama/ptrace_scope"
        caps["yama_ptrace_scope"] = Mechanism(
            "yama_ptrace_scope", os.path.exists(yama),
            f"Yama ptrace_scope={open(yama).read().strip()}" if os.path.exists(yama) else "no Yama LSM (not relied on)")
        _STATE["caps"] = caps
        return dict(caps)


def _cleanup_base() -> None:
    base = _STATE.get("base")
    if base and os.path.isdir(base):
        for name in os.listdir(base):
            p = os.path.join(base, name)
            if os.path.isdir(p):
                _kill_cgroup(p)
                _rmdir_quiet(p)
        _rmdir_quiet(base)


def begin_evaluation() -> dict[str, Mechanism]:
    """Parent-side setup (idempotent): probe, become a subreaper, protect this process."""
    caps = capabilities()
    with _LOCK:
        if not _STATE["begun"]:
            _STATE["begun"] = True
            protect_trusted_process()
            import atexit

            atexit.register(_cleanup_base)
    return caps
