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
      Python but looks like C/C++/CUDA is analysed as one bare C++ source; Python that
      does not parse yields the error ``syntax_error`` (fail closed) instead of
      regex guesses.
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
           "WARNING_CHECKS", "validate_kernel_static"]

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


class _Analysis:
    def __init__(self, code: str, backend: str, precision: str) -> None:
        self.code = code
        self.syntax_error: str | None = None
        ctx = analyse(code, backend=backend, precision=precision)
        if ctx.tree is None:
            dedented = textwrap.dedent(code)
            if dedented != code:
                ctx2 = analyse(dedented, backend=backend, precision=precision)
                if ctx2.tree is not None:
                    ctx = ctx2
        if ctx.tree is None:
            if looks_like_cxx(code) and not _PYTHONISH.search(code):
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

def check_code_bypass(a: _Analysis) -> tuple[bool, str]:
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


def check_timing_event_patch(a: _Analysis) -> tuple[bool, str]:
    hits = [Hit(s.line, f"{s.how} {s.qname}") for s in a.ctx.stores
            if s.rooted and s.qname and match_prefix(s.qname, _TIMING_TARGETS)]
    return _verdict(hits, "timing_event_patch: timing function reassigned (monkey-patching the timer)")


def check_thread_injection(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(concurrency.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents
                 if ci.text in ("threading", "multiprocessing", "ThreadPoolExecutor", "ProcessPoolExecutor")]
    return _verdict(hits, "thread_injection: threads/processes can run work outside the timed call")


def check_lazy_eval(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(tensor_subclass.check, a.ctx)
    if a.ctx.raw_cxx:
        hits += [Hit(ci.line, ci.text) for ci in a.ctx.cxx_idents if ci.text in ("_make_subclass", "as_subclass")]
    return _verdict(hits, "lazy_eval: tensor subclass / lazy evaluation hooks")


# ---------------------------------------------------------------------------
# warnings

def check_pytorch_wrap(a: _Analysis) -> tuple[bool, str]:
    hits = []
    for r in a.ctx.refs:
        if r.kind != "load" or not r.rooted or not r.qname.startswith("torch.nn."):
            continue
        part = r.qname.split(".")[2]
        if part not in _NN_ALLOWED:
            hits.append(Hit(r.line, r.qname))
    return _verdict(hits, "pytorch_wrap: uses torch.nn modules/functional instead of a custom kernel")


def check_torch_computation_ops(a: _Analysis) -> tuple[bool, str]:
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


def check_stream_injection(a: _Analysis) -> tuple[bool, str]:
    hits = _safe(stream_graph.check, a.ctx)
    return _verdict(hits, "stream_injection: non-default CUDA streams or graphs")


def check_precision_downgrade(a: _Analysis) -> tuple[bool, str]:
    if not a.ctx.is_fp32:
        return False, ""
    hits = _safe(precision_rule.check, a.ctx)
    return _verdict(hits, "precision_downgrade: FP32 problem computed at reduced precision (fp16/bf16/tf32)")


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


def check_cuda_impl(a: _Analysis) -> tuple[bool, str]:
    return _cuda_like(a, "cuda_impl")


def check_hip_impl(a: _Analysis) -> tuple[bool, str]:
    bad, msg = _cuda_like(a, "hip_impl")
    hip = "hipcc" in a.code or any(ci.text.startswith("hip") for ci in a.ctx.cxx_idents) \
        or any(h.startswith("hip/") for _, h in a.ctx.cxx_headers)
    if not hip:
        return True, (msg + "; " if bad else "hip_impl: ") + "no HIP toolchain use (hipcc / hip* APIs)"
    return bad, msg


def check_triton_impl(a: _Analysis) -> tuple[bool, str]:
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


def check_tk_impl(a: _Analysis) -> tuple[bool, str]:
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


def check_cute_impl(a: _Analysis) -> tuple[bool, str]:
    ctx = a.ctx
    for ci in ctx.cxx_idents:
        if ci.text in ("cute", "cutlass") and ci.next == "::" and ci.prev not in ("namespace",):
            return False, ""
    if any(r.rooted and (r.qname.startswith("cutlass") or ".cute" in r.qname) and r.kind == "load"
           for r in ctx.refs):
        return False, ""
    return True, "cute_impl: no CuTe/CUTLASS operations (cute::/cutlass:: uses beyond a namespace declaration)"


def check_tilelang_impl(a: _Analysis) -> tuple[bool, str]:
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


CHECK_FUNCTIONS: dict[str, Callable[[_Analysis], tuple[bool, str]]] = {
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
            if name in done or name not in CHECK_FUNCTIONS:
                continue
            done.add(name)
            try:
                bad, msg = CHECK_FUNCTIONS[name](analysis)
            except Exception as e:  # noqa: BLE001 - report, never crash
                bad, msg = True, f"{name}: internal checker error ({type(e).__name__}: {e})"
            if bad:
                bucket.append(msg)
    return not errors, errors, warns
