"""The candidate harness's captured functions and the watches on what the candidate may replace.

Runs in the candidate worker.  The bootstrap imports this module (through
:mod:`.worker`, which imports it eagerly) before the containment is entered and before
the candidate's source is imported, so every name bound here is the genuine object:
the clocks, the tensor accessors and the built-ins the harness checks results with.
It imports only the standard library and torch, both fully loaded at that moment, and
nothing the candidate could have reached first.  Nothing here may be imported lazily
(inside a function): a module first imported after the candidate's import would
capture whatever the candidate left in place.

Also here, because they too compare against the state at import: the dispatcher
tables of the operators the harness calls (RH-62) and the public APIs whose identity
is checked after every phase (RH-23).
"""

from __future__ import annotations

import builtins
import hashlib
import time
from typing import Any

import torch

__all__ = ["DISPATCH_OPS", "WATCHED_APIS", "dispatch_changes", "resolve_api"]

# Captured before any candidate code can run in this process.
_monotonic_ns = time.monotonic_ns
_thread_time_ns = time.thread_time_ns
_perf_counter_ns = time.perf_counter_ns
_Tensor = torch.Tensor
_cuda_sync = torch.cuda.synchronize
_Event = torch.cuda.Event
_sleep = time.sleep
_type = builtins.type
_len = builtins.len
_copy = torch.Tensor.copy_
_data_ptr = torch.Tensor.data_ptr
_size = torch.Tensor.size
_stride = torch.Tensor.stride
_storage_offset = torch.Tensor.storage_offset
_element_size = torch.Tensor.element_size
_numel = torch.Tensor.numel
_untyped_storage = torch.Tensor.untyped_storage
_dtype_of = torch._C.TensorBase.dtype.__get__
_device_of = torch._C.TensorBase.device.__get__
_requires_grad_of = torch._C.TensorBase.requires_grad.__get__
_type_qualname = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__
_obj_dict = object.__getattribute__
_tuple_getitem = tuple.__getitem__
_list_getitem = list.__getitem__
_use_mem_pool = getattr(torch.cuda, "use_mem_pool", None)
_dispatch_dump_table = getattr(torch._C, "_dispatch_dump_table", None)

# Operators the harness itself calls on outputs and lent tensors.  Their dispatcher
# tables are captured here, before any candidate code can run; a kernel the candidate
# registers for one of them (``TORCH_LIBRARY_IMPL(aten, CPU, m)`` in an extension, or
# ``torch.library``) changes its table and is reported after every phase (RH-62).
DISPATCH_OPS = ("aten::copy_", "aten::_copy_from", "aten::_to_copy", "aten::clone", "aten::view",
                "aten::reshape", "aten::as_strided", "aten::empty.memory_format", "aten::empty_strided",
                "aten::detach", "aten::fill_.Scalar")


def _dispatch_tables() -> dict[str, str]:
    out = {}
    for op in DISPATCH_OPS:
        try:
            out[op] = _dispatch_dump_table(op) if _dispatch_dump_table is not None else "unavailable"
        except Exception as exc:
            out[op] = f"unreadable: {type(exc).__name__}"
    return out


_DISPATCH_BASE = _dispatch_tables()


def dispatch_changes() -> list[str]:
    """Watched operators whose dispatcher table differs from the one at harness import."""
    now = _dispatch_tables()
    return [op for op in DISPATCH_OPS if now.get(op) != _DISPATCH_BASE.get(op)]

# Public APIs whose identity is checked after every phase (RH-23).
WATCHED_APIS = (
    "time.time", "time.perf_counter", "time.perf_counter_ns", "time.monotonic", "time.monotonic_ns",
    "time.process_time", "time.sleep", "torch.cuda.synchronize", "torch.cuda.Event",
    "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize",
    "torch.allclose", "torch.isclose", "torch.equal", "torch.testing.assert_close", "torch.Tensor.__eq__",
    "torch.Tensor.allclose", "torch.Tensor.equal", "torch.Tensor.cpu", "torch.Tensor.clone",
    "torch.Tensor.data_ptr", "torch.Tensor.numpy", "torch.Tensor.to", "torch.Tensor.contiguous",
    "builtins.print", "builtins.open", "builtins.isinstance", "builtins.type", "hashlib.sha256",
    "torch.manual_seed", "torch.profiler.profile", "torch.autograd.profiler.profile",
)


def resolve_api(dotted: str) -> Any:
    """The object a watched name refers to now (``None`` when a part is missing)."""
    parts = dotted.split(".")
    obj: Any = {"time": time, "torch": torch, "builtins": builtins, "hashlib": hashlib}[parts[0]]
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj
