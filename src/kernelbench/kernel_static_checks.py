"""The checks of :mod:`kernelbench.kernel_static_checker`, answered from the precheck analysis (any process).

:class:`Analysis` builds the shared analysis of
:mod:`kernelbench.reward_hardening.precheck` for one source (Python; indented snippets
dedented; bare C/C++/CUDA read as one C++ source); each ``_check_<name>(analysis) ->
(flagged, message)`` answers one upstream check name and :data:`IMPLS` maps the names
to them.  The public surface (``check_<name>``, ``validate_kernel_static``, presets)
is :mod:`kernelbench.kernel_static_checker`; the text tier for sources that do not
parse is :mod:`kernelbench.kernel_static_text_tier`.
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

NN_ALLOWED = {"Module", "parameter", "Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict",
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

def normalize_precision(precision: str | None) -> str:
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


class Analysis:
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


def fmt_hits(hits: list[Hit], limit: int = 6) -> str:
    seen, parts = set(), []
    for h in sorted(hits, key=lambda h: (h.line, h.what)):
        if (h.line, h.what) in seen:
            continue
        seen.add((h.line, h.what))
        parts.append(f"line {h.line}: {h.what}")
    more = f"; +{len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def verdict(hits: list[Hit], what: str) -> tuple[bool, str]:
    """A check's result in upstream's shape: flagged with ``what: <hits>``, or clean."""
    return (True, f"{what}: {fmt_hits(hits)}") if hits else (False, "")


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


def _check_code_bypass(a: Analysis) -> tuple[bool, str]:
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
    return verdict(hits, "code_bypass: PyTorch fallback / reference bypass (try-except or inheritance)")


def _check_timing_event_patch(a: Analysis) -> tuple[bool, str]:
    hits = [Hit(s.line, f"{s.how} {s.qname}") for s in a.ctx.stores
            if s.rooted and s.qname and match_prefix(s.qname, _TIMING_TARGETS)]
    return verdict(hits, "timing_event_patch: timing function reassigned (monkey-patching the timer)")


def _check_thread_injection(a: Analysis) -> tuple[bool, str]:
    hits = _safe(concurrency.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents
                 if ci.text in ("threading", "multiprocessing", "ThreadPoolExecutor", "ProcessPoolExecutor")]
    return verdict(hits, "thread_injection: threads/processes can run work outside the timed call")


def _check_lazy_eval(a: Analysis) -> tuple[bool, str]:
    hits = _safe(tensor_subclass.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents if ci.text in ("_make_subclass", "as_subclass")]
    return verdict(hits, "lazy_eval: tensor subclass / lazy evaluation hooks")


# ---------------------------------------------------------------------------
# warnings

def _check_pytorch_wrap(a: Analysis) -> tuple[bool, str]:
    hits = []
    for r in a.ctx.refs:
        if r.kind != "load" or not r.rooted or not r.qname.startswith("torch.nn."):
            continue
        part = r.qname.split(".")[2]
        if part not in NN_ALLOWED:
            hits.append(Hit(r.line, r.qname))
    return verdict(hits, "pytorch_wrap: uses torch.nn modules/functional instead of a custom kernel")


def _check_torch_computation_ops(a: Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    hits = []
    for c in ctx.calls:
        if not c.rooted or not c.qname or not c.qname.startswith("torch.") or c.qname.startswith("torch.nn.") \
                and not c.qname.startswith("torch.nn.functional."):
            continue
        op = ctx.torch_compute_op(c.node, None)
        if op:
            hits.append(Hit(c.line, op))
    return verdict(hits, "torch_computation_ops: high-level torch compute ops")


def _check_stream_injection(a: Analysis) -> tuple[bool, str]:
    hits = _safe(stream_graph.check, a.ctx)
    return verdict(hits, "stream_injection: non-default CUDA streams or graphs")


PRECISION_LABEL = "precision_downgrade: required FP32 but code uses"


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


def _extra_precision_hits(a: Analysis) -> list[Hit]:
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


def _check_precision_downgrade(a: Analysis) -> tuple[bool, str]:
    if not a.ctx.is_fp32:
        return False, ""
    hits = _safe(precision_rule.check, a.ctx) + _safe(_extra_precision_hits, a)
    if not hits:
        return False, ""
    return True, f"{PRECISION_LABEL} {_precision_classes(hits)}: {fmt_hits(hits)}"


# ---------------------------------------------------------------------------
# backend implementation checks

def _has_compile_path(a: Analysis) -> bool:
    ctx = a.ctx
    if any(r.rooted and ("cpp_extension" in r.qname or r.qname.endswith("load_inline")) for r in ctx.refs):
        return True
    return bool(a.idents() & {"load_inline", "cpp_extension"}) or bool(ctx.ext_modules)


def _cuda_like(a: Analysis, label: str) -> tuple[bool, str]:
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


def _check_cuda_impl(a: Analysis) -> tuple[bool, str]:
    return _cuda_like(a, "cuda_impl")


def _check_hip_impl(a: Analysis) -> tuple[bool, str]:
    bad, msg = _cuda_like(a, "hip_impl")
    hip = "hipcc" in a.code or any(ci.text.startswith("hip") for ci in a.ctx.cxx_idents) \
        or any(h.startswith("hip/") for _, h in a.ctx.cxx_headers)
    if not hip:
        return True, (msg + "; " if bad else "hip_impl: ") + "no HIP toolchain use (hipcc / hip* APIs)"
    return bad, msg


def _check_triton_impl(a: Analysis) -> tuple[bool, str]:
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


def _check_tk_impl(a: Analysis) -> tuple[bool, str]:
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


def _check_cute_impl(a: Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    for ci in ctx.cxx_idents:
        if ci.text in ("cute", "cutlass") and ci.next == "::" and ci.prev not in ("namespace",):
            return False, ""
    if any(r.rooted and (r.qname.startswith("cutlass") or ".cute" in r.qname) and r.kind == "load"
           for r in ctx.refs):
        return False, ""
    return True, "cute_impl: no CuTe/CUTLASS operations (cute::/cutlass:: uses beyond a namespace declaration)"


def _check_tilelang_impl(a: Analysis) -> tuple[bool, str]:
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


IMPLS: dict[str, Callable[[Analysis], tuple[bool, str]]] = {
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
