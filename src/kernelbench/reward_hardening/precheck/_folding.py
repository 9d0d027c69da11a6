"""String folding for the precheck (trusted parent): which text does an expression hold?

:class:`StringFolding` is one analysis of :class:`~._context.Context`.  It folds
module-level and local string assignments, ``+``/``+=``, f-strings with known parts,
``"".join``, ``.replace``, ``textwrap.dedent`` and list building (``append`` /
``extend``), so C/C++/CUDA sources passed to ``load_inline`` are recovered as
:class:`~._records.Seg` pieces that keep their Python line numbers.

State it owns: the folded name environment ``_env`` (name -> ``("str", segs)`` or
``("list", [segs, ...])``).  It reads ``tree`` and resolves callees through
:class:`~._names.NameResolution` (``resolve``).
"""

from __future__ import annotations

import ast

from ._records import Seg, assign_pairs, literal_value


class StringFolding:
    """:meth:`fold_segs`, :meth:`fold_list` and :meth:`fold_str` (a mixin of :class:`~._context.Context`)."""

    def _init_folding(self) -> None:
        self._env: dict[str, tuple[str, list]] = {}

    # -- string folding -------------------------------------------------
    def _seg_of(self, node: ast.Constant) -> Seg:
        multi = (getattr(node, "end_lineno", node.lineno) or node.lineno) != node.lineno
        return Seg(node.value, node.lineno, multi, id(node))

    def fold_segs(self, node: ast.AST | None, partial: bool = False, _depth: int = 0) -> list[Seg] | None:
        if node is None or _depth > 40:
            return None
        d = _depth + 1
        if isinstance(node, ast.Constant):
            return [self._seg_of(node)] if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            out: list[Seg] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(self._seg_of(v))
                elif isinstance(v, ast.FormattedValue):
                    inner = self.fold_segs(v.value, partial, d)
                    if inner is None:
                        ok, lit = literal_value(v.value)
                        if ok and lit is not None:
                            inner = [Seg(str(lit), getattr(v, "lineno", 0), False, None)]
                    if inner is None:
                        if not partial:
                            return None
                        inner = [Seg(" ", getattr(v, "lineno", 0), False, None)]
                    out.extend(inner)
            return out
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                a = self.fold_segs(node.left, partial, d)
                b = self.fold_segs(node.right, partial, d)
                if a is None or b is None:
                    if not partial:
                        return None
                    return (a or []) + (b or []) or None
                return a + b
            if isinstance(node.op, ast.Mod) and partial:
                return self.fold_segs(node.left, partial, d)
            return None
        if isinstance(node, ast.Name):
            v = self._env.get(node.id)
            if v is not None and v[0] == "str":
                return list(v[1])
            return None
        if isinstance(node, ast.Call):
            fq = self.resolve(node.func) or ""
            if fq in ("textwrap.dedent", "inspect.cleandoc", "builtins.str") and len(node.args) == 1:
                return self.fold_segs(node.args[0], partial, d)
            if isinstance(node.func, ast.Attribute):
                meth = node.func.attr
                if meth in ("strip", "lstrip", "rstrip") and not node.args:
                    return self.fold_segs(node.func.value, partial, d)
                if meth == "format" and partial:
                    return self.fold_segs(node.func.value, partial, d)
                if meth == "join" and len(node.args) == 1:
                    sep = self.fold_segs(node.func.value, False, d)
                    items = self.fold_list(node.args[0], partial, d)
                    if sep is None or items is None:
                        return None
                    out = []
                    for k, it in enumerate(items):
                        if k:
                            out.extend(sep)
                        out.extend(it)
                    return out
                if meth == "replace" and len(node.args) == 2:
                    base = self.fold_segs(node.func.value, partial, d)
                    old = self.fold_str(node.args[0])
                    new = self.fold_str(node.args[1])
                    if base is None or old is None or new is None:
                        return None
                    text = "".join(s.text for s in base).replace(old, new)
                    return [Seg(text, base[0].line if base else 0, True, None)]
            return None
        return None

    def fold_list(self, node: ast.AST | None, partial: bool = False, _depth: int = 0) -> list[list[Seg]] | None:
        if node is None or _depth > 40:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    sub = self.fold_list(e.value, partial, _depth + 1)
                    if sub is None:
                        if partial:
                            continue
                        return None
                    out.extend(sub)
                    continue
                s = self.fold_segs(e, partial, _depth + 1)
                if s is None:
                    sub = self.fold_list(e, partial, _depth + 1) if isinstance(e, ast.Name) else None
                    if sub is not None:
                        out.extend(sub)
                        continue
                    if partial:
                        continue
                    return None
                out.append(s)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a = self.fold_list(node.left, partial, _depth + 1)
            b = self.fold_list(node.right, partial, _depth + 1)
            if a is None or b is None:
                s = self.fold_segs(node, partial, _depth + 1)
                return [s] if s is not None else None
            return a + b
        if isinstance(node, ast.Name):
            v = self._env.get(node.id)
            if v is not None:
                return list(v[1]) if v[0] == "list" else [list(v[1])]
            return None
        s = self.fold_segs(node, partial, _depth + 1)
        return [s] if s is not None else None

    def fold_str(self, node: ast.AST | None) -> str | None:
        segs = self.fold_segs(node, partial=False)
        if segs is None:
            return None
        return "".join(s.text for s in segs)

    def _collect_env(self) -> None:
        self._env = {}

        def visit(body: list[ast.stmt]) -> None:
            for st in body:
                if isinstance(st, ast.Assign):
                    for t in st.targets:
                        for tt, vv in assign_pairs(t, st.value):
                            if isinstance(tt, ast.Name):
                                self._env_set(tt.id, vv)
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    self._env_set(st.target.id, st.value)
                elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) \
                        and isinstance(st.op, ast.Add):
                    cur = self._env.get(st.target.id)
                    if cur is not None and cur[0] == "str":
                        add = self.fold_segs(st.value, partial=True)
                        if add is not None:
                            self._env[st.target.id] = ("str", list(cur[1]) + add)
                    elif cur is not None and cur[0] == "list":
                        add = self.fold_list(st.value, partial=True)
                        if add is not None:
                            self._env[st.target.id] = ("list", list(cur[1]) + add)
                elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                        and isinstance(st.value.func, ast.Attribute) and isinstance(st.value.func.value, ast.Name) \
                        and st.value.func.attr in ("append", "extend") and st.value.args:
                    cur = self._env.get(st.value.func.value.id)
                    if cur is not None and cur[0] == "list":
                        if st.value.func.attr == "append":
                            add = self.fold_segs(st.value.args[0], partial=True)
                            add_l = [add] if add is not None else None
                        else:
                            add_l = self.fold_list(st.value.args[0], partial=True)
                        if add_l is not None:
                            self._env[st.value.func.value.id] = ("list", list(cur[1]) + add_l)
                for fld in ("body", "orelse", "finalbody", "handlers"):
                    sub = getattr(st, fld, None)
                    if isinstance(sub, list):
                        visit([s for s in sub if isinstance(s, ast.stmt)] +
                              [s for h in sub if isinstance(h, ast.ExceptHandler) for s in h.body])
                if isinstance(st, ast.Match):
                    for case in st.cases:
                        visit(case.body)

        visit(self.tree.body)

    def _env_set(self, name: str, value: ast.AST) -> None:
        if isinstance(value, (ast.List, ast.Tuple)):
            lst = self.fold_list(value, partial=True)
            if lst is not None:
                self._env[name] = ("list", lst)
            return
        segs = self.fold_segs(value, partial=True)
        if segs is not None:
            self._env[name] = ("str", segs)
