"""Transforms that move code (any process; used by the adversary only).

``class_methods`` (module-level functions into a class), ``closure`` and ``decorator``
(``forward``'s body moved elsewhere) and ``split_cxx`` (embedded C/C++ cut into pieces).
"""

from __future__ import annotations

import ast
import copy

from kernelbench.reward_hardening.adversary.mutate_ast import (PROTECTED, call_with_args, finish, future_split,
                                                               locally_bound, model_forward, ref_names, strings_in,
                                                               tag, uses_zero_arg_super)

__all__ = ["t_class_methods", "t_closure", "t_decorator", "t_split_cxx"]


def t_class_methods(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    skip = PROTECTED | ref_names(reference_src) | strings_in(tree)
    moved: list[ast.FunctionDef] = []
    first = None
    for i, st in enumerate(tree.body):
        if isinstance(st, ast.FunctionDef) and not st.decorator_list and st.name not in skip \
                and not uses_zero_arg_super(st) \
                and not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(st)):
            moved.append(st)
            first = i if first is None else first
    if not moved:
        return None
    names = {f.name for f in moved}
    # a name that is also bound locally somewhere would be rewritten wrongly: leave those
    local = locally_bound(ast.Module(body=[s for s in tree.body if s not in moved], type_ignores=[]))
    for f in moved:
        for n in ast.walk(f):
            if isinstance(n, ast.arg) or (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)):
                local.add(getattr(n, "arg", None) or getattr(n, "id", None))
    names -= local
    moved = [f for f in moved if f.name in names]
    if not moved:
        return None
    holder = f"_Ns{tag(src, 'cls')}"
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
    return finish(tree)



def t_closure(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    found = model_forward(tree)
    if not found or uses_zero_arg_super(found[1]):
        return None
    _, fwd = found
    inner_name = f"_body{tag(src, 'clo')}"
    inner = ast.FunctionDef(inner_name, copy.deepcopy(fwd.args), fwd.body, [], None)
    fwd.body = [inner, ast.Return(call_with_args(ast.Name(inner_name, ast.Load()), fwd.args))]
    return finish(tree)


def t_decorator(src: str, reference_src: str | None = None) -> str | None:
    tree = ast.parse(src)
    found = model_forward(tree)
    if not found or uses_zero_arg_super(found[1]):
        return None
    cls, fwd = found
    impl = f"_impl{tag(src, 'dec')}"
    use = f"_use{tag(src, 'dec')}"
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
    return finish(tree)



def t_split_cxx(src: str, reference_src: str | None = None) -> str | None:
    """Cut every string that looks like C/C++ into pieces kept in a module-level list.

    The pieces are cut inside identifiers (``sys`` + ``call(``) and joined with
    ``"".join`` where ``load_inline`` reads them, so the C++ exists only at run time.
    """
    tree = ast.parse(src)
    k = future_split(tree)
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
                name = f"_cx{tag(s, str(count))}_{count}"
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
    return finish(tree)

