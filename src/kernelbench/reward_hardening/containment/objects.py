"""What the candidate may leave behind besides processes: System V objects, message queues, files.

Parent side: lists them inside the candidate's IPC namespace (joined from a short-lived
thread) or by the candidate's group id in the host's, and removes them (RH-53).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from kernelbench.reward_hardening.containment.landlock import _under
from kernelbench.reward_hardening.containment.syscalls import _CLONE_NEWIPC, _CLONE_NEWNS, NR, _lib, _sys

_MS_REC, _MS_PRIVATE, _MNT_DETACH = 0x4000, 0x40000, 2
_IPC_RMID = 0

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


def remove_ipc_counters(pid: int, shm: str = "/dev/shm") -> int:
    """Remove PyTorch's CUDA IPC reference-counter files of an ended trusted worker; how many there were.

    A process that exports CUDA memory (the judge lending inputs, the reference's twin)
    keeps a reference-counter file ``torch_<pid>_<random>_<n>`` in ``/dev/shm``; one
    that exits while another process still holds a handle leaves it behind (80 KiB each,
    one per judge on the H200: 94 files after 60 evaluations).  Nothing uses them once
    their process ended (a consumer still holding one keeps its own mapping).
    """
    n = 0
    try:
        names = [e for e in os.listdir(shm) if e.startswith(f"torch_{int(pid)}_")]
    except OSError:
        return 0
    for name in names:
        try:
            os.unlink(os.path.join(shm, name))
            n += 1
        except OSError:
            pass
    return n
