"""Capabilities and dumpability: the candidate drops every capability; trusted processes are not dumpable.

``_drop_capabilities`` runs in the candidate worker (and the parent's forked probe);
``protect_trusted_process`` in the parent, the forkserver and trusted workers.
"""

from __future__ import annotations

import ctypes
import errno
import sys

from kernelbench.reward_hardening.containment.procfs import _status
from kernelbench.reward_hardening.containment.syscalls import (
    _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _PR_CAPBSET_DROP, _PR_SET_DUMPABLE, _prctl, _sys)


def _drop_capabilities() -> None:
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        try:
            _prctl(_PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    try:
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()
    _sys("capset", header, data)


def _can_ptrace_any() -> bool:
    """Whether this process holds ``CAP_SYS_PTRACE`` (it may then read non-dumpable processes)."""
    try:
        return bool(int(_status().get("CapEff", "0"), 16) & (1 << 19))
    except ValueError:
        return False


def protect_trusted_process() -> None:
    """``PR_SET_DUMPABLE`` 0 on this process (evaluator, forkserver, trusted workers)."""
    if sys.platform.startswith("linux"):
        try:
            _prctl(_PR_SET_DUMPABLE, 0)
        except OSError:
            pass
