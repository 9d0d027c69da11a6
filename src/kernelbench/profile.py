"""Nsight Compute profiling through nsight-python (upstream-compatible, experimental).

Upstream KernelBench ships this module for hardware-counter metrics of a kernel
(``gpu__time_duration.sum``, ``sm__cycles_active.avg`` ...).  Same names and call
shapes here:

* :data:`NSIGHT_AVAILABLE` - whether the ``nsight`` package (nsight-python) can be
  imported; decided without importing it, so this module is cheap to import;
* :func:`check_ncu_available` - whether the ``ncu`` command is on ``PATH``;
* :func:`profile_with_nsight(func, metrics=None, num_trials=1)` - metric name -> value
  (``None`` for a metric that could not be collected) for a no-argument callable;
* :func:`profile_kernelbench_model_with_nsight(...)` - the same for a ``ModelNew``
  source, with the reference's inputs.

Neither nsight-python nor ``ncu`` is a dependency of this project: the functions raise
``RuntimeError`` naming what is missing.  Profiling is a diagnostic and is never part
of a verdict (the evaluator's timing does not depend on it).
"""

from __future__ import annotations

import importlib.util
from shutil import which
from typing import Any, Callable, Iterable

__all__ = ["NSIGHT_AVAILABLE", "check_ncu_available", "profile_kernelbench_model_with_nsight",
           "profile_with_nsight"]

NSIGHT_AVAILABLE: bool = importlib.util.find_spec("nsight") is not None
_DEFAULT_METRICS = ("sm__cycles_active.avg",)


def check_ncu_available() -> bool:
    """Whether NVIDIA Nsight Compute's command-line tool ``ncu`` is on ``PATH``."""
    return which("ncu") is not None


def _metric_list(metrics: str | Iterable[str] | None) -> list[str]:
    if metrics is None:
        return list(_DEFAULT_METRICS)
    if isinstance(metrics, str):
        return [metrics]
    return list(metrics)


def _require_nsight() -> Any:
    if not NSIGHT_AVAILABLE:
        raise RuntimeError("nsight-python is not installed (pip install nsight-python); "
                           "it also needs NVIDIA Nsight Compute (ncu) on PATH")
    from kernelbench.gpu_arch import get_gpu_vendor

    if get_gpu_vendor() != "nvidia":
        raise RuntimeError("Nsight Compute profiling needs an NVIDIA GPU")
    import nsight

    return nsight


def _sum_metrics(a: Any, b: Any) -> float:
    """Several kernels launched by one call: their metric values add up."""
    return (0.0 if a is None else a) + (0.0 if b is None else b)


def profile_with_nsight(func: Callable[[], Any], metrics: str | Iterable[str] | None = None,
                        num_trials: int = 1) -> dict[str, float | None]:
    """Run ``func()`` under Nsight Compute ``num_trials`` times; metric name -> averaged value.

    Defaults to ``sm__cycles_active.avg``.  Kernels launched by one call are summed.
    A metric the profiler did not report is ``None``.
    """
    nsight = _require_nsight()
    names = _metric_list(metrics)

    @nsight.analyze.kernel(metrics=names, runs=int(num_trials), configs=[(0,)], combine_kernel_metrics=_sum_metrics)
    def _profiled(_unused):
        with nsight.annotate("kernelbench"):
            return func()

    try:
        result = _profiled()
        frame = result.to_dataframe() if result is not None else None
    except Exception as exc:  # noqa: BLE001 - a profiler failure is reported as "not collected"
        print(f"[profile_with_nsight] profiling failed: {type(exc).__name__}: {exc}")
        return {m: None for m in names}
    if frame is None or len(frame) == 0:
        return {m: None for m in names}
    cols = {c.lower(): c for c in frame.columns}
    metric_col = cols.get("metric")
    value_col = next((c for c in frame.columns if "value" in c.lower()), None)
    if metric_col is None or value_col is None:
        return {m: None for m in names}
    found = {str(row[metric_col]): float(row[value_col]) for _, row in frame.iterrows()}
    return {m: found.get(m) for m in names}


def profile_kernelbench_model_with_nsight(
    custom_model_src: str,
    ref_model_src: str | None = None,
    metrics: str | Iterable[str] | None = None,
    num_trials: int = 1,
    seed: int = 42,
    device: Any = None,
    backend: str = "cuda",
    precision: Any = None,
    build_dir: str | None = None,
    verbose: bool = False,
) -> dict[str, float | None]:
    """Profile ``ModelNew.forward`` of ``custom_model_src`` on the reference's inputs.

    Inputs and constructor arguments come from ``ref_model_src`` (or from the candidate
    source when no reference is given), seeded with ``seed`` as the evaluator does.  No
    correctness check is made: evaluate first.
    """
    import torch

    from kernelbench.loading import (
        TEMPFILE_BACKENDS,
        get_torch_dtype_from_string,
        load_custom_model,
        load_custom_model_with_tempfile,
        load_original_model_and_inputs,
        process_inputs,
        set_seed,
    )

    _require_nsight()
    dev = torch.device(device) if device is not None else torch.device("cuda:0")
    dtype = precision if isinstance(precision, torch.dtype) else get_torch_dtype_from_string(precision or "fp32")
    _, get_init_inputs, get_inputs = load_original_model_and_inputs(ref_model_src or custom_model_src, {})
    tmp = None
    if backend in TEMPFILE_BACKENDS:
        model_new, tmp = load_custom_model_with_tempfile(custom_model_src)
    else:
        model_new = load_custom_model(custom_model_src, {}, build_dir)
    try:
        if model_new is None:
            raise RuntimeError("the candidate source defines no ModelNew")
        with torch.no_grad():
            set_seed(seed)
            init_inputs = process_inputs(get_init_inputs(), dev, dtype)
            set_seed(seed)
            inputs = process_inputs(get_inputs(), dev, dtype)
            set_seed(seed)
            model = model_new(*init_inputs).to(dev, dtype=dtype)
            torch.cuda.synchronize(dev)
            if verbose:
                print(f"[profile] {type(model).__name__} on {dev}, metrics={_metric_list(metrics)}")
            return profile_with_nsight(lambda: model(*inputs), metrics=metrics, num_trials=num_trials)
    finally:
        if tmp is not None:
            import os

            try:
                os.remove(tmp.name)
            except OSError:
                pass
