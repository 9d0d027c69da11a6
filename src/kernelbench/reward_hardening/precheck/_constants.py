"""Module-level constants and bindings of the candidate and the reference (trusted parent).

:class:`Constants` is one analysis of :class:`~._context.Context`.  It reads the final
module-level bindings of the candidate (:func:`final_bindings`: ``height = 32`` after
``height = width = 2048``, element-wise tuple unpacking, unknown values for anything
else), the literal values among them (:func:`module_constants_of`), every module-level
binding in order (``module_level_bindings``), and of the reference its constants, the
source of its defs and the expression each of its names is finally bound to.

State it owns: ``module_level_bindings``, ``ref_constants``, ``ref_defs`` and
``ref_assigns``; it fills ``facts.module_constants``.  It reads ``tree`` and
``reference_src``.
"""

from __future__ import annotations

import ast
from typing import Any

from ._records import DEF_NODES, flatten_targets, literal_value, module_level_stmts


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
    for st in module_level_stmts(tree.body):
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
                        for name in flatten_targets(tt):
                            if isinstance(name, ast.Name):
                                out[name.id] = (st.lineno, vv if name is tt else None)
                else:
                    for name in flatten_targets(t):
                        if isinstance(name, ast.Name):
                            out[name.id] = (st.lineno, None)
        elif isinstance(st, DEF_NODES):
            out[st.name] = (st.lineno, None)
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            for a in st.names:
                if a.name != "*":
                    out[a.asname or a.name.split(".")[0]] = (st.lineno, None)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            for name in flatten_targets(st.target):
                if isinstance(name, ast.Name):
                    out[name.id] = (st.lineno, None)
    return out


def module_constants_of(tree: ast.Module) -> dict[str, Any]:
    """Final values of the module-level names bound to literals (see :func:`final_bindings`)."""
    out: dict[str, Any] = {}
    for name, (_, value) in final_bindings(tree).items():
        if value is not None:
            ok, v = literal_value(value)
            if ok:
                out[name] = v
    return out


class Constants:
    """Constants of the candidate and the reference (a mixin of :class:`~._context.Context`)."""

    final_bindings = staticmethod(final_bindings)
    module_constants_of = staticmethod(module_constants_of)

    def _init_constants(self) -> None:
        self.module_level_bindings: list[tuple[int, str, ast.AST, ast.AST | None]] = []
        self.ref_constants: dict[str, Any] = {}
        self.ref_defs: dict[str, str] = {}
        self.ref_assigns: dict[str, ast.AST] = {}  # reference module-level NAME -> its final value expression

    def _collect_constants(self) -> None:
        self.facts.module_constants = self.module_constants_of(self.tree)
        for st in module_level_stmts(self.tree.body):
            if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    if isinstance(t, (ast.Tuple, ast.List)) and isinstance(st.value, (ast.Tuple, ast.List)) \
                            and len(t.elts) == len(st.value.elts):
                        for tt, vv in zip(t.elts, st.value.elts, strict=True):
                            if isinstance(tt, ast.Name):
                                self.module_level_bindings.append((st.lineno, tt.id, st, vv))
                        continue
                    for tt in flatten_targets(t):
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
                for tt in flatten_targets(st.target):
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
