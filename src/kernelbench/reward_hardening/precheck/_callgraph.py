"""Classes, functions and what ``ModelNew.forward`` reaches (trusted parent).

:class:`CallGraph` is one analysis of :class:`~._context.Context`.  It finds the
file's classes and functions and ``ModelNew``, records what ``self.<attr>`` is built
from, and follows calls, method lookups along file-local bases, decorators and values
built outside ``forward`` but used inside it (instances, class objects, lambdas, module
values, class patches) to the set of functions ``forward`` can run, each with the class
its ``self`` belongs to.  Without a ``ModelNew`` the whole module counts as reachable.

State it owns: ``classes``, ``funcs``, ``model_new``, ``self_attr_types``,
``fn_class`` (reachable function -> class of its ``self``), ``reachable`` and private
caches; it sets ``facts.has_model_new``.  It reads ``parent`` and the scope tables of
:class:`~._names.NameResolution`, and skips Triton ``jit_funcs`` in
:meth:`reachable_nodes`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from ._records import DEF_NODES, FUNC_NODES, assign_pairs, flatten_targets, module_level_stmts

# methods that run when an object is built, not when it is used
CONSTRUCTION_METHODS = frozenset({"__init__", "__new__", "__init_subclass__", "__set_name__", "__post_init__"})


class CallGraph:
    """Reachability from ``ModelNew.forward`` (a mixin of :class:`~._context.Context`)."""

    def _init_callgraph(self) -> None:
        self.classes: dict[str, ast.ClassDef] = {}
        self.funcs: dict[str, list[ast.AST]] = {}
        self.model_new: ast.ClassDef | None = None
        self.self_attr_types: dict[tuple[str, str], tuple[str, bool]] = {}
        self.fn_class: dict[ast.AST, str | None] = {}
        self.reachable: set[ast.AST] = set()
        self._module_values: dict[str, list[ast.AST]] | None = None
        self._self_values: dict[tuple[str, str], list[ast.AST]] = {}
        self._class_patches: dict[str, list[ast.AST]] | None = None

    # -- classes, functions, ModelNew -------------------------------------
    def _collect_defs(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not isinstance(self.parent.get(node), ast.ClassDef):
                    self.funcs.setdefault(node.name, []).append(node)
        module_stmts = list(module_level_stmts(self.tree.body))
        for st in module_stmts:
            if isinstance(st, ast.ClassDef) and st.name == "ModelNew":
                self.model_new = st
        if self.model_new is None:
            for st in module_stmts:
                if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew"
                                                      for t in st.targets):
                    if isinstance(st.value, ast.Name) and st.value.id in self.classes:
                        self.model_new = self.classes[st.value.id]
                    else:
                        self.facts.has_model_new = True
        self.facts.has_model_new = self.facts.has_model_new or self.model_new is not None
        # self.X = <call>  /  self.X = <function name>
        for cname, cls in self.classes.items():
            for node in ast.walk(cls):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            v = node.value
                            if isinstance(v, ast.Call):
                                r = self._res(v.func)
                                if r is not None:
                                    self.self_attr_types[(cname, t.attr)] = r
                            elif isinstance(v, ast.Name):
                                self.self_attr_types[(cname, t.attr)] = (f"func:{v.id}", False)

    def class_bases(self, cls: ast.ClassDef) -> list[str]:
        out = []
        for b in cls.bases:
            q = self.resolve(b)
            if q:
                out.append(q)
        return out

    def base_chain(self, cls: ast.ClassDef, direct: Callable[[ast.expr], str | None],
                   seen: set[str] | None = None) -> str | None:
        """The first base of ``cls`` that ``direct`` names, looked up through this file's classes.

        The answer is ``direct``'s name for it, prefixed ``"Local -> "`` for each local class
        it was reached through; ``None`` when no base qualifies.
        """
        seen = set() if seen is None else seen
        if cls.name in seen:
            return None
        seen.add(cls.name)
        for b in cls.bases:
            found = direct(b)
            if found:
                return found
            if isinstance(b, ast.Name) and b.id in self.classes and b.id != cls.name:
                found = self.base_chain(self.classes[b.id], direct, seen)
                if found:
                    return f"{b.id} -> {found}"
        return None

    def methods(self, cname: str, meth: str, _seen: set | None = None) -> list[ast.AST]:
        """``meth`` looked up along the file-local base classes of ``cname``."""
        _seen = _seen or set()
        if cname in _seen or cname not in self.classes:
            return []
        _seen.add(cname)
        cls = self.classes[cname]
        for st in cls.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == meth:
                return [st]
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                found = self.methods(b.id, meth, _seen)
                if found:
                    return found
        return []

    def iter_body(self, fn: ast.AST) -> Iterator[ast.AST]:
        """Nodes of a function (or module) body, not descending into nested defs/classes."""
        stack = list(fn.body) if isinstance(fn.body, list) else [fn.body]
        if isinstance(fn, FUNC_NODES):
            stack += list(fn.args.defaults) + [d for d in fn.args.kw_defaults if d is not None]
        while stack:
            n = stack.pop()
            yield n
            for ch in ast.iter_child_nodes(n):
                if isinstance(ch, DEF_NODES):
                    continue
                stack.append(ch)

    def as_attribute(self, node: ast.AST) -> ast.AST:
        """``getattr(obj, "na" + "me")`` as the ``obj.name`` it is (other nodes unchanged).

        Calls whose callee is such a ``getattr`` become calls of the attribute.  The
        synthesised nodes reuse the original receiver, so name resolution still works.
        """
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
            f = self.as_attribute(node.func)
            if f is not node.func:
                return ast.copy_location(ast.Call(f, node.args, node.keywords), node)
            return node
        if isinstance(node, ast.Call) and len(node.args) == 2 and not node.keywords \
                and isinstance(node.func, ast.Name) and (self.resolve(node.func) or "") == "builtins.getattr":
            name = self.fold_str(node.args[1])
            if name and name.isidentifier():
                return ast.copy_location(ast.Attribute(node.args[0], name, ast.Load()), node)
        return node

    def edges(self, nodes: Iterable[ast.AST], cls: str | None) -> Iterator[tuple[ast.AST, str | None]]:
        for node in nodes:
            node = self.as_attribute(node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                q = self.resolve(node) or node.id
                for f in self.funcs.get(q.split(".")[-1] if not q.startswith("builtins.") else "", []):
                    # a def nested in a method closes over (or is handed) that method's self
                    yield f, (None if self.parent.get(f) is self.tree else cls)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                recv, m = node.value, node.attr
                if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and cls:
                    for f in self.methods(cls, m):
                        yield f, cls
                    t = self.self_attr_types.get((cls, m))
                    if t and t[0].startswith("func:"):
                        for f in self.funcs.get(t[0][5:], []):
                            yield f, None
                elif isinstance(recv, ast.Name) and recv.id in self.classes:
                    target = "forward" if m == "apply" else m
                    for f in self.methods(recv.id, target):
                        yield f, recv.id
                elif isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) \
                        and recv.value.id == "self" and cls:
                    t = self.self_attr_types.get((cls, recv.attr))
                    if t and t[0] in self.classes:
                        for f in self.methods(t[0], m):
                            yield f, t[0]
                elif isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" \
                        and cls and cls in self.classes:
                    for b in self.classes[cls].bases:
                        if isinstance(b, ast.Name) and b.id in self.classes:
                            for f in self.methods(b.id, m):
                                yield f, b.id
            elif isinstance(node, ast.Call):
                f = node.func
                # self.sub(x) where self.sub = LocalModule(...)
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and cls:
                    t = self.self_attr_types.get((cls, f.attr))
                    if t and t[0] in self.classes:
                        for meth in ("forward", "__call__"):
                            for g in self.methods(t[0], meth):
                                yield g, t[0]
            if isinstance(node, ast.Call) and cls and isinstance(node.func, ast.Name) and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                # helper(self, ...): a module-level function used as a method of cls
                for g in self.funcs.get(node.func.id, []):
                    yield g, cls
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                # a file-local class named in reachable code is created (or handed out to be
                # created) there: every method of it may run, dunders and properties included
                c = self.local_class(node)
                if c is not None:
                    yield from self.class_edges(c, created=True)
                elif node.id not in self.funcs:
                    for value in self.module_values(node):
                        yield from self.value_edges(value, cls, set())
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self" and cls:
                for value in self.self_attr_values(cls, node.attr):
                    yield from self.value_edges(value, cls, set())
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield node, cls  # a nested def/lambda node handed to us directly

    # -- value flow: objects made outside forward and used inside it -----------
    def local_class(self, node: ast.AST) -> str | None:
        """The file-local class a ``Name`` (or alias of one) refers to, else None."""
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.classes:
            return node.id
        q = self.resolve(node) or ""
        return q if q in self.classes else None

    def class_edges(self, cname: str, created: bool,
                    _seen: set[str] | None = None) -> Iterator[tuple[ast.AST, str | None]]:
        """Every method of ``cname`` and its file-local bases, with ``cname`` as ``self``'s class.

        ``created=False`` (an instance built outside ``forward``, e.g. in ``__init__``)
        leaves out the construction methods, which ran before ``forward``.  Class-level
        assignments (``__iter__ = _helper``, ``forward = staticmethod(_impl)``) and the
        methods' decorators flow in too.
        """
        _seen = set() if _seen is None else _seen
        if cname in _seen or cname not in self.classes:
            return
        _seen.add(cname)
        cls = self.classes[cname]
        for st in module_level_stmts(cls.body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not created and st.name in CONSTRUCTION_METHODS:
                    continue
                yield st, cname
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and st.value is not None:
                yield from self.value_edges(st.value, cname, set())
        # methods attached later: Lazy.__iter__ = f / setattr(Lazy, "__iter__", f)
        for value in self.class_patches(cname):
            yield from self.value_edges(value, cname, set())
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                yield from self.class_edges(b.id, created, _seen)

    def class_patches(self, cname: str) -> list[ast.AST]:
        """Values stored into the class object ``cname`` anywhere in the file."""
        if self._class_patches is None:
            self._class_patches = {}
            for n in ast.walk(self.tree):
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                            c = self.local_class(t.value)
                            if c is not None:
                                self._class_patches.setdefault(c, []).append(n.value)
                elif isinstance(n, ast.Call) and (self.resolve(n.func) or "") == "builtins.setattr" \
                        and len(n.args) == 3 and isinstance(n.args[0], ast.Name):
                    c = self.local_class(n.args[0])
                    if c is not None:
                        self._class_patches.setdefault(c, []).append(n.args[2])
        return self._class_patches.get(cname, [])

    def module_values(self, node: ast.Name) -> list[ast.AST]:
        """Values bound to ``node.id`` at module level when that is the binding ``node`` sees."""
        for scope in self.scope_chain(node):
            if scope is None:
                break
            if node.id in self._bound.get(scope, ()):
                return []  # a local variable: its assignment is part of the walked body
        if self._module_values is None:
            self._module_values = {}
            for st in module_level_stmts(self.tree.body):
                if isinstance(st, ast.Assign):
                    for t in st.targets:
                        for tt, vv in assign_pairs(t, st.value):
                            for n in flatten_targets(tt):
                                if isinstance(n, ast.Name):
                                    self._module_values.setdefault(n.id, []).append(vv)
                elif isinstance(st, (ast.AnnAssign, ast.AugAssign)) and isinstance(st.target, ast.Name) \
                        and st.value is not None:
                    self._module_values.setdefault(st.target.id, []).append(st.value)
        return self._module_values.get(node.id, [])

    def self_attr_values(self, cname: str, attr: str, _seen: set[str] | None = None) -> list[ast.AST]:
        """Values assigned to ``self.<attr>`` anywhere in ``cname`` or its file-local bases."""
        top = _seen is None
        if top and (cname, attr) in self._self_values:
            return self._self_values[(cname, attr)]
        _seen = set() if _seen is None else _seen
        if cname in _seen or cname not in self.classes:
            return []
        _seen.add(cname)
        out: list[ast.AST] = []
        cls = self.classes[cname]
        for node in ast.walk(cls):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for tt, vv in assign_pairs(t, node.value):
                        if isinstance(tt, ast.Attribute) and isinstance(tt.value, ast.Name) \
                                and tt.value.id == "self" and tt.attr == attr:
                            out.append(vv)
                continue
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" \
                        and t.attr == attr:
                    out.append(node.value)
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes:
                out += self.self_attr_values(b.id, attr, _seen)
        if top:
            self._self_values[(cname, attr)] = out
        return out

    def value_edges(self, value: ast.AST, cls: str | None,
                    seen: set[int]) -> Iterator[tuple[ast.AST, str | None]]:
        """Code that a value built outside ``forward`` carries into it.

        Functions and lambdas named in the value run when the value is used; a file-local
        class named in it is an instance (``Lazy()``: every method but the constructors)
        or a class object (``Lazy``: every method); a local function *called* in it ran
        already, but what it returned (its nested defs, its return values) flows on; names
        and ``self.<attr>`` inside the value are followed to their own bindings.
        """
        if id(value) in seen or len(seen) > 200:
            return
        seen.add(id(value))
        called: set[int] = set()
        for n in ast.walk(value):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                c = self.local_class(n.func)
                if c is not None:
                    called.add(id(n.func))
                    yield from self.class_edges(c, created=False)
                elif n.func.id in self.funcs:
                    called.add(id(n.func))
                    for g in self.funcs[n.func.id]:
                        for sub in ast.walk(g):
                            if sub is not g and isinstance(sub, FUNC_NODES):
                                yield sub, None
                            elif isinstance(sub, ast.Return) and sub.value is not None \
                                    and self.scope_of(sub) is g:
                                yield from self.value_edges(sub.value, None, seen)
        for n in ast.walk(value):
            if isinstance(n, ast.Lambda):
                yield n, cls
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in called:
                c = self.local_class(n)
                if c is not None:
                    yield from self.class_edges(c, created=True)
                    continue
                q = self.resolve(n) or n.id
                fs = self.funcs.get(q.split(".")[-1] if not q.startswith("builtins.") else "", [])
                for f in fs:
                    yield f, None
                if not fs:
                    for v in self.module_values(n):
                        yield from self.value_edges(v, None, seen)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and cls:
                for f in self.methods(cls, n.attr):
                    yield f, cls
                for v in self.self_attr_values(cls, n.attr):
                    yield from self.value_edges(v, cls, seen)

    def reach(self, starts: Iterable[tuple[ast.AST, str | None]]) -> dict[ast.AST, str | None]:
        seen: dict[ast.AST, str | None] = {}
        work = list(starts)
        while work:
            fn, cls = work.pop()
            # a function first reached without a class (a module-level helper) is walked once
            # more when it is also reached as a method body (decorator, helper(self, ...))
            if fn in seen and (seen[fn] is not None or cls is None):
                continue
            seen[fn] = cls
            work.extend(self.edges(self.iter_body(fn), cls))
            for dec in getattr(fn, "decorator_list", ()):
                # the wrapper a decorator returns is what runs when fn is called
                work.extend(self.edges(ast.walk(dec), cls))
                for n in ast.walk(dec):
                    if isinstance(n, ast.Name) and n.id in self.funcs:
                        work.extend((g, cls) for g in self.funcs[n.id])
        return seen

    def _compute_reach(self) -> None:
        starts: list[tuple[ast.AST, str | None]] = []
        if self.model_new is not None:
            for meth in ("forward", "__call__"):
                for f in self.methods(self.model_new.name, meth):
                    starts.append((f, self.model_new.name))
            # the model object itself was built before forward: any of its methods (dunders,
            # properties, class-level aliases) may run inside forward
            starts.extend(self.class_edges(self.model_new.name, created=False))
            self.fn_class = self.reach(starts)
        elif not self.facts.has_model_new:
            # no ModelNew: treat the whole module as reachable
            self.fn_class = {self.tree: None}
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    par = self.parent.get(node)
                    self.fn_class[node] = par.name if isinstance(par, ast.ClassDef) else None
        self.reachable = set(self.fn_class)

    def reachable_nodes(self) -> Iterator[tuple[ast.AST, ast.AST]]:
        """(function, node) for every node in forward-reachable code."""
        for fn in self.reachable:
            if fn in self.jit_funcs.values():
                continue
            for node in self.iter_body(fn):
                yield fn, node
