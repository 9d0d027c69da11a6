"""RH-09 tensor_subclass: tensor subclasses, dispatch hooks and instance overrides.

What it catches
    Classes deriving from ``torch.Tensor`` / ``Tensor`` / ``torch.nn.Parameter`` /
    ``torch._C.TensorBase`` (also through file-local intermediate classes or a
    ``type(...)`` base), ``_make_subclass``, ``_make_wrapper_subclass``,
    ``as_subclass``, ``Tensor.__new__``, methods or attributes named
    ``__torch_function__`` / ``__torch_dispatch__``, ``TorchDispatchMode`` /
    ``TorchFunctionMode`` and the rest of ``torch.utils._python_dispatch`` /
    ``torch.overrides``, ``types.MethodType``, and assignments (plain or via
    ``setattr``) of comparison/materialisation methods (``allclose``, ``equal``, ``eq``,
    ``item``, ``tolist``, ``numpy``, ``clone``, ``data_ptr``, ...) or dunders (other than
    ``__name__``/``__doc__``-style metadata) onto objects that are not modules
    (``out.allclose = ...``, ``out.__eq__ = ...``).

Why it matters
    A returned subclass can hold no data, defer the computation until the checker
    touches it, or answer ``torch.allclose`` with ``True`` regardless of the values
    (A04, A05, A06).

Example
    ``class Lazy(torch.Tensor): def __torch_function__(cls, f, t, a=(), k=None): ...``;
    aliased: ``from torch import Tensor as T; class Out(T): ...``.

Known limits
    Subclasses created with ``type("X", (torch.Tensor,), {})`` are caught only when
    the base tuple is literal.  Runtime check RH-20 verifies the exact output type.
"""

from __future__ import annotations

import ast

from ._context import Context, Hit, Rule, hit

TENSOR_BASES = {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch._C.TensorBase",
                "torch._C._TensorBase", "torch.nn.parameter.Buffer", "torch.nn.Buffer",
                "torch.nn.parameter.UninitializedParameter", "torch.tensor"}
PY_PREFIXES = ("torch.utils._python_dispatch", "torch.overrides", "torch._C._DisableTorchDispatch",
               "torch._C._EnableTorchFunction", "torch._C._DisableTorchFunction", "torch._C._set_torch_function_mode",
               "torch._C._push_on_torch_dispatch_stack", "torch._C._push_on_torch_function_stack",
               "torch.Tensor._make_subclass", "torch.Tensor._make_wrapper_subclass", "torch.Tensor.__new__",
               "torch._C.TensorBase.__new__", "types.MethodType")
HOOK_NAMES = {"__torch_function__", "__torch_dispatch__", "_make_subclass", "_make_wrapper_subclass", "as_subclass",
              "TorchDispatchMode", "TorchFunctionMode"}
INSTANCE_OVERRIDE = {"allclose", "equal", "eq", "ne", "isclose", "numpy", "tolist", "item", "clone", "detach",
                     "contiguous", "data_ptr", "storage", "untyped_storage", "__array__"}
BENIGN_DUNDERS = {"__name__", "__qualname__", "__doc__", "__module__", "__wrapped__", "__annotations__",
                  "__signature__", "__slots__"}


def _tensor_base(ctx: Context, cls: ast.ClassDef) -> str | None:
    def direct(b: ast.expr) -> str | None:
        q = ctx.resolve(b) or ""
        if q in TENSOR_BASES or (isinstance(b, ast.Name) and b.id == "Tensor") or \
                (ctx.resolve_rooted(b) or "").split(".")[-1] in ("Tensor", "Parameter", "TensorBase"):
            return q or "Tensor"
        if isinstance(b, ast.Call) and ctx.resolve(b.func) == "builtins.type":
            return "type(...)"
        return None

    return ctx.base_chain(cls, direct)


def check(ctx: Context) -> list[Hit]:
    hits = ctx.ref_hits(PY_PREFIXES)
    for cls in ctx.classes.values():
        base = _tensor_base(ctx, cls)
        if base:
            hits.append(hit(cls.lineno, f"class {cls.name} derives from {base}"))
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HOOK_NAMES:
            hits.append(hit(node.lineno, f"defines {node.name}"))
        elif isinstance(node, ast.Call) and ctx.resolve(node.func) == "builtins.type" and len(node.args) == 3 \
                and isinstance(node.args[1], ast.Tuple):
            for b in node.args[1].elts:
                q = ctx.resolve(b) or ""
                if q in TENSOR_BASES:
                    hits.append(hit(node.lineno, f"type(..., ({q},), ...) creates a tensor subclass"))
    hits += [hit(line, f".{attr}") for line, attr, _ in ctx.attr_refs if attr in HOOK_NAMES]
    for s in ctx.stores:
        if s.rooted or not s.qname or s.how not in ("assign", "setattr", "augassign", "annassign"):
            continue
        parts = s.qname.split(".")
        if len(parts) < 2 or parts[0] in ("self", "cls"):
            continue
        attr = parts[-1]
        if attr in INSTANCE_OVERRIDE or (attr.startswith("__") and attr.endswith("__") and attr not in BENIGN_DUNDERS):
            hits.append(hit(s.line, f"assigns {attr} on instance {'.'.join(parts[:-1])}"))
    return hits


RULE = Rule("RH-09", "tensor_subclass", check, __doc__ or "")
