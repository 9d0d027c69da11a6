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

The transforms live by concern in ``mutate_names`` (hiding names) and ``mutate_shape``
(moving code), on the helpers of ``mutate_ast``; this module is their registry, the
chaining and ``combine``.  Runs in any process (the adversary's own, never a worker).
Each mutant is checked to parse and compile (:func:`check_compiles`).  Behaviour is
checked cheaply elsewhere (``campaign.same_behaviour``).  Transforms never touch names
the harness or the reference look up (``ModelNew``, ``Model``, ``get_inputs``,
``get_init_inputs``, the reference's module-level names), names that appear in a
string (they may be looked up by name), or dunders.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from kernelbench.reward_hardening.adversary.mutate_ast import PROTECTED, finish, future_split
from kernelbench.reward_hardening.adversary.mutate_names import (t_getattr_opaque, t_getattr_strings, t_importlib,
                                                                 t_method_getattr, t_rename)
from kernelbench.reward_hardening.adversary.mutate_shape import t_class_methods, t_closure, t_decorator, t_split_cxx

__all__ = ["TRANSFORMS", "check_compiles", "combine", "mutate"]

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
    for st in other.body[future_split(other):]:
        if isinstance(st, (ast.ClassDef, ast.FunctionDef)) and st.name in PROTECTED:
            continue
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id in PROTECTED for t in st.targets):
            continue
        if isinstance(st, ast.ImportFrom) and st.module == "__future__":
            continue
        keep.append(st)
    if not keep:
        return None
    k = future_split(tree)
    tree.body = tree.body[:k] + keep + tree.body[k:]
    return finish(tree)


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
