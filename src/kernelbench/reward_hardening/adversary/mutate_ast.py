"""AST helpers shared by the mutation transforms (any process; used by the adversary only).

Module-level bindings, locally bound names, strings that may name things, the split of
a module after its docstring and ``__future__`` imports, literal builders that hide a
name from a constant folder, and ``ModelNew.forward`` lookup.
"""

from __future__ import annotations

import ast
import builtins
import hashlib

__all__ = ["BUILTINS", "PROTECTED", "call_with_args", "finish", "future_split", "import_aliases", "locally_bound",
           "model_forward", "module_names", "opaque_literal", "ref_names", "split_literal", "strings_in", "tag",
           "uses_zero_arg_super"]

PROTECTED = {"ModelNew", "Model", "get_inputs", "get_init_inputs", "self", "cls"}
BUILTINS = set(dir(builtins))


def tag(src: str, salt: str) -> str:
    return hashlib.sha1((salt + src).encode()).hexdigest()[:6]


def split_literal(text: str, parts: int = 2) -> ast.expr:
    """``"abc"`` as ``"a" + "bc"`` (a BinOp chain of string pieces)."""
    if len(text) < 2:
        return ast.Constant(text)
    step = max(1, len(text) // parts)
    pieces = [text[i:i + step] for i in range(0, len(text), step)]
    node: ast.expr = ast.Constant(pieces[0])
    for p in pieces[1:]:
        node = ast.BinOp(node, ast.Add(), ast.Constant(p))
    return node


def strings_in(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
            out.update(w for w in n.value.replace(".", " ").split() if w.isidentifier())
    return out


def module_names(tree: ast.Module) -> dict[str, str]:
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


def locally_bound(tree: ast.Module) -> set[str]:
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


def ref_names(reference_src: str | None) -> set[str]:
    if not reference_src:
        return set()
    try:
        return set(module_names(ast.parse(reference_src)))
    except SyntaxError:
        return set()


def finish(tree: ast.AST) -> str:
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n"


def future_split(tree: ast.Module) -> int:
    """Index after the docstring and ``from __future__`` imports."""
    i = 0
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                      ast.Constant) \
            and isinstance(tree.body[0].value.value, str):
        i = 1
    while i < len(tree.body) and isinstance(tree.body[i], ast.ImportFrom) and tree.body[i].module == "__future__":
        i += 1
    return i



def import_aliases(tree: ast.Module) -> set[str]:
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


def opaque_literal(text: str) -> ast.expr:
    """``"abc"`` as ``"".join(reversed("cba"))``: a string no constant folder recovers."""
    return ast.Call(ast.Attribute(ast.Constant(""), "join", ast.Load()),
                    [ast.Call(ast.Name("reversed", ast.Load()), [ast.Constant(text[::-1])], [])], [])



def uses_zero_arg_super(fn: ast.AST) -> bool:
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



def model_forward(tree: ast.Module) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    for st in tree.body:
        if isinstance(st, ast.ClassDef) and st.name == "ModelNew":
            for m in st.body:
                if isinstance(m, ast.FunctionDef) and m.name == "forward":
                    return st, m
    return None


def call_with_args(func: ast.expr, args: ast.arguments) -> ast.Call:
    pos = [ast.Name(a.arg, ast.Load()) for a in args.posonlyargs + args.args]
    if args.vararg:
        pos.append(ast.Starred(ast.Name(args.vararg.arg, ast.Load()), ast.Load()))
    kws = [ast.keyword(a.arg, ast.Name(a.arg, ast.Load())) for a in args.kwonlyargs]
    if args.kwarg:
        kws.append(ast.keyword(None, ast.Name(args.kwarg.arg, ast.Load())))
    return ast.Call(func, pos, kws)

