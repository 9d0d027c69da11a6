"""What the candidate harness records about a result, without running candidate code.

Runs in the candidate worker, right after each call returns.  ``exact_outputs``
accepts only exact tensors (or an exact tuple/list of them); ``output_facts`` fixes a
tensor's pointer and layout; ``output_evidence`` adds the raw facts the parent's
detectors read (aliasing with inputs or with earlier outputs still alive, storage
large enough for the view, instance attributes).  Everything is read through the
accessors :mod:`.capture` captured before the candidate was imported, and this module
is imported eagerly with :mod:`.worker`, before the candidate's source, so the names
it binds are the genuine ones too.
"""

from __future__ import annotations

from typing import Any

from kernelbench.reward_hardening.candidate.capture import (
    _data_ptr,
    _device_of,
    _dtype_of,
    _element_size,
    _len,
    _list_getitem,
    _numel,
    _obj_dict,
    _requires_grad_of,
    _size,
    _storage_offset,
    _stride,
    _Tensor,
    _tuple_getitem,
    _type,
    _type_module,
    _type_qualname,
    _untyped_storage,
)

__all__ = ["exact_outputs", "output_evidence", "output_facts", "rejected_evidence", "storage_span",
           "unreadable"]


def _type_name(t: type) -> str:
    try:
        return f"{_type_module(t)}.{_type_qualname(t)}"
    except Exception:
        return "<unnamed type>"


def exact_outputs(out: Any) -> tuple[list | None, str, str | None]:
    """``(tensors, container, problem)`` of a result, without running candidate code.

    Accepted: an exact ``torch.Tensor``, or an exact ``tuple``/``list`` of exact
    tensors.  Types are compared with the captured ``type`` and items read with the
    built-in containers' own ``__getitem__``, so a subclass that overrides iteration,
    a proxy or a lazy wrapper is rejected before any of its methods can run.
    """
    t = _type(out)
    if t is _Tensor:
        return [out], "tensor", None
    if t is tuple or t is list:
        get = _tuple_getitem if t is tuple else _list_getitem
        items = [get(out, i) for i in range(_len(out))]
        bad = [_type_name(_type(x)) for x in items if _type(x) is not _Tensor]
        if bad:
            return None, t.__name__, f"{t.__name__} holds non-tensor items: {sorted(set(bad))[:4]}"
        return items, t.__name__, None
    return None, _type_name(t), f"result of type {_type_name(t)} is not an exact torch.Tensor or tuple/list of tensors"


def output_facts(t: Any) -> dict:
    """Pointer, size and layout of an exact tensor, fixed right after the call."""
    st = _untyped_storage(t)
    return {"ptr": int(_data_ptr(t)), "shape": list(_size(t)), "stride": list(_stride(t)),
            "offset": int(_storage_offset(t)), "dtype": str(_dtype_of(t)).replace("torch.", ""),
            "device": str(_device_of(t)), "storage_ptr": int(st.data_ptr()), "storage_nbytes": int(st.nbytes()),
            "element_size": int(_element_size(t)), "numel": int(_numel(t)),
            "requires_grad": bool(_requires_grad_of(t))}


def storage_span(t: Any) -> tuple[int, int]:
    """``(pointer, bytes)`` of a tensor's whole storage; ``(0, 0)`` when unreadable."""
    try:
        st = _untyped_storage(t)
        return int(st.data_ptr()), int(st.nbytes())
    except Exception:
        return 0, 0


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (pa, na), (pb, nb) = a, b
    if na == 0 or nb == 0 or pa == 0 or pb == 0:
        return False
    return pa < pb + nb and pb < pa + na


def unreadable(ptr: int, nbytes: int) -> str | None:
    """Why ``[ptr, ptr + nbytes)`` is not readable memory of this process (CPU), or ``None``."""
    if nbytes <= 0:
        return None
    try:
        with open("/proc/self/maps") as fh:
            maps = [(int(a, 16), int(b, 16), perms) for (a, b), perms in
                    ((ln.split(None, 2)[0].split("-"), ln.split(None, 2)[1]) for ln in fh)]
    except (OSError, ValueError, IndexError):
        return "the process memory map is unreadable"
    cur, end = ptr, ptr + nbytes
    for lo, hi, perms in maps:
        if hi <= cur:
            continue
        if lo > cur:
            break
        if perms[0] != "r":
            return f"storage lies in a mapping without read access ({perms})"
        cur = hi
        if cur >= end:
            return None
    return "storage is not mapped"


def output_evidence(tensors: list, facts: list[dict], container: str, inputs: list,
                    earlier_spans: list[tuple[int, int]]) -> dict:
    """Raw facts about exact output tensors; the parent decides what they mean.

    ``earlier_spans`` are the storage spans of earlier outputs whose storage is still
    alive (see :meth:`kernelbench.reward_hardening.candidate.worker.Harness._live_earlier_spans`).
    """
    in_spans = [storage_span(t) for t in inputs if _type(t) is _Tensor]
    out = []
    for t, f in zip(tensors, facts):
        needed = 0
        if f["numel"] > 0:
            needed = (sum((s - 1) * st for s, st in zip(f["shape"], f["stride"])) + 1 + f["offset"]) * f["element_size"]
        try:
            attrs = sorted(k for k in _obj_dict(t, "__dict__") if not k.startswith("_"))
        except Exception:
            attrs = []
        span = (f["storage_ptr"], f["storage_nbytes"])
        out.append({"type": "torch.Tensor", "exact_tensor": True, "device": f["device"], "dtype": f["dtype"],
                    "shape": f["shape"], "requires_grad": f["requires_grad"], "storage_nbytes": f["storage_nbytes"],
                    "needed_nbytes": needed, "null_pointer": bool(f["numel"] > 0 and f["ptr"] == 0),
                    "instance_attrs": attrs, "aliases_input": any(_overlap(span, s) for s in in_spans),
                    "aliases_earlier_output": any(_overlap(span, s) for s in earlier_spans)})
    return {"tensors": out, "container": container}


def rejected_evidence(container: str, problem: str) -> dict:
    """The evidence of a result that is not exact tensors (nothing of it was read)."""
    return {"tensors": [{"type": container, "exact_tensor": False}], "container": container, "problem": problem}
