"""CUDA driver IPC handles of whole allocations, for the judge's read of candidate outputs.

The judge lends its own tensors through PyTorch's IPC (:mod:`.lending`, judge ->
candidate).  The other direction, used only to *read* a frozen candidate's outputs,
goes through the CUDA driver directly (``libcuda.so.1`` through ``ctypes``):

* the candidate's harness (:func:`export_allocation`) names the allocation that holds an
  output: ``cuMemGetAddressRange`` gives its base and size, ``cuIpcGetMemHandle`` a
  64-byte handle of it.  No PyTorch reference counting (no shared-memory counter file,
  no "limbo"): the handle is a name, and the candidate keeps ownership;
* the judge (:func:`open_allocation`) maps that allocation with ``cuIpcOpenMemHandle``
  while the candidate is frozen, checks with ``cuMemGetAddressRange`` on its own mapping
  that the span it is about to read lies inside it, copies, and closes the mapping.

A handle the candidate lies about can only name memory the candidate can export (its
own allocations): the judge then reads other bytes of the candidate's memory, which the
comparison rejects, and never reads outside the mapped allocation.
"""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = ["CANDIDATE_ERRORS", "DriverError", "available", "close_allocation", "export_allocation", "mapped_range",
           "open_allocation"]

_HANDLE_BYTES = 64
_LAZY_ENABLE_PEER_ACCESS = 0x1  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS


class DriverError(Exception):
    """A CUDA driver call failed; ``call`` names it and ``code`` is its ``CUresult``."""

    def __init__(self, call: str, code: int):
        super().__init__(f"{call} failed with CUresult {code}")
        self.call, self.code = call, code


class _Handle(ctypes.Structure):
    # unsigned bytes, never c_char: a c_char array field reads back as ``bytes`` cut at the
    # first zero, and writing through it writes into a temporary, not the structure
    _fields_ = [("reserved", ctypes.c_ubyte * _HANDLE_BYTES)]


# CUresult codes that mean "this handle does not name memory this process can map": the
# candidate's doing (a lie, a freed allocation); every other failure is the reader's own
CANDIDATE_ERRORS = frozenset({1, 400, 401})  # CUDA_ERROR_INVALID_VALUE, _INVALID_HANDLE, _NOT_FOUND


_LIB: dict[str, Any] = {}


def _driver() -> Any:
    """The driver's functions, resolved once (at import of the harness, before candidate code)."""
    if "lib" not in _LIB:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, p64 = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)
        fns = {
            "range": (lib.cuMemGetAddressRange_v2, [p64, ctypes.POINTER(ctypes.c_size_t), u64]),
            "get": (lib.cuIpcGetMemHandle, [ctypes.POINTER(_Handle), u64]),
            "open": (lib.cuIpcOpenMemHandle_v2, [p64, _Handle, ctypes.c_uint]),
            "close": (lib.cuIpcCloseMemHandle, [u64]),
        }
        for fn, args in fns.values():
            fn.argtypes, fn.restype = args, ctypes.c_int
        _LIB["lib"] = {k: fn for k, (fn, _) in fns.items()}
    return _LIB["lib"]


def available() -> tuple[bool, str]:
    """Whether the driver's IPC entry points can be loaded in this process."""
    try:
        _driver()
    except (OSError, AttributeError) as exc:
        return False, f"CUDA driver IPC entry points unavailable: {exc}"
    return True, "libcuda IPC entry points loaded"


def _check(call: str, code: int) -> None:
    if code != 0:
        raise DriverError(call, int(code))


def mapped_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the allocation (or IPC mapping) that holds device address ``ptr``."""
    base, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
    _check("cuMemGetAddressRange", _driver()["range"](ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)))
    return int(base.value), int(size.value)


def export_allocation(ptr: int) -> dict:
    """The IPC handle of the allocation holding ``ptr``: ``{"handle", "base", "size"}`` (candidate side)."""
    base, size = mapped_range(ptr)
    h = _Handle()
    _check("cuIpcGetMemHandle", _driver()["get"](ctypes.byref(h), ctypes.c_uint64(base)))
    return {"handle": bytes(h).hex(), "base": base, "size": size}


def open_allocation(handle_hex: str) -> tuple[int, int]:
    """Map a candidate's allocation into this process; returns (device pointer, mapped size) (judge side)."""
    raw = bytes.fromhex(handle_hex)
    if len(raw) != _HANDLE_BYTES:
        raise ValueError(f"an IPC handle has {_HANDLE_BYTES} bytes, got {len(raw)}")
    h = _Handle.from_buffer_copy(raw)
    dptr = ctypes.c_uint64(0)
    _check("cuIpcOpenMemHandle", _driver()["open"](ctypes.byref(dptr), h, ctypes.c_uint(_LAZY_ENABLE_PEER_ACCESS)))
    ptr = int(dptr.value)
    try:
        base, size = mapped_range(ptr)
    except DriverError:
        close_allocation(ptr)
        raise
    return ptr, base + size - ptr


def close_allocation(dptr: int) -> None:
    _check("cuIpcCloseMemHandle", _driver()["close"](ctypes.c_uint64(dptr)))
