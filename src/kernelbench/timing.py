"""Timing methods, statistics and baseline look-ups (upstream-compatible).

Every timing function has the upstream signature
``(kernel_fn, args, num_warmup=3, num_trials=10, discard_first=1, verbose=True, device=None)``
and returns a list of per-call times in **milliseconds**.

Methods:

``cuda_event``
    CUDA events on the current stream around each call, an L2 flush before each
    trial.  The flush buffer is sized from the device's real L2 (at least twice its
    size, never less than 256 MiB), not a fixed constant.
``do_bench``
    ``triton.testing.do_bench`` with its own adaptive trial count.
``do_bench_impl``
    A fixed-count variant of do_bench: all events recorded in one pass.
``host_time``
    Host ``perf_counter`` around the call followed by a device-wide synchronise, so
    work queued on any stream is inside the interval.  The only method that works
    with ``device="cpu"``.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from kernelbench.devices import device_name, resolve_device, synchronize
from kernelbench.loading import (
    get_torch_dtype_from_string,
    load_original_model_and_inputs,
    process_inputs,
    set_seed,
)

__all__ = [
    "clear_l2_cache",
    "clear_l2_cache_triton",
    "time_execution_with_cuda_event",
    "time_execution_with_do_bench_impl",
    "time_execution_with_do_bench_interface",
    "time_execution_with_host_time",
    "time_execution_with_nsight_python",
    "fetch_baseline_time",
    "get_timing_function",
    "get_timing_stats",
    "l2_flush_bytes",
    "measure_program_time",
    "measure_ref_program_time",
    "resolve_device",
    "device_name",
    "synchronize",
    "TIMING_METHODS",
]

_MIN_FLUSH_BYTES = 256 * 1024 * 1024
_flush_buffers: dict[int, torch.Tensor] = {}


# --------------------------------------------------------------------------- L2 flush
def l2_flush_bytes(device: Any) -> int:
    """Bytes written per flush: at least twice the device's L2, at least 256 MiB."""
    dev = resolve_device(device)
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return max(2 * l2, _MIN_FLUSH_BYTES)


def clear_l2_cache(device: Any = None) -> None:
    """Evict L2 by writing a buffer at least twice its size (no-op on CPU)."""
    dev = resolve_device(device)
    if dev.type != "cuda":
        return
    buf = _flush_buffers.get(dev.index)
    if buf is None:
        nbytes = l2_flush_bytes(dev)
        buf = torch.empty(nbytes // 8, dtype=torch.int64, device=dev)
        _flush_buffers[dev.index] = buf
    buf.fill_(42)


# --------------------------------------------------------------------------- methods
def _warmup(kernel_fn: Callable, args: Sequence, num_warmup: int, dev: torch.device) -> None:
    for _ in range(num_warmup):
        kernel_fn(*args)
        synchronize(dev)


def _require_cuda(dev: torch.device, method: str) -> None:
    if dev.type != "cuda":
        raise ValueError(f"timing_method {method!r} needs a CUDA device; use 'host_time' on the CPU")


def _sampled(measure: Callable[[], float], num_trials: int, discard_first: int, verbose: bool) -> list[float]:
    """Call ``measure`` ``num_trials + discard_first`` times; keep the last ``num_trials`` (ms)."""
    times: list[float] = []
    for trial in range(num_trials + discard_first):
        elapsed = measure()
        if trial >= discard_first:
            times.append(elapsed)
            if verbose:
                print(f"trial {trial - discard_first + 1}: {elapsed:.4g} ms")
    return times


def time_execution_with_cuda_event(
    kernel_fn: Callable,
    args: Sequence,
    num_warmup: int = 3,
    num_trials: int = 10,
    discard_first: int = 1,
    verbose: bool = True,
    device: Any = None,
) -> list[float]:
    dev = resolve_device(device)
    _require_cuda(dev, "cuda_event")

    def one() -> float:
        torch.cuda.synchronize(dev)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        clear_l2_cache(dev)  # not synchronised: the flush covers the host's launch, as upstream
        start.record()
        kernel_fn(*args)
        end.record()
        torch.cuda.synchronize(dev)
        return start.elapsed_time(end)

    with torch.cuda.device(dev):
        _warmup(kernel_fn, args, num_warmup, dev)
        torch.cuda.empty_cache()
        return _sampled(one, num_trials, discard_first, verbose)


def time_execution_with_host_time(
    kernel_fn: Callable,
    args: Sequence,
    num_warmup: int = 3,
    num_trials: int = 10,
    discard_first: int = 1,
    verbose: bool = True,
    device: Any = None,
) -> list[float]:
    dev = resolve_device(device)

    def one() -> float:
        synchronize(dev)
        clear_l2_cache(dev)
        synchronize(dev)
        t0 = time.perf_counter()
        kernel_fn(*args)
        synchronize(dev)
        return (time.perf_counter() - t0) * 1000.0

    _warmup(kernel_fn, args, num_warmup, dev)
    return _sampled(one, num_trials, discard_first, verbose)


def time_execution_with_do_bench_interface(
    kernel_fn: Callable,
    args: Sequence,
    num_warmup: int = 3,
    num_trials: int = 10,
    discard_first: int = 1,
    verbose: bool = True,
    device: Any = None,
) -> list[float]:
    dev = resolve_device(device)
    _require_cuda(dev, "do_bench")
    from triton import testing as triton_testing

    with torch.cuda.device(dev):
        times = triton_testing.do_bench(lambda: kernel_fn(*args), warmup=25, rep=100, return_mode="all")
    return [float(t) for t in times]


def time_execution_with_do_bench_impl(
    kernel_fn: Callable,
    args: Sequence,
    num_warmup: int = 3,
    num_trials: int = 10,
    discard_first: int = 1,
    verbose: bool = True,
    device: Any = None,
) -> list[float]:
    dev = resolve_device(device)
    _require_cuda(dev, "do_bench_impl")
    with torch.cuda.device(dev):
        _warmup(kernel_fn, args, num_warmup, dev)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(num_trials)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(num_trials)]
        for i in range(num_trials):
            clear_l2_cache(dev)
            starts[i].record()
            kernel_fn(*args)
            ends[i].record()
        torch.cuda.synchronize(dev)
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def clear_l2_cache_triton(cache: Any = None, device: Any = "cuda") -> None:
    """Flush L2 with Triton's benchmark cache buffer (upstream's alternative to :func:`clear_l2_cache`).

    ``cache`` may be a buffer from ``get_empty_cache_for_benchmark()`` to reuse.
    Needs Triton and a CUDA device.
    """
    dev = resolve_device(device)
    _require_cuda(dev, "clear_l2_cache_triton")
    from triton import runtime as triton_runtime

    with torch.cuda.device(dev):
        driver = triton_runtime.driver.active
        driver.clear_cache(cache if cache is not None else driver.get_empty_cache_for_benchmark())


def time_execution_with_nsight_python(
    kernel_fn: Callable,
    args: Sequence,
    num_warmup: int = 3,
    num_trials: int = 10,
    discard_first: int = 1,
    verbose: bool = True,
    device: Any = None,
) -> list[float]:
    """GPU time from Nsight Compute (``gpu__time_duration.sum``) via nsight-python, NVIDIA only.

    Returns a **one-element** list (the average over ``num_trials`` runs, ms), as
    upstream; ``discard_first`` is unused.  Raises ``RuntimeError`` when nsight-python,
    ``ncu`` or an NVIDIA GPU is missing.
    """
    from kernelbench.profile import profile_with_nsight
    from kernelbench.gpu_arch import get_gpu_vendor

    dev = resolve_device(device)
    _require_cuda(dev, "nsight_python_time")
    if get_gpu_vendor(dev) != "nvidia":
        raise RuntimeError("nsight_python_time needs an NVIDIA GPU; use cuda_event or do_bench")
    with torch.cuda.device(dev):
        _warmup(kernel_fn, args, num_warmup, dev)
        torch.cuda.empty_cache()
        clear_l2_cache(dev)
        values = profile_with_nsight(lambda: kernel_fn(*args), metrics=["gpu__time_duration.sum"],
                                     num_trials=num_trials)
    ns = values.get("gpu__time_duration.sum")
    if ns is None:
        raise RuntimeError("Nsight returned no gpu__time_duration.sum")
    ms = float(ns) / 1e6
    if verbose:
        print(f"[nsight_python_time] average GPU time {ms:.3f} ms over {num_trials} runs")
    return [ms]


TIMING_METHODS: dict[str, Callable[..., list[float]]] = {
    "cuda_event": time_execution_with_cuda_event,
    "do_bench": time_execution_with_do_bench_interface,
    "do_bench_impl": time_execution_with_do_bench_impl,
    "host_time": time_execution_with_host_time,
    "nsight_python_time": time_execution_with_nsight_python,
}


def get_timing_function(method: str = "cuda_event") -> Callable[..., list[float]]:
    """The timing function for ``method`` (default ``cuda_event``, as upstream); unknown -> ValueError."""
    try:
        return TIMING_METHODS[method]
    except KeyError:
        raise ValueError(
            f"Unknown timing method {method!r}; accepted: {', '.join(TIMING_METHODS)}"
        ) from None


def _round3(x: float) -> float:
    if not math.isfinite(x):
        return float(x)
    return float(f"{x:.3g}")


def get_timing_stats(elapsed_times: Sequence[float], device: Any = None) -> dict[str, Any]:
    """mean/std/min/max/num_trials in ms, rounded to 3 significant figures (population std)."""
    arr = np.asarray(list(elapsed_times), dtype=np.float64)
    if arr.size == 0:
        stats: dict[str, Any] = {"mean": -1.0, "std": 0.0, "min": -1.0, "max": -1.0, "num_trials": 0}
    else:
        stats = {
            "mean": _round3(float(np.mean(arr))),
            "std": _round3(float(np.std(arr))),
            "min": _round3(float(np.min(arr))),
            "max": _round3(float(np.max(arr))),
            "num_trials": int(arr.size),
        }
    if device is not None:
        stats["hardware"] = device_name(device)
        stats["device"] = str(resolve_device(device))
    return stats


# --------------------------------------------------------------------------- reference
def measure_ref_program_time(
    ref_arch_name: str,
    ref_arch_src: str,
    num_warmup: int = 5,
    num_trials: int = 100,
    discard_first: int = 1,
    timing_method: str = "cuda_event",
    use_torch_compile: bool = False,
    torch_compile_backend: str = "inductor",
    torch_compile_options: str = "default",
    device: Any = None,
    verbose: bool = False,
    precision: str = "fp32",
) -> dict[str, Any] | None:
    """Time a reference program (eager or torch.compile); None on failure (as upstream)."""
    dev = resolve_device(device if device is not None else ("cuda:0" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cpu" and timing_method != "host_time":
        timing_method = "host_time"
    dtype = get_torch_dtype_from_string(precision)
    try:
        Model, get_init_inputs, get_inputs = load_original_model_and_inputs(ref_arch_src, {})
        with torch.no_grad():
            set_seed(42)
            inputs = process_inputs(get_inputs(), dev, dtype)
            set_seed(42)
            init_inputs = process_inputs(get_init_inputs(), dev, dtype)
            model = Model(*init_inputs).to(dev, dtype=dtype)
            if use_torch_compile:
                torch._dynamo.reset()
                model = torch.compile(model, backend=torch_compile_backend, mode=torch_compile_options)
            times = get_timing_function(timing_method)(
                model, inputs, num_warmup=num_warmup, num_trials=num_trials,
                discard_first=discard_first, verbose=verbose, device=dev,
            )
        return get_timing_stats(times, device=dev)
    except Exception as exc:  # upstream contract: None on failure
        if verbose:
            print(f"[measure_ref_program_time] {ref_arch_name}: {type(exc).__name__}: {exc}")
        return None


measure_program_time = measure_ref_program_time


# --------------------------------------------------------------------------- baselines
def _normalise_name(name: str) -> str:
    return name if name.endswith(".py") else f"{name}.py"


def fetch_baseline_time(level_name: str, problem_id: int, dataset: Any, baseline_time_filepath: str | os.PathLike) -> dict | None:
    """Baseline stats for a problem, matching names with or without ``.py``."""
    if not os.path.exists(baseline_time_filepath):
        raise FileNotFoundError(f"Baseline file not found: {baseline_time_filepath}")
    with open(baseline_time_filepath) as fh:
        baselines = json.load(fh)
    problem = dataset.get_problem_by_id(problem_id)
    section = baselines.get(level_name) or {}
    name = _normalise_name(problem.name)
    if name in section:
        return section[name]
    return section.get(name[:-3])
