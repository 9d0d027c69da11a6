"""OS-level containment of worker processes (Linux, x86-64), measured at run time.

The candidate runs arbitrary code, native code included, usually as the evaluator's
own user (root in CI and on the GPU machines).  Lists of forbidden names cannot stop
``syscall(SYS_...)``; this module uses the kernel's own mechanisms instead, each one
probed on the machine and recorded in every record (``docs/security-audit.md``):

``cgroup_kill``
    every worker runs in its own cgroup-v2 leaf (``<own cgroup>/kernelguard-<pid>-<hex>/<role>-<n>``);
    after the worker ends, any process still in the leaf survived it: it is listed
    (RH-51) and the whole leaf is killed at once with ``cgroup.kill`` (atomic, no race
    with a fork loop).  The candidate also enters a new cgroup namespace, so even as
    root it cannot migrate itself out of its leaf (the kernel refuses moves outside the
    namespace root).
``subreaper``
    the evaluator parent is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process
    that double-forks and calls ``setsid`` is re-parented to the evaluator, never to
    init, so it can always be found.  Without cgroups the sweep finds survivors as the
    parent's children that carry a seccomp filter (only sandboxed workers have one)
    plus the worker's remaining descendants, kills them in a loop and reaps them.
``seccomp``
    the candidate runs under a seccomp-BPF filter (``PR_SET_NO_NEW_PRIVS`` +
    ``seccomp(SECCOMP_SET_MODE_FILTER)``): ``ptrace``, ``process_vm_readv/writev``,
    ``kcmp``, ``pidfd_getfd``, ``process_madvise`` and ``prctl(PR_SET_DUMPABLE)`` (which
    would refuse the evaluator's trusted read of its outputs) kill the process (RH-52 from
    its ``SIGSYS`` exit status); namespace, mount, module, keyring, BPF, perf, io_uring
    (which would bypass the filter) and clock-setting calls fail with ``EPERM``;
    ``clone`` with namespace flags fails, ``clone3`` reports ``ENOSYS`` so libc falls
    back to the inspectable ``clone``; non-x86-64 ABIs are killed.
``landlock``
    the candidate's file system view (Landlock, ABI probed): read and execute
    everywhere except the temporary roots and the evaluation directory's parent (other
    evaluations' files), read-write only in its workspace, build and spill directories,
    its own ``/proc/self`` (the CUDA driver writes there) and a few device nodes; TCP bind/connect denied (ABI >= 4); signals and abstract
    unix sockets scoped to its own domain (ABI >= 6).  Landlock also forbids ptrace
    (and so ``/proc/<pid>/mem``) of any process outside the candidate's domain.
``capability_drop``
    the candidate drops every capability (bounding, ambient, effective, permitted,
    inheritable): a root candidate keeps uid 0 but loses ``CAP_SYS_PTRACE``,
    ``CAP_SYS_ADMIN``, ``CAP_DAC_OVERRIDE``, ``CAP_KILL``...
``trusted_not_dumpable``
    the evaluator parent, the forkserver and trusted workers set ``PR_SET_DUMPABLE`` 0:
    a same-uid process without ``CAP_SYS_PTRACE`` can then neither attach to them nor
    open their ``/proc/<pid>/mem`` even where no Yama policy exists.

Interface (what the pipeline calls)::

    containment.begin_evaluation()                # parent, once per evaluation (idempotent)
    unit = containment.new_unit("candidate")      # parent, before starting a worker
    spec["containment"] = unit.child_spec(private=[os.path.dirname(root)])
    ...                                           # child: procs._child_bootstrap calls enter(spec)
    unit.attach(handle.pid)                       # parent, right after the worker started
    ...                                           # the worker runs and is closed
    report = unit.sweep(exitcode)                 # parent: kill what is left, say what it was
    containment.capabilities()                    # {name: Mechanism}: active on this machine, and why

``report`` is a plain dict (``survivors``, ``sigsys``, ``applied``, ``left_running``,
...) that the runtime detectors RH-51 / RH-52 and ``records._capabilities`` read from
``Evidence.containment[role]``.  Every mechanism fails closed in the child: a mechanism
the spec asks for that cannot be applied aborts the worker before any candidate code.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import signal
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ContainmentError", "Mechanism", "Unit", "begin_evaluation", "capabilities", "enter", "new_unit",
           "protect_trusted_process", "REQUIRED"]

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
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 4, 38, 36, 37
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_PDEATHSIG, _PR_SET_MM = 24, 47, 4, 1, 35
_PR_SET_PTRACER = 0x59616D61
_CLONE_NEWCGROUP, _CLONE_NEWIPC, _CLONE_NEWNS = 0x02000000, 0x08000000, 0x00020000
_MS_REC, _MS_PRIVATE, _MNT_DETACH = 0x4000, 0x40000, 2
_IPC_RMID = 0
# the candidate's own group id: every file, SysV object or message queue it creates carries it
_GID_BASE, _GID_SPAN = 1_900_000_000, 100_000_000
_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1

# Landlock (include/uapi/linux/landlock.h)
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_LL_REMOVE_DIR, _LL_REMOVE_FILE, _LL_MAKE_CHAR, _LL_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_LL_MAKE_REG, _LL_MAKE_SOCK, _LL_MAKE_FIFO, _LL_MAKE_BLOCK, _LL_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_LL_REFER, _LL_TRUNCATE = 1 << 13, 1 << 14
_LL_NET_BIND_TCP, _LL_NET_CONNECT_TCP = 1, 2
_LL_SCOPE_ABSTRACT_UNIX, _LL_SCOPE_SIGNAL = 1, 2
_LL_READ = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
_LL_FILE_RIGHTS = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | _LL_TRUNCATE
# device nodes the candidate may open for writing (everything else under /dev is read-only)
_DEV_WRITABLE = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_WRITABLE_PREFIXES = ("nvidia", "dri")

# Which mechanisms must be active for ``enforce`` to award anything (docs/security-audit.md says why).
REQUIRED = ("process_containment", "seccomp")


class ContainmentError(RuntimeError):
    """A mechanism the spec asks for could not be applied (the worker must not run)."""


@dataclass
class Mechanism:
    name: str
    active: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"active": self.active, "detail": self.detail}


# --------------------------------------------------------------------------- syscalls
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


# --------------------------------------------------------------------------- seccomp
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


# --------------------------------------------------------------------------- landlock
def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0 when unavailable)."""
    if not _linux_x86_64():
        return 0
    try:
        return _sys("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM (ABI 1)
    if abi >= 2:
        rights |= _LL_REFER
    if abi >= 3:
        rights |= _LL_TRUNCATE
    return rights  # IOCTL_DEV (ABI 5) is not handled: the CUDA driver needs ioctls on its device files


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _grant_all_but(private: list[str]) -> list[str]:
    """Directories (and files) covering the whole tree except every path in ``private``."""
    private = sorted({os.path.realpath(p) for p in private if p})
    out: list[str] = []

    def visit(d: str) -> None:
        try:
            names = os.listdir(d)
        except OSError:
            return
        for name in names:
            p = os.path.join(d, name)
            if any(_under(q, p) for q in private):
                if p not in private and os.path.isdir(p) and not os.path.islink(p):
                    visit(p)  # an ancestor of a private path: grant its other entries
                continue
            out.append(p)

    visit("/")
    return out


def _apply_landlock(abi: int, rw: list[str], private: list[str], ro: list[str] | None = None) -> dict:
    fs = _fs_rights(abi)
    attr = struct.pack("<Q", fs)
    scoped = 0
    if abi >= 4:
        attr += struct.pack("<Q", _LL_NET_BIND_TCP | _LL_NET_CONNECT_TCP)
    if abi >= 6:
        scoped = _LL_SCOPE_ABSTRACT_UNIX | _LL_SCOPE_SIGNAL
        attr += struct.pack("<Q", scoped)
    abuf = ctypes.create_string_buffer(attr, len(attr))
    rfd = _sys("landlock_create_ruleset", abuf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    added = {"read": 0, "rw": 0}
    skipped: list[str] = []

    def rule(path: str, access: int) -> bool:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not os.path.isdir(path):
                access &= _LL_FILE_RIGHTS
            rb = ctypes.create_string_buffer(struct.pack("<Qi", access & fs, fd), 12)
            try:
                _sys("landlock_add_rule", ctypes.c_int(rfd), ctypes.c_int(1), rb, ctypes.c_uint32(0))
            except OSError as exc:
                if exc.errno != errno.EBADFD:
                    raise
                skipped.append(path)  # an internal file system (nsfs, pipefs...): not granted
                return False
            return True
        finally:
            os.close(fd)

    try:
        for p in _grant_all_but(private) + [p for p in (ro or []) if p]:
            added["read"] += rule(p, _LL_READ)
        for p in rw:
            if p and rule(p, fs):
                added["rw"] += 1
        for name in os.listdir("/dev"):
            if name in _DEV_WRITABLE or name.startswith(_DEV_WRITABLE_PREFIXES):
                p = os.path.join("/dev", name)
                if os.path.isdir(p):
                    for sub in os.listdir(p):
                        rule(os.path.join(p, sub), _LL_READ | _LL_WRITE_FILE)
                else:
                    rule(p, _LL_READ | _LL_WRITE_FILE)
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _sys("landlock_restrict_self", ctypes.c_int(rfd), ctypes.c_uint32(0))
    finally:
        os.close(rfd)
    return {"abi": abi, "rules": added, "skipped": skipped[:20], "tcp_denied": abi >= 4, "scoped_signals": abi >= 6}


# --------------------------------------------------------------------------- capabilities
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


# --------------------------------------------------------------------------- cgroup v2
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


# --------------------------------------------------------------------------- probing (parent)
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


def _rmdir_quiet(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _cleanup_base() -> None:
    base = _STATE.get("base")
    if base and os.path.isdir(base):
        for name in os.listdir(base):
            p = os.path.join(base, name)
            if os.path.isdir(p):
                _kill_cgroup(p)
                _rmdir_quiet(p)
        _rmdir_quiet(base)


def protect_trusted_process() -> None:
    """``PR_SET_DUMPABLE`` 0 on this process (evaluator, forkserver, trusted workers)."""
    if sys.platform.startswith("linux"):
        try:
            _prctl(_PR_SET_DUMPABLE, 0)
        except OSError:
            pass


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


# --------------------------------------------------------------------------- the unit (parent)
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


def _reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


# --------------------------------------------------------------------------- objects (parent)
_SYSV = {"shm": "shmid", "sem": "semid", "msg": "msqid"}


def _parse_sysvipc(kind: str, text: str) -> list[dict[str, Any]]:
    """Rows of ``/proc/sysvipc/<kind>`` as dicts (integers where the column is numeric)."""
    lines = text.splitlines()
    if not lines:
        return []
    cols = lines[0].split()
    out = []
    for line in lines[1:]:
        vals = line.split()
        if len(vals) != len(cols):
            continue
        row: dict[str, Any] = {}
        for k, v in zip(cols, vals):
            try:
                row[k] = int(v, 8) if k == "perms" else int(v)
            except ValueError:
                row[k] = v
        row["kind"] = f"sysv_{kind}"
        row["id"] = row.get(_SYSV[kind])
        out.append(row)
    return out


def _read_fd(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks).decode(errors="replace")


def _in_namespace(ns_fd: int | None, fn):
    """``fn()`` in a short-lived thread that joined the IPC namespace ``ns_fd`` (this thread stays put).

    The IPC namespace is per thread, so the evaluator's other threads never see it;
    ``None`` runs ``fn`` in the calling thread (the evaluator's own namespace).
    """
    if ns_fd is None:
        return fn()
    out: dict[str, Any] = {}

    def body() -> None:
        try:
            _sys("setns", ctypes.c_int(ns_fd), ctypes.c_int(_CLONE_NEWIPC))
            out["r"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out["e"] = exc

    t = threading.Thread(target=body, name="kernelguard-ipc-inspect", daemon=True)
    t.start()
    t.join()
    if "e" in out:
        raise out["e"]
    return out.get("r")


def _sysv_remove(obj: dict) -> bool:
    lib = _lib()
    ctypes.set_errno(0)
    i = ctypes.c_int(int(obj["id"]))
    if obj["kind"] == "sysv_shm":
        r = lib.syscall(ctypes.c_long(NR["shmctl"]), i, ctypes.c_int(_IPC_RMID), None)
    elif obj["kind"] == "sysv_sem":
        r = lib.syscall(ctypes.c_long(NR["semctl"]), i, ctypes.c_int(0), ctypes.c_int(_IPC_RMID), None)
    else:
        r = lib.syscall(ctypes.c_long(NR["msgctl"]), i, ctypes.c_int(_IPC_RMID), None)
    return r == 0


def _mqueues_in(scratch: str, remove: bool) -> list[dict]:
    """POSIX message queues of the calling thread's IPC namespace (mounted in a private mount namespace).

    Runs in a thread of its own (:func:`_in_namespace`): ``unshare(CLONE_NEWNS)`` gives the
    thread a mount namespace nobody else uses, marked private so the mount never
    propagates to the evaluator's; it ends with the thread.
    """
    lib = _lib()
    _sys("unshare", ctypes.c_ulong(_CLONE_NEWNS))
    ctypes.set_errno(0)
    if lib.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        raise OSError(ctypes.get_errno(), "making the inspection mount namespace private failed")
    if lib.mount(b"mqueue", scratch.encode(), b"mqueue", ctypes.c_ulong(0), None) != 0:
        raise OSError(ctypes.get_errno(), "mounting the message-queue file system failed")
    out = []
    try:
        for name in sorted(os.listdir(scratch)):
            p = os.path.join(scratch, name)
            info: dict[str, Any] = {"kind": "posix_mqueue", "name": "/" + name}
            try:
                st = os.lstat(p)
                info.update(uid=st.st_uid, gid=st.st_gid)
                with open(p) as fh:
                    info["status"] = " ".join(fh.read().split())[:200]
            except OSError:
                pass
            if remove:
                try:
                    os.unlink(p)
                    info["removed"] = True
                except OSError as exc:
                    info["removed"] = False
                    info["error"] = exc.strerror
            out.append(info)
    finally:
        lib.umount2(scratch.encode(), _MNT_DETACH)
    return out


def _mountpoints() -> set[str]:
    try:
        with open("/proc/self/mountinfo") as fh:
            return {line.split()[4] for line in fh if len(line.split()) > 4}
    except OSError:
        return set()


def _scan_roots() -> list[tuple[str, int]]:
    """Shared writable places searched for the candidate's files: (directory, depth)."""
    import tempfile

    roots = {os.path.realpath(p): 8 for p in ("/tmp", "/var/tmp", tempfile.gettempdir(), "/dev/shm", "/dev/mqueue")
             if os.path.isdir(p)}
    home = os.path.expanduser("~")
    if os.path.isdir(home):
        roots.setdefault(os.path.realpath(home), 2)
    return sorted(roots.items())


def _scan_files(gid: int, skip: list[str], budget: int = 100_000) -> tuple[list[dict], bool]:
    """Entries carrying the candidate's group under the shared roots; (found, truncated)."""
    skip = [os.path.realpath(p) for p in skip if p]
    found: list[dict] = []
    seen = 0
    truncated = False
    for root, depth in _scan_roots():
        try:
            dev = os.lstat(root).st_dev
        except OSError:
            continue
        work = [(root, 0)]
        while work:
            d, level = work.pop()
            try:
                it = list(os.scandir(d))
            except OSError:
                continue
            for e in it:
                seen += 1
                if seen > budget:
                    truncated = True
                    break
                p = e.path
                if any(_under(p, q) for q in skip):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_gid == gid:
                    kind = "dir" if e.is_dir(follow_symlinks=False) else "file"
                    if _under(p, "/dev/shm"):
                        kind = "posix_shm" if kind == "file" else "shm_dir"
                    elif _under(p, "/dev/mqueue"):
                        kind = "posix_mqueue"
                    found.append({"kind": kind, "path": p, "bytes": st.st_blocks * 512, "mtime": int(st.st_mtime)})
                    continue  # a directory of the candidate's is removed whole
                if e.is_dir(follow_symlinks=False) and level + 1 < depth and st.st_dev == dev:
                    work.append((p, level + 1))
            if truncated:
                break
        if truncated:
            break
    return found, truncated


def _remove_path(p: str) -> bool:
    import shutil

    try:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
        return True
    except OSError:
        return False


def _proc_memory(pid: int) -> int:
    st = _status(pid)
    total = 0
    for key in ("RssAnon", "RssShmem"):
        try:
            total += int(st.get(key, "0 kB").split()[0]) * 1024
        except (ValueError, IndexError):
            pass
    return total


def _memcg_bytes(cgroup: str) -> int | None:
    try:
        with open(os.path.join(cgroup, "memory.stat")) as fh:
            stat = dict(line.split() for line in fh if len(line.split()) == 2)
        return int(stat.get("anon", 0)) + int(stat.get("shmem", 0))
    except (OSError, ValueError):
        return None


@dataclass
class Unit:
    """One worker's containment unit (parent side)."""

    role: str
    cgroup: str | None = None
    pid: int | None = None
    report: dict = field(default_factory=dict)
    _spec: dict = field(default_factory=dict)
    gid: int | None = None  # the candidate's own group id (file_attribution)
    skip_paths: list = field(default_factory=list)  # the candidate's own writable directories
    peak_memory_bytes: int = 0
    _ipc_fd: int | None = None  # the candidate's IPC namespace, held open until the sweep
    _shm_fd: int | None = None  # /proc/sysvipc/shm as seen from inside that namespace
    _mounts: set = field(default_factory=set)

    def child_spec(self, private: list[str] | None = None, extra_rw: list[str] | None = None,
                   device: str | None = None, skip: Any = ()) -> dict:
        """The ``spec["containment"]`` entry that :func:`enter` applies in the child.

        ``private``: directories the candidate must not read (the evaluation root's
        parent, where other evaluations live); the temporary roots are always private.
        ``skip``: mechanisms left off (``HardeningConfig.sandbox_skip``, tests only); the
        record then shows them as not applied.
        The worker's workspace, build and spill directories (from the worker spec) are
        its only writable places, plus ``extra_rw``.
        """
        import tempfile

        skip_cfg = set(skip or ())
        caps = capabilities()
        strict = self.role == "candidate"
        tmp_roots = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}
        # the interpreter, its libraries and this package stay readable even below a private root
        ro = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(__file__))}
        ro |= {p for p in sys.path if p and os.path.isdir(p)}
        private_dirs = tmp_roots | {p for p in (private or []) if p}
        # never re-grant a private directory or an ancestor of one (a script run from /tmp puts /tmp on sys.path)
        ro = {p for p in ro if not any(_under(os.path.realpath(q), os.path.realpath(p)) for q in private_dirs)}
        # Operator-side diagnostics only (the evaluator's environment, never the candidate's):
        # KERNELGUARD_SANDBOX_SKIP=landlock,seccomp,... leaves those mechanisms off for the
        # candidate; the record then shows them as not applied (ERROR, UNSUPPORTED if required).
        skip = {x.strip() for x in os.environ.get("KERNELGUARD_SANDBOX_SKIP", "").split(",") if x.strip()}
        skip |= set(skip_cfg)
        if self.gid is None:
            self.gid = _GID_BASE + secrets.randbelow(_GID_SPAN)
        seccomp = strict and caps["seccomp"].active and "seccomp" not in skip
        ipc_ns = strict and caps["ipc_namespace"].active and "ipc_namespace" not in skip
        self._spec = {
            "cgroup": self.cgroup,
            "cgroup_ns": strict and self.cgroup is not None and "cgroup_ns" not in skip,
            "protect": "trusted_not_dumpable" not in skip,
            "landlock_off_reason": None,
            "seccomp": seccomp,
            "ipc_ns": ipc_ns,
            # no namespace of its own: System V IPC and POSIX message queues are refused instead
            "refuse_ipc": seccomp and not ipc_ns,
            "gid": self.gid if strict and caps["file_attribution"].active and "file_attribution" not in skip
            else None,
            "memory": "cgroup" if self.cgroup and _memcg_bytes(self.cgroup) is not None else "proc",
            "landlock": min(landlock_abi(), int(os.environ.get("KERNELGUARD_LANDLOCK_MAX_ABI", "99")))
            if strict and caps["landlock"].active and "landlock" not in skip else 0,
            "drop_caps": strict and caps["capability_drop"].active and "capability_drop" not in skip,
            # the candidate inherits the forkserver's non-dumpable flag; an evaluator without
            # CAP_SYS_PTRACE could then not read its outputs, so it is made dumpable again
            # (core dumps off) before the filter forbids any further change
            "dumpable": strict and not _can_ptrace_any(),
            "rw": sorted(p for p in (extra_rw or []) if p),
            "ro": sorted(ro),
            "private": sorted(private_dirs),
        }
        if strict and device and str(device).startswith("cuda") and self._spec["landlock"]:
            # Measured on the H200: under Landlock (every ABI from 3 to 7) the candidate's
            # cudaIpcOpenMemHandle of the judge's lent inputs fails ("mapping of buffer object
            # failed"), while seccomp, the capability drop, the cgroup namespace and the
            # non-dumpable judge leave it working.  Landlock is not required; on CUDA it is
            # left off and the record says why.
            self._spec["landlock"] = 0
            self._spec["landlock_off_reason"] = ("not applied on CUDA: Landlock breaks the candidate's CUDA IPC "
                                                 "import of the judge's lent tensors (measured on the H200)")
        return dict(self._spec)

    def attach(self, pid: int | None, spec: dict | None = None) -> None:
        """Right after the worker started: remember it (and ``spec``'s writable directories)."""
        self.pid = pid
        if self.role == "candidate" and pid:
            with _LOCK:
                _STATE["live"].add(pid)
            self._mounts = _mountpoints()
            if spec:
                self.skip_paths = [spec.get("workspace"), spec.get("build_dir"), spec.get("spill_dir"),
                                   *(self._spec.get("rw") or [])]

    def __del__(self) -> None:  # a unit dropped without a sweep must not keep the namespace alive
        for fd in (self._shm_fd, self._ipc_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _grab_namespace(self, pids: list[int]) -> None:
        """Hold the candidate's IPC namespace open (so its objects can be listed after it ended)."""
        if self._ipc_fd is not None or not self._spec.get("ipc_ns"):
            return
        try:
            host = os.stat("/proc/self/ns/ipc").st_ino
        except OSError:
            return
        for p in pids:
            try:
                fd = os.open(f"/proc/{p}/ns/ipc", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            if os.fstat(fd).st_ino == host:  # not entered yet (or not the candidate's)
                os.close(fd)
                continue
            self._ipc_fd = fd
            try:
                self._shm_fd = _in_namespace(fd, lambda: os.open("/proc/sysvipc/shm", os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                self._shm_fd = None
            return

    def _leaf_pids(self) -> list[int]:
        if self.cgroup:
            return _cgroup_procs(self.cgroup)
        if self.pid:
            return [self.pid, *_descendants(self.pid, _children_map())]
        return []

    def memory_bytes(self) -> int | None:
        """Resident memory charged to this worker (``None`` where it cannot be read).

        Trusted workers: their private (anonymous) resident memory.  The candidate: the
        cgroup memory controller's anon + shmem of its leaf where available (children,
        shared memory and tmpfs files included); otherwise RssAnon + RssShmem of every
        process in its unit, plus System V segments no process has attached and
        /dev/shm files that carry its group.
        """
        if not self.pid:
            return None
        if self.role != "candidate":
            st = _status(self.pid)
            try:
                return int(st["RssAnon"].split()[0]) * 1024
            except (KeyError, ValueError, IndexError):
                return None
        pids = self._leaf_pids()
        self._grab_namespace([self.pid])  # while it runs: a live child of ours, never a reused pid
        total = _memcg_bytes(self.cgroup) if self._spec.get("memory") == "cgroup" and self.cgroup else None
        if total is None:
            if not os.path.exists(f"/proc/{self.pid}"):
                return None
            total = sum(_proc_memory(p) for p in pids)
            total += sum(o.get("rss", 0) for o in self._sysv_objects() if o["kind"] == "sysv_shm"
                         and not o.get("nattch"))
            if self.gid is not None and os.path.isdir("/dev/shm"):
                try:
                    for e in os.scandir("/dev/shm"):
                        st = e.stat(follow_symlinks=False)
                        if st.st_gid == self.gid:
                            total += st.st_blocks * 512
                except OSError:
                    pass
        self.peak_memory_bytes = max(self.peak_memory_bytes, total)
        return total

    def _sysv_objects(self) -> list[dict]:
        """System V objects of the candidate: everything in its namespace, else those of its group."""
        if self._ipc_fd is not None:
            rows: list[dict] = []
            if self._shm_fd is not None:
                rows += _parse_sysvipc("shm", _read_fd(self._shm_fd))
            return rows
        if self.gid is None:
            return []
        rows = []
        for kind in _SYSV:
            try:
                with open(f"/proc/sysvipc/{kind}") as fh:
                    rows += [r for r in _parse_sysvipc(kind, fh.read()) if r.get("cgid") == self.gid]
            except OSError:
                pass
        return rows

    def _objects(self) -> tuple[list[dict], dict]:
        """Every object the candidate left (listed, then removed) and what was checked."""
        objs: list[dict] = []
        checked: dict[str, Any] = {}
        ns = self._ipc_fd
        try:
            if ns is not None:
                def sysv() -> list[dict]:
                    rows = []
                    for kind in _SYSV:
                        with open(f"/proc/sysvipc/{kind}") as fh:
                            rows += _parse_sysvipc(kind, fh.read())
                    for r in rows:
                        r["removed"] = _sysv_remove(r)
                    return rows

                objs += _in_namespace(ns, sysv)
                checked["sysv_ipc"] = "every object in the candidate's IPC namespace (/proc/sysvipc)"
                import tempfile

                scratch = tempfile.mkdtemp(prefix="kernelguard-mq-")
                try:
                    objs += _in_namespace(ns, lambda: _mqueues_in(scratch, remove=True))
                    checked["posix_mqueue"] = "every queue in the candidate's IPC namespace (mqueue file system)"
                except OSError as exc:
                    checked["posix_mqueue"] = f"not listed ({exc}); the queues end with the namespace"
                finally:
                    _rmdir_quiet(scratch)
            elif self._spec.get("ipc_ns"):
                checked["sysv_ipc"] = checked["posix_mqueue"] = (
                    "the candidate's IPC namespace ended with its last process, and every object in it")
            else:
                rows = self._sysv_objects()
                for r in rows:
                    r["removed"] = _sysv_remove(r)
                objs += rows
                checked["sysv_ipc"] = ("host namespace: objects whose creator group is the candidate's"
                                       if self.gid is not None else "not attributable (no group of its own)")
                checked["posix_mqueue"] = ("refused by the seccomp filter" if self._spec.get("refuse_ipc")
                                           else "host /dev/mqueue searched by group" if self.gid is not None
                                           else "not checked")
        finally:
            if ns is not None:
                for fd in (self._shm_fd, ns):
                    if fd is not None:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                self._ipc_fd = self._shm_fd = None
        if self.gid is not None:
            files, truncated = _scan_files(self.gid, self.skip_paths)
            for f in files:
                f["removed"] = _remove_path(f["path"])
            objs += files
            checked["files"] = {"roots": [r for r, _ in _scan_roots()], "group": self.gid, "truncated": truncated,
                                "not_searched": "the candidate's workspace, build and spill directories (its own)"}
        else:
            checked["files"] = "not attributable (the candidate has no group of its own)"
        if self._mounts:
            new = sorted(_mountpoints() - self._mounts)
            for m in new:
                gone = _lib().umount2(m.encode(), _MNT_DETACH) == 0
                objs.append({"kind": "mount", "path": m, "removed": gone})
            checked["mounts"] = "evaluator's mount table before and after the candidate"
        return objs, checked

    def verify(self) -> dict:
        """What the kernel says the worker runs under (read from /proc, not from the worker)."""
        if not self.pid:
            return {}
        st = _status(self.pid)
        out = {"seccomp_mode": st.get("Seccomp"), "no_new_privs": st.get("NoNewPrivs"),
               "cap_eff": st.get("CapEff"), "cap_bnd": st.get("CapBnd")}
        if self.cgroup:
            out["in_cgroup"] = self.pid in _cgroup_procs(self.cgroup)
        if self.role == "candidate":
            try:
                out["own_ipc_ns"] = os.stat(f"/proc/{self.pid}/ns/ipc").st_ino != os.stat("/proc/self/ns/ipc").st_ino
            except OSError:
                out["own_ipc_ns"] = None
            gids = st.get("Gid", "").split()
            out["gid"] = int(gids[0]) if gids and all(g == gids[0] for g in gids) else st.get("Gid")
            out["groups"] = st.get("Groups", "")
            self._grab_namespace([self.pid])
        self.report["verified"] = out
        return out

    def sweep(self, exitcode: int | None = None) -> dict:
        """After the worker ended: find, kill and reap every process left from it; return the report."""
        survivors: list[dict] = []
        method = "cgroup" if self.cgroup else "subreaper"
        me = os.getpid()
        if self.role == "candidate":  # before anything is killed: the namespace lives while a process does
            self._grab_namespace(self._leaf_pids())
        if self.cgroup:
            pids = [p for p in _cgroup_procs(self.cgroup) if p != self.pid]
            survivors = [_proc_info(p) for p in pids]
            _kill_cgroup(self.cgroup)
            deadline = time.monotonic() + 5
            while _cgroup_procs(self.cgroup) and time.monotonic() < deadline:
                time.sleep(0.01)
            left = _cgroup_procs(self.cgroup)
            _reap(pids)
            if not left:
                _rmdir_quiet(self.cgroup)
        else:
            seen: dict[int, dict] = {}
            left = []
            for _ in range(100):
                kids = _children_map()
                found = []
                if self.pid:
                    found += [p for p in _descendants(self.pid, kids)]
                if self.role == "candidate":
                    for p in kids.get(me, []):  # orphans re-parented to the subreaper
                        if _status(p).get("Seccomp", "0") == "2":
                            found += [p] + _descendants(p, kids)
                found = [p for p in found if p != self.pid]
                if not found:
                    break
                for p in found:
                    if p not in seen:
                        seen[p] = _proc_info(p)
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.005)
                _reap(found)
                left = found
            survivors = list(seen.values())
            left = [p for p in left if os.path.exists(f"/proc/{p}")]
        if self.pid:
            with _LOCK:
                _STATE["live"].discard(self.pid)
        sigsys = exitcode == -signal.SIGSYS
        self.report.update({"role": self.role, "method": method, "survivors": survivors,
                            "left_running": left, "sigsys": sigsys, "exitcode": exitcode,
                            "applied": {k: v for k, v in self._spec.items() if k not in ("rw", "ro", "private")}})
        if self.role == "candidate":
            try:
                objects, checked = self._objects()
            except Exception as exc:  # noqa: BLE001 - fail closed: an unchecked sweep is reported as such
                objects, checked = [], {"error": f"{type(exc).__name__}: {exc}"}
            checked["processes"] = method
            self.report.update({"objects": objects, "checked": checked,
                                "memory": {"method": self._spec.get("memory"), "peak_bytes": self.peak_memory_bytes}})
        return dict(self.report)


def new_unit(role: str) -> Unit:
    """A containment unit for one worker (its own cgroup leaf where cgroups are available)."""
    begin_evaluation()
    base = _STATE.get("base")
    path = None
    if base:
        with _LOCK:
            _STATE["n"] += 1
            n = _STATE["n"]
        path = os.path.join(base, f"{role}-{n}")
        try:
            os.mkdir(path)
        except OSError as exc:
            raise ContainmentError(f"cannot create the worker cgroup {path}: {exc}") from None
    return Unit(role, path)


# --------------------------------------------------------------------------- child side
def enter(spec: dict) -> dict:
    """Apply ``spec["containment"]`` in the worker, before any candidate code runs.

    ``spec`` is the worker spec (``procs._child_bootstrap`` passes it whole): its
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


# --------------------------------------------------------------------------- records
_ZERO_CAPS = "0" * 16


def record_capabilities(reports: dict, mode: str, rejected: bool) -> dict[str, Any]:
    """Capability entries for the record: what protected *this* candidate, as measured.

    Returns ``{name: (status, required, detail)}``; ``records._capabilities`` wraps them in
    :class:`~kernelbench.reward_hardening.findings.Capability`.  ``process_containment``
    and ``seccomp`` (:data:`REQUIRED`) are required under ``enforce``: without them a
    candidate can outlive its evaluation or read the evaluator's memory, so nothing it
    did can be trusted.  Landlock and the capability drop are recorded but not required
    (kernels before 5.13 lack Landlock; without it the candidate can still read files its
    uid can read and write its uid's files — see docs/security-audit.md).
    """
    machine = capabilities()
    enforce = mode == "enforce"
    out: dict[str, Any] = {}
    rep = reports.get("candidate") or {}
    ver = rep.get("verified") or {}
    applied = rep.get("applied") or {}
    names = ("process_containment", "seccomp", "landlock", "capability_drop", "trusted_not_dumpable",
             "ipc_namespace", "memory_accounting")
    if rejected or not rep:
        for name in names:
            m = machine[name]
            out[name] = ("SKIPPED", False, f"no candidate worker ran; on this machine: "
                                           f"{'active' if m.active else 'unavailable'} ({m.detail})")
        out["object_sweep"] = ("SKIPPED", False, "no candidate worker ran")
        return out

    def entry(name: str, ok: bool, expected: bool, detail: str) -> tuple:
        required = enforce and name in REQUIRED
        if not machine[name].active:
            return ("UNSUPPORTED", required, machine[name].detail)
        if not expected:
            return ("ERROR", required, f"{name} active on this machine but not applied to the candidate")
        return ("AVAILABLE" if ok else "ERROR", required, detail if ok else f"{name} not verified: {ver or rep}")

    left = rep.get("left_running") or []
    out["process_containment"] = entry(
        "process_containment", rep.get("method") in ("cgroup", "subreaper") and not left, True,
        f"{rep.get('method')} sweep after the worker; {len(rep.get('survivors') or [])} survivor(s) killed"
        + ("; candidate in its own cgroup namespace" if applied.get("cgroup_ns") else ""))
    out["seccomp"] = entry("seccomp", ver.get("seccomp_mode") == "2" and ver.get("no_new_privs") == "1",
                           bool(applied.get("seccomp")), "seccomp-BPF filter verified in /proc/<pid>/status")
    ll = int(applied.get("landlock") or 0)
    if applied.get("landlock_off_reason"):
        out["landlock"] = ("UNSUPPORTED", enforce and "landlock" in REQUIRED, applied["landlock_off_reason"])
    else:
        out["landlock"] = entry("landlock", ll > 0 and bool(ver), ll > 0,
                                f"Landlock ABI {ll}: reads outside temp/evaluation roots, writes only in the "
                                f"workspace, build and spill directories" + (", no TCP" if ll >= 4 else "")
                                + (", signals scoped" if ll >= 6 else ""))
    out["capability_drop"] = entry("capability_drop", ver.get("cap_eff") == _ZERO_CAPS
                                   and ver.get("cap_bnd") == _ZERO_CAPS, bool(applied.get("drop_caps")),
                                   "CapEff and CapBnd of the candidate are empty")
    out["trusted_not_dumpable"] = entry("trusted_not_dumpable", True, True, machine["trusted_not_dumpable"].detail)
    if applied.get("ipc_ns"):
        out["ipc_namespace"] = entry("ipc_namespace", ver.get("own_ipc_ns") is True, True,
                                     "candidate in an IPC namespace of its own (verified from /proc/<pid>/ns/ipc)")
    elif applied.get("refuse_ipc") and applied.get("seccomp"):
        out["ipc_namespace"] = ("AVAILABLE", False, "no IPC namespace on this machine: System V IPC and POSIX "
                                                    "message queues refused by the candidate's seccomp filter")
    else:
        m = machine["ipc_namespace"]
        out["ipc_namespace"] = ("UNSUPPORTED" if not m.active else "ERROR", False,
                                m.detail if not m.active else "IPC namespace available but not applied to the "
                                "candidate, and System V IPC not refused")
    mem = rep.get("memory") or {}
    out["memory_accounting"] = ("AVAILABLE", False, (
        "cgroup memory controller (anon + shmem of the candidate's leaf)" if mem.get("method") == "cgroup" else
        "RssAnon + RssShmem of every process in the candidate's unit, detached System V segments and /dev/shm "
        "files of its group") + f"; peak {int(mem.get('peak_bytes') or 0) / 2**30:.2f} GiB")
    checked = rep.get("checked") or {}
    objs = rep.get("objects") or []
    files = checked.get("files")
    if not checked or checked.get("error"):
        out["object_sweep"] = ("ERROR", enforce, f"the object sweep did not complete: {checked.get('error')}")
    elif isinstance(files, dict) and files.get("truncated"):  # fail closed: a leftover file may be unseen
        out["object_sweep"] = ("ERROR", enforce, "the file search stopped at its entry budget before covering "
                                                 f"{', '.join(files.get('roots') or [])}")
    else:
        out["object_sweep"] = ("AVAILABLE", enforce, (
            f"checked {', '.join(sorted(checked))}; "
            + (f"{len(objs)} object(s) left by the candidate, removed (RH-53)" if objs else "nothing left behind")
            + ("" if isinstance(files, dict) else "; files not attributable (no group of its own)")))
    return out


def record_detail(reports: dict) -> dict[str, Any]:
    """The record's ``metadata.containment``: the machine's mechanisms and each worker's report."""
    return {"machine": {k: v.as_dict() for k, v in capabilities().items()},
            "workers": {role: dict(rep) for role, rep in (reports or {}).items()}}


def limitation(reports: dict) -> str:
    """The record's sentence on what the sandbox did and did not cover for this candidate."""
    rep = (reports or {}).get("candidate") or {}
    applied = rep.get("applied") or {}
    on = [n for n, ok in (("cgroup leaf + cgroup namespace", applied.get("cgroup_ns")),
                          ("own IPC namespace", applied.get("ipc_ns")),
                          ("System V and POSIX queues refused", applied.get("refuse_ipc") and applied.get("seccomp")),
                          ("own group id", applied.get("gid") is not None),
                          ("subreaper sweep", rep.get("method") == "subreaper"),
                          ("seccomp", applied.get("seccomp")), ("Landlock", applied.get("landlock")),
                          ("no capabilities", applied.get("drop_caps"))) if ok]
    if not rep:
        return "No candidate worker ran, so no OS containment applied to it (see capabilities for this machine)."
    if not on:
        return ("Worker isolation was process-level only: no OS containment mechanism was available for the "
                "candidate; it ran as the evaluator's user and could read files that user can read.")
    missing = [n for n, ok in (("Landlock", applied.get("landlock")), ("seccomp", applied.get("seccomp")))
               if not ok]
    text = (f"The candidate ran contained ({', '.join(on)}) but under the evaluator's uid; hidden data is also "
            "kept out of its process, environment and workspace.")
    if missing:
        text += f" Not active on this machine: {', '.join(missing)}."
    return text
