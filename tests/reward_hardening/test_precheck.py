"""Tests for the static precheck (RH-01 .. RH-13) and the upstream-compatible checker.

Fixtures live in ``precheck_fixtures/``:

* ``RH-NN_bad_<what>.py`` must raise code RH-NN (other codes may fire too);
* ``RH-NN_good_<what>.py`` must not raise RH-NN;
* ``clean_*.py`` are honest CUDA / Triton / C++ candidates with no error findings;
* ``reference_matmul.py`` is the reference every fixture is checked against;
* ``broken_syntax.py.txt`` does not parse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kernelbench.kernel_static_checker import (
    BACKEND_IMPL_CHECK,
    STRICT_CHECKS,
    WARNING_CHECKS,
    validate_kernel_static,
)
from kernelbench.reward_hardening import precheck
from kernelbench.reward_hardening.codes import CODES
from kernelbench.reward_hardening.precheck import RULES, Rule, run_precheck

FIXTURES = Path(__file__).parent / "precheck_fixtures"
REFERENCE = (FIXTURES / "reference_matmul.py").read_text()
STATIC_CODES = [f"RH-{i:02d}" for i in range(1, 14)] + ["RH-50", "RH-46"]
_NAME = re.compile(r"^(RH-\d\d)_(bad|good)_\w+\.py$")


def _fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("RH-*.py") if _NAME.match(p.name))


def _run(path: Path, **kw):
    kw.setdefault("precision", "fp32")
    return run_precheck(path.read_text(), REFERENCE, **kw)


# ---------------------------------------------------------------------------
# fixture-driven rule tests

def test_fixture_inventory_covers_every_static_code():
    files = [p.name for p in _fixture_files()]
    for code in STATIC_CODES:
        bad = [f for f in files if f.startswith(f"{code}_bad_")]
        good = [f for f in files if f.startswith(f"{code}_good_")]
        assert len(bad) >= 2, f"{code} needs two malicious fixtures"
        assert good, f"{code} needs a benign twin"
    assert all(_NAME.match(p.name) for p in FIXTURES.glob("RH-*.py")), "fixture names must be RH-NN_bad|good_<what>.py"


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_fixture(path: Path):
    code, kind = _NAME.match(path.name).groups()
    result = _run(path)
    assert not result.facts.rule_errors, result.facts.rule_errors
    assert result.facts.syntax_error is None
    if kind == "bad":
        f = result.by_code(code)
        assert f is not None, f"{path.name}: expected {code}, got {result.codes}"
        assert f.evidence["hits"], "evidence must list hits"
        n_lines = len(path.read_text().splitlines())
        for h in f.evidence["hits"]:
            assert 1 <= h["line"] <= n_lines and h["what"]
    else:
        assert code not in result.codes, f"{path.name}: {code} fired: {result.by_code(code).evidence}"


def test_every_bad_fixture_has_an_alias_or_obfuscation_variant():
    for code in STATIC_CODES:
        names = [p.name for p in _fixture_files() if p.name.startswith(f"{code}_bad_")]
        assert any(re.search(r"_(alias|obf)_", n) for n in names), f"{code}: no alias/obfuscation fixture in {names}"


def test_cxx_hit_lines_point_at_the_source_line():
    """C++ hits are mapped back to the Python line that holds the token."""
    checked = 0
    for path in _fixture_files():
        lines = path.read_text().splitlines()
        for f in _run(path).findings:
            for h in f.evidence["hits"]:
                m = re.fullmatch(r"C\+\+(?: persisting-L2)?: (?:#include <)?([\w:./]+)>?", h["what"])
                if not m:
                    continue
                name = m.group(1).split("::")[-1]
                assert name in lines[h["line"] - 1], (path.name, h, lines[h["line"] - 1])
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("clean_*.py")), ids=lambda p: p.name)
def test_clean_candidates_have_no_error_findings(path: Path):
    result = _run(path, policy="source_strict")
    errors = [(f.code, f.evidence["hits"]) for f in result.findings if f.severity == "error"]
    assert errors == []
    assert result.facts.has_model_new and result.facts.custom_backend_declared
    assert result.facts.declared_kernels and all(k["launched"] for k in result.facts.declared_kernels)
    assert result.facts.forward_torch_ops == []


def test_clean_set_covers_cuda_triton_and_cpp():
    kinds = set()
    for path in FIXTURES.glob("clean_*.py"):
        kinds |= {k["kind"] for k in _run(path).facts.declared_kernels}
    assert {"cuda", "triton", "cpp"} <= kinds


# ---------------------------------------------------------------------------
# robustness, registry, result shape

def test_syntax_error_yields_no_findings_and_does_not_crash():
    result = run_precheck((FIXTURES / "broken_syntax.py.txt").read_text(), REFERENCE)
    assert result.findings == []
    assert result.facts.syntax_error and "line" in result.facts.syntax_error
    json.dumps(result.facts.as_dict())


@pytest.mark.parametrize("src", ["", "   \n", "\x00", "x = (" * 300 + ")" * 300, "def f(:\n", "ModelNew = 1\n"])
def test_odd_sources_do_not_crash(src):
    result = run_precheck(src)
    json.dumps(result.as_dict())


def test_disabled_codes_removes_that_rule_only():
    path = FIXTURES / "RH-01_bad_thread_deferral.py"
    full = _run(path)
    assert "RH-01" in full.codes and "RH-13" in full.codes
    off = _run(path, disabled_codes=frozenset({"RH-01"}))
    assert "RH-01" not in off.codes and "RH-13" in off.codes
    for alias in ("concurrency", "RH-STATIC-CONCURRENCY"):
        assert "RH-01" not in _run(path, disabled_codes={alias}).codes


def test_a_crashing_rule_is_recorded_not_raised(monkeypatch):
    def boom(ctx):
        raise ValueError("kaboom")

    patched = [Rule(r.code, r.name, boom) if r.code == "RH-01" else r for r in RULES]
    monkeypatch.setattr(precheck, "RULES", patched)
    result = _run(FIXTURES / "RH-01_bad_thread_deferral.py")
    assert "RH-01" not in result.codes and "RH-32" not in result.codes
    assert "RH-13" in result.codes
    assert any(e["code"] == "RH-01" and "kaboom" in e["error"] for e in result.facts.rule_errors)
    # ... and the precheck says it is incomplete (fail closed: SUSPICIOUS, never a silent pass)
    f = result.by_code("RH-46")
    assert f is not None and f.severity == "warning"
    assert any(h["step"] == "concurrency" and "kaboom" in h["what"] for h in f.evidence["hits"])


def test_a_crashing_analysis_step_is_reported_as_incomplete(monkeypatch):
    from kernelbench.reward_hardening.precheck._context import Context

    def boom(self):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Context, "_collect_constants", boom)
    result = _run(FIXTURES / "RH-08_good_same_constant.py")
    f = result.by_code("RH-46")
    assert f is not None and [h["step"] for h in f.evidence["hits"]] == ["constants"]
    assert "analysis step 'constants' failed" in f.evidence["hits"][0]["what"]


def test_registry_matches_the_code_table_and_documents_each_rule():
    """Static rules and runtime detectors share one docstring template."""
    from kernelbench.reward_hardening.detectors import REGISTRY as RUNTIME_DETECTORS

    assert [r.code for r in RULES] == STATIC_CODES
    assert len({r.name for r in RULES}) == len(RULES)
    for r in RULES:
        assert CODES[r.code].stage == "static"
    documented = [(r.code, r.doc) for r in RULES] + [(c, d.doc) for c, d in sorted(RUNTIME_DETECTORS.items())]
    for code, doc in documented:
        for section in ("What it catches", "Why it matters", "Example", "Known limits"):
            assert section in doc, f"{code} docstring lacks '{section}'"


def test_findings_are_one_per_code_with_sorted_deduplicated_hits():
    result = _run(FIXTURES / "RH-10_bad_cxx_l2_persist.py")
    assert len(result.codes) == len(set(result.codes))
    hits = result.by_code("RH-10").evidence["hits"]
    keys = [(h["line"], h["what"]) for h in hits]
    assert keys == sorted(set(keys))
    assert result.by_code("RH-10").evidence["rule"] == "stream_graph"


def test_severity_follows_the_policy():
    strict = _run(FIXTURES / "RH-13_bad_pure_pytorch.py", policy="source_strict")
    practical = _run(FIXTURES / "RH-13_bad_pure_pytorch.py", policy="practical")
    assert strict.by_code("RH-13").severity == "error"
    assert practical.by_code("RH-13").severity == "info"
    assert strict.by_code("RH-13").evidence == practical.by_code("RH-13").evidence
    side = _run(FIXTURES / "RH-10_bad_side_stream.py", policy="practical")
    assert side.by_code("RH-10").severity == "warning"


def test_facts_are_json_serialisable_for_every_fixture():
    for path in list(FIXTURES.glob("*.py")):
        d = _run(path).facts.as_dict()
        json.dumps(d)
        assert set(d) >= {"syntax_error", "imports", "calls", "declared_kernels", "custom_backend_declared",
                          "forward_torch_ops", "has_model_new", "module_constants", "rule_errors"}


def test_facts_imports_calls_and_constants():
    facts = _run(FIXTURES / "clean_cuda_vector_add.py").facts
    assert "torch.utils.cpp_extension" in facts.imports
    assert "torch.utils.cpp_extension.load_inline" in facts.calls
    assert facts.module_constants["cpp_source"].startswith("torch::Tensor add_cuda")
    assert facts.as_dict()["module_constants"]["cuda_source"].startswith("<str len=")


def test_reference_constant_rebinding_names_both_values():
    hits = _run(FIXTURES / "RH-08_bad_rebind_constant.py").by_code("RH-08").evidence["hits"]
    rebinding = [h for h in hits if h.get("constant") == "N"]
    assert rebinding and rebinding[0]["reference_value"] == 2048 and rebinding[0]["candidate_value"] == 16
    assert not any(h.get("constant") == "batch_size" and h["line"] == 7 for h in hits)  # same value: fine


def test_precision_rule_only_runs_for_fp32():
    path = FIXTURES / "RH-11_bad_cxx_half.py"
    assert "RH-11" in _run(path, precision="fp32").codes
    assert "RH-11" in _run(path, precision="Float32").codes
    assert "RH-11" not in _run(path, precision="fp16").codes


def test_tl_dot_default_tf32_is_named():
    hits = _run(FIXTURES / "RH-11_bad_triton_default_tf32.py").by_code("RH-11").evidence["hits"]
    assert [h["what"] for h in hits] == ["tl.dot default tf32"]


def test_unimported_torch_still_resolves():
    src = ("torch.cuda.Event.elapsed_time = lambda *a: 0.0\n"
           "class ModelNew:\n    def forward(self, x):\n        return x\n")
    assert "RH-05" in run_precheck(src).codes


# ---------------------------------------------------------------------------
# declared kernels

def _kernels(src: str) -> dict[str, bool]:
    return {k["name"]: k["launched"] for k in run_precheck(src).facts.declared_kernels}


_CUDA_TEMPLATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void used_kernel(float* y, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.f; }}
__global__ void unused_kernel(float* y, int n) {{ int i = threadIdx.x; if (i < n) y[i] = 2.f; }}
static void launch(torch::Tensor y) {{ {launch} }}
torch::Tensor run(torch::Tensor y) {{ launch(y); return y; }}
torch::Tensor other(torch::Tensor y) {{ unused_kernel<<<1, 32>>>(y.data_ptr<float>(), y.numel()); return y; }}
{pybind}
"""
ext = load_inline(name="k", cpp_sources="torch::Tensor run(torch::Tensor y);", cuda_sources=cuda_src{functions})


class ModelNew(nn.Module):
    def forward(self, y):
        return ext.run(y)
'''


def test_cuda_kernel_launched_through_a_host_helper():
    src = _CUDA_TEMPLATE.format(launch="used_kernel<<<1, 32>>>(y.data_ptr<float>(), y.numel());", pybind="",
                                functions=', functions=["run", "other"]')
    assert _kernels(src) == {"used_kernel": True, "unused_kernel": False}


def test_cuda_kernel_launched_with_cudaLaunchKernel_and_pybind_module():
    launch = ("void* args[] = {&y}; cudaLaunchKernel((const void*)used_kernel, dim3(1), dim3(32), args, 0, "
              "at::cuda::getCurrentCUDAStream());")
    pybind = 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("run", &run); m.def("other", &other); }}'
    src = _CUDA_TEMPLATE.format(launch=launch, pybind=pybind.replace("{{", "{").replace("}}", "}"), functions="")
    assert _kernels(src) == {"used_kernel": True, "unused_kernel": False}


def test_cuda_kernel_not_launched_when_forward_never_calls_the_extension():
    src = _CUDA_TEMPLATE.format(launch="used_kernel<<<1, 32>>>(y.data_ptr<float>(), y.numel());", pybind="",
                                functions=', functions=["run"]').replace("return ext.run(y)", "return y * 2")
    assert _kernels(src) == {"used_kernel": False, "unused_kernel": False}
    assert "RH-13" in run_precheck(src).codes


def test_declared_kernels_of_fixtures():
    facts = _run(FIXTURES / "RH-13_good_honest_triton.py").facts
    assert {k["name"]: (k["kind"], k["launched"]) for k in facts.declared_kernels} == {
        "_row_max": ("triton", True), "softmax_kernel": ("triton", True)}
    facts = _run(FIXTURES / "RH-13_bad_decoy_triton.py").facts
    assert [(k["name"], k["launched"]) for k in facts.declared_kernels] == [("add_kernel", False)]
    facts = _run(FIXTURES / "RH-13_bad_decoy_cuda_kernel.py").facts
    assert [(k["name"], k["kind"], k["launched"]) for k in facts.declared_kernels] == [("mm_kernel", "cuda", False)]
    facts = _run(FIXTURES / "clean_cpp_cpu_relu.py").facts
    assert [(k["name"], k["kind"], k["launched"]) for k in facts.declared_kernels] == [("relu_cpu", "cpp", True)]
    assert facts.extension_modules[0]["called_from_forward"] == ["relu_cpu"]


def test_sources_folded_from_concatenations_and_lists():
    src = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
HEAD = "#include <torch/extension.h>\\n"
BODY = "__global__ void k(float* y) { y[threadIdx.x] = 0.f; }\\n"
BODY += "torch::Tensor go(torch::Tensor y) { k<<<1, 1>>>(y.data_ptr<float>()); return y; }\\n"
SRCS = [HEAD + BODY]
ext = load_inline(name="x", cpp_sources="torch::Tensor go(torch::Tensor y);", cuda_sources=SRCS, functions=["go"])
class ModelNew(nn.Module):
    def forward(self, y):
        return ext.go(y)
'''
    assert _kernels(src) == {"k": True}


# ---------------------------------------------------------------------------
# validate_kernel_static (upstream-compatible)

_HONEST = (FIXTURES / "clean_cuda_vector_add.py").read_text()


def test_vks_honest_kernel_with_try_around_load_inline_and_forward_pass_docstring():
    assert "try:" in _HONEST and "forward pass" in _HONEST
    valid, errors, warnings = validate_kernel_static(_HONEST, backend="cuda", precision="fp32")
    assert valid, errors
    assert warnings == []


def test_vks_modelnew_pass_subclass_is_code_bypass():
    valid, errors, _ = validate_kernel_static("class ModelNew(Model):\n    pass\n", forbidden=["code_bypass"])
    assert not valid and errors[0].startswith("code_bypass")


def test_vks_try_except_fallback_is_code_bypass():
    code = _HONEST.replace("return self.ext.add_cuda(a.contiguous(), b.contiguous())",
                           "try:\n            return self.ext.add_cuda(a, b)\n        except RuntimeError:\n"
                           "            return torch.add(a, b)")
    valid, errors, _ = validate_kernel_static(code)
    assert not valid and any(e.startswith("code_bypass") and "try-except" in e for e in errors)


def test_vks_timer_patch_is_an_error():
    code = "import torch\ntorch.cuda.Event.elapsed_time = lambda *a: 0\n"
    valid, errors, _ = validate_kernel_static(code, forbidden=STRICT_CHECKS)
    assert not valid and any(e.startswith("timing_event_patch") for e in errors)
    aliased = "from torch import cuda as c\nsetattr(c.Event, 'elapsed_time', lambda *a: 0)\n"
    assert any(e.startswith("timing_event_patch") for e in validate_kernel_static(aliased)[1])


def test_vks_threading_import_is_an_error():
    valid, errors, _ = validate_kernel_static(_HONEST + "\nimport threading\n")
    assert not valid and [e.split(":")[0] for e in errors] == ["thread_injection"]


def test_vks_cuda_stream_create_in_cuda_string_is_a_stream_warning():
    code = _HONEST.replace("auto stream = at::cuda::getCurrentCUDAStream();",
                           "cudaStream_t stream; cudaStreamCreate(&stream);")
    valid, errors, warnings = validate_kernel_static(code)
    assert valid, errors
    assert len(warnings) == 1 and warnings[0].startswith("stream_injection") and "cudaStreamCreate" in warnings[0]


def test_vks_precision_is_case_insensitive_and_fp16_skips_the_check():
    code = "    def forward(self, x):\n        return x.half()\n"
    r32 = validate_kernel_static(code, precision="FP32")
    assert r32 == validate_kernel_static(code, precision="float32")
    assert any(w.startswith("precision_downgrade") for w in r32[2])
    assert not any(w.startswith("precision_downgrade") for w in validate_kernel_static(code, precision="fp16")[2])
    _, errors, _ = validate_kernel_static(code, precision="fp32", forbidden=["precision_downgrade"], warnings=[])
    assert any(e.startswith("precision_downgrade") for e in errors)


def test_vks_order_is_deterministic_and_follows_the_lists():
    code = ("import threading\nimport torch\nclass X(torch.Tensor):\n    pass\n"
            "torch.cuda.synchronize = lambda: None\ny = torch.matmul(a, b)\ns = torch.cuda.Stream()\n")
    _, errors, warnings = validate_kernel_static(code, precision="fp32")
    assert [e.split(":")[0] for e in errors] == ["timing_event_patch", "thread_injection", "lazy_eval", "cuda_impl"]
    assert [w.split(":")[0] for w in warnings] == ["torch_computation_ops", "stream_injection"]
    rev = validate_kernel_static(code, precision="fp32", forbidden=list(reversed(STRICT_CHECKS)))
    assert [e.split(":")[0] for e in rev[1]] == ["lazy_eval", "thread_injection", "timing_event_patch", "cuda_impl"]
    assert validate_kernel_static(code, precision="fp32") == (False, errors, warnings)


def test_vks_presets_unknown_names_and_empty_code():
    assert STRICT_CHECKS == ["code_bypass", "timing_event_patch", "thread_injection", "lazy_eval"]
    assert WARNING_CHECKS == ["pytorch_wrap", "torch_computation_ops", "stream_injection", "precision_downgrade"]
    assert BACKEND_IMPL_CHECK["cutlass"] == "cute_impl" and BACKEND_IMPL_CHECK["thunderkittens"] == "tk_impl"
    for code in ("", "   \n\t\n"):
        valid, errors, warnings = validate_kernel_static(code, forbidden=["no_such_check"], warnings=["nope"])
        assert isinstance(valid, bool) and [e.split(":")[0] for e in errors] == ["cuda_impl"] and warnings == []


def test_vks_pytorch_wrap_sees_aliases():
    code = "import torch.nn as nn\nlayer = nn.Linear(4, 4)\n"
    _, _, warnings = validate_kernel_static(code)
    assert warnings and warnings[0].startswith("pytorch_wrap") and "torch.nn.Linear" in warnings[0]


def test_vks_backend_checks_on_bare_sources():
    cuda = ("#include <torch/extension.h>\n__global__ void k(float* y) { y[threadIdx.x] = 0; }\n"
            "auto m = torch::utils::cpp_extension::load_inline(\"k\", src, {}, {});\n")
    assert validate_kernel_static(cuda)[0]
    no_index = cuda.replace("y[threadIdx.x] = 0;", "float x = 1.0f;")
    valid, errors, _ = validate_kernel_static(no_index)
    assert not valid and "thread indexing" in errors[0]
    triton_src = ("    import triton\n    import triton.language as tl\n    @triton.jit\n    def k(x_ptr, n):\n"
                  "        tl.store(x_ptr, tl.load(x_ptr))\n")
    assert validate_kernel_static(triton_src, backend="triton")[0]
    valid, errors, _ = validate_kernel_static("import triton\n@triton.jit\ndef k(x):\n    return x * 2\n",
                                              backend="triton")
    assert not valid and "tl.load" in errors[0]
    tk = ("#include <kittens.cuh>\nusing namespace kittens;\n__global__ void k() {\n rt_fl<16, 16> a, b, c;\n"
          " kittens::mma_AB(c, a, b);\n}\n")
    assert validate_kernel_static(tk, backend="thunderkittens")[0]
    assert not validate_kernel_static("#include <cutlass/cutlass.h>\nusing namespace cutlass;\nvoid f() { int x; }\n",
                                      backend="cutlass")[0]
    tilelang = ("from tvm.script import tir as T\n@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n"
                "    for i in T.serial(4):\n        A[i] = 0.0\n")
    assert validate_kernel_static(tilelang, backend="tilelang")[0]
    valid, errors, _ = validate_kernel_static("from tvm.script import tir as T\n@T.prim_func\ndef f():\n    x = 1\n",
                                              backend="tilelang")
    assert not valid and "iteration" in errors[0]


def test_vks_python_that_does_not_parse_fails_closed():
    valid, errors, _ = validate_kernel_static("import torch\nclass ModelNew(:\n    pass\n")
    assert not valid and errors[0].startswith("syntax_error")


# ---------------------------------------------------------------------------
# evasions the resolver must see through, honest idioms it must not flag

_EVASIONS = {
    "dunder_import_thread": ('__import__("threading").Thread(target=print).start()', "RH-01"),
    "import_module_system": ('import importlib\nimportlib.import_module("os").system("x")', "RH-02"),
    "sys_modules_timer": ('import sys\nsys.modules["time"].perf_counter = lambda: 0', "RH-05"),
    "type_setattr": ('import torch\ntype.__setattr__(torch.cuda.Event, "elapsed_time", f)', "RH-05"),
    "operator_setitem": ('import operator, torch\noperator.setitem(vars(torch), "allclose", f)', "RH-05"),
    "setattr_on_import": ('setattr(__import__("time"), "perf_counter", f)', "RH-05"),
    "self_attr_alias": ("import torch\nclass M:\n    def __init__(self):\n        self.ev = torch.cuda.Event\n"
                        "    def go(self):\n        self.ev.elapsed_time = None", "RH-05"),
    "eval_alias": ('e = eval\ne("1")', "RH-04"),
    "builtins_getattr": ('x = getattr(__builtins__, "exec")\nx("1")', "RH-04"),
    "chr_built_source": ('from torch.utils.cpp_extension import load_inline\nsrc = "".join(chr(c) for c in [99])\n'
                         'ext = load_inline("a", cpp_sources=src)', "RH-04"),
    "cxx_define_alias": ('s = """\n#define SC cudaStreamCreate\nvoid f() { cudaStream_t s; SC(&s); }\n"""', "RH-10"),
    "cxx_unicode_escape": ('s = "void f() { cuda\\u0053treamCreate(&x); }"', "RH-10"),
    "cxx_line_splice": ('s = """void f() { cudaStream\\\\\nCreate(&x); }"""', "RH-10"),
    "nested_import_alias": ("def f():\n    import threading as t\n    t.Timer(1, print).start()", "RH-01"),
    "folded_getattr_chain": ('import torch\ngetattr(getattr(torch, "cu" + "da"), "Stre" "am")()', "RH-10"),
}


@pytest.mark.parametrize("name", sorted(_EVASIONS))
def test_evasion_is_caught(name):
    src, code = _EVASIONS[name]
    assert code in run_precheck(src).codes


_EXT = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void k(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];
}}
torch::Tensor fused_forward(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                                           x.numel());
    return y;
}}
{extra}
"""
ext = load_inline(name="e", cpp_sources="torch::Tensor fused_forward(torch::Tensor x);", cuda_sources=src{kw})
'''
_HONEST_IDIOMS = {
    "bound_method_alias": ("", ', functions=["fused_forward"]',
                           "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                           "        self.op = ext.fused_forward\n"
                           "    def forward(self, x):\n        return self.op(x)\n"),
    "autograd_function": ("", ', functions=["fused_forward"]',
                          "class _Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                          "        return ext.fused_forward(x)\nclass ModelNew(nn.Module):\n"
                          "    def forward(self, x):\n        return _Fn.apply(x)\n"),
    "torch_library_op": ('TORCH_LIBRARY(mylib, m) {{ m.def("double_it(Tensor x) -> Tensor"); }}\n'
                         'TORCH_LIBRARY_IMPL(mylib, CUDA, m) {{ m.impl("double_it", &fused_forward); }}',
                         ", is_python_module=False",
                         "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                         "        return torch.ops.mylib.double_it(x)\n"),
    "helper_and_layout_ops": ("", ', functions=["fused_forward"]',
                              "class ModelNew(nn.Module):\n    def _launch(self, x):\n        fn = ext.fused_forward\n"
                              "        return fn(x.contiguous())\n    def forward(self, x):\n"
                              "        with torch.no_grad():\n            y = self._launch(x.view(-1)).view_as(x)\n"
                              "        return torch.cat([y], dim=0).reshape(x.shape)\n"),
}


@pytest.mark.parametrize("name", sorted(_HONEST_IDIOMS))
def test_honest_idiom_is_clean(name):
    extra, kw, body = _HONEST_IDIOMS[name]
    src = _EXT.format(extra=extra.replace("{{", "{").replace("}}", "}"), kw=kw) + body
    result = run_precheck(src)
    assert [f for f in result.findings if f.severity == "error"] == [], result.as_dict()["findings"]
    assert all(k["launched"] for k in result.facts.declared_kernels)


def test_restoring_strict_fp32_is_not_tamper_but_other_backend_switches_are():
    src = ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n"
           "torch.backends.cudnn.allow_tf32 = False\ntorch.backends.cudnn.benchmark = True\n")
    hits = run_precheck(src).by_code("RH-05").evidence["hits"]
    assert [h["line"] for h in hits] == [4]
    assert "RH-11" not in run_precheck(src).codes


# ---------------------------------------------------------------------------
# C++ operator registrations and memory-fault machinery (issue 18)

_OP_TEMPLATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
torch::Tensor op_cpu(const torch::Tensor& x) {{ auto o = torch::empty_like(x); float* p = o.data_ptr<float>();
  const float* q = x.data_ptr<float>(); for (int64_t i = 0; i < x.numel(); ++i) p[i] = q[i] * 2.0f; return o; }}
{registration}
"""
load_inline(name="ops", cpp_sources=[SRC], is_python_module=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ops.kg.op(x)
'''


@pytest.mark.parametrize("registration", [
    'TORCH_LIBRARY(kg, m) { m.def("op(Tensor x) -> Tensor"); }\nTORCH_LIBRARY_IMPL(kg, CPU, m) { m.impl("op", op_cpu); }',
    'TORCH_LIBRARY(kg, m) { m.def("op(Tensor x) -> Tensor"); }\n'
    'TORCH_LIBRARY_IMPL(kg, CPU, m) { m.impl("op", TORCH_FN(op_cpu)); }',
    'TORCH_LIBRARY(kg, m) { m.def("kg::op(Tensor x) -> Tensor", &op_cpu); }',
    'TORCH_LIBRARY_FRAGMENT(kg, m) { m.def("op(Tensor x) -> Tensor"); }\n'
    'TORCH_LIBRARY_IMPL(kg, CPU, m) { m.impl("op", [](const torch::Tensor& x) { return op_cpu(x); }); }',
])
def test_custom_op_in_its_own_namespace_is_neither_tamper_nor_unlaunched(registration):
    r = run_precheck(_OP_TEMPLATE.format(registration=registration), REFERENCE, policy="source_strict",
                     precision="fp32")
    assert not {"RH-05", "RH-13"} & set(r.codes), [(f.code, f.evidence["hits"]) for f in r.findings]
    assert [k["launched"] for k in r.facts.declared_kernels] == [True]


@pytest.mark.parametrize("registration", [
    'TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("copy_", op_cpu); }',
    'TORCH_LIBRARY_IMPL(prims, CPU, m) { m.impl("mul", op_cpu); }',
    'TORCH_LIBRARY_IMPL(_, AutogradCPU, m) { m.fallback(torch::CppFunction::makeFallthrough()); }',
    'TORCH_LIBRARY_FRAGMENT(aten, m) { m.def("kg_extra(Tensor x) -> Tensor"); }',
    'TORCH_LIBRARY_IMPL(kg, CPU, m) { m.impl("aten::mul.Tensor", op_cpu); }',
    '#define R TORCH_LIBRARY_IMPL\nR(aten, CPU, m) { m.impl("exp", op_cpu); }',
    'static auto lib = torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);',
    'static auto h = c10::Dispatcher::singleton().findSchemaOrThrow("aten::mul", "Tensor");',
])
def test_cxx_registration_on_a_built_in_namespace_is_tamper(registration):
    r = run_precheck(_OP_TEMPLATE.format(registration=registration), REFERENCE, policy="practical",
                     precision="fp32")
    assert "RH-05" in r.codes and r.by_code("RH-05").severity == "error"


@pytest.mark.parametrize("body, fires", [
    ("return torch::from_blob(buf, x.sizes(), [](void* p) { free(p); }, x.options());", True),
    ("return torch::from_blob(buf, x.sizes(), x.strides(), release, x.options());", True),
    ("return at::for_blob(buf, x.sizes()).deleter(release).make_tensor();", True),
    ("mprotect(buf, 4096, PROT_NONE); return x;", True),
    ("signal(SIGSEGV, handler); return x;", True),
    ("std::signal(SIGBUS, handler); return x;", True),
    ("int id = shmget(7, 4096, 01600); return x;", True),
    ("int q = mq_open(\"/q\", 0100); return x;", True),
    ("return torch::from_blob(buf, x.sizes(), x.options()).clone();", False),
    ("return torch::from_blob(buf, x.sizes(), x.strides(), x.options()).clone();", False),
    ("float signal = 1.0f; return x * signal;", False),
])
def test_cxx_fault_machinery_and_ipc_are_native_syscall_findings(body, fires):
    src = _OP_TEMPLATE.format(registration=(
        "void release(void* p) { }\nvoid handler(int s) { }\n"
        f"torch::Tensor g(torch::Tensor x) {{ float* buf = x.data_ptr<float>(); {body} }}"))
    r = run_precheck(src, REFERENCE, policy="practical", precision="fp32")
    assert ("RH-50" in r.codes) is fires, [(f.code, f.evidence["hits"]) for f in r.findings]
