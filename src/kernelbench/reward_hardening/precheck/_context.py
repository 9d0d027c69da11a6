"""Source analysis shared by the precheck rules.

The trusted parent never imports the candidate.  :class:`Context` parses the source
with :mod:`ast` once and derives everything the rules need:

* **name resolution** — import aliases (``import torch as T``, ``from torch import cuda
  as c``), assignment aliases (``ev = torch.cuda.Event``, ``self.ev = ...``), literal
  ``getattr(x, "a" + "b")``, ``importlib.import_module("m")`` / ``__import__("m")``,
  ``sys.modules["m"]``, ``vars(m)["a"]`` / ``m.__dict__["a"]`` and builtins, with
  lexical scoping so a local variable called ``open`` is not the builtin;
* **references** (maximal dotted chains), **calls**, **stores** (assignments,
  ``setattr``/``delattr``, ``del``, item writes and mutating method calls) and the
  non-docstring **string constants**;
* **string folding** — module-level and local string assignments, ``+``/``+=``,
  f-strings with known parts, ``"".join``, ``textwrap.dedent`` — so C/C++/CUDA sources
  passed to ``load_inline`` are recovered with their Python line numbers;
* the **C/C++ token stream** of every embedded source (see :mod:`._cxx`);
* **provenance facts** — declared CUDA/C++/Triton kernels and whether they are
  launched from ``ModelNew.forward``, high-level torch compute reachable from
  ``forward``, module constants.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _cxx

__all__ = ["Context", "Hit", "Rule", "SourceFacts", "hit", "match_prefix"]

BUILTIN_NAMES = frozenset(dir(builtins))
# Deepest AST nesting the analysis follows.  Real kernels nest a few dozen levels; a
# source nested deeper (say a 1,000-term `a + b + ...` chain) exhausts recursive
# helpers, so it gets RH-46 instead of a partial analysis (precheck/completeness.py).
MAX_ANALYSIS_DEPTH = 200
FUNC_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
DEF_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

# Names a candidate may use without importing them (the reference's namespace provides them)
IMPLICIT_MODULES = {
    "torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "np": "numpy", "numpy": "numpy",
    "tl": "triton.language", "triton": "triton", "time": "time", "os": "os", "sys": "sys", "gc": "gc",
    "math": "math", "random": "random", "threading": "threading", "multiprocessing": "multiprocessing",
    "subprocess": "subprocess", "ctypes": "ctypes", "inspect": "inspect", "builtins": "builtins",
    "importlib": "importlib", "functools": "functools", "load_inline": "torch.utils.cpp_extension.load_inline",
    "cpp_extension": "torch.utils.cpp_extension", "__builtins__": "builtins",
}

# API names worth reconstructing from ## token pastes
API_LIKE = re.compile(
    r"^(cuda|cu[A-Z]|cublas|cudnn|nccl|nvrtc|pthread_|dl(open|sym|mopen)$|fork$|vfork$|clone$|system$|popen$"
    r"|exec[lv]|posix_spawn|getenv$|setenv$|fopen$|mmap$|__half|half|__float2|__nv_|nv_bfloat|__bfloat|getStream)")


# ---------------------------------------------------------------------------
# hits and facts

@dataclass(frozen=True)
class Hit:
    line: int
    what: str
    extra: tuple = ()

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"line": self.line, "what": self.what}
        d.update(dict(self.extra))
        return d


def hit(line: int | None, what: str, **extra: Any) -> Hit:
    return Hit(int(line or 0), what, tuple(sorted(extra.items())))


@dataclass(frozen=True)
class Rule:
    """A static rule: ``check(ctx)`` returns the hits for ``code``.

    ``doc`` is the rule family's module docstring (What it catches / Why it matters /
    Example / Known limits).
    """

    code: str
    name: str
    check: Callable[[Context], list[Hit]]
    doc: str = ""


def match_prefix(qname: str | None, prefixes: Iterable[str]) -> str | None:
    """Return the first prefix ``p`` with ``qname == p`` or ``qname`` under ``p.``."""
    if not qname:
        return None
    for p in prefixes:
        if qname == p or qname.startswith(p + "."):
            return p
    return None


def _jsonable(v: Any, limit: int = 200) -> Any:
    if isinstance(v, str):
        return v if len(v) <= limit else f"<str len={len(v)}>"
    if isinstance(v, bytes):
        return f"<bytes len={len(v)}>"
    if isinstance(v, (list, tuple)):
        return [_jsonable(x, limit) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x, limit) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float)):
        return v
    return repr(v)


@dataclass
class SourceFacts:
    syntax_error: str | None = None
    imports: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    declared_kernels: list[dict] = field(default_factory=list)
    custom_backend_declared: bool = False
    forward_torch_ops: list[dict] = field(default_factory=list)
    has_model_new: bool = False
    module_constants: dict = field(default_factory=dict)
    extension_modules: list[dict] = field(default_factory=list)
    rule_errors: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "syntax_error": self.syntax_error,
            "imports": list(self.imports),
            "calls": list(self.calls),
            "declared_kernels": [dict(k) for k in self.declared_kernels],
            "custom_backend_declared": self.custom_backend_declared,
            "forward_torch_ops": [dict(o) for o in self.forward_torch_ops],
            "has_model_new": self.has_model_new,
            "module_constants": _jsonable(self.module_constants),
            "extension_modules": _jsonable(self.extension_modules),
            "rule_errors": [dict(e) for e in self.rule_errors],
        }


# ---------------------------------------------------------------------------
# records

@dataclass
class Ref:
    line: int
    qname: str
    rooted: bool  # first component is an imported module (or builtins)
    node: ast.AST
    kind: str  # load | import


@dataclass
class Store:
    line: int
    qname: str | None
    rooted: bool
    how: str  # assign | augassign | annassign | setattr | delattr | del | item | mutate
    node: ast.AST
    value: ast.AST | None = None
    detail: str = ""


@dataclass
class CallRef:
    line: int
    qname: str | None
    rooted: bool
    node: ast.Call
    method: str | None  # attribute name when func is an attribute


@dataclass
class Seg:
    text: str
    line: int
    multiline: bool
    node_id: int | None


@dataclass
class ExtModule:
    index: int
    line: int
    name: str | None
    kind: str  # load_inline | load
    lang: str  # cuda | cpp
    exposed: list[str] | None
    units: list[_cxx.Unit]
    sources_folded: bool
    node: ast.Call


@dataclass
class CIdent:
    text: str
    qual: str
    line: int
    prev: str
    next: str
    pasted: bool
    directive: bool
    unit: _cxx.Unit
    index: int


# module-level containers whose in-place mutation changes interpreter-wide state
_MODULE_CONTAINERS = {"sys.path", "sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache",
                      "sys.argv", "sys.orig_argv", "os.environ", "builtins.__dict__", "sys.flags", "sys.stdout",
                      "sys.stderr", "warnings.filters", "atexit._exithandlers"}
_MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove",
             "__setitem__", "__delitem__", "discard", "add"}

# torch.* top-level callables that allocate or describe tensors rather than compute the problem
TORCH_NONCOMPUTE = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "asarray", "as_strided", "from_numpy", "from_dlpack", "is_tensor",
    "is_floating_point", "is_complex", "numel", "get_default_dtype", "manual_seed", "seed", "initial_seed",
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "is_grad_enabled", "is_inference_mode_enabled",
    "device", "dtype", "Size", "finfo", "iinfo", "promote_types", "result_type", "can_cast", "broadcast_shapes",
    "Generator", "get_device", "Tensor", "Stream", "Event", "typename", "is_storage", "set_printoptions",
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli",
    # layout and data movement, not the problem's arithmetic
    "reshape", "flatten", "unflatten", "transpose", "permute", "squeeze", "unsqueeze", "narrow", "t",
    "broadcast_to", "chunk", "split", "tensor_split", "unbind", "movedim", "swapaxes", "view_as_real",
    "view_as_complex", "cat", "concat", "concatenate", "stack", "contiguous_format", "select", "clone",
}
TORCH_NONCOMPUTE_PREFIXES = ("torch.cuda", "torch.backends", "torch.utils", "torch.library", "torch.autograd",
                             "torch.jit", "torch.compile", "torch._dynamo", "torch._inductor", "torch.export",
                             "torch.compiler", "torch.distributed", "torch.testing", "torch.nn.init",
                             "torch.nn.Parameter", "torch.nn.parameter", "torch.nn.Module", "torch.nn.ModuleList",
                             "torch.nn.ModuleDict", "torch.nn.ParameterList", "torch.nn.ParameterDict",
                             "torch.nn.Identity", "torch.nn.Buffer", "torch.nn.utils", "torch.types",
                             "torch.version", "torch.hub", "torch.multiprocessing", "torch.profiler",
                             "torch.overrides", "torch.amp", "torch.cpu", "torch.mps", "torch.xpu", "torch.random",
                             "torch.fx", "torch.futures", "torch.classes", "torch.serialization", "torch.load",
                             "torch.save", "torch.set_", "torch.get_", "torch.use_deterministic_algorithms",
                             "torch.are_deterministic", "torch.is_", "torch.dtype", "torch.float", "torch.half",
                             "torch.bfloat16", "torch.int", "torch.long", "torch.bool", "torch.double")
# methods that run when an object is built, not when it is used
CONSTRUCTION_METHODS = frozenset({"__init__", "__new__", "__init_subclass__", "__set_name__", "__post_init__"})
NN_CONTAINERS = {"Module", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict", "Identity",
                 "Buffer", "UninitializedParameter", "UninitializedBuffer"}
TENSOR_COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "addmm", "addmm_", "addbmm", "baddbmm", "addmv", "addr", "outer",
    "ger", "sum", "nansum", "mean", "nanmean", "prod", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
    "logsumexp", "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "std", "var", "norm", "renorm",
    "softmax", "log_softmax", "relu", "relu_", "sigmoid", "sigmoid_", "tanh", "tanh_", "exp", "exp_", "expm1",
    "log", "log_", "log1p", "log2", "log10", "sqrt", "sqrt_", "rsqrt", "pow", "pow_", "abs", "abs_", "neg",
    "reciprocal", "clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_max", "sin", "cos", "erf", "add",
    "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "true_divide", "floor_divide", "fmod", "remainder",
    "addcmul", "addcdiv", "lerp", "maximum", "minimum", "masked_fill", "masked_fill_", "triu", "tril", "sort",
    "topk", "kthvalue", "median", "mode", "square", "sign", "round", "floor", "ceil", "diag", "trace", "cross",
    "scatter_add", "scatter_add_", "index_add", "index_add_", "gather", "index_select", "matrix_power",
    "matrix_exp", "inverse", "cholesky", "det", "logdet", "einsum", "hardtanh", "silu", "gelu", "mish",
    "softplus", "square_", "__matmul__", "__rmatmul__", "conv2d", "conv1d", "conv3d", "linear", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "tensordot", "kron", "cumulative_trapezoid", "trapz", "histc",
}


# ---------------------------------------------------------------------------
# literal folding helpers

def literal_value(node: ast.AST, _depth: int = 0) -> tuple[bool, Any]:
    """(ok, value) for literals and simple arithmetic on literals (nested at most
    ``MAX_ANALYSIS_DEPTH`` levels; deeper expressions are not literals here)."""
    if _depth > MAX_ANALYSIS_DEPTH:
        return False, None
    d = _depth + 1
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        vals = []
        for e in node.elts:
            ok, v = literal_value(e, d)
            if not ok:
                return False, None
            vals.append(v)
        return True, tuple(vals) if isinstance(node, ast.Tuple) else vals
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        ok, v = literal_value(node.operand, d)
        if ok and isinstance(v, (int, float)) and not isinstance(v, bool):
            return True, -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        ok1, a = literal_value(node.left, d)
        ok2, b = literal_value(node.right, d)
        if ok1 and ok2 and isinstance(a, (int, float)) and isinstance(b, (int, float)) \
                and not isinstance(a, bool) and not isinstance(b, bool):
            try:
                if isinstance(node.op, ast.Add):
                    return True, a + b
                if isinstance(node.op, ast.Sub):
                    return True, a - b
                if isinstance(node.op, ast.Mult):
                    return True, a * b
                if isinstance(node.op, ast.FloorDiv) and b:
                    return True, a // b
                if isinstance(node.op, ast.Div) and b:
                    return True, a / b
                if isinstance(node.op, ast.Pow) and abs(b) <= 64:
                    return True, a ** b
                if isinstance(node.op, ast.LShift) and 0 <= b <= 64:
                    return True, a << b
            except Exception:
                return False, None
    return False, None


# ---------------------------------------------------------------------------

class Context:
    """Everything the rules need, computed once per candidate source."""

    def __init__(self, src: str, reference_src: str | None = None, policy: str = "source_strict",
                 backend: str = "cuda", precision: str = "fp32", raw_cxx: bool = False) -> None:
        """``raw_cxx=True`` treats the whole text as one C/C++/CUDA source (no Python)."""
        self.src = src
        self.reference_src = reference_src
        self.policy = policy
        self.backend = (backend or "cuda").lower()
        self.precision = (precision or "fp32").lower()
        self.facts = SourceFacts()
        self.tree: ast.Module | None = None
        # filled by _build
        self.parent: dict[ast.AST, ast.AST] = {}
        self.max_depth = 0  # deepest AST nesting (the module is depth 0)
        self.max_depth_line = 0
        self.refs: list[Ref] = []
        self.stores: list[Store] = []
        self.calls: list[CallRef] = []
        self.strings: list[tuple[int, str, ast.Constant]] = []
        self.attr_refs: list[tuple[int, str, ast.AST]] = []
        self.name_loads: list[tuple[int, str, ast.Name]] = []
        self.imports: list[tuple[int, str, ast.AST]] = []
        self.classes: dict[str, ast.ClassDef] = {}
        self.funcs: dict[str, list[ast.AST]] = {}
        self.model_new: ast.ClassDef | None = None
        self.reachable: set[ast.AST] = set()
        self.fn_class: dict[ast.AST, str | None] = {}
        self.ext_modules: list[ExtModule] = []
        self.units: list[_cxx.Unit] = []
        self.cxx_idents: list[CIdent] = []
        self.cxx_strings: list[tuple[int, str]] = []
        self.cxx_headers: list[tuple[int, str]] = []
        self.jit_funcs: dict[str, ast.AST] = {}
        self.exposed_names: set[str] = set()
        self.custom_op_namespaces: set[str] = set()
        self.python_called: set[str] = set()
        self.docstring_ids: set[int] = set()
        self.ref_constants: dict[str, Any] = {}
        self.ref_defs: dict[str, str] = {}
        self.ref_assigns: dict[str, ast.AST] = {}  # reference module-level NAME -> its final value expression
        self.module_level_bindings: list[tuple[int, str, ast.AST, ast.AST | None]] = []
        self._alias: dict[str, list[tuple[ast.AST | None, str, bool]]] = {}
        self._dotted_alias: dict[str, tuple[str, bool]] = {}
        self._bound: dict[ast.AST | None, set[str]] = {}
        self._scope_cache: dict[ast.AST, ast.AST | None] = {}
        self._env: dict[str, tuple[str, Any]] = {}
        self._star: list[str] = []
        self.self_attr_types: dict[tuple[str, str], tuple[str, bool]] = {}
        self._module_values: dict[str, list[ast.AST]] | None = None
        self._self_values: dict[tuple[str, str], list[ast.AST]] = {}
        self._class_patches: dict[str, list[ast.AST]] | None = None
        self.triton_launched: set[str] = set()
        self.raw_cxx = raw_cxx
        if raw_cxx:
            self.tree = ast.parse("")
            self._build()
            return
        try:
            self.tree = ast.parse(src)
        except SyntaxError as e:
            self.facts.syntax_error = f"line {e.lineno}: {e.msg}"
        except (ValueError, RecursionError, MemoryError, TypeError) as e:
            self.facts.syntax_error = f"{type(e).__name__}: {e}"
        if self.tree is not None:
            self._build()

    # -- small helpers ----------------------------------------------------
    @property
    def is_fp32(self) -> bool:
        return self.precision in ("fp32", "float32", "f32", "torch.float32")

    def note(self, step: str, exc: BaseException) -> None:
        self.facts.rule_errors.append({"code": "precheck", "rule": step, "error": f"{type(exc).__name__}: {exc}"})

    def _build(self) -> None:
        steps = [
            ("parents", self._index_parents),
            ("scopes", self._index_scopes),
            ("imports", self._collect_imports),
            ("fold", self._collect_env),  # string constants for getattr(x, NAME) during aliasing
            ("aliases", self._collect_aliases),
            ("fold", self._collect_env),  # again, now that textwrap/str aliases resolve
            ("walk", self._walk),
            ("defs", self._collect_defs),
            ("reach", self._compute_reach),
            ("extensions", self._collect_extensions),
            ("cxx", self._collect_cxx),
            ("kernels", self._collect_kernels),
            ("forward_ops", self._collect_forward_ops),
            ("constants", self._collect_constants),
            ("reference", self._collect_reference),
        ]
        for name, fn in steps:
            try:
                fn()
            except RecursionError as e:  # pathological nesting: keep going with what we have
                self.note(name, e)
            except Exception as e:  # noqa: BLE001 - a broken analysis step must not crash the precheck
                self.note(name, e)

    # -- parents and scopes ---------------------------------------------
    def _index_parents(self) -> None:
        depth = {self.tree: 0}
        for node in ast.walk(self.tree):  # breadth first: a parent's depth is known before its children's
            d = depth.get(node, 0) + 1  # (expression contexts such as ast.Load are shared singletons)
            for ch in ast.iter_child_nodes(node):
                self.parent[ch] = node
                depth[ch] = d
                if d > self.max_depth:
                    self.max_depth, self.max_depth_line = d, getattr(ch, "lineno", 0) or self.max_depth_line
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                self.docstring_ids.add(id(node.value))

    def scope_of(self, node: ast.AST) -> ast.AST | None:
        """Nearest enclosing function, lambda or class (None: module)."""
        if node in self._scope_cache:
            return self._scope_cache[node]
        p = self.parent.get(node)
        child = node
        while p is not None:
            if isinstance(p, FUNC_NODES + (ast.ClassDef,)):
                # decorators, defaults and bases belong to the outer scope
                if isinstance(p, FUNC_NODES) and child in getattr(p, "decorator_list", []):
                    pass
                elif isinstance(p, ast.ClassDef) and (child in p.bases or child in p.decorator_list
                                                      or child in p.keywords):
                    pass
                elif isinstance(p, FUNC_NODES) and child is getattr(p, "returns", None):
                    pass
                else:
                    break
            child = p
            p = self.parent.get(p)
        self._scope_cache[node] = p
        return p

    def scope_chain(self, node: ast.AST) -> list[ast.AST | None]:
        chain: list[ast.AST | None] = []
        s = self.scope_of(node)
        first = True
        while s is not None:
            if first or not isinstance(s, ast.ClassDef):
                chain.append(s)
            first = False
            s = self.scope_of(s)
        chain.append(None)
        return chain

    def _bind(self, scope: ast.AST | None, name: str) -> None:
        self._bound.setdefault(scope, set()).add(name)

    def _index_scopes(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind(self.scope_of(node), node.id)
            elif isinstance(node, DEF_NODES):
                self._bind(self.scope_of(node), node.name)
            elif isinstance(node, ast.arg):
                self._bind(self.scope_of(node), node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(self.scope_of(node), node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        self._bind(self.scope_of(node), a.asname or a.name.split(".")[0])
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and getattr(node, "name", None):
                self._bind(self.scope_of(node), node.name)

    # -- imports and aliases --------------------------------------------
    def _add_alias(self, scope: ast.AST | None, name: str, qname: str, rooted: bool) -> None:
        entries = self._alias.setdefault(name, [])
        entries[:] = [e for e in entries if e[0] is not scope]
        entries.append((scope, qname, rooted))

    def _collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports.append((node.lineno, a.name, node))
                    if a.asname:
                        self._add_alias(self.scope_of(node), a.asname, a.name, True)
                    else:
                        top = a.name.split(".")[0]
                        self._add_alias(self.scope_of(node), top, top, True)
            elif isinstance(node, ast.ImportFrom):
                mod = "." * (node.level or 0) + (node.module or "")
                for a in node.names:
                    if a.name == "*":
                        self._star.append(mod)
                        self.imports.append((node.lineno, f"{mod}.*", node))
                        continue
                    q = f"{mod}.{a.name}" if not mod.endswith(".") else f"{mod}{a.name}"
                    self.imports.append((node.lineno, q, node))
                    self._add_alias(self.scope_of(node), a.asname or a.name, q, True)
        mods = set()
        for _, q, node in self.imports:
            if isinstance(node, ast.Import):
                mods.add(q)
            else:
                mods.add("." * (node.level or 0) + (node.module or ""))
        self.facts.imports = sorted(m for m in mods if m)

    def _assign_pairs(self, target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                yield from self._assign_pairs(t, v)
        else:
            yield target, value

    def _collect_aliases(self) -> None:
        assigns: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    assigns.extend(self._assign_pairs(t, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                assigns.append((node.target, node.value))
        assigns.sort(key=lambda tv: (getattr(tv[0], "lineno", 0), getattr(tv[0], "col_offset", 0)))
        for _ in range(2):
            for target, value in assigns:
                if isinstance(value, (ast.Constant, ast.JoinedStr)):
                    continue
                r = self._res(value)
                if r is None:
                    continue
                qname, rooted = r
                if isinstance(target, ast.Name):
                    if qname == target.id and not rooted:
                        continue  # (torch = importlib.import_module("torch") is a rooted alias of itself)
                    if not rooted and not isinstance(value, (ast.Name, ast.Attribute)):
                        continue
                    self._add_alias(self.scope_of(target), target.id, qname, rooted)
                elif isinstance(target, ast.Attribute) and (rooted or isinstance(value, (ast.Name, ast.Attribute))):
                    base = self._res(target.value)
                    if base is not None and base[1]:
                        continue  # a write into a module is tampering (RH-05), not an alias
                    dotted = self._dotted(target)
                    if dotted:
                        self._dotted_alias[dotted] = (qname, rooted)

    @staticmethod
    def _dotted(node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    def _res_name(self, name: str, node: ast.AST) -> tuple[str, bool]:
        entries = self._alias.get(name, ())
        for scope in self.scope_chain(node):
            for s, q, rooted in entries:
                if s is scope:
                    return q, rooted
            if name in self._bound.get(scope, ()):
                return name, False
        if name in BUILTIN_NAMES:
            return f"builtins.{name}", True
        if name in IMPLICIT_MODULES:
            # used without being imported: in KernelBench the candidate runs in the
            # reference's namespace, where these names are the usual modules
            return IMPLICIT_MODULES[name], True
        if self._star:
            return f"{self._star[-1]}.{name}", True
        return name, False

    def _res(self, node: ast.AST | None) -> tuple[str, bool] | None:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self._res_name(node.id, node)
        if isinstance(node, ast.Attribute):
            dotted = self._dotted(node)
            if dotted and dotted in self._dotted_alias:
                return self._dotted_alias[dotted]
            base = self._res(node.value)
            if base is None:
                return None
            return f"{base[0]}.{node.attr}", base[1]
        if isinstance(node, ast.Call):
            fr = self._res(node.func)
            if fr is None:
                return None
            fq = fr[0]
            if fq == "builtins.getattr" and len(node.args) >= 2:
                name = self.fold_str(node.args[1])
                base = self._res(node.args[0])
                if name is not None and base is not None:
                    return f"{base[0]}.{name}", base[1]
                return None
            if fq in ("importlib.import_module", "builtins.__import__", "importlib.__import__") and node.args:
                name = self.fold_str(node.args[0])
                if name and not name.startswith("."):
                    if fq.endswith("__import__") and not any(k.arg == "fromlist" for k in node.keywords) \
                            and len(node.args) < 4:
                        name = name.split(".")[0]
                    return name, True
                return None
            if fq == "builtins.vars" and len(node.args) == 1:
                base = self._res(node.args[0])
                if base is not None:
                    return f"{base[0]}.__dict__", base[1]
            return None
        if isinstance(node, ast.Subscript):
            key = self.fold_str(node.slice)
            if key is None:
                return None
            base = self._res(node.value)
            if base is None:
                return None
            if base[0] == "sys.modules" and base[1]:
                return key, True
            if base[0].endswith(".__dict__"):
                return f"{base[0][:-len('.__dict__')]}.{key}", base[1]
            return None
        return None

    def resolve(self, node: ast.AST | None) -> str | None:
        r = self._res(node)
        return r[0] if r else None

    def resolve_rooted(self, node: ast.AST | None) -> str | None:
        r = self._res(node)
        return r[0] if r and r[1] else None

    # -- string folding -------------------------------------------------
    def _seg_of(self, node: ast.Constant) -> Seg:
        multi = (getattr(node, "end_lineno", node.lineno) or node.lineno) != node.lineno
        return Seg(node.value, node.lineno, multi, id(node))

    def fold_segs(self, node: ast.AST | None, partial: bool = False, _depth: int = 0) -> list[Seg] | None:
        if node is None or _depth > 40:
            return None
        d = _depth + 1
        if isinstance(node, ast.Constant):
            return [self._seg_of(node)] if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            out: list[Seg] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(self._seg_of(v))
                elif isinstance(v, ast.FormattedValue):
                    inner = self.fold_segs(v.value, partial, d)
                    if inner is None:
                        ok, lit = literal_value(v.value)
                        if ok and lit is not None:
                            inner = [Seg(str(lit), getattr(v, "lineno", 0), False, None)]
                    if inner is None:
                        if not partial:
                            return None
                        inner = [Seg(" ", getattr(v, "lineno", 0), False, None)]
                    out.extend(inner)
            return out
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                a = self.fold_segs(node.left, partial, d)
                b = self.fold_segs(node.right, partial, d)
                if a is None or b is None:
                    if not partial:
                        return None
                    return (a or []) + (b or []) or None
                return a + b
            if isinstance(node.op, ast.Mod) and partial:
                return self.fold_segs(node.left, partial, d)
            return None
        if isinstance(node, ast.Name):
            v = self._env.get(node.id)
            if v is not None and v[0] == "str":
                return list(v[1])
            return None
        if isinstance(node, ast.Call):
            fq = self.resolve(node.func) or ""
            if fq in ("textwrap.dedent", "inspect.cleandoc", "builtins.str") and len(node.args) == 1:
                return self.fold_segs(node.args[0], partial, d)
            if isinstance(node.func, ast.Attribute):
                meth = node.func.attr
                if meth in ("strip", "lstrip", "rstrip") and not node.args:
                    return self.fold_segs(node.func.value, partial, d)
                if meth == "format" and partial:
                    return self.fold_segs(node.func.value, partial, d)
                if meth == "join" and len(node.args) == 1:
                    sep = self.fold_segs(node.func.value, False, d)
                    items = self.fold_list(node.args[0], partial, d)
                    if sep is None or items is None:
                        return None
                    out = []
                    for k, it in enumerate(items):
                        if k:
                            out.extend(sep)
                        out.extend(it)
                    return out
                if meth == "replace" and len(node.args) == 2:
                    base = self.fold_segs(node.func.value, partial, d)
                    old = self.fold_str(node.args[0])
                    new = self.fold_str(node.args[1])
                    if base is None or old is None or new is None:
                        return None
                    text = "".join(s.text for s in base).replace(old, new)
                    return [Seg(text, base[0].line if base else 0, True, None)]
            return None
        return None

    def fold_list(self, node: ast.AST | None, partial: bool = False, _depth: int = 0) -> list[list[Seg]] | None:
        if node is None or _depth > 40:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    sub = self.fold_list(e.value, partial, _depth + 1)
                    if sub is None:
                        if partial:
                            continue
                        return None
                    out.extend(sub)
                    continue
                s = self.fold_segs(e, partial, _depth + 1)
                if s is None:
                    sub = self.fold_list(e, partial, _depth + 1) if isinstance(e, ast.Name) else None
                    if sub is not None:
                        out.extend(sub)
                        continue
                    if partial:
                        continue
                    return None
                out.append(s)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a = self.fold_list(node.left, partial, _depth + 1)
            b = self.fold_list(node.right, partial, _depth + 1)
            if a is None or b is None:
                s = self.fold_segs(node, partial, _depth + 1)
                return [s] if s is not None else None
            return a + b
        if isinstance(node, ast.Name):
            v = self._env.get(node.id)
            if v is not None:
                return list(v[1]) if v[0] == "list" else [list(v[1])]
            return None
        s = self.fold_segs(node, partial, _depth + 1)
        return [s] if s is not None else None

    def fold_str(self, node: ast.AST | None) -> str | None:
        segs = self.fold_segs(node, partial=False)
        if segs is None:
            return None
        return "".join(s.text for s in segs)

    def _collect_env(self) -> None:
        self._env = {}

        def visit(body: list[ast.stmt]) -> None:
            for st in body:
                if isinstance(st, ast.Assign):
                    for t in st.targets:
                        for tt, vv in self._assign_pairs(t, st.value):
                            if isinstance(tt, ast.Name):
                                self._env_set(tt.id, vv)
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    self._env_set(st.target.id, st.value)
                elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) \
                        and isinstance(st.op, ast.Add):
                    cur = self._env.get(st.target.id)
                    if cur is not None and cur[0] == "str":
                        add = self.fold_segs(st.value, partial=True)
                        if add is not None:
                            self._env[st.target.id] = ("str", list(cur[1]) + add)
                    elif cur is not None and cur[0] == "list":
                        add = self.fold_list(st.value, partial=True)
                        if add is not None:
                            self._env[st.target.id] = ("list", list(cur[1]) + add)
                elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                        and isinstance(st.value.func, ast.Attribute) and isinstance(st.value.func.value, ast.Name) \
                        and st.value.func.attr in ("append", "extend") and st.value.args:
                    cur = self._env.get(st.value.func.value.id)
                    if cur is not None and cur[0] == "list":
                        if st.value.func.attr == "append":
                            add = self.fold_segs(st.value.args[0], partial=True)
                            add_l = [add] if add is not None else None
                        else:
                            add_l = self.fold_list(st.value.args[0], partial=True)
                        if add_l is not None:
                            self._env[st.value.func.value.id] = ("list", list(cur[1]) + add_l)
                for fld in ("body", "orelse", "finalbody", "handlers"):
                    sub = getattr(st, fld, None)
                    if isinstance(sub, list):
                        visit([s for s in sub if isinstance(s, ast.stmt)] +
                              [s for h in sub if isinstance(h, ast.ExceptHandler) for s in h.body])
                if isinstance(st, ast.Match):
                    for case in st.cases:
                        visit(case.body)

        visit(self.tree.body)

    def _env_set(self, name: str, value: ast.AST) -> None:
        if isinstance(value, (ast.List, ast.Tuple)):
            lst = self.fold_list(value, partial=True)
            if lst is not None:
                self._env[name] = ("list", lst)
            return
        segs = self.fold_segs(value, partial=True)
        if segs is not None:
            self._env[name] = ("str", segs)

    # -- one pass over the tree -----------------------------------------
    def _is_chain(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return True
        if isinstance(node, ast.Subscript):
            return True
        if isinstance(node, ast.Call):
            fq = self.resolve(node.func)
            return fq in ("builtins.getattr", "importlib.import_module", "builtins.__import__", "builtins.vars")
        return False

    def _walk(self) -> None:
        for node in ast.walk(self.tree):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.docstring_ids:
                self.strings.append((line, node.value, node))
            if isinstance(node, ast.Attribute):
                self.attr_refs.append((line, node.attr, node))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.name_loads.append((line, node.id, node))
            # maximal chains
            if self._is_chain(node) and not (isinstance(node, (ast.Name, ast.Attribute, ast.Subscript))
                                             and not isinstance(getattr(node, "ctx", ast.Load()), ast.Load)):
                par = self.parent.get(node)
                if not (isinstance(par, ast.Attribute) and par.value is node):
                    r = self._res(node)
                    if r is not None:
                        self.refs.append(Ref(line, r[0], r[1], node, "load"))
            if isinstance(node, ast.Call):
                r = self._res(node.func)
                method = node.func.attr if isinstance(node.func, ast.Attribute) else None
                self.calls.append(CallRef(line, r[0] if r else None, bool(r and r[1]), node, method))
                self._call_stores(node, r[0] if r else None)
                if r and r[0] in ("builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.hasattr") \
                        and len(node.args) >= 2:
                    name = self.fold_str(node.args[1])
                    if name is not None:
                        self.attr_refs.append((line, name, node))
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                how = {ast.Assign: "assign", ast.AugAssign: "augassign", ast.AnnAssign: "annassign"}[type(node)]
                for t in targets:
                    for tt in self._flatten_targets(t):
                        self._target_store(tt, how, node, getattr(node, "value", None))
            elif isinstance(node, ast.Delete):
                for t in node.targets:
                    for tt in self._flatten_targets(t):
                        self._target_store(tt, "del", node, None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                pass
        for line, q, node in self.imports:
            self.refs.append(Ref(line, q, True, node, "import"))
        self.facts.calls = sorted({c.qname for c in self.calls if c.qname})

    @staticmethod
    def _flatten_targets(t: ast.AST) -> Iterator[ast.AST]:
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from Context._flatten_targets(e)
        elif isinstance(t, ast.Starred):
            yield from Context._flatten_targets(t.value)
        else:
            yield t

    def _target_store(self, t: ast.AST, how: str, stmt: ast.AST, value: ast.AST | None) -> None:
        line = getattr(t, "lineno", getattr(stmt, "lineno", 0))
        if isinstance(t, ast.Attribute):
            # resolve the object written into, never an alias named after the target itself
            base = self._res(t.value)
            self.stores.append(Store(line, f"{base[0]}.{t.attr}" if base else None, bool(base and base[1]), how,
                                     stmt, value))
        elif isinstance(t, ast.Subscript):
            r = self._res(t)
            if r is not None:
                self.stores.append(Store(line, r[0], r[1], how, stmt, value, "item"))
            else:
                base = self._res(t.value)
                if base is not None:
                    self.stores.append(Store(line, base[0], base[1], "item" if how != "del" else "del", stmt,
                                             value, "container"))
        elif isinstance(t, ast.Name):
            self.stores.append(Store(line, t.id, False, how, stmt, value))

    def _call_stores(self, node: ast.Call, fq: str | None) -> None:
        line = node.lineno
        args = node.args
        if fq in ("builtins.setattr", "builtins.delattr") and len(args) >= 2:
            base = self._res(args[0])
            if base is not None:
                name = self.fold_str(args[1])
                q = f"{base[0]}.{name}" if name is not None else f"{base[0]}.<dynamic>"
                self.stores.append(Store(line, q, base[1], fq.split(".")[-1], node,
                                         args[2] if len(args) > 2 else None))
            return
        if fq in ("operator.setitem", "operator.delitem", "operator.__setitem__", "operator.__delitem__") \
                and len(args) >= 2:
            base = self._res(args[0])
            if base is not None and base[1]:
                key = self.fold_str(args[1])
                if base[0].endswith(".__dict__") and key is not None:
                    self.stores.append(Store(line, f"{base[0][:-9]}.{key}", True, "item", node,
                                             args[2] if len(args) > 2 else None, "item"))
                else:
                    self.stores.append(Store(line, base[0], True, "item", node, None, "container"))
            return
        if isinstance(node.func, ast.Attribute):
            meth = node.func.attr
            if meth in ("__setattr__", "__delattr__"):
                recv = self._res(node.func.value)
                if recv is not None and recv[0] in ("builtins.object", "builtins.type") and len(args) >= 2:
                    base = self._res(args[0])
                    name = self.fold_str(args[1])
                    if base is not None:
                        self.stores.append(Store(line, f"{base[0]}.{name or '<dynamic>'}", base[1],
                                                 "setattr" if meth == "__setattr__" else "delattr", node,
                                                 args[2] if len(args) > 2 else None))
                elif recv is not None and args:
                    name = self.fold_str(args[0])
                    self.stores.append(Store(line, f"{recv[0]}.{name or '<dynamic>'}", recv[1],
                                             "setattr" if meth == "__setattr__" else "delattr", node,
                                             args[1] if len(args) > 1 else None))
                return
            if meth in _MUTATORS:
                recv = self._res(node.func.value)
                if recv is not None and recv[1] and (meth.startswith("__") or recv[0].endswith(".__dict__")
                                                     or recv[0] in _MODULE_CONTAINERS):
                    self.stores.append(Store(line, recv[0], True, "mutate", node, None, meth))

    # -- classes, functions, ModelNew -------------------------------------
    def _collect_defs(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not isinstance(self.parent.get(node), ast.ClassDef):
                    self.funcs.setdefault(node.name, []).append(node)
        module_stmts = list(self._module_level_stmts(self.tree.body))
        for st in module_stmts:
            if isinstance(st, ast.ClassDef) and st.name == "ModelNew":
                self.model_new = st
        if self.model_new is None:
            for st in module_stmts:
                if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew"
                                                      for t in st.targets):
                    if isinstance(st.value, ast.Name) and st.value.id in self.classes:
                        self.model_new = self.classes[st.value.id]
                    else:
                        self.facts.has_model_new = True
        self.facts.has_model_new = self.facts.has_model_new or self.model_new is not None
        # self.X = <call>  /  self.X = <function name>
        for cname, cls in self.classes.items():
            for node in ast.walk(cls):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            v = node.value
                            if isinstance(v, ast.Call):
                                r = self._res(v.func)
                                if r is not None:
                                    self.self_attr_types[(cname, t.attr)] = r
                            elif isinstance(v, ast.Name):
                                self.self_attr_types[(cname, t.attr)] = (f"func:{v.id}", False)

    def class_bases(self, cls: ast.ClassDef) -> list[str]:
        out = []
        for b in cls.bases:
            q = self.resolve(b)
            if q:
                out.append(q)
        return out

    def base_chain(self, cls: ast.ClassDef, direct: Callable[[ast.expr], str | None],
                   seen: set[str] | None = None) -> str | None:
        """The first base of ``cls`` that ``direct`` names, looked up through this file's classes.

        The answer is ``direct``'s name for it, prefixed ``"Local -> "`` for each local class
        it was reached through; ``None`` when no base qualifies.
        """
        seen = set() if seen is None else seen
        if cls.name in seen:
            return None
        seen.add(cls.name)
        for b in cls.bases:
            found = direct(b)
            if found:
                return found
            if isinstance(b, ast.Name) and b.id in self.classes and b.id != cls.name:
                found = self.base_chain(self.classes[b.id], direct, seen)
                if found:
                    return f"{b.id} -> {found}"
        return None

    def methods(self, cname: str, meth: str, _seen: set | None = None) -> list[ast.AST]:
        """``meth`` looked up along the file-local base classes of ``cname``."""
        _seen = _seen or set()
        if cname in _seen or cname not in self.classes:
            return []
        _seen.add(cname)
        cls = self.classes[cname]
        for st in cls.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == meth:
                return [st]
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                found = self.methods(b.id, meth, _seen)
                if found:
                    return found
        return []

    def iter_body(self, fn: ast.AST) -> Iterator[ast.AST]:
        """Nodes of a function (or module) body, not descending into nested defs/classes."""
        stack = list(fn.body) if isinstance(fn.body, list) else [fn.body]
        if isinstance(fn, FUNC_NODES):
            stack += list(fn.args.defaults) + [d for d in fn.args.kw_defaults if d is not None]
        while stack:
            n = stack.pop()
            yield n
            for ch in ast.iter_child_nodes(n):
                if isinstance(ch, DEF_NODES):
                    continue
                stack.append(ch)

    def as_attribute(self, node: ast.AST) -> ast.AST:
        """``getattr(obj, "na" + "me")`` as the ``obj.name`` it is (other nodes unchanged).

        Calls whose callee is such a ``getattr`` become calls of the attribute.  The
        synthesised nodes reuse the original receiver, so name resolution still works.
        """
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
            f = self.as_attribute(node.func)
            if f is not node.func:
                return ast.copy_location(ast.Call(f, node.args, node.keywords), node)
            return node
        if isinstance(node, ast.Call) and len(node.args) == 2 and not node.keywords \
                and isinstance(node.func, ast.Name) and (self.resolve(node.func) or "") == "builtins.getattr":
            name = self.fold_str(node.args[1])
            if name and name.isidentifier():
                return ast.copy_location(ast.Attribute(node.args[0], name, ast.Load()), node)
        return node

    def edges(self, nodes: Iterable[ast.AST], cls: str | None) -> Iterator[tuple[ast.AST, str | None]]:
        for node in nodes:
            node = self.as_attribute(node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                q = self.resolve(node) or node.id
                for f in self.funcs.get(q.split(".")[-1] if not q.startswith("builtins.") else "", []):
                    # a def nested in a method closes over (or is handed) that method's self
                    yield f, (None if self.parent.get(f) is self.tree else cls)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                recv, m = node.value, node.attr
                if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and cls:
                    for f in self.methods(cls, m):
                        yield f, cls
                    t = self.self_attr_types.get((cls, m))
                    if t and t[0].startswith("func:"):
                        for f in self.funcs.get(t[0][5:], []):
                            yield f, None
                elif isinstance(recv, ast.Name) and recv.id in self.classes:
                    target = "forward" if m == "apply" else m
                    for f in self.methods(recv.id, target):
                        yield f, recv.id
                elif isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) \
                        and recv.value.id == "self" and cls:
                    t = self.self_attr_types.get((cls, recv.attr))
                    if t and t[0] in self.classes:
                        for f in self.methods(t[0], m):
                            yield f, t[0]
                elif isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" \
                        and cls and cls in self.classes:
                    for b in self.classes[cls].bases:
                        if isinstance(b, ast.Name) and b.id in self.classes:
                            for f in self.methods(b.id, m):
                                yield f, b.id
            elif isinstance(node, ast.Call):
                f = node.func
                # self.sub(x) where self.sub = LocalModule(...)
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and cls:
                    t = self.self_attr_types.get((cls, f.attr))
                    if t and t[0] in self.classes:
                        for meth in ("forward", "__call__"):
                            for g in self.methods(t[0], meth):
                                yield g, t[0]
            if isinstance(node, ast.Call) and cls and isinstance(node.func, ast.Name) and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                # helper(self, ...): a module-level function used as a method of cls
                for g in self.funcs.get(node.func.id, []):
                    yield g, cls
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                # a file-local class named in reachable code is created (or handed out to be
                # created) there: every method of it may run, dunders and properties included
                c = self.local_class(node)
                if c is not None:
                    yield from self.class_edges(c, created=True)
                elif node.id not in self.funcs:
                    for value in self.module_values(node):
                        yield from self.value_edges(value, cls, set())
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self" and cls:
                for value in self.self_attr_values(cls, node.attr):
                    yield from self.value_edges(value, cls, set())
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield node, cls  # a nested def/lambda node handed to us directly

    # -- value flow: objects made outside forward and used inside it -----------
    def local_class(self, node: ast.AST) -> str | None:
        """The file-local class a ``Name`` (or alias of one) refers to, else None."""
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.classes:
            return node.id
        q = self.resolve(node) or ""
        return q if q in self.classes else None

    def class_edges(self, cname: str, created: bool,
                    _seen: set[str] | None = None) -> Iterator[tuple[ast.AST, str | None]]:
        """Every method of ``cname`` and its file-local bases, with ``cname`` as ``self``'s class.

        ``created=False`` (an instance built outside ``forward``, e.g. in ``__init__``)
        leaves out the construction methods, which ran before ``forward``.  Class-level
        assignments (``__iter__ = _helper``, ``forward = staticmethod(_impl)``) and the
        methods' decorators flow in too.
        """
        _seen = set() if _seen is None else _seen
        if cname in _seen or cname not in self.classes:
            return
        _seen.add(cname)
        cls = self.classes[cname]
        for st in self._module_level_stmts(cls.body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not created and st.name in CONSTRUCTION_METHODS:
                    continue
                yield st, cname
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
                yield from self.value_edges(st.value, cname, set())
        # methods attached later: Lazy.__iter__ = f / setattr(Lazy, "__iter__", f)
        for value in self.class_patches(cname):
            yield from self.value_edges(value, cname, set())
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                yield from self.class_edges(b.id, created, _seen)

    def class_patches(self, cname: str) -> list[ast.AST]:
        """Values stored into the class object ``cname`` anywhere in the file."""
        if self._class_patches is None:
            self._class_patches = {}
            for n in ast.walk(self.tree):
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                            c = self.local_class(t.value)
                            if c is not None:
                                self._class_patches.setdefault(c, []).append(n.value)
                elif isinstance(n, ast.Call) and (self.resolve(n.func) or "") == "builtins.setattr" \
                        and len(n.args) == 3 and isinstance(n.args[0], ast.Name):
                    c = self.local_class(n.args[0])
                    if c is not None:
                        self._class_patches.setdefault(c, []).append(n.args[2])
        return self._class_patches.get(cname, [])

    def module_values(self, node: ast.Name) -> list[ast.AST]:
        """Values bound to ``node.id`` at module level when that is the binding ``node`` sees."""
        for scope in self.scope_chain(node):
            if scope is None:
                break
            if node.id in self._bound.get(scope, ()):
                return []  # a local variable: its assignment is part of the walked body
        if self._module_values is None:
            self._module_values = {}
            for st in self._module_level_stmts(self.tree.body):
                if isinstance(st, ast.Assign):
                    for t in st.targets:
                        for tt, vv in self._assign_pairs(t, st.value):
                            for n in self._flatten_targets(tt):
                                if isinstance(n, ast.Name):
                                    self._module_values.setdefault(n.id, []).append(vv)
                elif isinstance(st, (ast.AnnAssign, ast.AugAssign)) and isinstance(st.target, ast.Name) \
                        and st.value is not None:
                    self._module_values.setdefault(st.target.id, []).append(st.value)
        return self._module_values.get(node.id, [])

    def self_attr_values(self, cname: str, attr: str, _seen: set[str] | None = None) -> list[ast.AST]:
        """Values assigned to ``self.<attr>`` anywhere in ``cname`` or its file-local bases."""
        top = _seen is None
        if top and (cname, attr) in self._self_values:
            return self._self_values[(cname, attr)]
        _seen = set() if _seen is None else _seen
        if cname in _seen or cname not in self.classes:
            return []
        _seen.add(cname)
        out: list[ast.AST] = []
        cls = self.classes[cname]
        for node in ast.walk(cls):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for tt, vv in self._assign_pairs(t, node.value):
                        if isinstance(tt, ast.Attribute) and isinstance(tt.value, ast.Name) \
                                and tt.value.id == "self" and tt.attr == attr:
                            out.append(vv)
                continue
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                        and t.attr == attr:
                    out.append(node.value)
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                out += self.self_attr_values(b.id, attr, _seen)
        if top:
            self._self_values[(cname, attr)] = out
        return out

    def value_edges(self, value: ast.AST, cls: str | None,
                    seen: set[int]) -> Iterator[tuple[ast.AST, str | None]]:
        """Code that a value built outside ``forward`` carries into it.

        Functions and lambdas named in the value run when the value is used; a file-local
        class named in it is an instance (``Lazy()``: every method but the constructors)
        or a class object (``Lazy``: every method); a local function *called* in it ran
        already, but what it returned (its nested defs, its return values) flows on; names
        and ``self.<attr>`` inside the value are followed to their own bindings.
        """
        if id(value) in seen or len(seen) > 200:
            return
        seen.add(id(value))
        called: set[int] = set()
        for n in ast.walk(value):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                c = self.local_class(n.func)
                if c is not None:
                    called.add(id(n.func))
                    yield from self.class_edges(c, created=False)
                elif n.func.id in self.funcs:
                    called.add(id(n.func))
                    for g in self.funcs[n.func.id]:
                        for sub in ast.walk(g):
                            if sub is not g and isinstance(sub, FUNC_NODES):
                                yield sub, None
                            elif isinstance(sub, ast.Return) and sub.value is not None \
                                    and self.scope_of(sub) is g:
                                yield from self.value_edges(sub.value, None, seen)
        for n in ast.walk(value):
            if isinstance(n, ast.Lambda):
                yield n, cls
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in called:
                c = self.local_class(n)
                if c is not None:
                    yield from self.class_edges(c, created=True)
                    continue
                q = self.resolve(n) or n.id
                fs = self.funcs.get(q.split(".")[-1] if not q.startswith("builtins.") else "", [])
                for f in fs:
                    yield f, None
                if not fs:
                    for v in self.module_values(n):
                        yield from self.value_edges(v, None, seen)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and cls:
                for f in self.methods(cls, n.attr):
                    yield f, cls
                for v in self.self_attr_values(cls, n.attr):
                    yield from self.value_edges(v, cls, seen)

    def reach(self, starts: Iterable[tuple[ast.AST, str | None]]) -> dict[ast.AST, str | None]:
        seen: dict[ast.AST, str | None] = {}
        work = list(starts)
        while work:
            fn, cls = work.pop()
            # a function first reached without a class (a module-level helper) is walked once
            # more when it is also reached as a method body (decorator, helper(self, ...))
            if fn in seen and (seen[fn] is not None or cls is None):
                continue
            seen[fn] = cls
            work.extend(self.edges(self.iter_body(fn), cls))
            for dec in getattr(fn, "decorator_list", ()):
                # the wrapper a decorator returns is what runs when fn is called
                work.extend(self.edges(ast.walk(dec), cls))
                for n in ast.walk(dec):
                    if isinstance(n, ast.Name) and n.id in self.funcs:
                        work.extend((g, cls) for g in self.funcs[n.id])
        return seen

    def _compute_reach(self) -> None:
        starts: list[tuple[ast.AST, str | None]] = []
        if self.model_new is not None:
            for meth in ("forward", "__call__"):
                for f in self.methods(self.model_new.name, meth):
                    starts.append((f, self.model_new.name))
            # the model object itself was built before forward: any of its methods (dunders,
            # properties, class-level aliases) may run inside forward
            starts.extend(self.class_edges(self.model_new.name, created=False))
            self.fn_class = self.reach(starts)
        elif not self.facts.has_model_new:
            # no ModelNew: treat the whole module as reachable
            self.fn_class = {self.tree: None}
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    par = self.parent.get(node)
                    self.fn_class[node] = par.name if isinstance(par, ast.ClassDef) else None
        self.reachable = set(self.fn_class)

    def reachable_nodes(self) -> Iterator[tuple[ast.AST, ast.AST]]:
        """(function, node) for every node in forward-reachable code."""
        for fn in self.reachable:
            if fn in self.jit_funcs.values():
                continue
            for node in self.iter_body(fn):
                yield fn, node

    # -- extensions and embedded sources ----------------------------------
    @staticmethod
    def call_arg(call: ast.Call, name: str, pos: int | None) -> ast.AST | None:
        for k in call.keywords:
            if k.arg == name:
                return k.value
        if pos is not None and len(call.args) > pos and not any(isinstance(a, ast.Starred)
                                                                 for a in call.args[:pos + 1]):
            return call.args[pos]
        return None

    def _make_unit(self, segs: list[Seg], lang: str, module: int | None) -> _cxx.Unit:
        starts, lines, multi, ids = [], [], [], set()
        off = 0
        for s in segs:
            starts.append(off)
            lines.append(s.line)
            multi.append(s.multiline)
            if s.node_id is not None:
                ids.add(s.node_id)
            off += len(s.text)
        return _cxx.Unit("".join(s.text for s in segs), starts, lines, multi, frozenset(ids), lang, module)

    def _collect_extensions(self) -> None:
        for c in self.calls:
            q = c.qname or ""
            last = q.split(".")[-1]
            if last not in ("load_inline", "load") or ("cpp_extension" not in q and q != "load_inline"):
                continue
            idx = len(self.ext_modules)
            name = self.fold_str(self.call_arg(c.node, "name", 0))
            exposed: list[str] | None = None
            fnode = self.call_arg(c.node, "functions", None)
            if fnode is not None:
                if isinstance(fnode, ast.Dict):
                    exposed = [self.fold_str(k) for k in fnode.keys if k is not None]
                else:
                    lst = self.fold_list(fnode)
                    if lst is not None:
                        exposed = ["".join(s.text for s in it) for it in lst]
                    else:
                        one = self.fold_str(fnode)
                        exposed = [one] if one else None
                if exposed is not None:
                    exposed = [e for e in exposed if e]
            units: list[_cxx.Unit] = []
            folded = True
            if last == "load_inline":
                cpp = self.call_arg(c.node, "cpp_sources", 1)
                cuda = self.call_arg(c.node, "cuda_sources", 2)
                lang = "cuda" if cuda is not None and not (isinstance(cuda, ast.Constant) and cuda.value is None) \
                    else "cpp"
                for arg, ulang in ((cpp, "cpp"), (cuda, "cuda")):
                    if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
                        continue
                    lst = self.fold_list(arg, partial=True)
                    if lst is None:
                        folded = False
                        continue
                    for segs in lst:
                        units.append(self._make_unit(segs, ulang, idx))
            else:
                srcs = self.fold_list(self.call_arg(c.node, "sources", 1)) or []
                names = ["".join(s.text for s in it) for it in srcs]
                lang = "cuda" if any(n.endswith((".cu", ".cuh")) for n in names) else "cpp"
                folded = False
            self.ext_modules.append(ExtModule(idx, c.line, name, last, lang, exposed, units, folded, c.node))
            self.units.extend(units)

    def _collect_cxx(self) -> None:
        if self.raw_cxx:
            self.units.append(_cxx.Unit(self.src, [0], [1], [True], frozenset(), "cxx", None))
        used = [u.node_ids for u in self.units]

        def covered(ids: frozenset) -> bool:
            return bool(ids) and any(ids <= u for u in used)

        orphans: list[_cxx.Unit] = []
        for kind, val in self._env.values():
            groups = val if kind == "list" else [val]
            for segs in groups:
                text = "".join(s.text for s in segs)
                unit = self._make_unit(segs, "cxx", None)
                if covered(unit.node_ids) or not _cxx.looks_like_cxx(text):
                    continue
                orphans.append(unit)
                used.append(unit.node_ids)
        for _line, text, node in self.strings:
            if covered(frozenset({id(node)})) or not _cxx.looks_like_cxx(text):
                continue
            unit = self._make_unit([self._seg_of(node)], "cxx", None)
            orphans.append(unit)
            used.append(unit.node_ids)
        # sources we could not fold: attach orphan C++ to that extension (best effort)
        unfolded = [m for m in self.ext_modules if m.kind == "load_inline" and not m.sources_folded]
        for u in orphans:
            if unfolded:
                u.module = unfolded[0].index
                unfolded[0].units.append(u)
        self.units.extend(orphans)
        base = 0
        for u in self.units:
            toks = _cxx.lex(u, base)
            base += sum(1 for t in toks if t.text == "#" and t.directive) + 1
            u.tokens = toks
            pasted = _cxx.expand_pastes(toks, API_LIKE)
            n = len(toks)
            for i, t in enumerate(toks):
                if t.kind == "ident":
                    self.cxx_idents.append(CIdent(t.text, _cxx.qualified_name(toks, i), t.line,
                                                  toks[i - 1].text if i else "",
                                                  toks[i + 1].text if i + 1 < n else "", False,
                                                  bool(t.directive), u, i))
                elif t.kind == "string":
                    self.cxx_strings.append((t.line, t.text))
                elif t.kind == "header":
                    self.cxx_headers.append((t.line, t.text))
            for t in pasted:
                self.cxx_idents.append(CIdent(t.text, t.text, t.line, "", "", True, False, u, -1))

    # -- kernels ---------------------------------------------------------
    def _collect_kernels(self) -> None:
        # names called from forward-reachable Python
        for _fn, node in self.reachable_nodes():
            if isinstance(node, ast.Call):
                q = self.resolve(node.func)
                if q:
                    self.python_called.add(q.split(".")[-1])
                if isinstance(node.func, ast.Attribute):
                    self.python_called.add(node.func.attr)
        # Triton
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    d = dec.func if isinstance(dec, ast.Call) else dec
                    q = self.resolve_rooted(d) or ""
                    if q.startswith("triton.") and q.split(".")[-1] in ("jit", "autotune", "heuristics"):
                        self.jit_funcs[node.name] = node
                        break
        for c in self.calls:  # kernel = triton.jit(fn)
            if (c.qname or "").startswith("triton.") and (c.qname or "").endswith(".jit") and c.node.args \
                    and isinstance(c.node.args[0], ast.Name) and c.node.args[0].id in self.funcs:
                self.jit_funcs[c.node.args[0].id] = self.funcs[c.node.args[0].id][0]
        jit_names = set(self.jit_funcs)
        launched_py: set[str] = set()
        for _fn, node in self.reachable_nodes():
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Subscript):
                    q = self.resolve(f.value) or ""
                    if q.split(".")[-1] in jit_names:
                        launched_py.add(q.split(".")[-1])
                elif isinstance(f, ast.Attribute) and f.attr in ("run", "__getitem__"):
                    q = self.resolve(f.value) or ""
                    if q.split(".")[-1] in jit_names:
                        launched_py.add(q.split(".")[-1])
        work = list(launched_py)
        launched_tr = set()
        while work:
            k = work.pop()
            if k in launched_tr:
                continue
            launched_tr.add(k)
            for node in ast.walk(self.jit_funcs[k]):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in jit_names:
                    work.append(node.func.id)
        self.triton_launched = launched_tr
        declared: list[dict] = []
        # C++/CUDA extensions
        for m in self.ext_modules:
            if len(m.units) == 1:
                an = self.unit_analysis(m.units[0])
            else:
                an = _cxx.analyse_module([t for u in m.units for t in u.tokens])
            for u in m.units:
                for i, t in enumerate(u.tokens):
                    if t.kind == "ident" and t.text in ("TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT") \
                            and i + 2 < len(u.tokens) and u.tokens[i + 2].kind == "ident":
                        self.custom_op_namespaces.add(u.tokens[i + 2].text)
            exposed = m.exposed if m.exposed is not None else sorted(an.pybind)
            mapping = {py: an.pybind.get(py, py) for py in exposed}
            for py, cpp in an.pybind.items():
                mapping.setdefault(py, cpp)
            self.exposed_names |= set(mapping)
            called = {py for py in mapping if py in self.python_called}
            entries = {mapping[py] for py in called}
            info = {"index": m.index, "name": m.name, "line": m.line, "loader": m.kind, "lang": m.lang,
                    "exposed": sorted(mapping), "called_from_forward": sorted(called),
                    "sources_folded": m.sources_folded}
            self.facts.extension_modules.append(info)
            if an.kernels:
                launched = _cxx.launched_kernels(an, entries)
                for kname, kline in sorted(an.kernels.items(), key=lambda kv: kv[1]):
                    declared.append({"name": kname, "kind": "cuda", "launched": kname in launched, "line": kline,
                                     "module": m.name})
            elif mapping:
                # a function Python reaches under another name (a pybind export and an m.impl
                # registration of the same C++ function) is launched when either name is called
                reached = {mapping[py] for py in called}
                for py in sorted(mapping):
                    fdefs = an.functions.get(mapping[py], [])
                    declared.append({"name": py, "kind": "cuda" if (m.lang == "cuda" and not m.units) else "cpp",
                                     "launched": py in called or mapping[py] in reached,
                                     "line": fdefs[0].line if fdefs else m.line, "module": m.name})
            else:
                declared.append({"name": m.name or "<extension>", "kind": m.lang, "launched": True, "line": m.line,
                                 "module": m.name, "analysed": False})
        # __global__ kernels in C++ strings that are not part of any extension
        known = {(d["name"], d["line"]) for d in declared}
        for u in self.units:
            if u.module is not None:
                continue
            an = self.unit_analysis(u)
            for kname, kline in an.kernels.items():
                if (kname, kline) not in known:
                    declared.append({"name": kname, "kind": "cuda", "launched": False, "line": kline, "module": None})
                    known.add((kname, kline))
        for name, node in self.jit_funcs.items():
            declared.append({"name": name, "kind": "triton", "launched": name in launched_tr, "line": node.lineno,
                             "module": None})
        declared.sort(key=lambda d: (d["line"], d["name"]))
        self.facts.declared_kernels = declared
        other_backend = False
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    d = dec.func if isinstance(dec, ast.Call) else dec
                    q = self.resolve(d) or ""
                    if q.endswith("prim_func") or q.startswith(("tilelang.", "cutlass.cute.", "cute.")) and \
                            q.split(".")[-1] in ("kernel", "jit", "prim_func"):
                        other_backend = True
        self.facts.custom_backend_declared = bool(declared) or bool(self.ext_modules) or other_backend

    @staticmethod
    def unit_analysis(u: _cxx.Unit) -> _cxx.ModuleAnalysis:
        """Functions, kernels and bindings of one C/C++ unit (cached)."""
        if u.analysis is None:
            u.analysis = _cxx.analyse_module(u.tokens)
        return u.analysis

    # -- torch compute classification ------------------------------------
    def torch_compute_op(self, node: ast.AST, cls: str | None) -> str | None:
        """Name of the high-level torch compute op performed by ``node`` (or None)."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return "@ (matmul)"
        if not isinstance(node, ast.Call):
            return None
        # getattr(y, "soft" + "max")(1) is y.softmax(1); operator.methodcaller("softmax", 1)(y)
        # calls the method named by the (folded) string
        norm = self.as_attribute(node)
        if not isinstance(norm, ast.Call):
            return None  # a bare getattr(...) is a lookup, not a call
        node = norm
        f = node.func
        if isinstance(f, ast.Call) and f.args and (self.resolve(f.func) or "") in ("operator.methodcaller",
                                                                                  "operator.attrgetter"):
            name = self.fold_str(f.args[0])
            if name in TENSOR_COMPUTE_METHODS and name not in self.exposed_names:
                return f"Tensor.{name}"
        r = self._res(f)
        if r is not None and r[1]:
            q = r[0]
            if q.startswith("torch.ops."):
                ns = q.split(".")[2] if q.count(".") >= 2 else ""
                if ns in ("aten", "prims", "quantized", "_quantized"):
                    return q
                return None
            if q.startswith("torch.nn.functional."):
                return None if q == "torch.nn.functional.pad" else q
            if q.startswith("torch.Tensor."):
                return q if q.split(".")[2] in TENSOR_COMPUTE_METHODS else None
            if match_prefix(q, TORCH_NONCOMPUTE_PREFIXES) or q.startswith(TORCH_NONCOMPUTE_PREFIXES):
                return None
            if q.startswith("torch.nn."):
                name = q.split(".")[2]
                return None if name in NN_CONTAINERS or name in ("functional", "init", "utils") else q
            if q.startswith(("torch.linalg.", "torch.fft.", "torch.special.", "torch.sparse.", "torch._C.",
                             "torch._foreach", "torch.nested.")):
                return q
            if q.startswith("torch.") and q.count(".") == 1:
                return None if q.split(".")[1] in TORCH_NONCOMPUTE else q
            return None
        if isinstance(f, ast.Attribute):
            # self.conv(x) where self.conv = nn.Conv2d(...)
            if isinstance(f.value, ast.Name) and f.value.id == "self" and cls:
                t = self.self_attr_types.get((cls, f.attr))
                if t and t[1] and t[0].startswith("torch.nn.") and t[0].split(".")[2] not in NN_CONTAINERS \
                        and t[0].split(".")[2] not in ("functional", "init"):
                    return t[0]
            if f.attr == "forward" and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name) \
                    and f.value.value.id == "self" and cls:
                t = self.self_attr_types.get((cls, f.value.attr))
                if t and t[1] and t[0].startswith("torch.nn.") and t[0].split(".")[2] not in NN_CONTAINERS:
                    return t[0]
            if f.attr in TENSOR_COMPUTE_METHODS and f.attr not in self.exposed_names \
                    and not (r is not None and r[1]):
                return f"Tensor.{f.attr}"
        return None

    def _collect_forward_ops(self) -> None:
        ops = set()
        for fn, node in self.reachable_nodes():
            if fn is self.tree:
                continue
            op = self.torch_compute_op(node, self.fn_class.get(fn))
            if op:
                ops.add((getattr(node, "lineno", 0), op))
        self.facts.forward_torch_ops = [{"op": o, "line": ln} for ln, o in sorted(ops)]

    # -- constants and the reference ------------------------------------
    @staticmethod
    def _module_level_stmts(body: list[ast.stmt]) -> Iterator[ast.stmt]:
        for st in body:
            yield st
            if isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
                yield from Context._module_level_stmts(st.body + getattr(st, "orelse", []))
            elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                yield from Context._module_level_stmts(st.body + st.orelse + st.finalbody
                                                       + [s for h in st.handlers for s in h.body])

    @staticmethod
    def final_bindings(tree: ast.Module) -> dict[str, tuple[int, ast.AST | None]]:
        """Each module-level name's last binding: ``name -> (line, value expression or None)``.

        Statements are read in order (inside module-level ``if``/``for``/``with``/``try``
        too), so ``height = width = 2048`` followed by ``height, width = 32, 32`` leaves
        ``height`` bound to ``32``; tuple unpacking of a same-length tuple or list binds
        element by element; any other binding (augmented assignment, starred or nested
        unpacking, a def, an import, a loop variable) leaves the value unknown (None).
        The one collector for the candidate's and the reference's constants.
        """
        out: dict[str, tuple[int, ast.AST | None]] = {}
        for st in Context._module_level_stmts(tree.body):
            if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                value = None if isinstance(st, ast.AugAssign) else st.value
                for t in targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = (st.lineno, value)
                    elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                            and len(t.elts) == len(value.elts) \
                            and not any(isinstance(e, ast.Starred) for e in t.elts + value.elts):
                        for tt, vv in zip(t.elts, value.elts, strict=True):
                            for name in Context._flatten_targets(tt):
                                if isinstance(name, ast.Name):
                                    out[name.id] = (st.lineno, vv if name is tt else None)
                    else:
                        for name in Context._flatten_targets(t):
                            if isinstance(name, ast.Name):
                                out[name.id] = (st.lineno, None)
            elif isinstance(st, DEF_NODES):
                out[st.name] = (st.lineno, None)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    if a.name != "*":
                        out[a.asname or a.name.split(".")[0]] = (st.lineno, None)
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                for name in Context._flatten_targets(st.target):
                    if isinstance(name, ast.Name):
                        out[name.id] = (st.lineno, None)
        return out

    @staticmethod
    def module_constants_of(tree: ast.Module) -> dict[str, Any]:
        """Final values of the module-level names bound to literals (see :meth:`final_bindings`)."""
        out: dict[str, Any] = {}
        for name, (_, value) in Context.final_bindings(tree).items():
            if value is not None:
                ok, v = literal_value(value)
                if ok:
                    out[name] = v
        return out

    def _collect_constants(self) -> None:
        self.facts.module_constants = self.module_constants_of(self.tree)
        for st in self._module_level_stmts(self.tree.body):
            if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    if isinstance(t, (ast.Tuple, ast.List)) and isinstance(st.value, (ast.Tuple, ast.List)) \
                            and len(t.elts) == len(st.value.elts):
                        for tt, vv in zip(t.elts, st.value.elts, strict=True):
                            if isinstance(tt, ast.Name):
                                self.module_level_bindings.append((st.lineno, tt.id, st, vv))
                        continue
                    for tt in self._flatten_targets(t):
                        if isinstance(tt, ast.Name):
                            value = None if isinstance(st, ast.AugAssign) else getattr(st, "value", None)
                            if not isinstance(t, ast.Name):
                                value = None  # starred / nested unpacking: value unknown
                            self.module_level_bindings.append((st.lineno, tt.id, st, value))
            elif isinstance(st, DEF_NODES):
                self.module_level_bindings.append((st.lineno, st.name, st, None))
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    if a.name != "*":
                        self.module_level_bindings.append((st.lineno, a.asname or a.name.split(".")[0], st, None))
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                for tt in self._flatten_targets(st.target):
                    if isinstance(tt, ast.Name):
                        self.module_level_bindings.append((st.lineno, tt.id, st, None))

    def _collect_reference(self) -> None:
        if not self.reference_src:
            return
        try:
            rtree = ast.parse(self.reference_src)
        except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
            return
        self.ref_constants = self.module_constants_of(rtree)
        for st in rtree.body:
            if isinstance(st, DEF_NODES):
                self.ref_defs[st.name] = ast.dump(st)
        self.ref_assigns = {name: value for name, (_, value) in self.final_bindings(rtree).items()
                            if value is not None}

    # -- helpers for rules ------------------------------------------------
    def ref_hits(self, prefixes: Iterable[str], *, exclude: Iterable[str] = (), label: str | None = None,
                 imports: bool = True) -> list[Hit]:
        prefixes = tuple(prefixes)
        exclude = tuple(exclude)
        out = []
        for r in self.refs:
            if not r.rooted or (r.kind == "import" and not imports):
                continue
            if match_prefix(r.qname, prefixes) and not match_prefix(r.qname, exclude):
                what = f"import {r.qname}" if r.kind == "import" else r.qname
                out.append(hit(r.line, label or what))
        return out

    def cxx_hits(self, names: Iterable[str], *, call_only: bool = False, free_only: bool = True,
                 qualified: Iterable[str] = (), label: str = "C++") -> list[Hit]:
        """Hits for C/C++ identifiers named ``names`` (or qualified names in ``qualified``)."""
        names = set(names)
        quals = set(qualified)
        out = []
        for ci in self.cxx_idents:
            q_hit = ci.qual in quals or ci.qual.lstrip(":") in quals
            if not q_hit and ci.text not in names:
                continue
            if not q_hit and not ci.pasted:
                if free_only and ci.prev in (".", "->"):
                    continue
                if call_only and ci.next != "(" and not ci.directive:
                    continue
            shown = ci.qual.lstrip(":") if q_hit else ci.text
            suffix = " (token-pasted)" if ci.pasted else ""
            out.append(hit(ci.line, f"{label}: {shown}{suffix}"))
        return out

    def python_strings(self) -> Iterator[tuple[int, str, ast.Constant]]:
        """Non-docstring Python string constants that are not part of embedded C/C++ sources."""
        cxx_ids = set()
        for u in self.units:
            cxx_ids |= u.node_ids
        for line, text, node in self.strings:
            if id(node) not in cxx_ids:
                yield line, text, node
