"""Records and small AST helpers shared by the precheck analyses (trusted parent).

:class:`Hit`, :class:`Rule` and :class:`SourceFacts` are what the rules and the
precheck report speak; :class:`Ref`, :class:`Store`, :class:`CallRef`, :class:`Seg`,
:class:`ExtModule` and :class:`CIdent` are the records the analyses of
:class:`~._context.Context` collect.  The functions here read one AST node and nothing
else: literal folding (:func:`literal_value`), target flattening and module-level
statement walking.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _cxx

# Deepest AST nesting the analysis follows.  Real kernels nest a few dozen levels; a
# source nested deeper (say a 1,000-term `a + b + ...` chain) exhausts recursive
# helpers, so it gets RH-46 instead of a partial analysis (precheck/completeness.py).
MAX_ANALYSIS_DEPTH = 200
FUNC_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
DEF_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    """A static rule: ``check(ctx)`` returns the hits for ``code`` (``ctx`` is a
    :class:`~._context.Context`).

    ``doc`` is the rule family's module docstring (What it catches / Why it matters /
    Example / Known limits).
    """

    code: str
    name: str
    check: Callable[[Any], list[Hit]]
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
# statements and targets

def module_level_stmts(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of ``body``, descending into ``if``/``for``/``while``/``with``/``try`` blocks."""
    for st in body:
        yield st
        if isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
            yield from module_level_stmts(st.body + getattr(st, "orelse", []))
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            yield from module_level_stmts(st.body + st.orelse + st.finalbody
                                          + [s for h in st.handlers for s in h.body])


def flatten_targets(t: ast.AST) -> Iterator[ast.AST]:
    """The single targets inside a (possibly nested, starred) unpacking target."""
    if isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from flatten_targets(e)
    elif isinstance(t, ast.Starred):
        yield from flatten_targets(t.value)
    else:
        yield t


def assign_pairs(target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of an assignment, element by element for same-length tuples/lists."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            yield from assign_pairs(t, v)
    else:
        yield target, value
