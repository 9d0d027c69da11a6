"""Declared kernels and the torch compute ``forward`` performs (trusted parent).

:class:`KernelProvenance` is one analysis of :class:`~._context.Context`: the
provenance facts.  It lists the declared custom kernels (CUDA ``__global__`` kernels of
``load_inline``/``load`` extensions, C++ functions they expose, stray ``__global__``
kernels in strings, Triton ``@jit`` functions) and whether ``ModelNew.forward`` can
launch each; whether another kernel DSL (TileLang, CuTe) is declared; and which
high-level torch compute ops forward-reachable code performs.  What counts as torch
compute is the shared operator-role table :mod:`kernelbench.reward_hardening.operators`.

State it owns: ``jit_funcs``, ``triton_launched``, ``python_called``,
``exposed_names`` and ``custom_op_namespaces``; it fills ``facts.declared_kernels``,
``facts.extension_modules``, ``facts.custom_backend_declared`` and
``facts.forward_torch_ops``.  It reads the call graph (:mod:`._callgraph`), the
extensions (:mod:`._sources`) and name resolution (:mod:`._names`).
"""

from __future__ import annotations

import ast

from kernelbench.reward_hardening.operators import (
    NN_CONTAINERS,
    NON_COMPUTE_NAMESPACES,
    NON_COMPUTE_PYTHON,
    TENSOR_COMPUTE_METHODS,
)

from . import _cxx_defs
from ._records import match_prefix


class KernelProvenance:
    """Declared kernels and forward's torch compute (a mixin of :class:`~._context.Context`)."""

    def _init_kernels(self) -> None:
        self.jit_funcs: dict[str, ast.AST] = {}
        self.triton_launched: set[str] = set()
        self.python_called: set[str] = set()
        self.exposed_names: set[str] = set()
        self.custom_op_namespaces: set[str] = set()

    # -- kernels ---------------------------------------------------------
    def _collect_kernels(self) -> None:
        # names called from forward-reachable Python
        for _fn, node in self.reachable_nodes():
            if isinstance(node, ast.Call):
                q = self.resolve(node.func)
                if q:
                    self.python_called.add(q.split(".")[-1])
                if isinstance(node.func, ast.Attribute):
                    self.python_called.add(node.func.attr)
        # Triton
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    d = dec.func if isinstance(dec, ast.Call) else dec
                    q = self.resolve_rooted(d) or ""
                    if q.startswith("triton.") and q.split(".")[-1] in ("jit", "autotune", "heuristics"):
                        self.jit_funcs[node.name] = node
                        break
        for c in self.calls:  # kernel = triton.jit(fn)
            if (c.qname or "").startswith("triton.") and (c.qname or "").endswith(".jit") and c.node.args \
                    and isinstance(c.node.args[0], ast.Name) and c.node.args[0].id in self.funcs:
                self.jit_funcs[c.node.args[0].id] = self.funcs[c.node.args[0].id][0]
        jit_names = set(self.jit_funcs)
        launched_py: set[str] = set()
        for _fn, node in self.reachable_nodes():
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Subscript):
                    q = self.resolve(f.value) or ""
                    if q.split(".")[-1] in jit_names:
                        launched_py.add(q.split(".")[-1])
                elif isinstance(f, ast.Attribute) and f.attr in ("run", "__getitem__"):
                    q = self.resolve(f.value) or ""
                    if q.split(".")[-1] in jit_names:
                        launched_py.add(q.split(".")[-1])
        work = list(launched_py)
        launched_tr = set()
        while work:
            k = work.pop()
            if k in launched_tr:
                continue
            launched_tr.add(k)
            for node in ast.walk(self.jit_funcs[k]):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in jit_names:
                    work.append(node.func.id)
        self.triton_launched = launched_tr
        declared: list[dict] = []
        # C++/CUDA extensions
        for m in self.ext_modules:
            if len(m.units) == 1:
                an = self.unit_analysis(m.units[0])
            else:
                an = _cxx_defs.analyse_module([t for u in m.units for t in u.tokens])
            for u in m.units:
                for i, t in enumerate(u.tokens):
                    if t.kind == "ident" and t.text in ("TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT") \
                            and i + 2 < len(u.tokens) and u.tokens[i + 2].kind == "ident":
                        self.custom_op_namespaces.add(u.tokens[i + 2].text)
            exposed = m.exposed if m.exposed is not None else sorted(an.pybind)
            mapping = {py: an.pybind.get(py, py) for py in exposed}
            for py, cpp in an.pybind.items():
                mapping.setdefault(py, cpp)
            self.exposed_names |= set(mapping)
            called = {py for py in mapping if py in self.python_called}
            entries = {mapping[py] for py in called}
            info = {"index": m.index, "name": m.name, "line": m.line, "loader": m.kind, "lang": m.lang,
                    "exposed": sorted(mapping), "called_from_forward": sorted(called),
                    "sources_folded": m.sources_folded}
            self.facts.extension_modules.append(info)
            if an.kernels:
                launched = _cxx_defs.launched_kernels(an, entries)
                for kname, kline in sorted(an.kernels.items(), key=lambda kv: kv[1]):
                    declared.append({"name": kname, "kind": "cuda", "launched": kname in launched, "line": kline,
                                     "module": m.name})
            elif mapping:
                # a function Python reaches under another name (a pybind export and an m.impl
                # registration of the same C++ function) is launched when either name is called
                reached = {mapping[py] for py in called}
                for py in sorted(mapping):
                    fdefs = an.functions.get(mapping[py], [])
                    declared.append({"name": py, "kind": "cuda" if (m.lang == "cuda" and not m.units) else "cpp",
                                     "launched": py in called or mapping[py] in reached,
                                     "line": fdefs[0].line if fdefs else m.line, "module": m.name})
            else:
                declared.append({"name": m.name or "<extension>", "kind": m.lang, "launched": True, "line": m.line,
                                 "module": m.name, "analysed": False})
        # __global__ kernels in C++ strings that are not part of any extension
        known = {(d["name"], d["line"]) for d in declared}
        for u in self.units:
            if u.module is not None:
                continue
            an = self.unit_analysis(u)
            for kname, kline in an.kernels.items():
                if (kname, kline) not in known:
                    declared.append({"name": kname, "kind": "cuda", "launched": False, "line": kline, "module": None})
                    known.add((kname, kline))
        for name, node in self.jit_funcs.items():
            declared.append({"name": name, "kind": "triton", "launched": name in launched_tr, "line": node.lineno,
                             "module": None})
        declared.sort(key=lambda d: (d["line"], d["name"]))
        self.facts.declared_kernels = declared
        other_backend = False
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    d = dec.func if isinstance(dec, ast.Call) else dec
                    q = self.resolve(d) or ""
                    if q.endswith("prim_func") or q.startswith(("tilelang.", "cutlass.cute.", "cute.")) and \
                            q.split(".")[-1] in ("kernel", "jit", "prim_func"):
                        other_backend = True
        self.facts.custom_backend_declared = bool(declared) or bool(self.ext_modules) or other_backend

    # -- torch compute classification ------------------------------------
    def torch_compute_op(self, node: ast.AST, cls: str | None) -> str | None:
        """Name of the high-level torch compute op performed by ``node`` (or None)."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return "@ (matmul)"
        if not isinstance(node, ast.Call):
            return None
        # getattr(y, "soft" + "max")(1) is y.softmax(1); operator.methodcaller("softmax", 1)(y)
        # calls the method named by the (folded) string
        norm = self.as_attribute(node)
        if not isinstance(norm, ast.Call):
            return None  # a bare getattr(...) is a lookup, not a call
        node = norm
        f = node.func
        if isinstance(f, ast.Call) and f.args and (self.resolve(f.func) or "") in ("operator.methodcaller",
                                                                                  "operator.attrgetter"):
            name = self.fold_str(f.args[0])
            if name in TENSOR_COMPUTE_METHODS and name not in self.exposed_names:
                return f"Tensor.{name}"
        r = self._res(f)
        if r is not None and r[1]:
            q = r[0]
            if q.startswith("torch.ops."):
                ns = q.split(".")[2] if q.count(".") >= 2 else ""
                if ns in ("aten", "prims", "quantized", "_quantized"):
                    return q
                return None
            if q.startswith("torch.nn.functional."):
                return None if q in NON_COMPUTE_PYTHON else q
            if q.startswith("torch.Tensor."):
                return q if q.split(".")[2] in TENSOR_COMPUTE_METHODS else None
            if match_prefix(q, NON_COMPUTE_NAMESPACES) or q.startswith(NON_COMPUTE_NAMESPACES):
                return None
            if q.startswith("torch.nn."):
                name = q.split(".")[2]
                return None if name in NN_CONTAINERS or name in ("functional", "init", "utils") else q
            if q.startswith(("torch.linalg.", "torch.fft.", "torch.special.", "torch.sparse.", "torch._C.",
                             "torch._foreach", "torch.nested.")):
                return q
            if q.startswith("torch.") and q.count(".") == 1:
                return None if q in NON_COMPUTE_PYTHON else q
            return None
        if isinstance(f, ast.Attribute):
            # self.conv(x) where self.conv = nn.Conv2d(...)
            if isinstance(f.value, ast.Name) and f.value.id == "self" and cls:
                t = self.self_attr_types.get((cls, f.attr))
                if t and t[1] and t[0].startswith("torch.nn.") and t[0].split(".")[2] not in NN_CONTAINERS \
                        and t[0].split(".")[2] not in ("functional", "init"):
                    return t[0]
            if f.attr == "forward" and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name) \
                    and f.value.value.id == "self" and cls:
                t = self.self_attr_types.get((cls, f.value.attr))
                if t and t[1] and t[0].startswith("torch.nn.") and t[0].split(".")[2] not in NN_CONTAINERS:
                    return t[0]
            if f.attr in TENSOR_COMPUTE_METHODS and f.attr not in self.exposed_names \
                    and not (r is not None and r[1]):
                return f"Tensor.{f.attr}"
        return None

    def _collect_forward_ops(self) -> None:
        ops = set()
        for fn, node in self.reachable_nodes():
            if fn is self.tree:
                continue
            op = self.torch_compute_op(node, self.fn_class.get(fn))
            if op:
                ops.add((getattr(node, "lineno", 0), op))
        self.facts.forward_torch_ops = [{"op": o, "line": ln} for ln, o in sorted(ops)]
