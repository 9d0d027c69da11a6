"""RH-13 provenance: is the declared custom kernel what actually does the work?

What it catches
    * no ``ModelNew`` class;
    * no custom kernel declared at all — no ``load_inline`` / ``load`` extension, no
      ``@triton.jit`` kernel, no TileLang/CuTe kernel (a pure PyTorch candidate);
    * declared kernels that are never launched from ``ModelNew.forward`` (decoys): a
      CUDA ``__global__`` function must be launched (``<<<`` or ``cudaLaunchKernel``)
      from C++ reachable from an exposed extension function that ``forward`` calls; a
      C++-only extension function must be called from ``forward``; a Triton kernel
      must be launched as ``kernel[grid](...)`` from ``forward`` (or called from such a
      kernel);
    * ``try``/``except`` (or ``contextlib.suppress``) around the custom-kernel call
      whose handler (or the code after the suppressed block) computes with high-level
      torch ops — a PyTorch fallback;
    * ``forward`` computing with high-level torch ops (``torch.*``, ``F.*``, ``nn``
      modules such as ``self.conv = nn.Conv2d(...)``, tensor compute methods,
      the ``@`` operator) next to the kernel.  Allocation, layout and metadata calls
      (``torch.empty_like``, ``.contiguous()``, ``.view()``, ``.size()``, ...) are allowed.

    The same hits are produced under every policy; the code table makes them errors
    under ``source_strict`` and informational under ``practical``.

Why it matters
    Static "contains ``__global__``" checks are defeated by kernels that are compiled
    but never called, and by forwards that quietly run the reference's operators
    (A19, A20, A21).

Example
    ``try: return ext.fused(x) except Exception: return F.gelu(x @ self.w)``; or a
    ``@triton.jit`` kernel that ``forward`` never launches while it returns
    ``torch.matmul(a, b)``.

Known limits
    Reachability is static and not branch-sensitive: a kernel launched only on a branch
    never taken for the benchmark shapes counts as launched.  It follows classes and
    values: a file-local class named in reachable code brings in every one of its
    methods (dunders, properties, class-level aliases such as ``__iter__ = f``); an
    object built in ``__init__`` (``self.h = Helper()``) brings in all its methods but
    its constructors; values bound at module level or to ``self.<attr>`` (tables,
    lambdas, ``functools.partial``, closures returned by a factory) and the wrappers of
    decorators are followed to the code they carry.  A method of a live class that is
    never called still counts (delete dead code with torch ops under ``source_strict``),
    and a decoy kernel called only from such a method counts as launched (RH-31 checks
    at run time).  Dynamically computed attribute or global names that do not fold to
    a constant are not followed.
    Data movement (``torch.cat`` / ``stack`` / ``F.pad`` / ``reshape``) and random
    generators are treated as non-compute, so a problem whose whole work is a
    concatenation is not caught here.  Python arithmetic operators other than ``@``
    (``y + bias``) are not counted.  RH-31 checks at run time which kernels really ran.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ._context import Context, Hit, Rule, hit

_REFERENCE_OPS = ("super().forward",)


def _is_kernel_call(ctx: Context, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Subscript):
        return (ctx.resolve(f.value) or "").split(".")[-1] in ctx.jit_funcs
    if isinstance(f, ast.Attribute) and f.attr == "run":
        return (ctx.resolve(f.value) or "").split(".")[-1] in ctx.jit_funcs
    q = ctx.resolve(f) or ""
    if q.startswith("torch.ops."):
        parts = q.split(".")
        return len(parts) > 3 and (parts[2] in ctx.custom_op_namespaces
                                   or parts[2] not in ("aten", "prims", "quantized", "_quantized"))
    name = f.attr if isinstance(f, ast.Attribute) else q.split(".")[-1]
    return bool(name) and name in ctx.exposed_names


def _nodes(stmts: Iterable[ast.AST]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for st in stmts:
        out.extend(ast.walk(st))
    return out


def _launches(ctx: Context, stmts: Iterable[ast.AST], cls: str | None) -> bool:
    nodes = _nodes(stmts)
    if any(_is_kernel_call(ctx, n) for n in nodes):
        return True
    for fn in ctx.reach(ctx.edges(nodes, cls)):
        if any(_is_kernel_call(ctx, n) for n in ctx.iter_body(fn)):
            return True
    return False


def torch_ops_in(ctx: Context, stmts: Iterable[ast.AST], cls: str | None) -> list[str]:
    nodes = _nodes(stmts)
    ops = []
    for n in nodes:
        op = ctx.torch_compute_op(n, cls)
        if op:
            ops.append(op)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Call) \
                and isinstance(n.func.value.func, ast.Name) and n.func.value.func.id == "super":
            ops.append(f"super().{n.func.attr}")
    for fn, fcls in ctx.reach(ctx.edges(nodes, cls)).items():
        if fn in ctx.jit_funcs.values():
            continue
        for n in ctx.iter_body(fn):
            op = ctx.torch_compute_op(n, fcls)
            if op:
                ops.append(op)
    return ops


def suppress_tail(ctx: Context, node: ast.With | ast.AsyncWith) -> list[ast.AST] | None:
    """For ``with contextlib.suppress(...)``, the statements after the block (its fallback path).

    ``None`` when ``node`` does not suppress exceptions.
    """
    if not any(ctx.resolve(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr)
               == "contextlib.suppress" for i in node.items):
        return None
    parent = ctx.parent.get(node)
    for fld in ("body", "orelse", "finalbody"):
        seq = getattr(parent, fld, None)
        if isinstance(seq, list) and node in seq:
            return seq[seq.index(node) + 1:]
    return []


def _fallback_hits(ctx: Context) -> list[Hit]:
    out = []
    for fn, node in ctx.reachable_nodes():
        cls = ctx.fn_class.get(fn)
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if not _launches(ctx, node.body, cls):
                continue
            ops = torch_ops_in(ctx, [s for h in node.handlers for s in h.body], cls)
            if ops:
                out.append(hit(node.lineno, f"try/except around the custom kernel falls back to {ops[0]}",
                               fallback_ops=sorted(set(ops))))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            after = suppress_tail(ctx, node)
            if after is None or not _launches(ctx, node.body, cls):
                continue
            ops = torch_ops_in(ctx, after, cls)
            if ops:
                out.append(hit(node.lineno, f"contextlib.suppress around the custom kernel falls back to {ops[0]}",
                               fallback_ops=sorted(set(ops))))
    return out


def check(ctx: Context) -> list[Hit]:
    f = ctx.facts
    hits: list[Hit] = []
    if not f.has_model_new:
        hits.append(hit(1, "no ModelNew class"))
    if not f.custom_backend_declared:
        ops = sorted({o["op"] for o in f.forward_torch_ops})
        hits.append(hit(1, "no custom kernel declared (pure PyTorch candidate)", forward_torch_ops=ops))
        return hits
    for k in f.declared_kernels:
        if not k["launched"]:
            hits.append(hit(k["line"], f"{k['kind']} kernel {k['name']} is declared but never launched from forward()"))
    hits += _fallback_hits(ctx)
    for o in f.forward_torch_ops:
        hits.append(hit(o["line"], f"forward() computes with {o['op']}"))
    return hits


RULE = Rule("RH-13", "provenance", check, __doc__ or "")
