"""One pass over the candidate's AST (trusted parent): references, calls, stores, strings.

:class:`TreeWalk` is one analysis of :class:`~._context.Context`.  It records every
maximal dotted chain that resolves (:class:`~._records.Ref`, imports included), every
call (:class:`~._records.CallRef`), every store into a name, attribute or item,
``setattr``/``delattr``, ``del``, ``operator.setitem`` and mutating method calls on
interpreter-wide containers (:class:`~._records.Store`), the non-docstring string
constants, attribute names (literal ``getattr`` names too) and loaded names.

State it owns: ``refs``, ``calls``, ``stores``, ``strings``, ``attr_refs`` and
``name_loads``; it fills ``facts.calls``.  It reads ``parent``, ``docstring_ids`` and
``imports`` and resolves through :class:`~._names.NameResolution`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ._records import CallRef, Hit, Ref, Store, flatten_targets, hit, match_prefix

# module-level containers whose in-place mutation changes interpreter-wide state
_MODULE_CONTAINERS = {"sys.path", "sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache",
                      "sys.argv", "sys.orig_argv", "os.environ", "builtins.__dict__", "sys.flags", "sys.stdout",
                      "sys.stderr", "warnings.filters", "atexit._exithandlers"}
_MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove",
             "__setitem__", "__delitem__", "discard", "add"}


class TreeWalk:
    """The references, calls and stores of the source (a mixin of :class:`~._context.Context`)."""

    def _init_walk(self) -> None:
        self.refs: list[Ref] = []
        self.stores: list[Store] = []
        self.calls: list[CallRef] = []
        self.strings: list[tuple[int, str, ast.Constant]] = []
        self.attr_refs: list[tuple[int, str, ast.AST]] = []
        self.name_loads: list[tuple[int, str, ast.Name]] = []

    # -- one pass over the tree -----------------------------------------
    def _is_chain(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return True
        if isinstance(node, ast.Subscript):
            return True
        if isinstance(node, ast.Call):
            fq = self.resolve(node.func)
            return fq in ("builtins.getattr", "importlib.import_module", "builtins.__import__", "builtins.vars")
        return False

    def _walk(self) -> None:
        for node in ast.walk(self.tree):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.docstring_ids:
                self.strings.append((line, node.value, node))
            if isinstance(node, ast.Attribute):
                self.attr_refs.append((line, node.attr, node))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.name_loads.append((line, node.id, node))
            # maximal chains
            if self._is_chain(node) and not (isinstance(node, (ast.Name, ast.Attribute, ast.Subscript))
                                             and not isinstance(getattr(node, "ctx", ast.Load()), ast.Load)):
                par = self.parent.get(node)
                if not (isinstance(par, ast.Attribute) and par.value is node):
                    r = self._res(node)
                    if r is not None:
                        self.refs.append(Ref(line, r[0], r[1], node, "load"))
            if isinstance(node, ast.Call):
                r = self._res(node.func)
                method = node.func.attr if isinstance(node.func, ast.Attribute) else None
                self.calls.append(CallRef(line, r[0] if r else None, bool(r and r[1]), node, method))
                self._call_stores(node, r[0] if r else None)
                if r and r[0] in ("builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.hasattr") \
                        and len(node.args) >= 2:
                    name = self.fold_str(node.args[1])
                    if name is not None:
                        self.attr_refs.append((line, name, node))
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                how = {ast.Assign: "assign", ast.AugAssign: "augassign", ast.AnnAssign: "annassign"}[type(node)]
                for t in targets:
                    for tt in flatten_targets(t):
                        self._target_store(tt, how, node, getattr(node, "value", None))
            elif isinstance(node, ast.Delete):
                for t in node.targets:
                    for tt in flatten_targets(t):
                        self._target_store(tt, "del", node, None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                pass
        for line, q, node in self.imports:
            self.refs.append(Ref(line, q, True, node, "import"))
        self.facts.calls = sorted({c.qname for c in self.calls if c.qname})

    def _target_store(self, t: ast.AST, how: str, stmt: ast.AST, value: ast.AST | None) -> None:
        line = getattr(t, "lineno", getattr(stmt, "lineno", 0))
        if isinstance(t, ast.Attribute):
            # resolve the object written into, never an alias named after the target itself
            base = self._res(t.value)
            self.stores.append(Store(line, f"{base[0]}.{t.attr}" if base else None, bool(base and base[1]), how,
                                     stmt, value))
        elif isinstance(t, ast.Subscript):
            r = self._res(t)
            if r is not None:
                self.stores.append(Store(line, r[0], r[1], how, stmt, value, "item"))
            else:
                base = self._res(t.value)
                if base is not None:
                    self.stores.append(Store(line, base[0], base[1], "item" if how != "del" else "del", stmt,
                                             value, "container"))
        elif isinstance(t, ast.Name):
            self.stores.append(Store(line, t.id, False, how, stmt, value))

    def _call_stores(self, node: ast.Call, fq: str | None) -> None:
        line = node.lineno
        args = node.args
        if fq in ("builtins.setattr", "builtins.delattr") and len(args) >= 2:
            base = self._res(args[0])
            if base is not None:
                name = self.fold_str(args[1])
                q = f"{base[0]}.{name}" if name is not None else f"{base[0]}.<dynamic>"
                self.stores.append(Store(line, q, base[1], fq.split(".")[-1], node,
                                         args[2] if len(args) > 2 else None))
            return
        if fq in ("operator.setitem", "operator.delitem", "operator.__setitem__", "operator.__delitem__") \
                and len(args) >= 2:
            base = self._res(args[0])
            if base is not None and base[1]:
                key = self.fold_str(args[1])
                if base[0].endswith(".__dict__") and key is not None:
                    self.stores.append(Store(line, f"{base[0][:-9]}.{key}", True, "item", node,
                                             args[2] if len(args) > 2 else None, "item"))
                else:
                    self.stores.append(Store(line, base[0], True, "item", node, None, "container"))
            return
        if isinstance(node.func, ast.Attribute):
            meth = node.func.attr
            if meth in ("__setattr__", "__delattr__"):
                recv = self._res(node.func.value)
                if recv is not None and recv[0] in ("builtins.object", "builtins.type") and len(args) >= 2:
                    base = self._res(args[0])
                    name = self.fold_str(args[1])
                    if base is not None:
                        self.stores.append(Store(line, f"{base[0]}.{name or '<dynamic>'}", base[1],
                                                 "setattr" if meth == "__setattr__" else "delattr", node,
                                                 args[2] if len(args) > 2 else None))
                elif recv is not None and args:
                    name = self.fold_str(args[0])
                    self.stores.append(Store(line, f"{recv[0]}.{name or '<dynamic>'}", recv[1],
                                             "setattr" if meth == "__setattr__" else "delattr", node,
                                             args[1] if len(args) > 1 else None))
                return
            if meth in _MUTATORS:
                recv = self._res(node.func.value)
                if recv is not None and recv[1] and (meth.startswith("__") or recv[0].endswith(".__dict__")
                                                     or recv[0] in _MODULE_CONTAINERS):
                    self.stores.append(Store(line, recv[0], True, "mutate", node, None, meth))
    # -- helpers for rules ------------------------------------------------
    def ref_hits(self, prefixes: Iterable[str], *, exclude: Iterable[str] = (), label: str | None = None,
                 imports: bool = True) -> list[Hit]:
        prefixes = tuple(prefixes)
        exclude = tuple(exclude)
        out = []
        for r in self.refs:
            if not r.rooted or (r.kind == "import" and not imports):
                continue
            if match_prefix(r.qname, prefixes) and not match_prefix(r.qname, exclude):
                what = f"import {r.qname}" if r.kind == "import" else r.qname
                out.append(hit(r.line, label or what))
        return out
