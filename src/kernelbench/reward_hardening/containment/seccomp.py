"""The candidate's seccomp-BPF filter: which calls kill it, which fail, and installing it.

Runs in the candidate worker (``child.enter``) and in the parent's forked probe.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from kernelbench.reward_hardening.containment.syscalls import (
    _PR_SET_CHILD_SUBREAPER, _PR_SET_DUMPABLE, _PR_SET_MM, _PR_SET_NO_NEW_PRIVS, _PR_SET_PTRACER, NR, _prctl, _sys)

# calls that reach into another process: the worker is killed (SIGSYS) so the attempt is seen (RH-52)
KILL_CALLS = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise")
# calls no kernel needs and that change the machine or the sandbox: they fail with EPERM
EPERM_CALLS = ("mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "init_module", "finit_module",
               "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
               "open_by_handle_at", "name_to_handle_at", "bpf", "perf_event_open", "userfaultfd",
               "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
               "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl", "ioperm", "syslog",
               "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr", "quotactl",
               "vhangup", "lookup_dcookie")
# System V and POSIX message-queue calls: refused (EPERM) only where the candidate cannot get an
# IPC namespace of its own; inside its own namespace they stay allowed (docs/security-audit.md)
IPC_CALLS = ("shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv",
             "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
_CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 \
    | 0x00000080  # NEWNS CGROUP UTS IPC USER PID NET TIME
_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1


def _bpf_program(refuse_ipc: bool = False) -> bytes:
    """The candidate's filter as packed ``struct sock_filter`` entries.

    ``refuse_ipc``: System V IPC and POSIX message queues fail with ``EPERM`` too (the
    fallback where the candidate could not get an IPC namespace of its own).
    """
    LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ins: list[tuple[int, int, int, int]] = []

    def add(code: int, jt: int, jf: int, k: int) -> None:
        ins.append((code, jt, jf, k & 0xFFFFFFFF))

    add(LD_W_ABS, 0, 0, 4)  # seccomp_data.arch
    add(JEQ, 1, 0, _AUDIT_ARCH_X86_64)
    add(RET, 0, 0, _RET_KILL_PROCESS)
    add(LD_W_ABS, 0, 0, 0)  # seccomp_data.nr
    add(JGE, 0, 1, 0x40000000)  # x32 ABI
    add(RET, 0, 0, _RET_KILL_PROCESS)
    for name in KILL_CALLS:
        add(JEQ, 0, 1, NR[name])
        add(RET, 0, 0, _RET_KILL_PROCESS)
    for name in EPERM_CALLS + (IPC_CALLS if refuse_ipc else ()):
        add(JEQ, 0, 1, NR[name])
        add(RET, 0, 0, _RET_ERRNO | errno.EPERM)
    add(JEQ, 0, 1, NR["clone3"])
    add(RET, 0, 0, _RET_ERRNO | errno.ENOSYS)
    # clone(flags, ...): namespace flags -> EPERM
    add(JEQ, 0, 4, NR["clone"])
    add(LD_W_ABS, 0, 0, 16)  # args[0], low word
    add(JSET, 0, 1, _CLONE_NS_FLAGS)
    add(RET, 0, 0, _RET_ERRNO | errno.EPERM)
    add(RET, 0, 0, _RET_ALLOW)
    # prctl(option, ...): the options that would undo the containment -> EPERM; making itself
    # non-dumpable would refuse the evaluator's trusted read of its outputs -> killed (RH-52)
    blocked = (_PR_SET_CHILD_SUBREAPER, _PR_SET_MM, _PR_SET_PTRACER)
    add(JEQ, 0, 4 + 2 * len(blocked), NR["prctl"])
    add(LD_W_ABS, 0, 0, 16)
    add(JEQ, 0, 1, _PR_SET_DUMPABLE)
    add(RET, 0, 0, _RET_KILL_PROCESS)
    for opt in blocked:
        add(JEQ, 0, 1, opt)
        add(RET, 0, 0, _RET_ERRNO | errno.EPERM)
    add(RET, 0, 0, _RET_ALLOW)
    add(RET, 0, 0, _RET_ALLOW)
    return b"".join(struct.pack("<HBBI", *i) for i in ins)


def _install_seccomp(refuse_ipc: bool = False) -> None:
    prog = _bpf_program(refuse_ipc)
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _Fprog(n, ctypes.cast(buf, ctypes.c_void_p))
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    # TSYNC: every thread of the process gets the filter (or the call fails)
    _sys("seccomp", ctypes.c_ulong(_SECCOMP_SET_MODE_FILTER), ctypes.c_ulong(_SECCOMP_FILTER_FLAG_TSYNC),
         ctypes.byref(fprog))
