"""Name resolution for the precheck (trusted parent): what does a name or chain denote?

:class:`NameResolution` is one analysis of :class:`~._context.Context`.  It indexes
each node's parent and the AST depth, binds names to lexical scopes, records the
imports, and resolves import aliases (``import torch as T``, ``from torch import cuda
as c``), assignment aliases (``ev = torch.cuda.Event``, ``self.ev = ...``), literal
``getattr(x, "a" + "b")``, ``importlib.import_module("m")`` / ``__import__("m")``,
``sys.modules["m"]``, ``vars(m)["a"]`` / ``m.__dict__["a"]`` and builtins, with lexical
scoping so a local variable called ``open`` is not the builtin.

State it owns: ``parent``, ``max_depth``/``max_depth_line``, ``docstring_ids``,
``imports`` and the private alias, binding and scope tables.  It reads ``tree`` and
``facts`` and folds strings through :class:`~._folding.StringFolding` (``fold_str``).
"""

from __future__ import annotations

import ast
import builtins

from ._records import DEF_NODES, FUNC_NODES, assign_pairs

BUILTIN_NAMES = frozenset(dir(builtins))

# Names a candidate may use without importing them (the reference's namespace provides them)
IMPLICIT_MODULES = {
    "torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "np": "numpy", "numpy": "numpy",
    "tl": "triton.language", "triton": "triton", "time": "time", "os": "os", "sys": "sys", "gc": "gc",
    "math": "math", "random": "random", "threading": "threading", "multiprocessing": "multiprocessing",
    "subprocess": "subprocess", "ctypes": "ctypes", "inspect": "inspect", "builtins": "builtins",
    "importlib": "importlib", "functools": "functools", "load_inline": "torch.utils.cpp_extension.load_inline",
    "cpp_extension": "torch.utils.cpp_extension", "__builtins__": "builtins",
}


class NameResolution:
    """Scopes, imports, aliases and :meth:`resolve` (a mixin of :class:`~._context.Context`)."""

    def _init_names(self) -> None:
        self.parent: dict[ast.AST, ast.AST] = {}
        self.max_depth = 0  # deepest AST nesting (the module is depth 0)
        self.max_depth_line = 0
        self.docstring_ids: set[int] = set()
        self.imports: list[tuple[int, str, ast.AST]] = []
        self._alias: dict[str, list[tuple[ast.AST | None, str, bool]]] = {}
        self._dotted_alias: dict[str, tuple[str, bool]] = {}
        self._bound: dict[ast.AST | None, set[str]] = {}
        self._scope_cache: dict[ast.AST, ast.AST | None] = {}
        self._star: list[str] = []

    # -- parents and scopes ---------------------------------------------
    def _index_parents(self) -> None:
        depth = {self.tree: 0}
        for node in ast.walk(self.tree):  # breadth first: a parent's depth is known before its children's
            d = depth.get(node, 0) + 1  # (expression contexts such as ast.Load are shared singletons)
            for ch in ast.iter_child_nodes(node):
                self.parent[ch] = node
                depth[ch] = d
                if d > self.max_depth:
                    self.max_depth, self.max_depth_line = d, getattr(ch, "lineno", 0) or self.max_depth_line
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                self.docstring_ids.add(id(node.value))

    def scope_of(self, node: ast.AST) -> ast.AST | None:
        """Nearest enclosing function, lambda or class (None: module)."""
        if node in self._scope_cache:
            return self._scope_cache[node]
        p = self.parent.get(node)
        child = node
        while p is not None:
            if isinstance(p, FUNC_NODES + (ast.ClassDef,)):
                # decorators, defaults and bases belong to the outer scope
                if isinstance(p, FUNC_NODES) and child in getattr(p, "decorator_list", []):
                    pass
                elif isinstance(p, ast.ClassDef) and (child in p.bases or child in p.decorator_list
                                                      or child in p.keywords):
                    pass
                elif isinstance(p, FUNC_NODES) and child is getattr(p, "returns", None):
                    pass
                else:
                    break
            child = p
            p = self.parent.get(p)
        self._scope_cache[node] = p
        return p

    def scope_chain(self, node: ast.AST) -> list[ast.AST | None]:
        chain: list[ast.AST | None] = []
        s = self.scope_of(node)
        first = True
        while s is not None:
            if first or not isinstance(s, ast.ClassDef):
                chain.append(s)
            first = False
            s = self.scope_of(s)
        chain.append(None)
        return chain

    def _bind(self, scope: ast.AST | None, name: str) -> None:
        self._bound.setdefault(scope, set()).add(name)

    def _index_scopes(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind(self.scope_of(node), node.id)
            elif isinstance(node, DEF_NODES):
                self._bind(self.scope_of(node), node.name)
            elif isinstance(node, ast.arg):
                self._bind(self.scope_of(node), node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(self.scope_of(node), node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        self._bind(self.scope_of(node), a.asname or a.name.split(".")[0])
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and getattr(node, "name", None):
                self._bind(self.scope_of(node), node.name)

    # -- imports and aliases --------------------------------------------
    def _add_alias(self, scope: ast.AST | None, name: str, qname: str, rooted: bool) -> None:
        entries = self._alias.setdefault(name, [])
        entries[:] = [e for e in entries if e[0] is not scope]
        entries.append((scope, qname, rooted))

    def _collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports.append((node.lineno, a.name, node))
                    if a.asname:
                        self._add_alias(self.scope_of(node), a.asname, a.name, True)
                    else:
                        top = a.name.split(".")[0]
                        self._add_alias(self.scope_of(node), top, top, True)
            elif isinstance(node, ast.ImportFrom):
                mod = "." * (node.level or 0) + (node.module or "")
                for a in node.names:
                    if a.name == "*":
                        self._star.append(mod)
                        self.imports.append((node.lineno, f"{mod}.*", node))
                        continue
                    q = f"{mod}.{a.name}" if not mod.endswith(".") else f"{mod}{a.name}"
                    self.imports.append((node.lineno, q, node))
                    self._add_alias(self.scope_of(node), a.asname or a.name, q, True)
        mods = set()
        for _, q, node in self.imports:
            if isinstance(node, ast.Import):
                mods.add(q)
            else:
                mods.add("." * (node.level or 0) + (node.module or ""))
        self.facts.imports = sorted(m for m in mods if m)

    def _collect_aliases(self) -> None:
        assigns: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    assigns.extend(assign_pairs(t, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                assigns.append((node.target, node.value))
        assigns.sort(key=lambda tv: (getattr(tv[0], "lineno", 0), getattr(tv[0], "col_offset", 0)))
        for _ in range(2):
            for target, value in assigns:
                if isinstance(value, (ast.Constant, ast.JoinedStr)):
                    continue
                r = self._res(value)
                if r is None:
                    continue
                qname, rooted = r
                if isinstance(target, ast.Name):
                    if qname == target.id and not rooted:
                        continue  # (torch = importlib.import_module("torch") is a rooted alias of itself)
                    if not rooted and not isinstance(value, (ast.Name, ast.Attribute)):
                        continue
                    self._add_alias(self.scope_of(target), target.id, qname, rooted)
                elif isinstance(target, ast.Attribute) and (rooted or isinstance(value, (ast.Name, ast.Attribute))):
                    base = self._res(target.value)
                    if base is not None and base[1]:
                        continue  # a write into a module is tampering (RH-05), not an alias
                    dotted = self._dotted(target)
                    if dotted:
                        self._dotted_alias[dotted] = (qname, rooted)

    @staticmethod
    def _dotted(node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    def _res_name(self, name: str, node: ast.AST) -> tuple[str, bool]:
        entries = self._alias.get(name, ())
        for scope in self.scope_chain(node):
            for s, q, rooted in entries:
                if s is scope:
                    return q, rooted
            if name in self._bound.get(scope, ()):
                return name, False
        if name in BUILTIN_NAMES:
            return f"builtins.{name}", True
        if name in IMPLICIT_MODULES:
            # used without being imported: in KernelBench the candidate runs in the
            # reference's namespace, where these names are the usual modules
            return IMPLICIT_MODULES[name], True
        if self._star:
            return f"{self._star[-1]}.{name}", True
        return name, False

    def _res(self, node: ast.AST | None) -> tuple[str, bool] | None:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self._res_name(node.id, node)
        if isinstance(node, ast.Attribute):
            dotted = self._dotted(node)
            if dotted and dotted in self._dotted_alias:
                return self._dotted_alias[dotted]
            base = self._res(node.value)
            if base is None:
                return None
            return f"{base[0]}.{node.attr}", base[1]
        if isinstance(node, ast.Call):
            fr = self._res(node.func)
            if fr is None:
                return None
            fq = fr[0]
            if fq == "builtins.getattr" and len(node.args) >= 2:
                name = self.fold_str(node.args[1])
                base = self._res(node.args[0])
                if name is not None and base is not None:
                    return f"{base[0]}.{name}", base[1]
                return None
            if fq in ("importlib.import_module", "builtins.__import__", "importlib.__import__") and node.args:
                name = self.fold_str(node.args[0])
                if name and not name.startswith("."):
                    if fq.endswith("__import__") and not any(k.arg == "fromlist" for k in node.keywords) \
                            and len(node.args) < 4:
                        name = name.split(".")[0]
                    return name, True
                return None
            if fq == "builtins.vars" and len(node.args) == 1:
                base = self._res(node.args[0])
                if base is not None:
                    return f"{base[0]}.__dict__", base[1]
            return None
        if isinstance(node, ast.Subscript):
            key = self.fold_str(node.slice)
            if key is None:
                return None
            base = self._res(node.value)
            if base is None:
                return None
            if base[0] == "sys.modules" and base[1]:
                return key, True
            if base[0].endswith(".__dict__"):
                return f"{base[0][:-len('.__dict__')]}.{key}", base[1]
            return None
        return None

    def resolve(self, node: ast.AST | None) -> str | None:
        r = self._res(node)
        return r[0] if r else None

    def resolve_rooted(self, node: ast.AST | None) -> str | None:
        r = self._res(node)
        return r[0] if r and r[1] else None
