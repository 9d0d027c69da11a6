"""The worker side: apply the containment spec before any candidate code runs.

Runs in every worker process (``worker_child.bootstrap`` calls ``enter``): trusted roles
join their cgroup and become non-dumpable; the candidate is sandboxed.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from kernelbench.reward_hardening.containment.landlock import _apply_landlock
from kernelbench.reward_hardening.containment.privileges import _drop_capabilities, protect_trusted_process
from kernelbench.reward_hardening.containment.seccomp import _install_seccomp
from kernelbench.reward_hardening.containment.syscalls import (
    _CLONE_NEWCGROUP, _CLONE_NEWIPC, _PR_SET_DUMPABLE, ContainmentError, _prctl, _sys)


def enter(spec: dict) -> dict:
    """Apply ``spec["containment"]`` in the worker, before any candidate code runs.

    ``spec`` is the worker spec (``worker_child.bootstrap`` passes it whole): its
    ``role`` picks the profile and its ``workspace``, ``build_dir`` and ``spill_dir``
    are the candidate's only writable directories.  Trusted roles join their cgroup and
    become non-dumpable; the candidate also enters a cgroup namespace, drops every
    capability and installs Landlock and seccomp.  A mechanism the spec asks for that
    fails raises :class:`ContainmentError` (the worker then dies before the candidate
    is imported).
    """
    cspec = spec.get("containment")
    if not cspec:
        return {}
    role = spec.get("role") or ""
    applied: dict[str, Any] = {}
    try:
        if cspec.get("cgroup"):
            with open(os.path.join(cspec["cgroup"], "cgroup.procs"), "w") as fh:
                fh.write("0")
            applied["cgroup"] = True
        if role != "candidate":
            if cspec.get("protect", True):
                protect_trusted_process()
            return applied
        if len(os.listdir("/proc/self/task")) != 1:
            raise ContainmentError("the candidate worker already runs threads; refusing to sandbox half of it")
        if cspec.get("cgroup_ns"):
            _sys("unshare", ctypes.c_ulong(_CLONE_NEWCGROUP))
            applied["cgroup_ns"] = True
        if cspec.get("ipc_ns"):
            _sys("unshare", ctypes.c_ulong(_CLONE_NEWIPC))
            applied["ipc_ns"] = True
        if cspec.get("gid") is not None:
            gid = int(cspec["gid"])
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            applied["gid"] = gid
        if cspec.get("landlock"):
            # /proc/self: the CUDA driver writes there during cuInit (cudaGetDeviceCount fails with
            # error 304 without it, measured on the H200); it resolves to this process only
            rw = [spec.get("workspace"), spec.get("build_dir"), spec.get("spill_dir"), "/proc/self",
                  *(cspec.get("rw") or [])]
            applied["landlock"] = _apply_landlock(int(cspec["landlock"]), [p for p in rw if p],
                                                  list(cspec.get("private") or []), list(cspec.get("ro") or []))
        if cspec.get("dumpable"):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            _prctl(_PR_SET_DUMPABLE, 1)
            applied["dumpable"] = True
        if cspec.get("drop_caps"):
            _drop_capabilities()
            applied["drop_caps"] = True
        if cspec.get("seccomp"):
            _install_seccomp(refuse_ipc=bool(cspec.get("refuse_ipc")))
            applied["seccomp"] = True
    except OSError as exc:
        raise ContainmentError(f"containment of the {role} worker failed: {exc}") from None
    return applied
