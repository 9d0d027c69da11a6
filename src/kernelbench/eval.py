"""The original (``reward_hardening_mode=off``) evaluator, upstream-compatible.

``eval_kernel_against_ref`` keeps KernelBench's signature, ``KernelExecResult``
fields, units (milliseconds), seeding (seed 42, trial seeds drawn with
``torch.randint`` after ``manual_seed(seed)``, weights seeded before each model is
built) and tolerances.  Plain bugs of upstream are fixed (see ``docs/compatibility.md``):

* the candidate is loaded into its **own module namespace** (a real module backed by
  a file), so it cannot read or rebind the reference's globals such as the size
  constants ``get_inputs`` reads;
* only floating-point tensors are cast to the evaluation precision (int/bool inputs
  keep their dtype);
* errors never return ``None``: every path returns a ``KernelExecResult`` (or the
  loader raises a clear exception);
* ``device`` is resolved when called (``"cpu"`` accepted), not at import time;
* timing and the excessive-speedup check run under ``torch.no_grad()`` and the latter
  only for correct kernels.

Loading, seeding and input preparation live in :mod:`kernelbench.loading` and the
device helpers in :mod:`kernelbench.devices` (both below the timing methods, which use
them too); this module re-exports them under their upstream path.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from typing import Any, Callable

import torch
from pydantic import BaseModel, ConfigDict, Field

from kernelbench import timing
from kernelbench.devices import resolve_device, synchronize

# loading, seeding and input preparation live in kernelbench.loading (the timing methods
# and the profiler use them too); this upstream path re-exports them
from kernelbench.loading import (  # noqa: F401 - re-exported
    ReferenceLoadError,
    _process_input_tensor,
    get_tolerance_for_precision,
    get_torch_dtype_from_string,
    load_custom_model,
    load_custom_model_with_tempfile,
    load_original_model_and_inputs,
    process_inputs,
    set_seed,
)

__all__ = [
    "KernelExecResult",
    "KERNEL_BENCH_PATH",
    "REPO_TOP_PATH",
    "build_compile_cache",
    "build_compile_cache_legacy",
    "build_compile_cache_with_capturing",
    "check_metadata_serializable",
    "check_metadata_serializable_all_types",
    "eval_kernel_against_ref",
    "fetch_ref_arch_from_level_problem_id",
    "fetch_ref_arch_from_problem_id",
    "get_error_name",
    "get_tolerance_for_precision",
    "get_torch_dtype_from_string",
    "graceful_eval_cleanup",
    "load_custom_model",
    "load_custom_model_with_tempfile",
    "load_original_model_and_inputs",
    "process_inputs",
    "register_and_format_exception",
    "run_and_check_correctness",
    "set_seed",
]


class KernelExecResult(BaseModel):
    """Result of one candidate evaluation.  Times are in milliseconds."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    compiled: bool = False
    correctness: bool = False
    metadata: dict = Field(default_factory=dict)
    runtime: float = -1.0
    runtime_stats: dict = Field(default_factory=dict)
    ref_runtime: float = -1.0
    ref_runtime_stats: dict = Field(default_factory=dict)


# --------------------------------------------------------------------------- helpers
def get_error_name(e: BaseException) -> str:
    return f"{type(e).__module__}.{type(e).__name__}"


def register_and_format_exception(exception_type: str, exception_msg: Any, metadata: dict,
                                  verbose: bool = False, truncate: bool = False, max_length: int = 200) -> dict:
    text = str(exception_msg)
    if truncate and len(text) > max_length:
        text = text[: max_length - 3] + "..."
    metadata[exception_type] = text
    if verbose:
        print(f"[eval] {exception_type}: {text}")
    return metadata


def check_metadata_serializable_all_types(metadata: Any) -> Any:
    """Recursively convert anything that is not JSON-serialisable to ``str``."""
    if isinstance(metadata, dict):
        return {str(k): check_metadata_serializable_all_types(v) for k, v in metadata.items()}
    if isinstance(metadata, (list, tuple)):
        return [check_metadata_serializable_all_types(v) for v in metadata]
    if metadata is None or isinstance(metadata, (bool, int, float, str)):
        return metadata
    return str(metadata)


# --------------------------------------------------------------------------- cleanup and builds
def graceful_eval_cleanup(curr_context: dict | None, device: Any, tempfile: Any = None, *,
                          tempfile_handle: Any = None) -> None:
    """Release GPU memory and remove a tempfile from :func:`load_custom_model_with_tempfile`.

    ``tempfile`` is upstream's keyword; ``tempfile_handle`` is accepted as an alias.
    """
    tempfile_handle = tempfile if tempfile is not None else tempfile_handle
    if curr_context is not None:
        curr_context.clear()
    try:
        dev = resolve_device(device)
        if dev.type == "cuda":
            with torch.cuda.device(dev):
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(dev)
                torch.cuda.synchronize(dev)
    except Exception:
        pass
    if tempfile_handle is not None:
        try:
            tempfile_handle.close()
            os.remove(tempfile_handle.name)
        except OSError:
            pass


def build_compile_cache(custom_model_src: str, verbose: bool = False, build_dir: str | None = None):
    """Import the candidate once so module-level builds land in ``build_dir``.

    Returns ``(ok, stdout, error)`` like upstream.
    """
    import contextlib
    import io

    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            load_custom_model(custom_model_src, {}, build_dir)
        return True, buf.getvalue(), None
    except Exception as exc:
        return False, buf.getvalue(), f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------- fetch
def fetch_ref_arch_from_problem_id(problem_id: int, dataset: Any, with_name: bool = False):
    problem = dataset.get_problem_by_id(problem_id)
    if with_name:
        return (problem.path or problem.name), problem.code
    return problem.code


def fetch_ref_arch_from_level_problem_id(level: int, problem_id: int, with_name: bool = False, dataset_path: Any = None):
    from kernelbench.dataset import construct_kernelbench_dataset

    dataset = construct_kernelbench_dataset(level, source="local", base_path=dataset_path)
    return fetch_ref_arch_from_problem_id(problem_id, dataset, with_name)


# --------------------------------------------------------------------------- correctness
def _as_tensor_list(output: Any) -> list:
    if isinstance(output, (list, tuple)):
        return list(output)
    return [output]


def _compare_outputs(ref_out: Any, new_out: Any, tol: float, metadata: dict) -> bool:
    refs, news = _as_tensor_list(ref_out), _as_tensor_list(new_out)
    if len(refs) != len(news):
        metadata["correctness_issue"] = f"Output count mismatch: Expected {len(refs)}, got {len(news)}"
        metadata["correctness_issue_name"] = "correctness_issue"
        return False
    ok = True
    max_diffs, avg_diffs = [], []
    for r, n in zip(refs, news):
        if not isinstance(n, torch.Tensor):
            metadata["correctness_issue"] = f"Output is not a tensor: {type(n).__name__}"
            metadata["correctness_issue_name"] = "correctness_issue"
            return False
        if r.shape != n.shape:
            metadata["correctness_issue"] = f"Output shape mismatch: Expected {tuple(r.shape)}, got {tuple(n.shape)}"
            metadata["correctness_issue_name"] = "correctness_issue"
            return False
        n_cmp = n.to(device=r.device, dtype=r.dtype) if (n.dtype != r.dtype or n.device != r.device) else n
        if not torch.allclose(r, n_cmp, atol=tol, rtol=tol):
            diff = (r.double() - n_cmp.double()).abs()
            max_diffs.append(f"{diff.max().item():.6f}")
            avg_diffs.append(f"{diff.mean().item():.6f}")
            ok = False
    if not ok:
        metadata.setdefault("max_difference", []).extend(max_diffs)
        metadata.setdefault("avg_difference", []).extend(avg_diffs)
        metadata["correctness_issue"] = "Output mismatch"
    return ok


def run_and_check_correctness(
    original_model_instance: torch.nn.Module,
    new_model_instance: torch.nn.Module,
    get_inputs_fn: Callable[[], list],
    metadata: dict,
    num_correct_trials: int,
    verbose: bool = False,
    seed: int = 42,
    device: Any = None,
    backend: str = "cuda",
    precision: torch.dtype = torch.float32,
) -> KernelExecResult:
    dev = resolve_device(device)
    dtype = get_torch_dtype_from_string(precision)
    tol = get_tolerance_for_precision(dtype)
    pass_count = 0
    torch.manual_seed(seed)
    trial_seeds = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(num_correct_trials)]
    with torch.no_grad():
        for trial, trial_seed in enumerate(trial_seeds):
            try:
                set_seed(trial_seed)
                inputs = process_inputs(get_inputs_fn(), dev, dtype, backend)
                set_seed(trial_seed)
                model = original_model_instance.to(dev, dtype=dtype)
                set_seed(trial_seed)
                model_new = new_model_instance.to(dev, dtype=dtype)
                output = model(*inputs)
                synchronize(dev)
                output_new = model_new(*inputs)
                synchronize(dev)
                if _compare_outputs(output, output_new, tol, metadata):
                    pass_count += 1
                elif "Output mismatch" != metadata.get("correctness_issue"):
                    return KernelExecResult(compiled=True, correctness=False, metadata=metadata)
                if verbose:
                    print(f"[eval] trial {trial}: {'pass' if pass_count == trial + 1 else 'FAIL'}")
            except Exception as exc:
                register_and_format_exception("runtime_error", exc, metadata, verbose, truncate=True)
                metadata["runtime_error_name"] = get_error_name(exc)
                metadata["runtime_error_traceback"] = traceback.format_exc()
                return KernelExecResult(compiled=True, correctness=False, metadata=metadata)
    metadata["correctness_trials"] = f"({pass_count} / {num_correct_trials})"
    return KernelExecResult(compiled=True, correctness=pass_count == num_correct_trials, metadata=metadata)


# --------------------------------------------------------------------------- main entry
def eval_kernel_against_ref(
    original_model_src: str,
    custom_model_src: str,
    seed_num: int = 42,
    num_correct_trials: int = 1,
    num_perf_trials: int = 10,
    measure_performance: bool = False,
    timing_method: str = "cuda_event",
    verbose: bool = False,
    build_dir: os.PathLike | str | None = None,
    device: Any = None,
    backend: str = "cuda",
    precision: torch.dtype | str = torch.float32,
    check_for_excessive_speedup: bool = True,
    excessive_speedup_threshold: float = 10,
) -> KernelExecResult:
    """Evaluate a ``ModelNew`` candidate against the reference ``Model``.

    Always returns a :class:`KernelExecResult` (never ``None``).
    """
    dev = resolve_device(device)
    dtype = get_torch_dtype_from_string(precision)
    metadata: dict[str, Any] = {"hardware": timing.device_name(dev), "device": str(dev)}
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
        # as found before any candidate code ran (the analysis compares them with the baseline's)
        metadata["tf32"] = {"matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                            "cudnn": bool(torch.backends.cudnn.allow_tf32)}
    if dev.type == "cpu" and timing_method != "host_time":
        metadata["timing_method_used"] = "host_time"
        timing_method = "host_time"

    # 1. reference
    try:
        Model, get_init_inputs, get_inputs = load_original_model_and_inputs(original_model_src)
        set_seed(seed_num)
        init_inputs = process_inputs(get_init_inputs(), dev, dtype, backend)
        with torch.no_grad():
            set_seed(seed_num)
            original_model = Model(*init_inputs)
    except Exception as exc:
        metadata["reference_error"] = f"{type(exc).__name__}: {exc}"
        metadata["reference_error_name"] = get_error_name(exc)
        return KernelExecResult(compiled=False, correctness=False, metadata=metadata)

    # 2. candidate build/load (own namespace); lock races are retried, not returned as None
    build_dir = str(build_dir) if build_dir else None
    ModelNew = None
    for attempt in range(3):
        try:
            ModelNew = load_custom_model(custom_model_src, None, build_dir)
            synchronize(dev)
            break
        except Exception as exc:
            text = str(exc)
            if attempt < 2 and ("lock" in text or "No such file or directory" in text):
                continue
            metadata["compilation_error_name"] = get_error_name(exc)
            metadata["compilation_error"] = text
            if verbose:
                traceback.print_exc()
            return KernelExecResult(compiled=False, correctness=False, metadata=metadata)
    if ModelNew is None:
        metadata["compilation_error_name"] = "SyntaxError"
        metadata["compilation_error"] = "ModelNew is not defined in the candidate source"
        return KernelExecResult(compiled=False, correctness=False, metadata=metadata)

    # 3. instantiate
    try:
        with torch.no_grad():
            set_seed(seed_num)
            custom_model = ModelNew(*init_inputs)
            original_model = original_model.to(dev, dtype=dtype)
            custom_model = custom_model.to(dev, dtype=dtype)
        synchronize(dev)
    except Exception as exc:
        register_and_format_exception("runtime_error", exc, metadata, verbose)
        metadata["runtime_error_name"] = get_error_name(exc)
        return KernelExecResult(compiled=True, correctness=False, metadata=metadata)

    # 4. correctness
    try:
        result = run_and_check_correctness(
            original_model, custom_model, get_inputs, metadata, num_correct_trials,
            verbose, seed_num, dev, backend, dtype,
        )
    except Exception as exc:
        register_and_format_exception("runtime_error", exc, metadata, verbose)
        metadata["runtime_error_name"] = get_error_name(exc)
        return KernelExecResult(compiled=True, correctness=False, metadata=metadata)

    # 5. performance
    def time_model(model: torch.nn.Module, log: bool) -> dict:
        synchronize(dev)
        with torch.no_grad():
            set_seed(seed_num)
            inputs = process_inputs(get_inputs(), dev, dtype, backend)
            times = timing.get_timing_function(timing_method)(
                model, inputs, num_trials=num_perf_trials, verbose=log, device=dev,
            )
        return timing.get_timing_stats(times, device=dev)

    if measure_performance and result.correctness:
        try:
            stats = time_model(custom_model, verbose)
            result.runtime = stats["mean"]
            result.runtime_stats = stats
        except Exception as exc:
            metadata["error_during_performance"] = f"{type(exc).__name__}: {exc}"

        # 6. excessive-speedup flag (correct kernels only, exception-safe)
        if check_for_excessive_speedup and result.runtime > 0:
            try:
                ref_stats = time_model(original_model, False)
                result.ref_runtime = ref_stats["mean"]
                result.ref_runtime_stats = ref_stats
                if result.ref_runtime > 0 and result.ref_runtime / result.runtime > excessive_speedup_threshold:
                    metadata["excessive_speedup"] = True
                    if verbose:
                        print(f"[eval] excessive speedup {result.ref_runtime / result.runtime:.1f}x")
            except Exception as exc:
                metadata["error_during_reference_timing"] = f"{type(exc).__name__}: {exc}"

    result.metadata = metadata
    graceful_eval_cleanup(None, dev)
    return result


# --------------------------------------------------------------------------- upstream extras
#: Repository root and upstream's default dataset location (same values as ``kernelbench.dataset``).
REPO_TOP_PATH: str = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KERNEL_BENCH_PATH: str = os.path.join(REPO_TOP_PATH, "KernelBench")


def build_compile_cache_legacy(custom_model_src: str, verbose: bool = False, build_dir: str | None = None):
    """Upstream's older name for :func:`build_compile_cache` (same behaviour)."""
    return build_compile_cache(custom_model_src, verbose=verbose, build_dir=build_dir)


def build_compile_cache_with_capturing(custom_model_src: str, verbose: bool = False,
                                       build_dir: str | None = None, timeout: float | None = 900.0):
    """Import the candidate in a fresh Python subprocess; returns ``(returncode, stdout, stderr)``.

    Compiler output (nvcc errors) is captured even when it is written by child processes
    that bypass Python's streams.  ``build_dir`` becomes ``TORCH_EXTENSIONS_DIR``; a run
    longer than ``timeout`` seconds is killed and reported with return code -9.
    """
    import subprocess

    env = dict(os.environ)
    if build_dir:
        os.makedirs(build_dir, exist_ok=True)
        env["TORCH_EXTENSIONS_DIR"] = build_dir
    with tempfile.TemporaryDirectory(prefix="kb_build_") as tmp:
        path = os.path.join(tmp, "candidate.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(custom_model_src)
        try:
            proc = subprocess.run([sys.executable, path], cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            return -9, out, err + f"\n[build timed out after {timeout} s]"
    if verbose:
        print(proc.stdout, proc.stderr, sep="\n")
    return proc.returncode, proc.stdout, proc.stderr


def check_metadata_serializable(metadata: dict) -> dict:
    """Upstream's legacy serialiser; here the same as :func:`check_metadata_serializable_all_types`."""
    return check_metadata_serializable_all_types(metadata)
