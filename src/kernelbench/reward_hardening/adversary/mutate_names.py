"""Transforms that hide names (any process; used by the adversary only).

``rename`` (fresh module-level names), ``getattr_strings`` / ``getattr_opaque`` (module
attributes through ``getattr`` with built or opaque strings), ``method_getattr`` (method
calls through ``getattr``) and ``importlib`` (imports through ``importlib.import_module``).
"""

from __future__ import annotations

import ast

from kernelbench.reward_hardening.adversary.mutate_ast import (BUILTINS, PROTECTED, finish, future_split,
                                                               import_aliases, locally_bound, module_names,
                                                               opaque_literal, ref_names, split_literal, strings_in,
                                                               tag)

__all__ = ["t_getattr_opaque", "t_getattr_strings", "t_importlib", "t_method_getattr", "t_rename"]


def t_rename(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    names = module_names(tree)
    skip = PROTECTED | ref_names(reference_src) | strings_in(tree) | locally_bound(tree) | BUILTINS
    for n in ast.walk(tree):
        if isinstance(n, ast.Global):
            skip.update(n.names)
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            skip.update((a.asname or a.name).split(".")[0] for a in n.names)
    mapping = {}
    for name in names:
        if name in skip or name.startswith("__"):
            continue
        mapping[name] = f"_q{tag(src, name)}_{len(mapping)}"
    if not mapping:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name in mapping:
            n.name = mapping[n.name]  # only module-level defs are in the mapping
    return finish(tree)



class _GetattrRewriter(ast.NodeTransformer):
    def __init__(self, roots: set[str], opaque: bool = False):
        self.roots = roots
        self.count = 0
        self.literal = opaque_literal if opaque else split_literal

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
    rw = _GetattrRewriter(import_aliases(tree))
    tree = rw.visit(tree)
    return finish(tree) if rw.count else None


def t_getattr_opaque(src: str, reference_src: str | None = None) -> str | None:
    """Like ``getattr_strings`` but with names no static folder can recover (fail-closed test)."""
    tree = ast.parse(src)
    rw = _GetattrRewriter(import_aliases(tree), opaque=True)
    tree = rw.visit(tree)
    return finish(tree) if rw.count else None


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
        node.func = ast.Call(ast.Name("getattr", ast.Load()), [f.value, split_literal(f.attr)], [])
        return node


def t_method_getattr(src: str, reference_src: str | None = None) -> str | None:
    """Method calls on objects (``y.softmax(1)``, ``self._slow(a)``) through ``getattr`` with built names."""
    tree = ast.parse(src)
    rw = _MethodRewriter(import_aliases(tree))
    tree = rw.visit(tree)
    return finish(tree) if rw.count else None


def t_importlib(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    changed = 0

    def imp(modname: str) -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name("importlib", ast.Load()), "import_module", ast.Load()),
                        [split_literal(modname)], [])

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
                    val = ast.Call(ast.Name("getattr", ast.Load()), [imp(st.module), split_literal(a.name),
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

    k = future_split(tree)
    tree.body = tree.body[:k] + [ast.Import([ast.alias("importlib")])] + rewrite(tree.body[k:])
    return finish(tree) if changed else None

