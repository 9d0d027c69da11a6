"""Source analysis shared by the precheck rules (trusted parent).

The trusted parent never imports the candidate.  :class:`Context` parses the source
with :mod:`ast` once and runs the analyses the rules read, in this order; each is a
class in its own module that owns part of the context's state:

* **name resolution** (:mod:`._names`) — parents, scopes, imports and aliases, so
  ``ctx.resolve(node)`` names what a chain denotes;
* **string folding** (:mod:`._folding`) — string and list values built with ``+``,
  f-strings, ``join``, ``dedent`` ... with their Python line numbers;
* **the tree walk** (:mod:`._walk`) — references (maximal dotted chains), calls,
  stores and the non-docstring string constants;
* **the call graph** (:mod:`._callgraph`) — classes, functions, ``ModelNew`` and what
  its ``forward`` reaches;
* **embedded sources** (:mod:`._sources`) — ``load_inline``/``load`` extensions and the
  C/C++ token stream of every embedded source (see :mod:`._cxx`, :mod:`._cxx_defs`);
* **kernel provenance** (:mod:`._kernels`) — declared CUDA/C++/Triton kernels and
  whether forward launches them, high-level torch compute reachable from forward;
* **constants** (:mod:`._constants`) — module constants of the candidate and the
  reference.

A step that raises is recorded in ``facts.rule_errors`` (reported as RH-46) and the
others still run.  The rule modules import what they need from here.
"""

from __future__ import annotations

import ast

from ._callgraph import CallGraph
from ._constants import Constants
from ._folding import StringFolding
from ._kernels import KernelProvenance
from ._names import NameResolution
from ._records import MAX_ANALYSIS_DEPTH, Hit, Rule, SourceFacts, hit, literal_value, match_prefix
from ._sources import API_LIKE, EmbeddedSources
from ._walk import TreeWalk

__all__ = ["API_LIKE", "MAX_ANALYSIS_DEPTH", "Context", "Hit", "Rule", "SourceFacts", "hit", "literal_value",
           "match_prefix"]


class Context(NameResolution, StringFolding, TreeWalk, CallGraph, EmbeddedSources, KernelProvenance, Constants):
    """Everything the rules need, computed once per candidate source."""

    def __init__(self, src: str, reference_src: str | None = None, backend: str = "cuda",
                 precision: str = "fp32", raw_cxx: bool = False) -> None:
        """``raw_cxx=True`` treats the whole text as one C/C++/CUDA source (no Python)."""
        self.src = src
        self.reference_src = reference_src
        self.backend = (backend or "cuda").lower()
        self.precision = (precision or "fp32").lower()
        self.facts = SourceFacts()
        self.tree: ast.Module | None = None
        self.raw_cxx = raw_cxx
        self._init_names()
        self._init_folding()
        self._init_walk()
        self._init_callgraph()
        self._init_sources()
        self._init_kernels()
        self._init_constants()
        if raw_cxx:
            self.tree = ast.parse("")
            self._build()
            return
        try:
            self.tree = ast.parse(src)
        except SyntaxError as e:
            self.facts.syntax_error = f"line {e.lineno}: {e.msg}"
        except (ValueError, RecursionError, MemoryError, TypeError) as e:
            self.facts.syntax_error = f"{type(e).__name__}: {e}"
        if self.tree is not None:
            self._build()

    @property
    def is_fp32(self) -> bool:
        return self.precision in ("fp32", "float32", "f32", "torch.float32")

    def note(self, step: str, exc: BaseException) -> None:
        self.facts.rule_errors.append({"code": "precheck", "rule": step, "error": f"{type(exc).__name__}: {exc}"})

    def _build(self) -> None:
        steps = [
            ("parents", self._index_parents),
            ("scopes", self._index_scopes),
            ("imports", self._collect_imports),
            ("fold", self._collect_env),  # string constants for getattr(x, NAME) during aliasing
            ("aliases", self._collect_aliases),
            ("fold", self._collect_env),  # again, now that textwrap/str aliases resolve
            ("walk", self._walk),
            ("defs", self._collect_defs),
            ("reach", self._compute_reach),
            ("extensions", self._collect_extensions),
            ("cxx", self._collect_cxx),
            ("kernels", self._collect_kernels),
            ("forward_ops", self._collect_forward_ops),
            ("constants", self._collect_constants),
            ("reference", self._collect_reference),
        ]
        for name, fn in steps:
            try:
                fn()
            except RecursionError as e:  # pathological nesting: keep going with what we have
                self.note(name, e)
            except Exception as e:  # noqa: BLE001 - a broken analysis step must not crash the precheck
                self.note(name, e)
