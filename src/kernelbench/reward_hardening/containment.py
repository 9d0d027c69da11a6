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
_CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 \
    | 0x00000080  # NEWNS CGROUP UTS IPC USER PID NET TIME
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 4, 38, 36, 37
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_PDEATHSIG, _PR_SET_MM = 24, 47, 4, 1, 35
_PR_SET_PTRACER = 0x59616D61
_CLONE_NEWCGROUP = 0x02000000
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
def _bpf_program() -> bytes:
    """The candidate's filter as packed ``struct sock_filter`` entries."""
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
    for name in EPERM_CALLS:
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


def _install_seccomp() -> None:
    prog = _bpf_program()
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
_STATE: dict[str, Any] = {"caps": None, "base": None, "begun": False, "n": 0, "live": set()}
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


def capabilities(refresh: bool = False) -> dict[str, Mechanism]:
    """Which containment mechanisms are active on this machine, each with the reason."""
    with _LOCK:
        if _STATE["caps"] is not None and not refresh:
            return dict(_STATE["caps"])
        caps: dict[str, Mechanism] = {}
        if not _linux_x86_64():
            why = f"containment needs Linux on x86-64 (this is {sys.platform}/{os.uname().machine})"
            for name in ("cgroup_kill", "subreaper", "process_containment", "seccomp", "landlock",
                         "capability_drop", "trusted_not_dumpable"):
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


@dataclass
class Unit:
    """One worker's containment unit (parent side)."""

    role: str
    cgroup: str | None = None
    pid: int | None = None
    report: dict = field(default_factory=dict)
    _spec: dict = field(default_factory=dict)

    def child_spec(self, private: list[str] | None = None, extra_rw: list[str] | None = None,
                   device: str | None = None) -> dict:
        """The ``spec["containment"]`` entry that :func:`enter` applies in the child.

        ``private``: directories the candidate must not read (the evaluation root's
        parent, where other evaluations live); the temporary roots are always private.
        The worker's workspace, build and spill directories (from the worker spec) are
        its only writable places, plus ``extra_rw``.
        """
        import tempfile

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
        self._spec = {
            "cgroup": self.cgroup,
            "cgroup_ns": strict and self.cgroup is not None and "cgroup_ns" not in skip,
            "protect": "trusted_not_dumpable" not in skip,
            "landlock_off_reason": None,
            "seccomp": strict and caps["seccomp"].active and "seccomp" not in skip,
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

    def attach(self, pid: int | None) -> None:
        self.pid = pid
        if self.role == "candidate" and pid:
            with _LOCK:
                _STATE["live"].add(pid)

    def verify(self) -> dict:
        """What the kernel says the worker runs under (read from /proc, not from the worker)."""
        if not self.pid:
            return {}
        st = _status(self.pid)
        out = {"seccomp_mode": st.get("Seccomp"), "no_new_privs": st.get("NoNewPrivs"),
               "cap_eff": st.get("CapEff"), "cap_bnd": st.get("CapBnd")}
        if self.cgroup:
            out["in_cgroup"] = self.pid in _cgroup_procs(self.cgroup)
        self.report["verified"] = out
        return out

    def sweep(self, exitcode: int | None = None) -> dict:
        """After the worker ended: find, kill and reap every process left from it; return the report."""
        survivors: list[dict] = []
        method = "cgroup" if self.cgroup else "subreaper"
        me = os.getpid()
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
            _install_seccomp()
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
    names = ("process_containment", "seccomp", "landlock", "capability_drop", "trusted_not_dumpable")
    if rejected or not rep:
        for name in names:
            m = machine[name]
            out[name] = ("SKIPPED", False, f"no candidate worker ran; on this machine: "
                                           f"{'active' if m.active else 'unavailable'} ({m.detail})")
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
