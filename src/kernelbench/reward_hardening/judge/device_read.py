"""The judge's read of a frozen candidate's CUDA outputs (trusted side).

On CUDA the candidate's harness cannot be trusted to copy its own outputs into the
judge's staging buffers: a candidate that replaced ``aten::copy_`` would do its work
inside that copy, outside the timed window.  So, with the candidate's cgroup frozen by
the parent, the judge maps each output's allocation through the CUDA driver's IPC handle
(:mod:`kernelbench.reward_hardening.ipc.cuda_ipc`), checks that the span the output's
layout covers lies inside the mapping, copies it into its own staging buffer through its
own (trusted) PyTorch, and closes the mapping.  No candidate code runs meanwhile.

The candidate reports each output's layout and handle (it may lie): a lie makes the judge
copy other bytes of the candidate's own memory, which the comparison rejects; a span
outside the mapped allocation is refused before any byte is read.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelbench.reward_hardening.ipc import cuda_ipc
from kernelbench.reward_hardening.ipc.lending import dtype_from_name

__all__ = ["ReadRefused", "ReaderFault", "StagingAccess", "checked_span", "read_outputs"]


class ReadRefused(Exception):
    """An output could not be read; ``kind`` as the CPU read's (facts, structure, refused, unreadable, failed)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class ReaderFault(Exception):
    """The judge's own side of a read failed (its driver, its mapping): the evaluator's fault, never the candidate's."""


class _DeviceMemory:
    """A raw device span as a ``__cuda_array_interface__`` (bytes; no ownership)."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


def _check_structure(fact: dict, target: torch.Tensor) -> None:
    """Shape, dtype and device of an output against its staging buffer (a wrong answer, not a read failure)."""
    try:
        shape, dtype, device = [int(x) for x in fact["shape"]], str(fact["dtype"]), str(fact.get("device", ""))
    except (KeyError, TypeError, ValueError):
        raise ReadRefused("facts", "malformed output facts") from None
    if shape != list(target.shape) or dtype != str(target.dtype).replace("torch.", ""):
        raise ReadRefused("structure", f"output {dtype}{shape}, expected {target.dtype}{list(target.shape)}")
    if device and not device.startswith("cuda"):
        raise ReadRefused("structure", f"output on {device}, expected a CUDA tensor")


def checked_span(fact: dict, target: torch.Tensor, mapped_size: int) -> tuple[int, int]:
    """(offset into the mapped allocation, bytes from the output's first to its last element).

    Refuses facts that do not describe ``target``'s shape and dtype, negative strides, and
    any span outside ``[0, mapped_size)``: the judge never reads outside what it mapped.
    """
    try:
        ptr, base = int(fact["ptr"]), int(fact["ipc"]["base"])
        shape, stride = [int(x) for x in fact["shape"]], [int(x) for x in fact["stride"]]
        es, dtype = int(fact["element_size"]), str(fact["dtype"])
    except (KeyError, TypeError, ValueError):
        raise ReadRefused("facts", "malformed output facts") from None
    _check_structure(fact, target)
    if len(stride) != len(shape) or es != target.element_size() or any(st < 0 for st in stride):
        raise ReadRefused("facts", "stride or element size does not match the output")
    if any(n == 0 for n in shape):
        return 0, 0
    span = (sum((n - 1) * st for n, st in zip(shape, stride)) + 1) * es
    offset = ptr - base
    # the judge's mapping starts page-aligned, so the offset (not the candidate's own pointer,
    # whose base it also reports) decides whether the read is aligned
    if offset < 0 or offset + span > mapped_size or offset % es:
        raise ReadRefused("unreadable", f"output span [{offset}, {offset + span}) lies outside its allocation "
                                        f"of {mapped_size} bytes")
    return offset, span


def read_outputs(facts: Any, targets: list[torch.Tensor], device: torch.device) -> list[dict]:
    """Copy every output of the (frozen) candidate into ``targets``; returns per output bytes and ms."""
    if not isinstance(facts, list) or len(facts) != len(targets):
        raise ReadRefused("structure", f"{len(facts) if isinstance(facts, list) else 'no'} outputs, "
                                       f"{len(targets)} expected")
    out = []
    for fact, target in zip(facts, targets):
        if not isinstance(fact, dict):
            raise ReadRefused("facts", "malformed output facts")
        _check_structure(fact, target)  # before anything else: a wrong output is judged as one
        if target.numel() == 0:
            out.append({"nbytes": 0, "read_ms": 0.0})
            continue
        if fact.get("ipc_error"):
            raise ReadRefused("refused", f"the output's allocation could not be exported: {fact['ipc_error']}"[:300])
        ipc = fact.get("ipc")
        if not isinstance(ipc, dict) or not isinstance(ipc.get("handle"), str):
            raise ReadRefused("facts", "no IPC handle for the output's allocation")
        t0 = time.monotonic_ns()
        try:
            dptr, mapped = cuda_ipc.open_allocation(ipc["handle"])
        except ValueError as exc:
            raise ReadRefused("facts", f"malformed IPC handle: {exc}"[:300]) from None
        except cuda_ipc.DriverError as exc:
            if exc.code in cuda_ipc.CANDIDATE_ERRORS:  # the handle names nothing this judge can map
                raise ReadRefused("refused", f"cannot map the output's allocation: {exc}"[:300]) from None
            raise ReaderFault(f"the judge could not map an allocation: {exc}") from None
        t1 = t2 = time.monotonic_ns()
        try:
            offset, span = checked_span(fact, target, mapped)
            if span % target.element_size():
                raise ReadRefused("facts", "span is not a whole number of elements")
            raw = torch.as_tensor(_DeviceMemory(dptr + offset, span), device=device)
            typed = raw.view(target.dtype)  # the staging dtype (the fact's was checked equal to it)
            target.copy_(torch.as_strided(typed, list(target.shape), [int(x) for x in fact["stride"]], 0))
            torch.cuda.synchronize(device)
            t2 = time.monotonic_ns()
            del raw, typed
        finally:
            try:
                cuda_ipc.close_allocation(dptr)
            except cuda_ipc.DriverError as exc:
                # the candidate may free the allocation once thawed: a mapping left open is undefined
                raise ReaderFault(f"the judge could not unmap an allocation: {exc}") from None
        # the copy and the mapping apart: mapping costs grow with the allocation, which may be far
        # larger than the output (a caching allocator's segment), and are not a slow read
        out.append({"nbytes": span, "read_ms": (t2 - t1) / 1e6,
                    "map_ms": ((t1 - t0) + (time.monotonic_ns() - t2)) / 1e6})
    return out


class StagingAccess:
    """The judge's commands that hand staging to the candidate or fill it from the candidate's memory.

    A mixin of :class:`kernelbench.reward_hardening.judge.worker.Judge` (which provides
    ``device``, ``arena``, ``current``, ``timed``, ``reply`` and ``sync``).
    """

    device: torch.device
    arena: Any
    current: dict | None
    timed: dict | None

    @property
    def _export_staging(self) -> bool:
        """Whether staging buffers are exported with the inputs, or only when ``lend`` asks.

        A CUDA export (``_share_cuda_``) starts the tensor's cross-process reference count
        at one, and only a consumer that opened the handle and let it go brings it back
        to zero: a buffer exported but never lent stays allocated (PyTorch's IPC "limbo")
        until the judge exits.  Staging exported with every timed call but lent only for
        spot checks piled up that way (on the H200 the judges of the 6-8 GiB element-wise
        problems ran out of memory in the timing loop).  So on CUDA staging is exported
        only when the parent lends it; on the CPU an export is a ``memfd`` the parent
        itself reads through.
        """
        return self.device.type != "cuda"

    def cmd_lend(self, header: dict) -> None:
        """Export the current probe's (``which="probe"``) or timed call's staging buffers."""
        if header.get("which") == "timed":
            if self.timed is None:
                raise RuntimeError("no timed call to lend staging for")
            if self.timed.get("private_stage"):  # made unfilled, from a pool that is never exported
                raise RuntimeError("this timed call's staging is the judge's own and is never lent")
            metas, fds = self.arena.export(self.timed["stage"])
            return self.reply({"staging": metas}, fds)
        if self.current is None:
            raise RuntimeError("no probe to lend staging for")
        cur = self.current
        metas, fds = self.arena.export(cur["a"] + cur["b"])
        by = {m["id"]: m for m in metas}
        self.reply({"staging": [by[k] for k in cur["a"]], "staging_after": [by[k] for k in cur["b"]]}, fds)

    def _staging_target(self, which: str) -> list[int]:
        if which == "timed":
            if self.timed is None:
                raise RuntimeError("no timed call to read outputs for")
            return list(self.timed["stage"])
        if which not in ("a", "b"):
            raise ValueError(f"unknown staging set {which!r}")
        if self.current is None:
            raise RuntimeError("no probe to read outputs for")
        return list(self.current[which])

    def cmd_device_read(self, header: dict) -> None:
        """Fill staging (``which``: ``a``, ``b``, ``timed``) from the frozen candidate's outputs (CUDA).

        ``which="selftest"``: the harness's probe tensor (``arange`` of int32, exported before
        any candidate code ran) is read and checked, to decide once per candidate whether this
        host supports the read at all.  A refused read is an answer (``written`` false, with
        ``kind`` and ``detail``), never a judge failure.
        """
        facts = header.get("outputs")
        which = str(header.get("which"))
        selftest = which == "selftest"
        # the judge's own state first (an error here is the evaluator's, not a refused read)
        targets = None if selftest else [self.arena.tensor(k) for k in self._staging_target(which)]
        try:
            if selftest:
                n = int((facts or [{}])[0].get("numel", 0)) if isinstance(facts, list) and facts else 0
                if not 0 < n <= 1 << 20:
                    raise ReadRefused("facts", "malformed self-test facts")
                targets = [torch.empty(n, dtype=torch.int32, device=self.device)]
            reads = read_outputs(facts, targets, self.device)
            if selftest and not torch.equal(targets[0], torch.arange(len(targets[0]), dtype=torch.int32,
                                                                     device=self.device)):
                raise ReadRefused("failed", "the self-test read returned other values")
        except ReadRefused as exc:
            return self.reply({"written": False, "kind": exc.kind, "detail": exc.detail[:300]})
        except Exception as exc:
            if selftest:  # before any candidate code: any failure only means this host cannot read this way
                return self.reply({"written": False, "kind": "failed",
                                   "detail": f"{type(exc).__name__}: {exc}"[:300]})
            if isinstance(exc, torch.OutOfMemoryError):
                raise  # the judge's memory: RH-44, as any out-of-memory of the judge
            # the judge's own driver or CUDA context failed: the evaluator's fault (RH-32); the
            # parent closes this judge and the next sample gets a fresh one
            return self.reply({"ok": False, "evaluator_fault": True,
                               "error": f"device read: {type(exc).__name__}: {exc}"[:500]})
        self.sync()
        if which == "timed" and self.timed is not None:
            self.timed["read"] = True  # its staging holds this call's outputs (check_inputs may compare it)
        self.reply({"written": True, "reads": reads})
