"""Upstream-compatible static kernel checker, built on the KernelGuard precheck.

``validate_kernel_static(code, backend="cuda", precision="fp16", forbidden=None,
warnings=None) -> (valid, errors, warnings)`` keeps KernelBench's signature, check
names and presets (:data:`STRICT_CHECKS`, :data:`WARNING_CHECKS`,
:data:`BACKEND_IMPL_CHECK`, :data:`PRECISION_DEPENDENT_CHECKS`); ``valid`` is "no
errors".  ``forbidden`` defaults to ``STRICT_CHECKS`` and ``warnings`` to
``WARNING_CHECKS``; the backend's implementation check is always added to the
forbidden set; unknown check names are skipped silently; each failing check
contributes one message that starts with the check name.

The checks are answered from the AST/token analysis of
:mod:`kernelbench.reward_hardening.precheck` instead of regular expressions over the
raw text.

Deviations from upstream (deliberate)
    * **Deterministic order.**  Messages follow the order of ``forbidden`` (then the
      backend check), then ``warnings``; a check named in both lists counts as an error.
    * **code_bypass** is raised for a real PyTorch *fallback* — a ``try``/``except`` (or
      ``contextlib.suppress``) whose handler, or the code after the suppressed block,
      computes with high-level torch ops — and for a ``ModelNew`` that subclasses
      ``Model`` without a forward of its own (``class ModelNew(Model): pass``) or whose
      forward calls ``super().forward``.  A ``try:`` around ``load_inline`` and the word
      "pass" in a docstring ("forward pass") are no longer errors.
    * **timing_event_patch** sees aliased and ``setattr`` writes
      (``ev = torch.cuda.Event; ev.elapsed_time = ...``), not only literal ones.
    * **thread_injection** also covers ``_thread``, ``asyncio``, ``os.fork`` and native
      ``std::thread`` / ``pthread_create`` in embedded C++.
    * **lazy_eval** also covers ``__torch_function__`` / ``__torch_dispatch__`` hooks,
      dispatch modes, ``as_subclass`` and instance method overrides.
    * **pytorch_wrap** resolves aliases (``nn.Linear`` is seen, upstream missed it) but
      ignores a bare ``import torch.nn.functional as F`` that is never used.
    * **torch_computation_ops** reports any high-level ``torch.*`` / ``F.*`` compute call
      (deny by default, allocation and layout helpers allowed) rather than a fixed list.
    * **stream_injection** also reads embedded C++/CUDA (``cudaStreamCreate*``,
      ``cublasSetStream``, ``getStreamFromPool``, graphs) — upstream's own test admits
      it missed these; ``getCurrentCUDAStream`` stays legitimate.
    * **precision_downgrade** (fp32 only) also reports bf16, TF32 switches and Triton's
      default-TF32 ``tl.dot``.
    * **Backend checks** follow upstream's newer semantics: ``cuda_impl`` needs a
      ``__global__`` kernel, a ``load_inline``/``cpp_extension`` compile path and thread
      indexing; ``triton_impl`` needs a ``@triton.jit`` kernel with ``tl.load`` /
      ``tl.store``-style memory operations; ``tk_impl`` needs ThunderKittens tiles and a
      compute op; ``cute_impl`` needs a real ``cute::``/``cutlass::`` use (not just a
      ``using namespace``); ``tilelang_impl`` needs ``@T.prim_func`` and an iteration
      construct (``T.grid``, ``T.Parallel``, ``T.Pipelined``, ...).
    * **Input forms.**  Indented snippets are dedented before parsing; text that is not
      Python but looks like C/C++/CUDA (or is made of C++ statements that happen to
      parse as Python, such as ``NumericConverter<half_t, float> c;``) is analysed as
      one bare C++ source; Python that does not parse yields the error ``syntax_error``
      (fail closed) instead of regex guesses.
    * **code_bypass** also reports a ``ModelNew.forward`` whose body is only ``pass`` /
      ``...`` / a docstring (it computes nothing).
    * **precision_downgrade** messages name the format as upstream does
      (``required FP32 but code uses FP16``; ``BF16``, ``TF32``, ``FP8`` likewise) and
      also cover ``.float16()`` and ThunderKittens' ``tk::half(...)``.

Per-check functions
    ``check_<name>(code) -> (flagged, message)`` (``check_precision_downgrade(code,
    precision="fp32")``) and the :data:`CHECK_FUNCTIONS` registry keep upstream's call
    shapes; each builds the analysis of ``code`` (or takes one already built).  The
    pattern constants (``TRY_EXCEPT_PATTERNS`` ... ``FP32_TO_FP16_PATTERNS``) keep
    upstream's names with this module's own patterns; they answer a direct check call
    only for a fragment that parses as neither Python nor C++ (the *text tier*).

Layout
    This module is the public surface (presets, ``check_<name>``, ``validate_kernel_static``);
    the checks themselves are in :mod:`kernelbench.kernel_static_checks` and the text tier
    with upstream's pattern constants in :mod:`kernelbench.kernel_static_text_tier`.  Runs
    in whichever process calls it.
"""

from __future__ import annotations

from collections.abc import Callable

from kernelbench.kernel_static_checks import IMPLS, Analysis, normalize_precision
from kernelbench.kernel_static_text_tier import (
    CUDA_COMPILE_PATTERNS,
    CUTE_PATTERNS,
    FP32_TO_FP16_PATTERNS,
    HIP_COMPILE_PATTERNS,
    LAZY_TENSOR_PATTERNS,
    PASS_PATTERN,
    PYTORCH_DISALLOWED_NN_PATTERN,
    STREAM_PATTERNS,
    THREAD_PATTERNS,
    TILELANG_PATTERNS,
    TIMING_EVENT_PATCH_PATTERNS,
    TK_TILE_PATTERN,
    TK_WARP_PATTERNS,
    TORCH_COMPUTATION_OPS,
    TORCH_FUNCTIONAL_PATTERNS,
    TRITON_JIT_PATTERN,
    TRITON_OPS_PATTERN,
    TRY_EXCEPT_PATTERNS,
    text_tier,
)

__all__ = ["BACKEND_IMPL_CHECK", "CHECK_FUNCTIONS", "PRECISION_DEPENDENT_CHECKS", "STRICT_CHECKS",
           "WARNING_CHECKS", "validate_kernel_static",
           "check_code_bypass", "check_timing_event_patch", "check_thread_injection", "check_lazy_eval",
           "check_pytorch_wrap", "check_torch_computation_ops", "check_stream_injection",
           "check_precision_downgrade", "check_cuda_impl", "check_hip_impl", "check_triton_impl", "check_tk_impl",
           "check_cute_impl", "check_tilelang_impl",
           "TRY_EXCEPT_PATTERNS", "PASS_PATTERN", "PYTORCH_DISALLOWED_NN_PATTERN", "TORCH_COMPUTATION_OPS",
           "TORCH_FUNCTIONAL_PATTERNS", "CUDA_COMPILE_PATTERNS", "HIP_COMPILE_PATTERNS", "TRITON_JIT_PATTERN",
           "TRITON_OPS_PATTERN", "TK_WARP_PATTERNS", "TK_TILE_PATTERN", "CUTE_PATTERNS", "TILELANG_PATTERNS",
           "STREAM_PATTERNS", "THREAD_PATTERNS", "LAZY_TENSOR_PATTERNS", "TIMING_EVENT_PATCH_PATTERNS",
           "FP32_TO_FP16_PATTERNS"]

STRICT_CHECKS = ["code_bypass", "timing_event_patch", "thread_injection", "lazy_eval"]
WARNING_CHECKS = ["pytorch_wrap", "torch_computation_ops", "stream_injection", "precision_downgrade"]
BACKEND_IMPL_CHECK = {
    "cuda": "cuda_impl",
    "hip": "hip_impl",
    "triton": "triton_impl",
    "thunderkittens": "tk_impl",
    "cute": "cute_impl",
    "cutlass": "cute_impl",
    "tilelang": "tilelang_impl",
}
PRECISION_DEPENDENT_CHECKS = {"precision_downgrade"}


def _as_analysis(code: str | Analysis, backend: str = "cuda", precision: str = "fp32") -> Analysis:
    if isinstance(code, Analysis):
        return code
    return Analysis(code if isinstance(code, str) else str(code), backend, normalize_precision(precision))


def _run_check(name: str, code: str | Analysis, precision: str = "fp32") -> tuple[bool, str]:
    if isinstance(code, str) and not code.strip():
        return False, ""
    a = _as_analysis(code, precision=precision)
    if a.syntax_error:
        return text_tier(name, a.code)
    return IMPLS[name](a)


def check_code_bypass(code: str) -> tuple[bool, str]:
    """Try/except PyTorch fallbacks and ``ModelNew`` forwards that skip the work (strict)."""
    return _run_check("code_bypass", code)


def check_timing_event_patch(code: str) -> tuple[bool, str]:
    """Reassignment of timing functions (``torch.cuda.Event.elapsed_time = ...``) (strict)."""
    return _run_check("timing_event_patch", code)


def check_thread_injection(code: str) -> tuple[bool, str]:
    """Threads or processes that can run work outside the timed call (strict)."""
    return _run_check("thread_injection", code)


def check_lazy_eval(code: str) -> tuple[bool, str]:
    """Tensor subclasses and dispatch hooks that defer or fake the computation (strict)."""
    return _run_check("lazy_eval", code)


def check_pytorch_wrap(code: str) -> tuple[bool, str]:
    """Use of ``torch.nn`` modules / functional instead of a custom kernel (warning)."""
    return _run_check("pytorch_wrap", code)


def check_torch_computation_ops(code: str) -> tuple[bool, str]:
    """High-level torch compute ops in the candidate (warning)."""
    return _run_check("torch_computation_ops", code)


def check_stream_injection(code: str) -> tuple[bool, str]:
    """Non-default CUDA streams or graphs, in Python or embedded C++ (warning)."""
    return _run_check("stream_injection", code)


def check_precision_downgrade(code: str, precision: str = "fp32") -> tuple[bool, str]:
    """Reduced-precision computation in an FP32 problem; a no-op for any other precision."""
    if normalize_precision(precision) != "fp32":
        return False, ""
    return _run_check("precision_downgrade", code, precision="fp32")


def check_cuda_impl(code: str) -> tuple[bool, str]:
    """The candidate has a real CUDA kernel (``__global__``, a compile path, thread indexing)."""
    return _run_check("cuda_impl", code)


def check_hip_impl(code: str) -> tuple[bool, str]:
    """As :func:`check_cuda_impl`, plus HIP toolchain use."""
    return _run_check("hip_impl", code)


def check_triton_impl(code: str) -> tuple[bool, str]:
    """The candidate has a ``@triton.jit`` kernel with memory operations."""
    return _run_check("triton_impl", code)


def check_tk_impl(code: str) -> tuple[bool, str]:
    """The candidate uses ThunderKittens tiles and a tile compute operation."""
    return _run_check("tk_impl", code)


def check_cute_impl(code: str) -> tuple[bool, str]:
    """The candidate really uses CuTe / CUTLASS."""
    return _run_check("cute_impl", code)


def check_tilelang_impl(code: str) -> tuple[bool, str]:
    """The candidate has an ``@T.prim_func`` kernel with an iteration construct."""
    return _run_check("tilelang_impl", code)


#: Upstream's registry: name -> ``check(code)`` (``check(code, precision)`` for the
#: names in :data:`PRECISION_DEPENDENT_CHECKS`).
CHECK_FUNCTIONS: dict[str, Callable[..., tuple[bool, str]]] = {
    "code_bypass": check_code_bypass,
    "timing_event_patch": check_timing_event_patch,
    "thread_injection": check_thread_injection,
    "lazy_eval": check_lazy_eval,
    "pytorch_wrap": check_pytorch_wrap,
    "torch_computation_ops": check_torch_computation_ops,
    "stream_injection": check_stream_injection,
    "precision_downgrade": check_precision_downgrade,
    "cuda_impl": check_cuda_impl,
    "hip_impl": check_hip_impl,
    "triton_impl": check_triton_impl,
    "tk_impl": check_tk_impl,
    "cute_impl": check_cute_impl,
    "tilelang_impl": check_tilelang_impl,
}


def validate_kernel_static(code: str, backend: str = "cuda", precision: str = "fp16",
                           forbidden: list[str] | None = None,
                           warnings: list[str] | None = None) -> tuple[bool, list[str], list[str]]:
    """Static checks of a kernel source; returns ``(valid, errors, warnings)``."""
    backend = (backend or "cuda").lower()
    prec = normalize_precision(precision)
    forbidden_list = list(STRICT_CHECKS if forbidden is None else forbidden)
    warning_list = list(WARNING_CHECKS if warnings is None else warnings)
    impl = BACKEND_IMPL_CHECK.get(backend)
    if impl and impl not in forbidden_list:
        forbidden_list.append(impl)
    analysis = Analysis(code if isinstance(code, str) else str(code), backend, prec)
    errors: list[str] = []
    warns: list[str] = []
    if analysis.syntax_error:
        errors.append(f"syntax_error: the source does not parse ({analysis.syntax_error}); static checks could not run")
        return False, errors, warns
    done: set[str] = set()
    for bucket, names in ((errors, forbidden_list), (warns, warning_list)):
        for name in names:
            if name in done or name not in IMPLS:
                continue
            done.add(name)
            try:
                bad, msg = IMPLS[name](analysis)
            except Exception as e:  # noqa: BLE001 - report, never crash
                bad, msg = True, f"{name}: internal checker error ({type(e).__name__}: {e})"
            if bad:
                bucket.append(msg)
    return not errors, errors, warns
