"""RH-04 dynamic_exec: code built or loaded at run time.

What it catches
    Python: ``exec``, ``eval``, ``compile``, ``__import__``, ``importlib.import_module``
    / ``reload`` / ``importlib.util`` loaders / source and sourceless file loaders,
    ``runpy``, ``marshal`` / ``pickle`` / ``dill`` / ``cloudpickle`` / ``shelve`` /
    ``joblib.load`` / ``torch.package`` deserialisation, ``types.FunctionType`` /
    ``CodeType`` / ``ModuleType``, the ``code`` / ``codeop`` interpreters, ``getattr`` on
    a module with an attribute name that is not a (foldable) literal, strings built
    with ``chr()`` that are passed to any of these, and ``load_inline`` sources built
    from character codes or decoded bytes.  Embedded C/C++: identifiers of
    CUDA/system APIs assembled with the ``##`` token-paste operator, and NVRTC
    (``nvrtcCreateProgram``) runtime compilation of generated source.

Why it matters
    Dynamically built code hides what actually runs from every static check and from
    review; spelling an API name in pieces is the classic way past a regex filter
    (A45; GPU MODE's ``TOKEN_PASTE_CUDA_API`` rule).

Example
    ``exec(compile(src, "k", "exec"))``; obfuscated:
    ``e = getattr(__builtins__, "".join(map(chr, [101, 120, 101, 99]))); e(payload)``, or
    ``#define CAT(a, b) a##b`` then ``CAT(cudaStream, Create)(&s);`` in the CUDA string.

Known limits
    ``getattr(obj, name)`` on ordinary objects is allowed; only modules are checked.
    The C++ token-paste reconstruction handles direct and one-level-forwarded macros,
    not a full preprocessor.
"""

from __future__ import annotations

import ast

from ._context import API_LIKE, Context, Hit, Rule, hit

PY_PREFIXES = (
    "builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__", "importlib.import_module",
    "importlib.__import__", "importlib.reload", "importlib.util", "importlib.machinery.SourceFileLoader",
    "importlib.machinery.SourcelessFileLoader", "importlib.machinery.ModuleSpec", "runpy", "marshal", "pickle",
    "_pickle", "cPickle", "dill", "cloudpickle", "shelve", "joblib.load", "torch.package", "types.FunctionType",
    "types.CodeType", "types.ModuleType", "types.LambdaType", "code", "codeop", "imp",
)
CXX_CALLS = {"nvrtcCreateProgram", "nvrtcCompileProgram", "hiprtcCreateProgram"}
SENSITIVE_CALLS = {"builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__",
                   "importlib.import_module", "builtins.getattr", "builtins.setattr", "builtins.delattr"}


def _has_chr(node: ast.AST, ctx: Context) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and ctx.resolve(sub.func) in ("builtins.chr",):
            return True
        if isinstance(sub, ast.Name) and ctx.resolve(sub) == "builtins.chr":
            return True
    return False


def _has_decode(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
               and sub.func.attr in ("decode", "fromhex", "b64decode", "decompress") for sub in ast.walk(node))


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    for c in ctx.calls:
        if c.qname == "builtins.getattr" and len(c.node.args) >= 2:
            base = ctx.resolve_rooted(c.node.args[0])
            if base is not None and ctx.fold_str(c.node.args[1]) is None:
                hits.append(hit(c.line, f"getattr({base}, <non-literal name>)"))
        if c.qname in SENSITIVE_CALLS and any(_has_chr(a, ctx) for a in c.node.args):
            hits.append(hit(c.line, f"chr()-built string passed to {c.qname.split('.')[-1]}()"))
    assigned: dict[str, list[ast.AST]] = {}
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(node.value)
    for m in ctx.ext_modules:
        args = list(m.node.args) + [k.value for k in m.node.keywords]
        seen: set[str] = set()
        k = 0
        while k < len(args):  # follow names to the values assigned to them
            for sub in ast.walk(args[k]):
                if isinstance(sub, ast.Name) and sub.id not in seen:
                    seen.add(sub.id)
                    args.extend(assigned.get(sub.id, []))
            k += 1
        if any(_has_chr(a, ctx) or _has_decode(a) for a in args):
            hits.append(hit(m.line, f"{m.kind}() source built from character codes or decoded bytes"))
    hits += [hit(ci.line, f"C++: {ci.text} built by ## token pasting") for ci in ctx.cxx_idents
             if ci.pasted and API_LIKE.match(ci.text)]
    hits += ctx.cxx_hits(CXX_CALLS, call_only=False)
    return hits


RULE = Rule("RH-04", "dynamic_exec", check, __doc__ or "")
