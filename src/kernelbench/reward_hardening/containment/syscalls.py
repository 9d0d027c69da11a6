"""The one libc handle, x86-64 system-call numbers and raw ``syscall``/``prctl`` wrappers.

Shared by every containment piece and by the trusted read (any process: the parent,
the forkserver, trusted workers and the candidate before it runs any of its own code).
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

# x86-64 system-call numbers (arch/x86/entry/syscalls/syscall_64.tbl)
NR = {
    "clone": 56, "kill": 62, "ptrace": 101, "syslog": 103, "capset": 126, "vhangup": 153, "pivot_root": 155,
    "prctl": 157, "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173,
    "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "seccomp": 317,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440,
    "mount_setattr": 442, "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
    # System V and POSIX IPC
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "msgget": 68, "msgsnd": 69,
    "msgrcv": 70, "msgctl": 71, "semtimedop": 220, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
    "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
}
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 4, 38, 36, 37
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_PDEATHSIG, _PR_SET_MM = 24, 47, 4, 1, 35
_PR_SET_PTRACER = 0x59616D61
_CLONE_NEWCGROUP, _CLONE_NEWIPC, _CLONE_NEWNS = 0x02000000, 0x08000000, 0x00020000


class ContainmentError(RuntimeError):
    """A mechanism the spec asks for could not be applied (the worker must not run)."""


_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return _libc


def _sys(name: str, *args: Any) -> int:
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(NR[name]), *args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{name}: {os.strerror(e)}")
    return r


def _prctl(option: int, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0) -> int:
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.prctl(option, a2, a3, a4, a5)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl({option}): {os.strerror(e)}")
    return r


def _linux_x86_64() -> bool:
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"
