"""Fitting a baseline file to a run (parent process, or any tool reading results).

The baseline's mean per problem of a level, the problems aligned with it (the fast_p
denominator), and the warnings that a baseline does not fit the run: other hardware,
another problem set or demo scale, another TF32 setting than the records', another
timing method than the hardened records'.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from kernelbench.analysis_parts.inputs import AnalysisError, Warn
from kernelbench.analysis_parts.records import finite_number

def level_baseline_means(baseline: Any, level: int, source: str = "baseline") -> dict[str, float | None]:
    """File name -> baseline ``mean`` (ms) under ``level{L}``; None for unusable entries.

    A JSON ``null`` entry (a failed baseline measurement) or one without a finite
    numeric ``mean`` maps to None and is later treated as missing.
    """
    if not isinstance(baseline, Mapping):
        raise AnalysisError(f"{source}: expected a JSON object with level keys")
    key = f"level{level}"
    section = baseline.get(key)
    if section is None:
        raise AnalysisError(f"{source}: no '{key}' section (found: {', '.join(map(str, baseline)) or 'none'})")
    if not isinstance(section, Mapping):
        raise AnalysisError(f"{source}: '{key}' is not an object")
    means: dict[str, float | None] = {}
    for name, entry in section.items():
        mean = finite_number(entry.get("mean")) if isinstance(entry, Mapping) else None
        means[str(name)] = mean
    return means


def align_with_baseline(
    problem_names: Mapping[int, str], baseline_means: Mapping[str, float | None], warn: Warn | None = None
) -> list[tuple[int, str, float]]:
    """``(pid, name, baseline_mean)`` for each problem with a usable baseline, by pid."""
    aligned: list[tuple[int, str, float]] = []
    for pid in sorted(problem_names):
        name = problem_names[pid]
        if name not in baseline_means:
            if warn:
                warn(f"problem {pid} ({name}) is not in the baseline; skipped")
            continue
        mean = baseline_means[name]
        if mean is None:
            if warn:
                warn(f"problem {pid} ({name}) has a null or non-numeric baseline entry; skipped")
            continue
        aligned.append((pid, name, mean))
    return aligned


def _device_kind(device: Any) -> str | None:
    text = str(device).strip().lower() if isinstance(device, str) else ""
    return text.split(":", 1)[0] or None


def baseline_hardware(baseline: Any, level: int, environment: Mapping | None) -> list[str]:
    """Hardware names the baseline's ``level{L}`` entries were measured on."""
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    names = {str(e["hardware"]) for e in (section or {}).values()
             if isinstance(e, Mapping) and isinstance(e.get("hardware"), str) and e["hardware"]}
    if not names and isinstance(environment, Mapping) and isinstance(environment.get("gpu"), str):
        names = {environment["gpu"]}
    return sorted(names)


def baseline_mismatches(
    baseline: Any,
    level: int,
    records: list[Mapping],
    problem_names: Mapping[int, str],
    baseline_means: Mapping[str, float | None],
    environment: Mapping | None = None,
    dataset_is_demo: bool | None = None,
) -> list[str]:
    """One message per way the baseline does not fit the run (empty when it fits).

    * hardware: the records' ``metadata.hardware`` (or their device kind, ``cuda`` /
      ``cpu``) differs from the baseline entries' (or ``environment.json``'s);
    * problem set: dataset problems the baseline does not list, a demo-set baseline
      (``environment.json`` has ``demo_scale``) used with another dataset, or a demo
      scale other than this process's ``KERNELBENCH_DEMO_SCALE``;
    * precision: TF32 (:func:`tf32_mismatch`).
    """
    out: list[str] = []
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    entries = [e for e in (section or {}).values() if isinstance(e, Mapping)]
    base_hw = set(baseline_hardware(baseline, level, environment))
    base_dev = {k for k in (_device_kind(e.get("device")) for e in entries) if k}
    if not base_dev and isinstance(environment, Mapping):
        base_dev = {k for k in [_device_kind(environment.get("device"))] if k}
    meta = [r.get("metadata") for r in records if isinstance(r, Mapping)]
    meta = [m for m in meta if isinstance(m, Mapping)]
    run_hw = {str(m["hardware"]) for m in meta if isinstance(m.get("hardware"), str) and m["hardware"]}
    run_dev = {k for k in (_device_kind(m.get("device")) for m in meta) if k}
    hw_differs = bool(base_hw and run_hw and not run_hw <= base_hw)
    dev_differs = bool(base_dev and run_dev and not run_dev <= base_dev)
    if hw_differs or dev_differs:
        def side(hw: set[str], dev: set[str]) -> str:
            return ", ".join(sorted(hw) or ["unknown hardware"]) + (f" ({', '.join(sorted(dev))})" if dev else "")

        out.append(f"the baseline was measured on {side(base_hw, base_dev)} but the run's records were evaluated "
                   f"on {side(run_hw, run_dev)}: speedups compare different machines; measure a baseline on "
                   f"this machine with scripts/generate_baseline_time.py")

    absent = [name for name in problem_names.values() if name not in baseline_means]
    if absent:
        out.append(f"{len(absent)} of {len(problem_names)} problems of the level {level} dataset are not in the "
                   f"baseline (for example {absent[0]}): the baseline was measured on another problem set")
    scale = environment.get("demo_scale") if isinstance(environment, Mapping) else None
    if scale is not None:
        if dataset_is_demo is False:
            out.append(f"the baseline was measured on the bundled demo task set (KERNELBENCH_DEMO_SCALE={scale}), "
                       f"but this analysis uses another dataset")
        elif dataset_is_demo:
            here = os.environ.get("KERNELBENCH_DEMO_SCALE", "1")
            if str(scale).strip() != here.strip():
                out.append(f"the baseline was measured on the demo set at KERNELBENCH_DEMO_SCALE={scale}, this "
                           f"process has KERNELBENCH_DEMO_SCALE={here}: problem sizes differ unless the run was "
                           f"evaluated at the baseline's scale")
    tf32 = tf32_mismatch(records, environment)
    if tf32:
        out.append(tf32)
    return out


_TF32_KEYS = (("matmul", "matmul_allow_tf32"), ("cudnn", "cudnn_allow_tf32"))


def record_tf32(record: Mapping) -> dict[str, bool] | None:
    """The TF32 switches a CUDA record's kernels ran under: {"matmul": .., "cudnn": ..}; None if unknown.

    Hardened records carry their configuration's ``allow_tf32`` (applied to both
    switches in both workers); off-mode records the switches as the harness found
    them before the candidate ran (``metadata.tf32``: PyTorch's defaults unless the
    caller changed them, matmul off and cuDNN on).  Older records carry neither.
    """
    meta = record.get("metadata")
    if not isinstance(meta, Mapping) or _device_kind(meta.get("device")) != "cuda":
        return None
    flags = meta.get("tf32")
    if isinstance(flags, Mapping) and all(isinstance(flags.get(k), bool) for k, _ in _TF32_KEYS):
        return {k: flags[k] for k, _ in _TF32_KEYS}
    conf = meta.get("eval_config")
    if isinstance(conf, Mapping) and isinstance(conf.get("allow_tf32"), bool):
        return {k: conf["allow_tf32"] for k, _ in _TF32_KEYS}
    return None


def tf32_mismatch(records: list[Mapping], environment: Mapping | None) -> str | None:
    """The warning that CUDA records ran under other TF32 switches than the baseline was timed with.

    ``generate_baseline_time.py`` times the reference with both switches off (recorded
    in ``environment.json``).  Upstream's harness leaves PyTorch's defaults, under which
    cuDNN convolutions use TF32 on GPUs that have it: an off-mode record of a
    convolution then runs kernels several times faster than the baseline's for the
    same code (strict fp32 against TF32: 3-9x on upstream's level-1 convolutions on an
    H100), and that gain shows as speedup in ``fast_p``.
    """
    if not isinstance(environment, Mapping):
        return None
    base = {k: environment.get(key) for k, key in _TF32_KEYS}
    if not all(isinstance(v, bool) for v in base.values()):
        return None
    runs = [f for f in (record_tf32(r) for r in records if isinstance(r, Mapping)) if f is not None]
    differ = [f for f in runs if f != base]
    if not differ:
        return None

    def state(flags: Mapping) -> str:
        return ", ".join(f"{k} TF32 {'on' if flags[k] else 'off'}" for k, _ in _TF32_KEYS)

    kinds = sorted({state(f) for f in differ})
    return (f"the baseline was timed with {state(base)}, but {len(differ)} of {len(runs)} CUDA records ran with "
            f"{' or '.join(kinds)}: their speedups include TF32's gain where a switch differs (cuDNN "
            f"convolutions, matmuls), not only the kernel's own; off mode keeps PyTorch's defaults as upstream "
            f"does, the hardened modes run both sides with TF32 off unless allow_tf32=true")


def timing_method_mismatch(baseline: Any, level: int, environment: Mapping | None) -> str:
    """The warning that the baseline and the hardened records were timed by different methods.

    ``generate_baseline_time.py`` times with upstream's methods (its ``timing_method``,
    recorded in ``environment.json``), the hardened path with its own timed call:
    the message names the baseline's method.
    """
    section = baseline.get(f"level{level}") if isinstance(baseline, Mapping) else None
    methods = {str(e.get("timing_method")) for e in (section or {}).values()
               if isinstance(e, Mapping) and e.get("timing_method")}
    if isinstance(environment, Mapping) and environment.get("timing_method"):
        methods.add(str(environment["timing_method"]))
    what = ", ".join(sorted(methods)) if methods else "an unrecorded method"
    return (f"the baseline was timed by {what} (scripts/generate_baseline_time.py: the same inputs every call, "
            f"in one process), the hardened records by KernelGuard's timed call (L2 flush and launch hold "
            f"before each call, a fresh input set per call, the candidate in its own worker): the two can differ "
            f"by more than any speedup, so verified speedups against this baseline are not like for like; the "
            f"records' in-run speedup and its bound compare the candidate with the reference timed beside it")
