"""Reading the candidate's outputs from a trusted process while the candidate is frozen.

The candidate worker runs arbitrary native code, so anything its own process does with
an output — including the harness copying it into the judge's staging buffer — can be
redirected: storage mapped without access whose values a fault handler computes on
first read, or a replaced ``aten::copy_`` kernel that computes the result straight into
the staging buffer.  Both move the work out of the timed window into the read.

On the CPU the evaluator parent therefore reads every output itself, with no candidate
code running:

1. it freezes the candidate's cgroup leaf (``cgroup.freeze`` = 1, then waits until
   ``cgroup.events`` says ``frozen 1``): no thread of the candidate, and no process it
   started, runs until the read is over;
2. it checks in ``/proc/<pid>/maps`` that the whole span the output's (untrusted)
   layout facts name lies in readable mappings: storage mapped without read access is
   rejected before any byte is read;
3. it copies the span with ``process_vm_readv`` straight into the judge's staging
   ``memfd`` (which it maps shared, a window of :data:`CHUNK` bytes at a time, so its
   own memory does not grow with the problem's size); an unreadable page (``EFAULT``)
   or a refused read (``EPERM``) is a finding, never a pass;
4. it thaws the cgroup.

The facts come from the candidate and may lie; a lie only makes the read fetch other
bytes of the candidate's own memory, which the judge's comparison then rejects.

:func:`caught_signals` reads ``SigCgt`` of ``/proc/<pid>/status`` (the kernel's view of
which signals have a handler), so a fault handler installed by native code is seen
without asking the candidate.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import select
import sys
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["CHUNK", "FAULT_SIGNALS", "ReadFailed", "available", "caught_signals", "freeze", "layout_span",
           "read_outputs", "readable_problem", "thaw"]

CHUNK = 8 << 20  # bytes mapped and read per step
_NR_PROCESS_VM_READV = 310  # x86-64
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# signals whose handler could turn a fault on an output page into a computation
FAULT_SIGNALS = {"SIGSEGV": 11, "SIGBUS": 7, "SIGILL": 4, "SIGFPE": 8, "SIGTRAP": 5}


class ReadFailed(Exception):
    """The trusted read of an output could not be done; ``kind`` says which step failed."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def _readv(pid: int, local: int, remote: int, n: int) -> int:
    """One ``process_vm_readv`` of ``n`` bytes; returns the count read (raises on error)."""
    lv, rv = _Iovec(local, n), _Iovec(remote, n)
    ctypes.set_errno(0)
    from kernelbench.reward_hardening.containment.syscalls import _lib  # the one libc handle

    r = _lib().syscall(ctypes.c_long(_NR_PROCESS_VM_READV), ctypes.c_long(pid), ctypes.byref(lv),
                       ctypes.c_ulong(1), ctypes.byref(rv), ctypes.c_ulong(1), ctypes.c_ulong(0))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return int(r)


_PROBE: dict[str, Any] = {}


def available() -> tuple[bool, str]:
    """Whether this process can read another process's memory here (probed once)."""
    if "result" in _PROBE:
        return _PROBE["result"]
    if not (sys.platform.startswith("linux") and os.uname().machine == "x86_64"):
        res = (False, "the trusted read needs Linux on x86-64")
    else:
        src = ctypes.create_string_buffer(b"kernelguard", 11)
        dst = ctypes.create_string_buffer(11)
        try:
            n = _readv(os.getpid(), ctypes.addressof(dst), ctypes.addressof(src), 11)
            res = (n == 11 and dst.raw == src.raw, "process_vm_readv works")
        except OSError as exc:
            res = (False, f"process_vm_readv refused: {exc.strerror}")
    _PROBE["result"] = res
    return res


# --------------------------------------------------------------------------- freezing
def _events(cgroup: str) -> dict[str, str]:
    out = {}
    with open(os.path.join(cgroup, "cgroup.events")) as fh:
        for line in fh:
            k, _, v = line.strip().partition(" ")
            out[k] = v
    return out


def can_freeze(cgroup: str | None) -> bool:
    return bool(cgroup) and os.path.exists(os.path.join(cgroup, "cgroup.freeze"))


def freeze(cgroup: str, timeout: float = 5.0) -> float:
    """Freeze every process of the leaf; returns the milliseconds it took (raises ``ReadFailed``).

    A freeze that fails or times out is undone before the error is raised: a leaf left
    frozen would make the candidate's next request time out.
    """
    try:
        return _freeze(cgroup, timeout)
    except ReadFailed:
        try:
            thaw(cgroup)
        except Exception:  # recorded by the caller's ReadFailed; the sweep kills the leaf anyway
            pass
        raise


def _freeze(cgroup: str, timeout: float) -> float:
    t0 = time.monotonic()
    try:
        fd = os.open(os.path.join(cgroup, "cgroup.events"), os.O_RDONLY)
    except OSError as exc:
        raise ReadFailed("freeze", f"cannot watch the candidate's cgroup: {exc.strerror}") from None
    try:
        try:
            with open(os.path.join(cgroup, "cgroup.freeze"), "w") as fh:
                fh.write("1")
        except OSError as exc:
            raise ReadFailed("freeze", f"cannot freeze the candidate's cgroup: {exc.strerror}") from None
        poller = select.poll()
        poller.register(fd, select.POLLPRI | select.POLLERR)
        while True:
            # ``frozen`` in cgroup.events is current on every read, but the kernel rate-limits
            # its change notifications (one per 10 ms per file): the first few milliseconds
            # are checked every 50 us, then reading through the watched descriptor re-arms it
            # and poll sleeps until the next notification (no busy loop on a loaded host)
            try:
                text = os.pread(fd, 4096, 0).decode()
            except OSError as exc:
                raise ReadFailed("freeze", f"cannot read the candidate's cgroup.events: {exc.strerror}") from None
            if any(line.strip() == "frozen 1" for line in text.splitlines()):
                return (time.monotonic() - t0) * 1e3
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise ReadFailed("freeze", f"the candidate's cgroup did not report frozen within {timeout:.1f} s")
            if time.monotonic() - t0 < 0.005:
                time.sleep(50e-6)
            else:
                poller.poll(min(left, 0.05) * 1e3)
    finally:
        os.close(fd)


def thaw(cgroup: str) -> None:
    try:
        with open(os.path.join(cgroup, "cgroup.freeze"), "w") as fh:
            fh.write("0")
    except OSError:
        pass


# --------------------------------------------------------------------------- memory map
def readable_problem(pid: int, addr: int, nbytes: int) -> str | None:
    """Why ``[addr, addr + nbytes)`` of ``pid`` is not readable memory, or ``None``.

    ``/proc/<pid>/maps`` lists the mappings in address order; only the end address of the
    lines before the span is parsed.
    """
    if nbytes <= 0:
        return None
    if addr <= 0:
        return "null storage pointer"
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return f"cannot read the candidate's memory map: {exc.strerror}"
    end, cur = addr + nbytes, addr
    for line in data.splitlines():
        dash = line.find(b"-")
        sp = line.find(b" ", dash)
        hi = int(line[dash + 1:sp], 16)
        if hi <= cur:
            continue
        if int(line[:dash], 16) > cur:
            break
        perms = line[sp + 1:sp + 5].decode()
        if perms[:1] != "r":
            return f"storage at {cur:#x} lies in a mapping without read access ({perms})"
        cur = hi
        if cur >= end:
            return None
    return f"storage at {cur:#x} is not mapped"


# --------------------------------------------------------------------------- layouts
def layout_span(facts: dict) -> tuple[int, bool]:
    """(bytes from the data pointer to the last element's end, contiguous row-major?)."""
    shape, stride, es = facts["shape"], facts["stride"], int(facts["element_size"])
    if any(int(s) == 0 for s in shape):
        return 0, True
    if any(int(st) < 0 for st in stride):
        raise ReadFailed("layout", "negative stride")
    span = (sum((int(s) - 1) * int(st) for s, st in zip(shape, stride)) + 1) * es
    expect, contiguous = 1, True
    for s, st in reversed(list(zip(shape, stride))):
        if int(s) != 1 and int(st) != expect:
            contiguous = False
        expect *= int(s)
    return span, contiguous


def _row_major(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return list(reversed(out))


MAX_ROWS = 1 << 22  # rows a gapped view may have (one process_vm_readv each)


def _gather_rows(pid: int, ptr: int, fd: int, shape: list[int], stride: list[int], es: int, nbytes: int) -> None:
    """Copy a view with gaps into ``fd`` packed in row-major order, one contiguous run at a time.

    The innermost dimensions that are contiguous in memory form one run; every other
    index is a separate ``process_vm_readv``.  A view whose innermost elements are not
    adjacent (a transposed crop) would need one call per element and is refused.
    """
    dims = [(int(n), int(st)) for n, st in zip(shape, stride) if int(n) != 1]
    run, expect = 1, 1
    while dims and dims[-1][1] == expect:
        run *= dims[-1][0]
        expect *= dims[-1][0]
        dims.pop()
    if run == 1 and dims:
        raise ReadFailed("layout", "output is a strided view whose elements are not adjacent in any dimension; "
                                   "return a contiguous tensor")
    rows = 1
    for n, _ in dims:
        rows *= n
    if rows > MAX_ROWS:
        raise ReadFailed("layout", f"output is a strided view of {rows} separate rows; return a contiguous tensor")
    row_bytes = run * es
    mm = mmap.mmap(fd, max(nbytes, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        buf = ctypes.c_char.from_buffer(mm)
        try:
            base = ctypes.addressof(buf)
            idx = [0] * len(dims)
            for r in range(rows):
                remote = ptr + es * sum(i * st for i, (_, st) in zip(idx, dims))
                try:
                    got = _readv(pid, base + r * row_bytes, remote, row_bytes)
                except OSError as exc:
                    kind = {errno.EFAULT: "unreadable", errno.EPERM: "refused", errno.ESRCH: "gone"}.get(
                        exc.errno, "failed")
                    raise ReadFailed(kind, f"process_vm_readv at {remote:#x}: {exc.strerror}") from None
                if got != row_bytes:
                    raise ReadFailed("unreadable", f"short read at {remote:#x}")
                for d in range(len(dims) - 1, -1, -1):  # next index, row-major
                    idx[d] += 1
                    if idx[d] < dims[d][0]:
                        break
                    idx[d] = 0
        finally:
            del buf
    finally:
        mm.close()


@dataclass
class OutputRead:
    nbytes: int
    contiguous: bool
    stride: list
    read_ms: float  # the copy (what RH-61 compares with a plain copy), time spent waiting for a CPU taken off
    map_ms: float = 0.0  # CUDA: mapping and unmapping the allocation (grows with the allocation, not the output)
    queued_ms: float = 0.0  # CPU: how long the reading thread waited, runnable, for a CPU during the copy


def queued_ns() -> int | None:
    """How long the calling thread has waited, runnable, for a CPU (``run_delay`` of its schedstat).

    A reading thread that other processes keep off the CPUs is not reading: that wait
    is the machine's, not the copy's.  Waiting on the candidate (a page it maps lazily,
    a fault it handles) is sleeping, not runnable, and is never counted here; the
    candidate is frozen during a read, so it cannot be the one keeping the reader off
    the CPUs.  ``None`` where the kernel does not keep the statistic.
    """
    try:
        with open("/proc/thread-self/schedstat") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _timed(t0: int, q0: int | None) -> tuple[float, float]:
    """``(read_ms, queued_ms)`` since ``t0`` (monotonic ns) and ``q0`` (:func:`queued_ns`)."""
    wall = time.monotonic_ns() - t0
    q1 = queued_ns()
    queued = min(max(q1 - q0, 0), wall) if q0 is not None and q1 is not None else 0
    return (wall - queued) / 1e6, queued / 1e6


def _copy_span(pid: int, remote: int, fd: int, nbytes: int) -> None:
    """``process_vm_readv`` of ``nbytes`` from ``remote`` into the start of ``fd``, one window at a time."""
    done = 0  # a multiple of CHUNK, so every window starts page-aligned
    while done < nbytes:
        n = min(CHUNK, nbytes - done)
        # MAP_POPULATE maps the window's pages at once (a fault per 4 KiB page costs more than the copy)
        mm = mmap.mmap(fd, n, mmap.MAP_SHARED | _POPULATE, mmap.PROT_READ | mmap.PROT_WRITE, offset=done)
        try:
            buf = ctypes.c_char.from_buffer(mm)
            try:
                base, got = ctypes.addressof(buf), 0
                while got < n:
                    try:
                        r = _readv(pid, base + got, remote + done + got, n - got)
                    except OSError as exc:
                        kind = {errno.EFAULT: "unreadable", errno.EPERM: "refused", errno.ESRCH: "gone"}.get(
                            exc.errno, "failed")
                        raise ReadFailed(kind, f"process_vm_readv at {remote + done + got:#x}: {exc.strerror}") \
                            from None
                    if r <= 0:
                        raise ReadFailed("unreadable", f"short read at {remote + done + got:#x}")
                    got += r
            finally:
                del buf
        finally:
            mm.close()
        done += n


def read_outputs(pid: int, facts: list[dict], staging: list[dict], fds: list[int]) -> list[OutputRead]:
    """Copy every output of a (frozen) candidate into its staging ``memfd``.

    ``facts``: the candidate's layout report per output (``ptr``, ``shape``, ``stride``,
    ``dtype``, ``element_size``); ``staging``: the judge's description of each buffer
    (shape, dtype, ``nbytes``, ``fd`` index into ``fds``).  A dense output in any
    order (a permutation or a broadcast view) is copied as its raw span, which the judge
    then reads back through the same strides; a layout with gaps larger than the
    staging buffer is refused.  Raises :class:`ReadFailed` on the first problem.
    """
    if len(facts) != len(staging):
        raise ReadFailed("structure", f"{len(facts)} outputs, {len(staging)} expected")
    out = []
    for f, s in zip(facts, staging):
        if not isinstance(f, dict):
            raise ReadFailed("facts", "malformed output facts")
        try:
            ptr, shape, stride = int(f["ptr"]), [int(x) for x in f["shape"]], [int(x) for x in f["stride"]]
            es, dtype = int(f["element_size"]), str(f["dtype"])
        except (KeyError, TypeError, ValueError):
            raise ReadFailed("facts", "malformed output facts") from None
        if shape != [int(x) for x in s["shape"]] or dtype != s["dtype"]:
            raise ReadFailed("structure", f"output {dtype}{shape}, expected {s['dtype']}{list(s['shape'])}")
        if len(stride) != len(shape) or es <= 0:
            raise ReadFailed("facts", "stride or element size does not match the shape")
        span, contiguous = layout_span({"shape": shape, "stride": stride, "element_size": es})
        if span > int(s["nbytes"]):  # a view with gaps (a crop, a slice): gathered row by row
            problem = readable_problem(pid, ptr, span)
            if problem:
                raise ReadFailed("unreadable", problem)
            t0, q0 = time.monotonic_ns(), queued_ns()
            try:
                _gather_rows(pid, ptr, fds[int(s["fd"])], shape, stride, es, int(s["nbytes"]))
            except ReadFailed:
                raise
            except (OSError, KeyError, IndexError, ValueError, TypeError) as exc:
                raise ReadFailed("failed", f"{type(exc).__name__}: {exc}"[:300]) from None
            read_ms, queued_ms = _timed(t0, q0)
            out.append(OutputRead(int(s["nbytes"]), True, _row_major(shape), read_ms, queued_ms=queued_ms))
            continue
        problem = readable_problem(pid, ptr, span)
        if problem:
            raise ReadFailed("unreadable", problem)
        t0, q0 = time.monotonic_ns(), queued_ns()
        if span:
            try:
                _copy_span(pid, ptr, fds[int(s["fd"])], span)
            except ReadFailed:
                raise
            except (OSError, KeyError, IndexError, ValueError, TypeError) as exc:  # never a crash of the parent
                raise ReadFailed("failed", f"{type(exc).__name__}: {exc}"[:300]) from None
        read_ms, queued_ms = _timed(t0, q0)
        out.append(OutputRead(span, contiguous, stride, read_ms, queued_ms=queued_ms))
    return out


# --------------------------------------------------------------------------- signals
def caught_signals(pid: int) -> int | None:
    """The ``SigCgt`` mask of ``pid`` (signals with a handler), or ``None`` if unreadable."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    return None


def new_fault_handlers(base: int | None, now: int | None) -> list[str] | None:
    """Fault signals caught now but not at ``base`` (``None`` when either reading failed)."""
    if base is None or now is None:
        return None
    return [name for name, sig in sorted(FAULT_SIGNALS.items()) if now & (1 << (sig - 1))
            and not base & (1 << (sig - 1))]
