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
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable

from kernelbench.reward_hardening.precheck import analyse, concurrency, stream_graph, tensor_subclass
from kernelbench.reward_hardening.precheck import precision as precision_rule
from kernelbench.reward_hardening.precheck._context import Context, Hit, match_prefix
from kernelbench.reward_hardening.precheck._cxx import looks_like_cxx
from kernelbench.reward_hardening.precheck.provenance import suppress_tail, torch_ops_in
from kernelbench.reward_hardening.precheck.reference_access import derives_from_reference

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

_NN_ALLOWED = {"Module", "parameter", "Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict",
               "init"}
_TIMING_TARGETS = ("torch.cuda.Event", "torch.cuda.synchronize", "time", "torch.cuda.current_stream",
                   "torch.cuda.default_stream", "torch.cuda.Stream", "torch.cuda.elapsed_time", "timeit",
                   "triton.testing", "torch.Event", "torch.cuda.events")
_THREAD_INDEXING = {"threadIdx", "blockIdx", "blockDim", "gridDim", "this_thread_block", "this_grid", "thread_rank",
                    "hipThreadIdx_x", "hipBlockIdx_x", "__lane_id", "laneid"}
_TRITON_MEMORY = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
                  "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor",
                  "load_tensor_descriptor", "store_tensor_descriptor", "descriptor_load", "descriptor_store"}
_TK_COMPUTE = {"mul", "add", "sub", "div", "exp", "exp2", "log", "max", "min", "sum", "row_max", "row_sum",
               "row_min", "col_max", "col_sum", "col_min", "relu", "gelu", "abs", "neg", "fma", "square", "sqrt",
               "rsqrt", "mul_row", "add_row", "sub_row", "div_row", "mul_col", "add_col", "sub_col", "div_col"}
_TILELANG_ITER = {"grid", "serial", "Parallel", "parallel", "Pipelined", "thread_binding", "vectorized", "unroll",
                  "Kernel", "Persistent"}


# ---------------------------------------------------------------------------

def _normalize_precision(precision: str | None) -> str:
    p = (precision or "fp16").strip().lower()
    return {"float32": "fp32", "f32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}.get(p, p)


_PYTHONISH = re.compile(r"^\s*(import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\(|class\s+\w+.*:\s*$|@\w)", re.M)


# A bare C/C++ fragment (no braces, so looks_like_cxx misses it): a statement ending in
# ";", a "::" scope, a template argument list or a C-style cast.
_CXX_SNIPPET = re.compile(r";[ \t]*(?://[^\n]*)?$|\w::\w|\b\w+\s*<[\w:\s,*]+>\s*[\w(]|\(\s*\w+\s*\)\s*\w", re.M)


_CXX_STATEMENT = re.compile(r";[ \t]*(?://[^\n]*)?$", re.M)


def looks_like_cxx_fragment(code: str) -> bool:
    """Bare C/C++ statements (no Python structure): most non-blank lines end in ``;``, ``{`` or ``}``."""
    lines = [ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith(("//", "#"))]
    if not lines:
        return False
    cxxish = sum(ln.endswith((";", "{", "}")) for ln in lines)
    return cxxish * 2 >= len(lines)


class _Analysis:
    def __init__(self, code: str, backend: str, precision: str) -> None:
        self.code = code
        self.syntax_error: str | None = None
        if _CXX_STATEMENT.search(code) and not _PYTHONISH.search(code) and looks_like_cxx_fragment(code):
            # C++ statements, some of which happen to parse as Python
            # (``NumericConverter<half_t, float> c;`` is a tuple of comparisons): read the
            # text as the C++ it is.
            ctx = analyse(code, backend=backend, precision=precision, raw_cxx=True)
        else:
            ctx = analyse(code, backend=backend, precision=precision)
        if ctx.tree is None and not ctx.raw_cxx:
            dedented = textwrap.dedent(code)
            if dedented != code:
                ctx2 = analyse(dedented, backend=backend, precision=precision)
                if ctx2.tree is not None:
                    ctx = ctx2
        if ctx.tree is None and not ctx.raw_cxx:
            if (looks_like_cxx(code) or _CXX_SNIPPET.search(code)) and not _PYTHONISH.search(code):
                ctx = analyse(code, backend=backend, precision=precision, raw_cxx=True)
            else:
                self.syntax_error = ctx.facts.syntax_error or "does not parse"
        self.ctx: Context = ctx

    def idents(self) -> set[str]:
        return {ci.text for ci in self.ctx.cxx_idents}


def _fmt(hits: list[Hit], limit: int = 6) -> str:
    seen, parts = set(), []
    for h in sorted(hits, key=lambda h: (h.line, h.what)):
        if (h.line, h.what) in seen:
            continue
        seen.add((h.line, h.what))
        parts.append(f"line {h.line}: {h.what}")
    more = f"; +{len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def _verdict(hits: list[Hit], what: str) -> tuple[bool, str]:
    """A check's result in upstream's shape: flagged with ``what: <hits>``, or clean."""
    return (True, f"{what}: {_fmt(hits)}") if hits else (False, "")


def _safe(fn: Callable[[Context], list[Hit]], ctx: Context) -> list[Hit]:
    try:
        return fn(ctx)
    except Exception:  # noqa: BLE001 - a broken rule must not break the checker
        return []


# ---------------------------------------------------------------------------
# strict checks

def _does_nothing(fn: ast.AST) -> bool:
    """A function whose body is only ``pass`` / ``...`` / a docstring."""
    body = list(getattr(fn, "body", []))
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return all(isinstance(st, ast.Pass) or isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
               and st.value.value is Ellipsis for st in body)


def _check_code_bypass(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    if ctx.tree is None:
        return False, ""
    hits: list[Hit] = []
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            fn = ctx.scope_of(node)
            cls = ctx.fn_class.get(fn) if fn is not None else None
            if cls is None and fn is not None and isinstance(ctx.parent.get(fn), ast.ClassDef):
                cls = ctx.parent[fn].name
            ops = torch_ops_in(ctx, [s for h in node.handlers for s in h.body], cls)
            if ops:
                hits.append(Hit(node.lineno, f"try-except falls back to {ops[0]}"))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            after = suppress_tail(ctx, node)
            ops = torch_ops_in(ctx, after, None) if after else []
            if ops:
                hits.append(Hit(node.lineno, f"contextlib.suppress falls back to {ops[0]}"))
    mn = ctx.model_new
    if mn is not None:
        for f in ctx.methods(mn.name, "forward"):
            if getattr(ctx.parent.get(f), "name", None) == mn.name and _does_nothing(f):
                hits.append(Hit(f.lineno, "ModelNew.forward is only `pass` (computes nothing, "
                                          "returns None: the reference's work is bypassed)"))
    if mn is not None and derives_from_reference(ctx, mn):
        fwd = ctx.methods(mn.name, "forward")
        own = [f for f in fwd if getattr(ctx.parent.get(f), "name", "Model") != "Model"]
        if not own:
            hits.append(Hit(mn.lineno, "ModelNew subclasses Model without its own forward (inherits the reference)"))
        else:
            for n in ast.walk(own[0]):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "forward" and (
                        isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Name)
                        and n.func.value.func.id == "super"
                        or isinstance(n.func.value, ast.Name) and n.func.value.id == "Model"):
                    hits.append(Hit(n.lineno, "ModelNew.forward calls the reference forward"))
    return _verdict(hits, "code_bypass: PyTorch fallback / reference bypass (try-except or inheritance)")


def _check_timing_event_patch(a: _Analysis) -> tuple[bool, str]:
    hits = [Hit(s.line, f"{s.how} {s.qname}") for s in a.ctx.stores
            if s.rooted and s.qname and match_prefix(s.qname, _TIMING_TARGETS)]
    return _verdict(hits, "timing_event_patch: timing function reassigned (monkey-patching the timer)")


def _check_thread_injection(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(concurrency.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents
                 if ci.text in ("threading", "multiprocessing", "ThreadPoolExecutor", "ProcessPoolExecutor")]
    return _verdict(hits, "thread_injection: threads/processes can run work outside the timed call")


def _check_lazy_eval(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(tensor_subclass.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents if ci.text in ("_make_subclass", "as_subclass")]
    return _verdict(hits, "lazy_eval: tensor subclass / lazy evaluation hooks")


# ---------------------------------------------------------------------------
# warnings

def _check_pytorch_wrap(a: _Analysis) -> tuple[bool, str]:
    hits = []
    for r in a.ctx.refs:
        if r.kind != "load" or not r.rooted or not r.qname.startswith("torch.nn."):
            continue
        part = r.qname.split(".")[2]
        if part not in _NN_ALLOWED:
            hits.append(Hit(r.line, r.qname))
    return _verdict(hits, "pytorch_wrap: uses torch.nn modules/functional instead of a custom kernel")


def _check_torch_computation_ops(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    hits = []
    for c in ctx.calls:
        if not c.rooted or not c.qname or not c.qname.startswith("torch.") or c.qname.startswith("torch.nn.") \
                and not c.qname.startswith("torch.nn.functional."):
            continue
        op = ctx.torch_compute_op(c.node, None)
        if op:
            hits.append(Hit(c.line, op))
    return _verdict(hits, "torch_computation_ops: high-level torch compute ops")


def _check_stream_injection(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(stream_graph.check, a.ctx)
    return _verdict(hits, "stream_injection: non-default CUDA streams or graphs")


_PRECISION_LABEL = "precision_downgrade: required FP32 but code uses"


def _precision_classes(hits: list[Hit]) -> str:
    """Which reduced formats the hits name, in upstream's spelling (``FP16``, ``BF16``, ``TF32``, ``FP8``)."""
    found = []
    for h in hits:
        w = h.what.lower()
        if "tf32" in w or "tfloat32" in w:
            found.append("TF32")
        elif "bf16" in w or "bfloat16" in w:
            found.append("BF16")
        elif "fp8" in w or "float8" in w or "e4m3" in w or "e5m2" in w:
            found.append("FP8")
        elif "autocast" in w or "amp" in w.split("."):
            found.append("FP16/BF16 (autocast)")
        else:
            found.append("FP16")
    order = ["FP16", "BF16", "TF32", "FP8", "FP16/BF16 (autocast)"]
    return "/".join(c for c in order if c in found) or "reduced precision"


def _extra_precision_hits(a: _Analysis) -> list[Hit]:
    """Upstream patterns the shared precision rule does not cover.

    ``x.float16()`` (not a torch method, but upstream reports the intent) and
    ThunderKittens' ``tk::half(...)`` / ``kittens::half(...)`` conversions.
    """
    ctx = a.ctx
    hits: list[Hit] = []
    if ctx.tree is not None:
        for n in ast.walk(ctx.tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "float16" \
                    and not n.args and not n.keywords:
                hits.append(Hit(n.lineno, ".float16() cast to FP16"))
    for ci in ctx.cxx_idents:
        if ci.text == "half" and ci.prev == "::" and ci.next == "(":
            hits.append(Hit(ci.line, f"{ci.qual or 'half'}() conversion to FP16"))
    return hits


def _check_precision_downgrade(a: _Analysis) -> tuple[bool, str]:
    if not a.ctx.is_fp32:
        return False, ""
    hits = _safe(precision_rule.check, a.ctx) + _safe(_extra_precision_hits, a)
    if not hits:
        return False, ""
    return True, f"{_PRECISION_LABEL} {_precision_classes(hits)}: {_fmt(hits)}"


# ---------------------------------------------------------------------------
# backend implementation checks

def _has_compile_path(a: _Analysis) -> bool:
    ctx = a.ctx
    if any(r.rooted and ("cpp_extension" in r.qname or r.qname.endswith("load_inline")) for r in ctx.refs):
        return True
    return bool(a.idents() & {"load_inline", "cpp_extension"}) or bool(ctx.ext_modules)


def _cuda_like(a: _Analysis, label: str) -> tuple[bool, str]:
    idents = a.idents()
    problems = []
    if "__global__" not in idents:
        problems.append("missing a __global__ kernel definition")
    if not _has_compile_path(a):
        problems.append("missing a load_inline/cpp_extension compile path")
    if "__global__" in idents and not idents & _THREAD_INDEXING:
        problems.append("the kernel has no thread indexing (threadIdx/blockIdx): no real kernel features")
    if problems:
        return True, f"{label}: " + "; ".join(problems)
    return False, ""


def _check_cuda_impl(a: _Analysis) -> tuple[bool, str]:
    return _cuda_like(a, "cuda_impl")


def _check_hip_impl(a: _Analysis) -> tuple[bool, str]:
    bad, msg = _cuda_like(a, "hip_impl")
    hip = "hipcc" in a.code or any(ci.text.startswith("hip") for ci in a.ctx.cxx_idents) \
        or any(h.startswith("hip/") for _, h in a.ctx.cxx_headers)
    if not hip:
        return True, (msg + "; " if bad else "hip_impl: ") + "no HIP toolchain use (hipcc / hip* APIs)"
    return bad, msg


def _check_triton_impl(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    if not ctx.jit_funcs:
        return True, "triton_impl: missing a @triton.jit / @triton.autotune kernel"
    for fn in ctx.jit_funcs.values():
        for n in ast.walk(fn):
            if isinstance(n, ast.Call):
                q = ctx.resolve(n.func) or ""
                last = q.split(".")[-1] if q else (n.func.attr if isinstance(n.func, ast.Attribute) else "")
                if last in _TRITON_MEMORY and (q.startswith("triton.language") or isinstance(n.func, ast.Attribute)):
                    return False, ""
    return True, "triton_impl: the Triton kernel has no tl.load/tl.store memory operations"


def _check_tk_impl(a: _Analysis) -> tuple[bool, str]:
    toks = [ci for ci in a.ctx.cxx_idents if not ci.pasted]
    names = {ci.text for ci in toks}
    ns = "kittens" in names or any(ci.text in ("warp", "warpgroup") and (ci.prev == "::" or ci.next == "::")
                                   for ci in toks)
    tiles = any(re.match(r"^(st|rt)_\w+$", ci.text) and ci.next == "<" for ci in toks)
    compute = any(ci.text in _TK_COMPUTE or ci.text.startswith(("mma", "mm_")) for ci in toks
                  if ci.next == "(" and ci.prev not in (".", "->"))
    problems = []
    if not ns:
        problems.append("no ThunderKittens namespace (kittens / warp / warpgroup)")
    if not tiles:
        problems.append("no st_*/rt_* tiles")
    if not compute:
        problems.append("no tile compute operation (mma/mul/add/exp/...)")
    return (True, "tk_impl: " + "; ".join(problems)) if problems else (False, "")


def _check_cute_impl(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    for ci in ctx.cxx_idents:
        if ci.text in ("cute", "cutlass") and ci.next == "::" and ci.prev not in ("namespace",):
            return False, ""
    if any(r.rooted and (r.qname.startswith("cutlass") or ".cute" in r.qname) and r.kind == "load"
           for r in ctx.refs):
        return False, ""
    return True, "cute_impl: no CuTe/CUTLASS operations (cute::/cutlass:: uses beyond a namespace declaration)"


def _check_tilelang_impl(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    if ctx.tree is None:
        return True, "tilelang_impl: missing an @T.prim_func kernel"
    found, iterates = False, False
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decs = [ctx.resolve(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
            if any(d.endswith("prim_func") or d.startswith("tilelang.") and d.endswith("jit") for d in decs):
                found = True
                for n in ast.walk(node):
                    if isinstance(n, ast.Call):
                        q = ctx.resolve(n.func) or ""
                        if "." in q and q.split(".")[-1] in _TILELANG_ITER:
                            iterates = True
    if not found:
        return True, "tilelang_impl: missing an @T.prim_func kernel"
    if not iterates:
        return True, "tilelang_impl: the kernel has no iteration construct (T.grid/T.Parallel/T.Pipelined/...)"
    return False, ""


_IMPLS: dict[str, Callable[[_Analysis], tuple[bool, str]]] = {
    "code_bypass": _check_code_bypass,
    "timing_event_patch": _check_timing_event_patch,
    "thread_injection": _check_thread_injection,
    "lazy_eval": _check_lazy_eval,
    "pytorch_wrap": _check_pytorch_wrap,
    "torch_computation_ops": _check_torch_computation_ops,
    "stream_injection": _check_stream_injection,
    "precision_downgrade": _check_precision_downgrade,
    "cuda_impl": _check_cuda_impl,
    "hip_impl": _check_hip_impl,
    "triton_impl": _check_triton_impl,
    "tk_impl": _check_tk_impl,
    "cute_impl": _check_cute_impl,
    "tilelang_impl": _check_tilelang_impl,
}


# ---------------------------------------------------------------------------
# upstream-compatible public surface: check_<name>(code) and the pattern constants
#
# Upstream's checks are functions of the source text, ``check_<name>(code) ->
# (flagged, message)`` (``check_precision_downgrade(code, precision="fp32")``), driven
# by module-level regular expressions.  Here each ``check_<name>`` accepts the source
# text (or an already built analysis) and answers from the AST/token analysis.  The
# pattern constants below keep upstream's names; they are this module's own textual
# patterns and serve as the *text tier*: a direct ``check_<name>(code)`` call on a
# fragment that is neither parseable Python nor recognisable C/C++ (so no analysis can
# be built) is answered by them, best effort.  ``validate_kernel_static`` never uses the
# text tier: a candidate that does not parse is the error ``syntax_error`` (fail closed).

TRY_EXCEPT_PATTERNS = [r"\btry\s*:", r"\bexcept\b"]
PASS_PATTERN = r"\bdef\s+forward\s*\([^)]*\)\s*(?:->[^:]*)?:\s*(?:#[^\n]*)?\n?\s*pass\b"
PYTORCH_DISALLOWED_NN_PATTERN = (r"\b(?:torch\.)?nn\.(?!(?:" + "|".join(sorted(_NN_ALLOWED)) + r")\b)\w+")
TORCH_COMPUTATION_OPS = [
    "mm", "bmm", "matmul", "einsum", "addmm", "baddbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "relu", "hardtanh", "elu", "selu", "leaky_relu",
    "gelu", "softsign", "softplus", "softmax", "log_softmax", "tanh", "sigmoid", "hardsigmoid", "silu", "mish",
    "batch_norm", "group_norm", "layer_norm", "instance_norm", "rms_norm", "normalize", "linear", "cross_entropy",
    "kl_div", "mse_loss", "huber_loss", "triplet_margin_loss", "cosine_similarity", "logsumexp", "clamp", "dropout",
]
TORCH_FUNCTIONAL_PATTERNS = [
    r"\btorch\.(?:" + "|".join(TORCH_COMPUTATION_OPS) + r")\s*\(",
    r"\b(?:torch\.)?nn\.functional\.\w+\s*\(",
    r"\bF\.(?:" + "|".join(TORCH_COMPUTATION_OPS) + r")\s*\(",
]
CUDA_COMPILE_PATTERNS = ["load_inline", "cpp_extension"]
HIP_COMPILE_PATTERNS = ["load_inline", "cpp_extension"]
TRITON_JIT_PATTERN = r"@triton\.(?:jit|autotune)\b"
TRITON_OPS_PATTERN = r"\btl\.(?:load|store|atomic_\w+|make_block_ptr)\s*\("
TK_WARP_PATTERNS = [r"\bkittens::", r"\b(?:warp|warpgroup)::"]
TK_TILE_PATTERN = r"\b(?:kittens::)?(?:st|rt)_\w+\s*<[^>]+>"
CUTE_PATTERNS = [r"\bcute::", r"\bcutlass::", r"\bfrom\s+cutlass\b", r"\bimport\s+cutlass\b"]
TILELANG_PATTERNS = [r"@T\.prim_func\b", r"@tilelang\.jit\b"]
STREAM_PATTERNS = [r"\b(?:torch\.)?cuda\.Stream\s*\(", r"\bwith\s+torch\.cuda\.stream\b", r"\.wait_stream\s*\(",
                   r"\.record_stream\s*\(", r"\bcudaStreamCreate\w*\s*\(", r"\bgetStreamFromPool\s*\(",
                   r"\bcublasSetStream\w*\s*\(", r"\bcudaGraph\w*\s*\("]
THREAD_PATTERNS = [r"\bthreading\.Thread\s*\(", r"\bimport\s+threading\b", r"\bfrom\s+threading\s+import\b",
                   r"\bmultiprocessing\.(?:Process|Pool|Manager|Queue|Pipe)\s*\(", r"\bimport\s+multiprocessing\b",
                   r"\bconcurrent\.futures\b", r"\b(?:Thread|Process)PoolExecutor\b", r"\bstd::thread\b",
                   r"\bpthread_create\s*\("]
LAZY_TENSOR_PATTERNS = [r"\b_make_subclass\s*\(", r"\bclass\s+\w+\s*\(\s*(?:torch\.)?Tensor\s*\)",
                        r"\btorch\.Tensor\.__new__\b", r"\b__torch_(?:function|dispatch)__\b", r"\.as_subclass\s*\("]
TIMING_EVENT_PATCH_PATTERNS = [
    r"\btorch\.cuda\.Event\.(?:record|elapsed_time|synchronize)\s*=",
    r"\btorch\.cuda\.(?:synchronize|Event|elapsed_time)\s*=",
    r"\btime\.(?:perf_counter|perf_counter_ns|time|monotonic)\s*=",
    r"\bsetattr\s*\(\s*(?:torch\.cuda(?:\.Event)?|time)\s*,",
]
FP32_TO_FP16_PATTERNS = [
    r"\.half\s*\(\s*\)", r"\.float16\s*\(\s*\)", r"\.to\s*\(\s*(?:dtype\s*=\s*)?torch\.(?:float16|half)\b",
    r"\bdtype\s*=\s*torch\.(?:float16|half)\b", r"\b__float2half\w*\s*\(", r"\(\s*(?:__)?half\s*\)",
    r"\bstatic_cast\s*<\s*(?:__)?half\s*>", r"\btl\.float16\b", r"\bNumericConverter\s*<\s*(?:cutlass::)?half_t\b",
    r"\bLinearCombination\s*<\s*(?:cutlass::)?half_t\b", r"\btype_convert\s*<\s*(?:cutlass::)?half_t\s*>",
    r"\btk::half\s*\(", r"\bhalf_t\b", r"\b__half2?\b",
]

# check name -> the text-tier patterns that answer it (backend checks need all groups)
_TEXT_TIER: dict[str, list[str]] = {
    "code_bypass": TRY_EXCEPT_PATTERNS + [PASS_PATTERN],
    "timing_event_patch": TIMING_EVENT_PATCH_PATTERNS,
    "thread_injection": THREAD_PATTERNS,
    "lazy_eval": LAZY_TENSOR_PATTERNS,
    "pytorch_wrap": [PYTORCH_DISALLOWED_NN_PATTERN],
    "torch_computation_ops": TORCH_FUNCTIONAL_PATTERNS,
    "stream_injection": STREAM_PATTERNS,
    "precision_downgrade": FP32_TO_FP16_PATTERNS,
}
_TEXT_TIER_BACKEND: dict[str, list[list[str]]] = {
    "cuda_impl": [[r"\b__global__\b"], CUDA_COMPILE_PATTERNS],
    "hip_impl": [[r"\b__global__\b"], HIP_COMPILE_PATTERNS, [r"\bhipcc\b", r"\bhip\w+\s*\("]],
    "triton_impl": [[TRITON_JIT_PATTERN], [TRITON_OPS_PATTERN]],
    "tk_impl": [TK_WARP_PATTERNS, [TK_TILE_PATTERN]],
    "cute_impl": [CUTE_PATTERNS],
    "tilelang_impl": [TILELANG_PATTERNS],
}
_LINE_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))(?:#(?!include|define|pragma|if|endif|else)|//)[^\n]*")


def _text_tier(name: str, code: str) -> tuple[bool, str]:
    text = _LINE_COMMENT.sub("", code)
    if name in _TEXT_TIER:
        found = []
        for pat in _TEXT_TIER[name]:
            for m in re.finditer(pat, text):
                found.append(Hit(text.count("\n", 0, m.start()) + 1, m.group(0).strip()))
        if name == "precision_downgrade" and found:
            return True, f"{_PRECISION_LABEL} FP16 ({_fmt(found)}; text match, the source did not parse)"
        return _verdict(found, f"{name}: text match, the source did not parse")
    groups = _TEXT_TIER_BACKEND.get(name)
    if groups is None:
        return False, ""
    missing = [g for g in groups if not any(re.search(p, text) for p in g)]
    if missing:
        return True, f"{name}: missing {' / '.join(missing[0])} (text match, the source did not parse)"
    return False, ""


def _as_analysis(code: str | _Analysis, backend: str = "cuda", precision: str = "fp32") -> _Analysis:
    if isinstance(code, _Analysis):
        return code
    return _Analysis(code if isinstance(code, str) else str(code), backend, _normalize_precision(precision))


def _run_check(name: str, code: str | _Analysis, precision: str = "fp32") -> tuple[bool, str]:
    if isinstance(code, str) and not code.strip():
        return False, ""
    a = _as_analysis(code, precision=precision)
    if a.syntax_error:
        return _text_tier(name, a.code)
    return _IMPLS[name](a)


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
    if _normalize_precision(precision) != "fp32":
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
    prec = _normalize_precision(precision)
    forbidden_list = list(STRICT_CHECKS if forbidden is None else forbidden)
    warning_list = list(WARNING_CHECKS if warnings is None else warnings)
    impl = BACKEND_IMPL_CHECK.get(backend)
    if impl and impl not in forbidden_list:
        forbidden_list.append(impl)
    analysis = _Analysis(code if isinstance(code, str) else str(code), backend, prec)
    errors: list[str] = []
    warns: list[str] = []
    if analysis.syntax_error:
        errors.append(f"syntax_error: the source does not parse ({analysis.syntax_error}); static checks could not run")
        return False, errors, warns
    done: set[str] = set()
    for bucket, names in ((errors, forbidden_list), (warns, warning_list)):
        for name in names:
            if name in done or name not in _IMPLS:
                continue
            done.add(name)
            try:
                bad, msg = _IMPLS[name](analysis)
            except Exception as e:  # noqa: BLE001 - report, never crash
                bad, msg = True, f"{name}: internal checker error ({type(e).__name__}: {e})"
            if bad:
                bucket.append(msg)
    return not errors, errors, warns
