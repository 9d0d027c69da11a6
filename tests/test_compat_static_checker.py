"""Upstream-compatible surface of ``kernelbench.kernel_static_checker``.

Upstream KernelBench documents ``check_<name>(code) -> (flagged, message)`` functions
(``check_precision_downgrade(code, precision="fp32")``), a ``CHECK_FUNCTIONS`` registry
callable the same way, module-level pattern constants, and precision messages that
name the format in capitals (``FP16``).  These tests use snippets of our own.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from kernelbench import kernel_static_checker as ksc
from kernelbench.kernel_static_checker import (
    CHECK_FUNCTIONS,
    PRECISION_DEPENDENT_CHECKS,
    check_code_bypass,
    check_cuda_impl,
    check_lazy_eval,
    check_precision_downgrade,
    check_stream_injection,
    check_thread_injection,
    check_timing_event_patch,
    check_triton_impl,
    validate_kernel_static,
)

UPSTREAM_CHECKS = ["code_bypass", "timing_event_patch", "thread_injection", "lazy_eval", "pytorch_wrap",
                   "torch_computation_ops", "stream_injection", "precision_downgrade", "cuda_impl", "hip_impl",
                   "triton_impl", "tk_impl", "cute_impl", "tilelang_impl"]
UPSTREAM_CONSTANTS = ["TRY_EXCEPT_PATTERNS", "PASS_PATTERN", "PYTORCH_DISALLOWED_NN_PATTERN",
                      "TORCH_COMPUTATION_OPS", "TORCH_FUNCTIONAL_PATTERNS", "CUDA_COMPILE_PATTERNS",
                      "HIP_COMPILE_PATTERNS", "TRITON_JIT_PATTERN", "TRITON_OPS_PATTERN", "TK_WARP_PATTERNS",
                      "TK_TILE_PATTERN", "CUTE_PATTERNS", "TILELANG_PATTERNS", "STREAM_PATTERNS", "THREAD_PATTERNS",
                      "LAZY_TENSOR_PATTERNS", "TIMING_EVENT_PATCH_PATTERNS", "FP32_TO_FP16_PATTERNS"]


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# --------------------------------------------------------------------------- shape of the API


@pytest.mark.parametrize("name", UPSTREAM_CHECKS)
def test_each_check_is_a_public_function_of_source_text(name):
    fn = getattr(ksc, f"check_{name}")
    assert CHECK_FUNCTIONS[name] is fn
    args = ("x = 1\n", "fp32") if name in PRECISION_DEPENDENT_CHECKS else ("x = 1\n",)
    flagged, message = fn(*args)
    assert isinstance(flagged, bool) and isinstance(message, str)
    assert (message == "") is (not flagged)


@pytest.mark.parametrize("name", UPSTREAM_CONSTANTS)
def test_pattern_constants_exist_and_compile(name):
    value = getattr(ksc, name)
    patterns = [value] if isinstance(value, str) else list(value)
    assert patterns
    for p in patterns:
        re.compile(p)


def test_empty_and_blank_sources_are_never_flagged():
    for name, fn in CHECK_FUNCTIONS.items():
        for code in ("", "  \n\t\n"):
            args = (code, "fp32") if name in PRECISION_DEPENDENT_CHECKS else (code,)
            assert fn(*args) == (False, "")


# --------------------------------------------------------------------------- precision


@pytest.mark.parametrize("snippet", [
    "y = t.half()\n",
    "y = t.float16()\n",
    "y = t.to(torch.float16)\n",
    "y = t.to(dtype=torch.half)\n",
    "    def forward(self, x):\n        return x.half() + 1\n",
    "__half v = __float2half_rn(f);\n",
    "__half v = (__half)f;\n",
    "auto v = static_cast<__half>(f);\n",
    "cutlass::NumericConverter<cutlass::half_t, float> to_half;\n",
    "    LinearCombination<half_t, 4> op;\n",
    "auto v = type_convert<half_t>(f);\n",
    "auto v = kittens::half(f);\n",
    "@triton.jit\ndef k(X):\n    v = tl.load(X)\n    v = v.to(tl.float16)\n",
])
def test_fp16_downgrades_are_reported_in_upstream_spelling(snippet):
    flagged, message = check_precision_downgrade(snippet, precision="fp32")
    assert flagged, snippet
    assert "FP16" in message


def test_bf16_and_tf32_are_named_as_such():
    flagged, message = check_precision_downgrade("y = t.to(torch.bfloat16)\n", "fp32")
    assert flagged and "BF16" in message
    flagged, message = check_precision_downgrade("torch.backends.cuda.matmul.allow_tf32 = True\n", "fp32")
    assert flagged and "TF32" in message


@pytest.mark.parametrize("precision", ["FP32", "Fp32", "float32", "fp32"])
def test_precision_argument_is_normalised(precision):
    assert check_precision_downgrade("y = t.half()\n", precision=precision)[0]


@pytest.mark.parametrize("precision", ["fp16", "bf16", "int8", "whatever"])
def test_precision_check_only_runs_for_fp32(precision):
    assert check_precision_downgrade("y = t.half()\n", precision=precision) == (False, "")


@pytest.mark.parametrize("snippet", [
    "# do not call .half() here\ny = t * 2.0\n",
    "msg = 'torch.float16 is forbidden'\n",
    "def half_of(t):\n    return t * 0.5\n",
    "y = t.float()\n",
])
def test_precision_negatives(snippet):
    assert check_precision_downgrade(snippet, "fp32") == (False, "")


def test_validate_reports_precision_in_bare_cxx_snippets_instead_of_syntax_error():
    for snippet in ("__half v = (__half)f;\n", "NumericConverter<half_t, float> c;\n",
                    "using namespace kittens;\nauto v = kittens::half(f);\n"):
        valid, errors, warnings = validate_kernel_static(snippet, precision="fp32", forbidden=[],
                                                         warnings=["precision_downgrade"])
        assert not any(e.startswith("syntax_error") for e in errors), (snippet, errors)
        assert any(w.startswith("precision_downgrade") and "FP16" in w for w in warnings), (snippet, warnings)


def test_broken_python_still_fails_closed_in_validate():
    valid, errors, _ = validate_kernel_static("import torch\nclass ModelNew(:\n    pass\n")
    assert not valid and errors[0].startswith("syntax_error")


# --------------------------------------------------------------------------- bypass and friends


def test_forward_that_is_only_pass_is_a_bypass():
    code = _src("""
        import torch
        class ModelNew(Model):
            def forward(self, x):
                pass
    """)
    flagged, message = check_code_bypass(code)
    assert flagged and "pass" in message.lower()
    valid, errors, _ = validate_kernel_static(code)
    assert not valid and any(e.startswith("code_bypass") and "pass" in e for e in errors)
    # same for a standalone ModelNew with a docstring-and-ellipsis forward
    stub = "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        '''TODO'''\n        ...\n"
    assert check_code_bypass(stub)[0]


def test_forward_with_work_and_an_empty_init_are_not_a_bypass():
    code = _src("""
        import torch
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                pass
            def forward(self, x):
                '''The forward pass.'''
                return kernel(x)
    """)
    assert check_code_bypass(code) == (False, "")


def test_try_except_fallback_message_names_try_except():
    code = "try:\n    y = my_kernel(x)\nexcept Exception:\n    y = torch.matmul(x, w)\n"
    flagged, message = check_code_bypass(code)
    assert flagged and "try-except" in message.lower()


def test_other_checks_take_source_text():
    assert check_timing_event_patch("import torch\ntorch.cuda.Event.elapsed_time = lambda s, e: 0.0\n")[0]
    assert check_thread_injection("import threading\n")[0]
    assert check_lazy_eval("import torch\nt = torch.Tensor._make_subclass(Fake, base)\n")[0]
    assert check_stream_injection("import torch\ns = torch.cuda.Stream()\n")[0]
    assert check_cuda_impl("import torch\nx = 1\n")[0]
    assert check_triton_impl("import torch\nx = 1\n")[0]


def test_registry_is_callable_the_upstream_way():
    code = "y = t.half()\n"
    for name, fn in CHECK_FUNCTIONS.items():
        result = fn(code, "fp32") if name in PRECISION_DEPENDENT_CHECKS else fn(code)
        assert isinstance(result, tuple) and len(result) == 2
    assert CHECK_FUNCTIONS["precision_downgrade"](code, "fp32")[0]


def test_text_tier_answers_fragments_that_do_not_parse():
    # Neither Python nor C++: a direct check call still answers from the textual patterns.
    fragment = "def forward(self, x):\n    pass\n  ) broken"
    flagged, message = check_code_bypass(fragment)
    assert flagged and "text match" in message
    assert check_thread_injection("import threading\n  ) broken")[0]
