"""Embedded C/C++/CUDA sources of the candidate (trusted parent).

:class:`EmbeddedSources` is one analysis of :class:`~._context.Context`.  It finds the
``load_inline`` / ``cpp_extension.load`` calls (:class:`~._records.ExtModule`: name,
exposed functions, sources), folds their source arguments into
:class:`~._cxx.Unit` texts, adds every other string that looks like C/C++ (orphans),
lexes all units (:mod:`._cxx`) and indexes the identifiers (with ``##``-pasted API names
reconstructed), string literals and headers the rules look for.

State it owns: ``ext_modules``, ``units``, ``cxx_idents``, ``cxx_strings`` and
``cxx_headers``.  It reads ``calls`` and ``strings`` from :class:`~._walk.TreeWalk`
and the folding of :class:`~._folding.StringFolding`; with ``raw_cxx`` the whole
source is one unit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from . import _cxx, _cxx_defs
from ._records import CIdent, ExtModule, Hit, Seg, hit

# API names worth reconstructing from ## token pastes
API_LIKE = re.compile(
    r"^(cuda|cu[A-Z]|cublas|cudnn|nccl|nvrtc|pthread_|dl(open|sym|mopen)$|fork$|vfork$|clone$|system$|popen$"
    r"|exec[lv]|posix_spawn|getenv$|setenv$|fopen$|mmap$|__half|half|__float2|__nv_|nv_bfloat|__bfloat|getStream)")


class EmbeddedSources:
    """Extensions and the C/C++ token stream (a mixin of :class:`~._context.Context`)."""

    def _init_sources(self) -> None:
        self.ext_modules: list[ExtModule] = []
        self.units: list[_cxx.Unit] = []
        self.cxx_idents: list[CIdent] = []
        self.cxx_strings: list[tuple[int, str]] = []
        self.cxx_headers: list[tuple[int, str]] = []

    @staticmethod
    def call_arg(call: ast.Call, name: str, pos: int | None) -> ast.AST | None:
        for k in call.keywords:
            if k.arg == name:
                return k.value
        if pos is not None and len(call.args) > pos and not any(isinstance(a, ast.Starred)
                                                                 for a in call.args[:pos + 1]):
            return call.args[pos]
        return None

    def _make_unit(self, segs: list[Seg], lang: str, module: int | None) -> _cxx.Unit:
        starts, lines, multi, ids = [], [], [], set()
        off = 0
        for s in segs:
            starts.append(off)
            lines.append(s.line)
            multi.append(s.multiline)
            if s.node_id is not None:
                ids.add(s.node_id)
            off += len(s.text)
        return _cxx.Unit("".join(s.text for s in segs), starts, lines, multi, frozenset(ids), lang, module)

    def _collect_extensions(self) -> None:
        for c in self.calls:
            q = c.qname or ""
            last = q.split(".")[-1]
            if last not in ("load_inline", "load") or ("cpp_extension" not in q and q != "load_inline"):
                continue
            idx = len(self.ext_modules)
            name = self.fold_str(self.call_arg(c.node, "name", 0))
            exposed: list[str] | None = None
            fnode = self.call_arg(c.node, "functions", None)
            if fnode is not None:
                if isinstance(fnode, ast.Dict):
                    exposed = [self.fold_str(k) for k in fnode.keys if k is not None]
                else:
                    lst = self.fold_list(fnode)
                    if lst is not None:
                        exposed = ["".join(s.text for s in it) for it in lst]
                    else:
                        one = self.fold_str(fnode)
                        exposed = [one] if one else None
                if exposed is not None:
                    exposed = [e for e in exposed if e]
            units: list[_cxx.Unit] = []
            folded = True
            if last == "load_inline":
                cpp = self.call_arg(c.node, "cpp_sources", 1)
                cuda = self.call_arg(c.node, "cuda_sources", 2)
                lang = "cuda" if cuda is not None and not (isinstance(cuda, ast.Constant) and cuda.value is None) \
                    else "cpp"
                for arg, ulang in ((cpp, "cpp"), (cuda, "cuda")):
                    if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
                        continue
                    lst = self.fold_list(arg, partial=True)
                    if lst is None:
                        folded = False
                        continue
                    for segs in lst:
                        units.append(self._make_unit(segs, ulang, idx))
            else:
                srcs = self.fold_list(self.call_arg(c.node, "sources", 1)) or []
                names = ["".join(s.text for s in it) for it in srcs]
                lang = "cuda" if any(n.endswith((".cu", ".cuh")) for n in names) else "cpp"
                folded = False
            self.ext_modules.append(ExtModule(idx, c.line, name, last, lang, exposed, units, folded, c.node))
            self.units.extend(units)

    def _collect_cxx(self) -> None:
        if self.raw_cxx:
            self.units.append(_cxx.Unit(self.src, [0], [1], [True], frozenset(), "cxx", None))
        used = [u.node_ids for u in self.units]

        def covered(ids: frozenset) -> bool:
            return bool(ids) and any(ids <= u for u in used)

        orphans: list[_cxx.Unit] = []
        for kind, val in self._env.values():
            groups = val if kind == "list" else [val]
            for segs in groups:
                text = "".join(s.text for s in segs)
                unit = self._make_unit(segs, "cxx", None)
                if covered(unit.node_ids) or not _cxx.looks_like_cxx(text):
                    continue
                orphans.append(unit)
                used.append(unit.node_ids)
        for _line, text, node in self.strings:
            if covered(frozenset({id(node)})) or not _cxx.looks_like_cxx(text):
                continue
            unit = self._make_unit([self._seg_of(node)], "cxx", None)
            orphans.append(unit)
            used.append(unit.node_ids)
        # sources we could not fold: attach orphan C++ to that extension (best effort)
        unfolded = [m for m in self.ext_modules if m.kind == "load_inline" and not m.sources_folded]
        for u in orphans:
            if unfolded:
                u.module = unfolded[0].index
                unfolded[0].units.append(u)
        self.units.extend(orphans)
        base = 0
        for u in self.units:
            toks = _cxx.lex(u, base)
            base += sum(1 for t in toks if t.text == "#" and t.directive) + 1
            u.tokens = toks
            pasted = _cxx.expand_pastes(toks, API_LIKE)
            n = len(toks)
            for i, t in enumerate(toks):
                if t.kind == "ident":
                    self.cxx_idents.append(CIdent(t.text, _cxx.qualified_name(toks, i), t.line,
                                                  toks[i - 1].text if i else "",
                                                  toks[i + 1].text if i + 1 < n else "", False,
                                                  bool(t.directive), u, i))
                elif t.kind == "string":
                    self.cxx_strings.append((t.line, t.text))
                elif t.kind == "header":
                    self.cxx_headers.append((t.line, t.text))
            for t in pasted:
                self.cxx_idents.append(CIdent(t.text, t.text, t.line, "", "", True, False, u, -1))

    @staticmethod
    def unit_analysis(u: _cxx.Unit) -> _cxx_defs.ModuleAnalysis:
        """Functions, kernels and bindings of one C/C++ unit (cached)."""
        if u.analysis is None:
            u.analysis = _cxx_defs.analyse_module(u.tokens)
        return u.analysis

    def cxx_hits(self, names: Iterable[str], *, call_only: bool = False, free_only: bool = True,
                 qualified: Iterable[str] = (), label: str = "C++") -> list[Hit]:
        """Hits for C/C++ identifiers named ``names`` (or qualified names in ``qualified``)."""
        names = set(names)
        quals = set(qualified)
        out = []
        for ci in self.cxx_idents:
            q_hit = ci.qual in quals or ci.qual.lstrip(":") in quals
            if not q_hit and ci.text not in names:
                continue
            if not q_hit and not ci.pasted:
                if free_only and ci.prev in (".", "->"):
                    continue
                if call_only and ci.next != "(" and not ci.directive:
                    continue
            shown = ci.qual.lstrip(":") if q_hit else ci.text
            suffix = " (token-pasted)" if ci.pasted else ""
            out.append(hit(ci.line, f"{label}: {shown}{suffix}"))
        return out

    def python_strings(self) -> Iterator[tuple[int, str, ast.Constant]]:
        """Non-docstring Python string constants that are not part of embedded C/C++ sources."""
        cxx_ids = set()
        for u in self.units:
            cxx_ids |= u.node_ids
        for line, text, node in self.strings:
            if id(node) not in cxx_ids:
                yield line, text, node
