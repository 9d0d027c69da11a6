"""Landlock: the candidate's view of the file system, TCP and signals (ABI probed).

``_apply_landlock`` runs in the candidate worker (``child.enter``) and in the parent's
forked probe; ``landlock_abi`` and ``_under`` are used by the parent too.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from kernelbench.reward_hardening.containment.syscalls import _PR_SET_NO_NEW_PRIVS, _linux_x86_64, _prctl, _sys

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
