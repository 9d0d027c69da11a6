"""Runtime helpers shared by the judge and the candidate harness.

State snapshots, the explicit precision configuration both workers run under, thread
and child-process counts from /proc, the CUDA L2 persistence probes, profiler trace
parsing and the one timed-call routine (the same protocol times the reference in the
judge and the candidate in its worker).  The functions the timed call relies on are
captured when this module is imported, before any candidate code runs.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any, Callable

import torch

_monotonic_ns = time.monotonic_ns
_cuda_sync = torch.cuda.synchronize
_Event = torch.cuda.Event
_cuda_spin = getattr(torch.cuda, "_sleep", None)  # marker / hold kernel
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled
MARKER_KERNEL = "spin_kernel"
_default_generator = torch.default_generator
_cuda_is_initialized, _cuda_manual_seed_all = torch.cuda.is_initialized, torch.cuda.manual_seed_all

def _first_float(obj: Any, attrs: tuple[str, ...]) -> float:
    """The first of ``attrs`` that ``obj`` can report as a number (profiler API differences)."""
    for attr in attrs:
        try:
            return float(getattr(obj, attr) or 0.0)
        except Exception:
            continue
    return 0.0


def _device_kernels(prof: Any) -> list[dict]:
    """Device-side records (kernels, copies, fills) of a finished profiler session."""
    events = getattr(prof, "function_events", None)  # autograd profiler
    if events is None:
        events = prof.events()  # torch.profiler front end
    out = []
    for evt in events:
        if str(getattr(evt, "device_type", "")).endswith("CPU"):
            continue
        tr = getattr(evt, "time_range", None)
        try:
            start, dur = float(tr.start), float(tr.elapsed_us())
        except Exception:
            start, dur = None, _first_float(evt, ("device_time_total", "device_time", "cuda_time"))
        out.append({"name": str(evt.name), "device_us": dur, "start_us": start,
                    "stream": getattr(evt, "device_resource_id", None)})
    return out


def split_marker(kernels: list[dict]) -> dict:
    """Take the harness's marker kernel out of a device trace.

    The marker is the earliest ``spin_kernel`` (forward may launch its own later); its
    stream is the current stream.  Returns ``marker_seen``, ``current_stream``,
    ``marker_end_us`` (when the marker finished) and the remaining ``kernels``.
    """
    marks = sorted((k for k in kernels if MARKER_KERNEL in k["name"]),
                   key=lambda k: float("inf") if k.get("start_us") is None else k["start_us"])
    if not marks:
        return {"marker_seen": False, "current_stream": None, "kernels": kernels[:5000]}
    rest = [k for k in kernels if k is not marks[0]]
    m = marks[0]
    end = None if m.get("start_us") is None else float(m["start_us"]) + float(m.get("device_us") or 0.0)
    return {"marker_seen": True, "current_stream": m.get("stream"), "marker_end_us": end, "kernels": rest[:5000]}


def backend_state() -> dict[str, Any]:
    state: dict[str, Any] = {
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_enabled": bool(torch.backends.cudnn.enabled),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "default_dtype": str(torch.get_default_dtype()),
        "num_threads": int(torch.get_num_threads()),
        "fp16_reduced_precision_reduction": bool(
            getattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", False)),
        "bf16_reduced_precision_reduction": bool(
            getattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", False)),
        "grad_enabled": bool(torch.is_grad_enabled()),
    }
    try:
        state["autocast_cpu"] = bool(torch.is_autocast_cpu_enabled())
    except Exception:  # pragma: no cover - older/newer torch
        pass
    return state


def seed_generators(seed: int) -> None:
    """Seed the generators a forward can draw from: the host's and, once CUDA is up, every GPU's.

    What ``torch.manual_seed`` does for the devices a worker uses, without its calls for
    accelerators this process never initialises (XPU, MTIA): each of those queues a
    closure with a formatted stack trace, about 1 ms per seed measured on the H200, and
    the judge and the candidate seed before every call.
    """
    seed = int(seed)
    _default_generator.manual_seed(seed)
    if _cuda_is_initialized():
        _cuda_manual_seed_all(seed)


def apply_precision_config(allow_tf32: bool, num_threads: int | None) -> None:
    """The explicit configuration both workers run under."""
    torch.backends.cuda.matmul.allow_tf32 = bool(allow_tf32)
    torch.backends.cudnn.allow_tf32 = bool(allow_tf32)
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = False
    if torch.are_deterministic_algorithms_enabled():  # the call itself costs seconds
        torch.use_deterministic_algorithms(False)
    torch.set_default_dtype(torch.float32)
    if num_threads:
        torch.set_num_threads(int(num_threads))


def os_thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def live_children() -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                kids.extend(int(x) for x in fh.read().split())
    except OSError:
        return kids
    alive = []
    for pid in kids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
            if state != "Z":
                alive.append(pid)
        except OSError:
            continue
    return alive


def concurrency() -> dict[str, Any]:
    return {
        "python_threads": [t.name for t in threading.enumerate() if t is not threading.main_thread()],
        "os_threads": os_thread_count(),
        "children": live_children(),
    }


# --------------------------------------------------------------------------- CUDA runtime
_CUDA_LIMIT_PERSISTING_L2 = 0x06
_STREAM_ATTR_ACCESS_POLICY_WINDOW = 1
_cudart: Any = None


def _load_cudart() -> Any:
    """The CUDA runtime already loaded by torch (ctypes handle), or None."""
    global _cudart
    if _cudart is not None:
        return _cudart or None
    import ctypes

    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name)
            lib.cudaDeviceGetLimit  # noqa: B018 - probe the symbol
            _cudart = lib
            return lib
        except (OSError, AttributeError):
            continue
    _cudart = False
    return None


def l2_persistence_state(stream_handle: int) -> dict | None:
    """Persisting-L2 limit and the current stream's access-policy window size."""
    import ctypes

    lib = _load_cudart()
    if lib is None:
        return None
    limit = ctypes.c_size_t(0)
    rc = lib.cudaDeviceGetLimit(ctypes.byref(limit), _CUDA_LIMIT_PERSISTING_L2)
    out = {"persisting_l2_limit": int(limit.value) if rc == 0 else None, "limit_rc": int(rc)}
    buf = (ctypes.c_ubyte * 256)()
    rc = lib.cudaStreamGetAttribute(ctypes.c_void_p(stream_handle), _STREAM_ATTR_ACCESS_POLICY_WINDOW, buf)
    if rc == 0:
        out["window_bytes"] = int(ctypes.c_size_t.from_buffer(buf, 8).value)
    out["window_rc"] = int(rc)
    return out


def reset_l2_persistence(stream_handle: int) -> None:
    """Drop any persisting-L2 carve-out, window and persisting lines before a timed sample."""
    import ctypes

    lib = _load_cudart()
    if lib is None:
        return
    lib.cudaDeviceSetLimit(_CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0))
    buf = (ctypes.c_ubyte * 256)()
    lib.cudaStreamSetAttribute(ctypes.c_void_p(stream_handle), _STREAM_ATTR_ACCESS_POLICY_WINDOW, buf)
    lib.cudaCtxResetPersistingL2Cache()


def memory_fraction(device: torch.device) -> float | None:
    getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    if getter is None:
        return None
    try:
        return float(getter(device))
    except Exception:
        return None


def oom_facts(message: str, device: torch.device, cap: float | None) -> dict:
    """What the allocator held when an allocation failed (the parent compares it with the memory plan)."""
    import re

    m = re.search(r"Tried to allocate ([0-9.]+) ([KMGT]i?B)", message)
    scale = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    requested = int(float(m.group(1)) * scale.get(m.group(2), 1)) if m else None
    free, total = torch.cuda.mem_get_info(device)
    return {"requested_bytes": requested, "reserved_bytes": int(torch.cuda.memory_reserved(device)),
            "allocated_bytes": int(torch.cuda.memory_allocated(device)),
            "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(device)),
            "device_free_bytes": int(free), "device_total_bytes": int(total), "cap": cap}


def init_cuda_device(device: torch.device, memory_fraction_cap: float | None) -> torch.Tensor:
    """Bind the worker to its GPU, cap PyTorch's allocator, warm it; returns the L2 flush buffer."""
    from kernelbench.timing import l2_flush_bytes

    torch.cuda.set_device(device)
    torch.cuda.init()
    if memory_fraction_cap:
        torch.cuda.set_per_process_memory_fraction(float(memory_fraction_cap), device)
    torch.ones(1, device=device).add_(1)
    return torch.empty(l2_flush_bytes(device) // 4, dtype=torch.int32, device=device)


def timed_call(fn: Callable[[], Any], device: torch.device, flush_buf: Any = None,
               hold_cycles: int = 0) -> tuple[Any, dict]:
    """Run ``fn`` once under the timing protocol; returns its result and the stamps.

    CUDA: L2 persistence reset, then pre/start/end events around an L2 flush, a short
    spin that keeps the stream busy while the host launches ``fn`` (as do_bench's
    back-to-back launches do), and ``fn``; the host stamps bracket everything up to a
    device-wide synchronize.  CPU: host stamps around ``fn``.

    Python's cyclic garbage collector is off from the first stamp to the last, as
    ``timeit`` keeps it off: a collection made due by the harness's own bookkeeping
    would otherwise run in whichever call crossed the threshold, and a host stall
    after the start event longer than the hold shows in that call's GPU window.
    Reference counting still frees what ``fn`` drops.
    """
    was_enabled = _gc_isenabled()
    _gc_disable()
    try:
        extra: dict[str, Any] = {}
        if device.type == "cuda":
            stream = torch.cuda.current_stream(device).cuda_stream
            _cuda_sync(device)
            reset_l2_persistence(stream)  # persisting lines would survive the flush
            _cuda_sync(device)
            pre, start, end = _Event(enable_timing=True), _Event(enable_timing=True), _Event(enable_timing=True)
            t0 = _monotonic_ns()
            pre.record()
            if flush_buf is not None:
                flush_buf.fill_(7)
            if hold_cycles > 0 and _cuda_spin is not None:
                _cuda_spin(hold_cycles)
            start.record()
            with torch.no_grad():
                out = fn()
            end.record()
            t_ret = _monotonic_ns()
            end.synchronize()  # the current stream is done ...
            t_evt = _monotonic_ns()
            _cuda_sync(device)  # ... and so is every other stream
            t1 = _monotonic_ns()
            extra.update(event_ms=start.elapsed_time(end), t_evt=t_evt, window_ms=pre.elapsed_time(end),
                         l2=l2_persistence_state(stream))
        else:
            t0 = _monotonic_ns()
            with torch.no_grad():
                out = fn()
            t_ret = t1 = _monotonic_ns()
            extra["event_ms"] = None
        return out, {"t0": t0, "t_ret": t_ret, "t1": t1, **extra}
    finally:
        if was_enabled:
            _gc_enable()
