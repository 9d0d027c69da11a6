"""Semantics-preserving rewrites of attack candidates (the mutation half of the adversary).

Every transform takes a candidate source and returns a rewritten source that does the
same thing at run time, or ``None`` when it does not apply (nothing to rename, no
``forward`` to wrap, no C++ to split, ...).  The rewrites are the moves an adaptive
attacker makes once it has read the static rules:

``rename``            module-level names (helpers, classes, constants) get fresh names;
``getattr_strings``   ``torch.softmax`` becomes ``getattr(torch, "soft" + "max")``;
``getattr_opaque``    the same with ``"".join(reversed("xamtfos"))``, which no folder recovers;
``method_getattr``    method calls on objects: ``y.softmax(1)`` becomes ``getattr(y, "soft" + "max")(1)``;
``importlib``         ``import os`` becomes ``os = importlib.import_module("o" + "s")``;
``class_methods``     module-level functions move into a class as static methods;
``closure``           ``forward``'s body moves into a nested function it calls;
``decorator``         ``forward``'s body moves into a module-level function that a
                      decorator substitutes for a stub ``forward``;
``split_cxx``         embedded C/C++/CUDA sources are cut into pieces joined at run time;
``combine``           the module-level code of a second attack is prepended (both run).

Each mutant is checked to parse and compile (:func:`check_compiles`).  Behaviour is
checked cheaply elsewhere (``runner.same_behaviour``).  Transforms never touch names
the harness or the reference look up (``ModelNew``, ``Model``, ``get_inputs``,
``get_init_inputs``, the reference's module-level names), names that appear in a
string (they may be looked up by name), or dunders.
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
from collections.abc import Callable

__all__ = ["TRANSFORMS", "check_compiles", "combine", "mutate"]

PROTECTED = {"ModelNew", "Model", "get_inputs", "get_init_inputs", "self", "cls"}
_BUILTINS = set(dir(builtins))


def _tag(src: str, salt: str) -> str:
    return hashlib.sha1((salt + src).encode()).hexdigest()[:6]


def _split_literal(text: str, parts: int = 2) -> ast.expr:
    """``"abc"`` as ``"a" + "bc"`` (a BinOp chain of string pieces)."""
    if len(text) < 2:
        return ast.Constant(text)
    step = max(1, len(text) // parts)
    pieces = [text[i:i + step] for i in range(0, len(text), step)]
    node: ast.expr = ast.Constant(pieces[0])
    for p in pieces[1:]:
        node = ast.BinOp(node, ast.Add(), ast.Constant(p))
    return node


def _strings(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
            out.update(w for w in n.value.replace(".", " ").split() if w.isidentifier())
    return out


def _module_names(tree: ast.Module) -> dict[str, str]:
    """Module-level bindings: name -> kind (def, class, assign)."""
    out: dict[str, str] = {}

    def visit(body):
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(st.name, "def")
            elif isinstance(st, ast.ClassDef):
                out.setdefault(st.name, "class")
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, "assign")
            elif isinstance(st, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                visit(getattr(st, "body", []) + getattr(st, "orelse", []) + getattr(st, "finalbody", [])
                      + [s for h in getattr(st, "handlers", []) for s in h.body])

    visit(tree.body)
    return out


def _locally_bound(tree: ast.Module) -> set[str]:
    """Names bound inside any function or class (args, stores, nested defs)."""
    out: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            for n in ast.walk(fn):
                if n is fn:
                    continue
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                    out.add(n.id)
                elif isinstance(n, ast.arg):
                    out.add(n.arg)
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(n.name)
            if isinstance(fn, ast.ClassDef):
                for st in fn.body:  # class-level names are attributes, not globals
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        out.add(st.name)
    return out


def _ref_names(reference_src: str | None) -> set[str]:
    if not reference_src:
        return set()
    try:
        return set(_module_names(ast.parse(reference_src)))
    except SyntaxError:
        return set()


def _finish(tree: ast.AST) -> str:
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def _future_split(tree: ast.Module) -> int:
    """Index after the docstring and ``from __future__`` imports."""
    i = 0
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                      ast.Constant) \
            and isinstance(tree.body[0].value.value, str):
        i = 1
    while i < len(tree.body) and isinstance(tree.body[i], ast.ImportFrom) and tree.body[i].module == "__future__":
        i += 1
    return i


# --------------------------------------------------------------------------- transforms
def t_rename(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    names = _module_names(tree)
    skip = PROTECTED | _ref_names(reference_src) | _strings(tree) | _locally_bound(tree) | _BUILTINS
    for n in ast.walk(tree):
        if isinstance(n, ast.Global):
            skip.update(n.names)
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            skip.update((a.asname or a.name).split(".")[0] for a in n.names)
    mapping = {}
    for name in names:
        if name in skip or name.startswith("__"):
            continue
        mapping[name] = f"_q{_tag(src, name)}_{len(mapping)}"
    if not mapping:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name in mapping:
            n.name = mapping[n.name]  # only module-level defs are in the mapping
    return _finish(tree)


def _import_aliases(tree: ast.Module) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                out.add(a.asname or a.name.split(".")[0])
        elif isinstance(n, ast.ImportFrom) and n.module != "__future__":
            for a in n.names:
                if a.name != "*":
                    out.add(a.asname or a.name)
    return out


def _opaque_literal(text: str) -> ast.expr:
    """``"abc"`` as ``"".join(reversed("cba"))``: a string no constant folder recovers."""
    return ast.Call(ast.Attribute(ast.Constant(""), "join", ast.Load()),
                    [ast.Call(ast.Name("reversed", ast.Load()), [ast.Constant(text[::-1])], [])], [])


class _GetattrRewriter(ast.NodeTransformer):
    def __init__(self, roots: set[str], opaque: bool = False):
        self.roots = roots
        self.count = 0
        self.literal = _opaque_literal if opaque else _split_literal

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(node.ctx, ast.Load) and isinstance(base, ast.Name) and base.id in self.roots \
                and not node.attr.startswith("__"):
            self.count += 1
            return ast.Call(ast.Name("getattr", ast.Load()), [node.value, self.literal(node.attr)], [])
        return node


def t_getattr_strings(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    rw = _GetattrRewriter(_import_aliases(tree))
    tree = rw.visit(tree)
    return _finish(tree) if rw.count else None


def t_getattr_opaque(src: str, reference_src: str | None = None) -> str | None:
    """Like ``getattr_strings`` but with names no static folder can recover (fail-closed test)."""
    tree = ast.parse(src)
    rw = _GetattrRewriter(_import_aliases(tree), opaque=True)
    tree = rw.visit(tree)
    return _finish(tree) if rw.count else None


class _MethodRewriter(ast.NodeTransformer):
    def __init__(self, roots: set[str]):
        self.roots = roots
        self.count = 0

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        if not isinstance(f, ast.Attribute) or f.attr.startswith("__"):
            return node
        base = f.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and base.id in self.roots:
            return node  # module attributes: getattr_strings' job
        if isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) and f.value.func.id == "super":
            return node  # super().m() needs the compiler's __class__ cell in place
        self.count += 1
        node.func = ast.Call(ast.Name("getattr", ast.Load()), [f.value, _split_literal(f.attr)], [])
        return node


def t_method_getattr(src: str, reference_src: str | None = None) -> str | None:
    """Method calls on objects (``y.softmax(1)``, ``self._slow(a)``) through ``getattr`` with built names."""
    tree = ast.parse(src)
    rw = _MethodRewriter(_import_aliases(tree))
    tree = rw.visit(tree)
    return _finish(tree) if rw.count else None


def t_importlib(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    changed = 0

    def imp(modname: str) -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name("importlib", ast.Load()), "import_module", ast.Load()),
                        [_split_literal(modname)], [])

    def rewrite(body: list[ast.stmt]) -> list[ast.stmt]:
        nonlocal changed
        out: list[ast.stmt] = []
        for st in body:
            if isinstance(st, ast.Import) and all(a.name != "importlib" for a in st.names):
                for a in st.names:
                    if a.asname:
                        out.append(ast.Assign([ast.Name(a.asname, ast.Store())], imp(a.name)))
                    else:  # import a.b binds a (and imports a.b)
                        top = a.name.split(".")[0]
                        if "." in a.name:
                            out.append(ast.Expr(imp(a.name)))
                        out.append(ast.Assign([ast.Name(top, ast.Store())], imp(top)))
                    changed += 1
            elif isinstance(st, ast.ImportFrom) and st.level == 0 and st.module not in (None, "__future__") \
                    and all(a.name != "*" for a in st.names):
                for a in st.names:
                    # from m import a: an attribute, or a submodule
                    val = ast.Call(ast.Name("getattr", ast.Load()), [imp(st.module), _split_literal(a.name),
                                                                     ast.Constant(None)], [])
                    fallback = imp(f"{st.module}.{a.name}")
                    out.append(ast.Assign([ast.Name(a.asname or a.name, ast.Store())],
                                          ast.BoolOp(ast.Or(), [val, fallback])))
                    changed += 1
            else:
                for fld in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(st, fld, None), list) and not isinstance(
                            st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        setattr(st, fld, rewrite(getattr(st, fld)))
                for h in getattr(st, "handlers", []):
                    h.body = rewrite(h.body)
                out.append(st)
        return out or [ast.Pass()]

    k = _future_split(tree)
    tree.body = tree.body[:k] + [ast.Import([ast.alias("importlib")])] + rewrite(tree.body[k:])
    return _finish(tree) if changed else None


def _uses_zero_arg_super(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args:
            return True
        if isinstance(n, ast.Name) and n.id == "__class__":
            return True
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(n, ast.Attribute) and n.attr.startswith("__") and not n.attr.endswith("__"):
            return True  # name mangling depends on the enclosing class
    return False


def t_class_methods(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    skip = PROTECTED | _ref_names(reference_src) | _strings(tree)
    moved: list[ast.FunctionDef] = []
    first = None
    for i, st in enumerate(tree.body):
        if isinstance(st, ast.FunctionDef) and not st.decorator_list and st.name not in skip \
                and not _uses_zero_arg_super(st) \
                and not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(st)):
            moved.append(st)
            first = i if first is None else first
    if not moved:
        return None
    names = {f.name for f in moved}
    # a name that is also bound locally somewhere would be rewritten wrongly: leave those
    local = _locally_bound(ast.Module(body=[s for s in tree.body if s not in moved], type_ignores=[]))
    for f in moved:
        for n in ast.walk(f):
            if isinstance(n, ast.arg) or (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)):
                local.add(getattr(n, "arg", None) or getattr(n, "id", None))
    names -= local
    moved = [f for f in moved if f.name in names]
    if not moved:
        return None
    holder = f"_Ns{_tag(src, 'cls')}"
    for f in moved:
        f.decorator_list = [ast.Name("staticmethod", ast.Load())]

    class R(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in names and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Attribute(ast.Name(holder, ast.Load()), node.id, ast.Load()), node)
            return node

    body = [s for s in tree.body if s not in moved]
    cls = ast.ClassDef(holder, [], [], moved, [])
    idx = min(first, len(body))
    body.insert(idx, cls)
    tree.body = body
    R().visit(tree)
    return _finish(tree)


def _model_forward(tree: ast.Module) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    for st in tree.body:
        if isinstance(st, ast.ClassDef) and st.name == "ModelNew":
            for m in st.body:
                if isinstance(m, ast.FunctionDef) and m.name == "forward":
                    return st, m
    return None


def _call_with_args(func: ast.expr, args: ast.arguments) -> ast.Call:
    pos = [ast.Name(a.arg, ast.Load()) for a in args.posonlyargs + args.args]
    if args.vararg:
        pos.append(ast.Starred(ast.Name(args.vararg.arg, ast.Load()), ast.Load()))
    kws = [ast.keyword(a.arg, ast.Name(a.arg, ast.Load())) for a in args.kwonlyargs]
    if args.kwarg:
        kws.append(ast.keyword(None, ast.Name(args.kwarg.arg, ast.Load())))
    return ast.Call(func, pos, kws)


def t_closure(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    found = _model_forward(tree)
    if not found or _uses_zero_arg_super(found[1]):
        return None
    _, fwd = found
    inner_name = f"_body{_tag(src, 'clo')}"
    inner = ast.FunctionDef(inner_name, copy.deepcopy(fwd.args), fwd.body, [], None)
    fwd.body = [inner, ast.Return(_call_with_args(ast.Name(inner_name, ast.Load()), fwd.args))]
    return _finish(tree)


def t_decorator(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    found = _model_forward(tree)
    if not found or _uses_zero_arg_super(found[1]):
        return None
    cls, fwd = found
    impl = f"_impl{_tag(src, 'dec')}"
    use = f"_use{_tag(src, 'dec')}"
    real = ast.FunctionDef(impl, copy.deepcopy(fwd.args), fwd.body, [], None)
    # _use = lambda f: (lambda stub: f)
    deco = ast.Assign([ast.Name(use, ast.Store())],
                      ast.Lambda(ast.arguments([], [ast.arg("f")], None, [], [], None, []),
                                 ast.Lambda(ast.arguments([], [ast.arg("stub")], None, [], [], None, []),
                                            ast.Name("f", ast.Load()))))
    fwd.body = [ast.Expr(ast.Constant(Ellipsis))]
    fwd.decorator_list = [ast.Call(ast.Name(use, ast.Load()), [ast.Name(impl, ast.Load())], [])] \
        + fwd.decorator_list
    i = tree.body.index(cls)
    tree.body[i:i] = [real, deco]
    return _finish(tree)


_CXX_KW = {"cpp_sources", "cuda_sources", "sources"}


def t_split_cxx(src: str, reference_src: str | None = None) -> str | None:
    """Cut every string that looks like C/C++ into pieces kept in a module-level list.

    The pieces are cut inside identifiers (``sys`` + ``call(``) and joined with
    ``"".join`` where ``load_inline`` reads them, so the C++ exists only at run time.
    """
    tree = ast.parse(src)
    k = _future_split(tree)
    new_stmts: list[ast.stmt] = []
    count = 0

    def looks_cxx(s: str) -> bool:
        return any(t in s for t in ("#include", "__global__", "torch::", "extern \"C\"", "PYBIND11", "<<<",
                                    "{", "int ", "void "))

    class R(ast.NodeTransformer):
        def visit_Constant(self, node):
            nonlocal count
            if isinstance(node.value, str) and len(node.value) > 24 and looks_cxx(node.value):
                s = node.value
                name = f"_cx{_tag(s, str(count))}_{count}"
                step = max(7, len(s) // 9)
                parts = [s[i:i + step] for i in range(0, len(s), step)]
                new_stmts.append(ast.Assign([ast.Name(name, ast.Store())], ast.List([ast.Constant(p) for p in parts],
                                                                                   ast.Load())))
                count += 1
                return ast.Call(ast.Attribute(ast.Constant(""), "join", ast.Load()), [ast.Name(name, ast.Load())], [])
            return node

        def visit_Expr(self, node):  # leave docstrings alone
            if isinstance(node.value, ast.Constant):
                return node
            return self.generic_visit(node)

    R().visit(tree)
    if not count:
        return None
    tree.body = tree.body[:k] + new_stmts + tree.body[k:]
    return _finish(tree)


TRANSFORMS: dict[str, Callable[..., str | None]] = {
    "rename": t_rename,
    "getattr_strings": t_getattr_strings,
    "getattr_opaque": t_getattr_opaque,
    "method_getattr": t_method_getattr,
    "importlib": t_importlib,
    "class_methods": t_class_methods,
    "closure": t_closure,
    "decorator": t_decorator,
    "split_cxx": t_split_cxx,
}


def combine(src: str, other_src: str) -> str | None:
    """``src`` with the module-level code of ``other_src`` run first (both attacks act).

    The second attack's ``ModelNew``/``Model``/``get_inputs``/``get_init_inputs`` are
    dropped (the first one's model is evaluated) and its other module-level names are
    renamed so they cannot clash; its imports are kept.
    """
    try:
        other = ast.parse(t_rename(other_src) or other_src)
        tree = ast.parse(src)
    except SyntaxError:
        return None
    keep: list[ast.stmt] = []
    for st in other.body[_future_split(other):]:
        if isinstance(st, (ast.ClassDef, ast.FunctionDef)) and st.name in PROTECTED:
            continue
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id in PROTECTED for t in st.targets):
            continue
        if isinstance(st, ast.ImportFrom) and st.module == "__future__":
            continue
        keep.append(st)
    if not keep:
        return None
    k = _future_split(tree)
    tree.body = tree.body[:k] + keep + tree.body[k:]
    return _finish(tree)


def check_compiles(src: str) -> str | None:
    """``None`` when ``src`` parses and compiles, else the error."""
    try:
        compile(src, "<mutant>", "exec")
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def mutate(src: str, transform: str, reference_src: str | None = None, other_src: str | None = None) -> str | None:
    """Apply one transform by name (``combine`` needs ``other_src``; ``a+b`` chains two)."""
    if "+" in transform:  # a chain: every part that applies, in order
        out, applied = src, 0
        for part in transform.split("+"):
            nxt = mutate(out, part, reference_src, other_src)
            if nxt is not None:
                out, applied = nxt, applied + 1
        return out if applied else None
    if transform == "combine":
        return combine(src, other_src) if other_src else None
    return TRANSFORMS[transform](src, reference_src)
