"""Static precheck of candidate sources (codes RH-01 .. RH-13, RH-46 and RH-50).

The precheck runs in the trusted parent on the candidate's *source text*; it never
imports or executes it.  Python is analysed with :mod:`ast` (aliases, literal
``getattr`` chains and string folding are resolved); C/C++/CUDA sources embedded in
strings are lexed with a small tokenizer that drops comments and keeps string literals
apart.  Static findings are evidence, not proof: the runtime detectors (RH-14 ..
RH-41) remain the authority.

Usage::

    from kernelbench.reward_hardening.precheck import run_precheck
    result = run_precheck(candidate_src, reference_src, policy="source_strict", precision="fp32")
    for f in result.findings:
        print(f.code, f.severity, f.evidence["hits"])
    result.facts.as_dict()      # JSON-able facts: imports, calls, declared kernels, ...

One rule family per module (``concurrency``, ``process_network``, ``foreign_code``,
``dynamic_exec``, ``tamper``, ``introspection``, ``file_env``, ``reference_access``,
``tensor_subclass``, ``stream_graph``, ``precision``, ``torch_compile``,
``provenance``, ``native_syscall``, ``completeness``); each module docstring documents what the rule catches, why it
matters, an example and its known limits.  :data:`RULES` is the registry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kernelbench.reward_hardening.codes import CODES
from kernelbench.reward_hardening.findings import Finding, observe
from kernelbench.reward_hardening.policy import judge

from . import (
    completeness,
    concurrency,
    dynamic_exec,
    file_env,
    foreign_code,
    introspection,
    native_syscall,
    precision,
    process_network,
    provenance,
    reference_access,
    stream_graph,
    tamper,
    tensor_subclass,
    torch_compile,
)
from ._context import Context, Hit, Rule, SourceFacts

__all__ = ["PrecheckResult", "RULES", "Rule", "SourceFacts", "analyse", "rule_by_code", "run_precheck"]

RULES: list[Rule] = [
    concurrency.RULE,
    process_network.RULE,
    foreign_code.RULE,
    dynamic_exec.RULE,
    tamper.RULE,
    introspection.RULE,
    file_env.RULE,
    reference_access.RULE,
    tensor_subclass.RULE,
    stream_graph.RULE,
    precision.RULE,
    torch_compile.RULE,
    provenance.RULE,
    native_syscall.RULE,
    completeness.RULE,  # last: it reports the failures of the rules before it
]

MAX_HITS_PER_CODE = 200


def rule_by_code(code: str) -> Rule:
    for r in RULES:
        if r.code == code:
            return r
    raise KeyError(code)


@dataclass
class PrecheckResult:
    findings: list[Finding] = field(default_factory=list)
    facts: SourceFacts = field(default_factory=SourceFacts)

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def by_code(self, code: str) -> Finding | None:
        for f in self.findings:
            if f.code == code:
                return f
        return None

    def as_dict(self) -> dict[str, Any]:
        return {"findings": [f.as_dict() for f in self.findings], "facts": self.facts.as_dict()}


def analyse(candidate_src: str, reference_src: str | None = None, backend: str = "cuda",
            precision: str = "fp32", *, raw_cxx: bool = False) -> Context:
    """The shared analysis context (for tools such as ``kernel_static_checker``).

    ``raw_cxx=True`` analyses the text as one bare C/C++/CUDA source instead of Python.
    The analysis does not depend on the policy: only the findings' severities do.
    """
    return Context(candidate_src if isinstance(candidate_src, str) else str(candidate_src), reference_src,
                   backend, precision, raw_cxx=raw_cxx)


def _dedupe(hits: Iterable[Hit]) -> list[dict]:
    seen = set()
    out = []
    for h in sorted(hits, key=lambda h: (h.line, h.what)):
        key = (h.line, h.what)
        if key in seen:
            continue
        seen.add(key)
        out.append(h.as_dict())
    return out


def run_precheck(candidate_src: str, reference_src: str | None = None, policy: str = "source_strict",
                 backend: str = "cuda", precision: str = "fp32", *,
                 disabled_codes: frozenset[str] | set[str] | Iterable[str] = frozenset(),
                 context: Context | None = None) -> PrecheckResult:
    """Run every enabled static rule over ``candidate_src``.

    ``disabled_codes`` switches rules off by code (``"RH-01"``), rule name
    (``"concurrency"``) or detector name (``"RH-STATIC-CONCURRENCY"``).

    Returns one :class:`Finding` per code that fired (severity from the code table
    for ``policy``), with ``evidence = {"hits": [{"line", "what", ...}, ...], "rule": name}``,
    plus the :class:`SourceFacts`.  A source that does not parse yields no findings and
    ``facts.syntax_error``; a rule or analysis step that raises is recorded in
    ``facts.rule_errors`` and reported as RH-46 (the analysis is incomplete).
    """
    disabled = frozenset(disabled_codes or ())
    ctx = context if context is not None else analyse(candidate_src, reference_src, backend, precision)
    result = PrecheckResult(facts=ctx.facts)
    if ctx.tree is None:
        return result
    for rule in RULES:
        if disabled and (rule.code in disabled or rule.name in disabled or CODES[rule.code].detector in disabled):
            continue
        try:
            hits = rule.check(ctx)
        except Exception as e:  # noqa: BLE001 - one broken rule must not take the precheck down
            ctx.facts.rule_errors.append({"code": rule.code, "rule": rule.name, "error": f"{type(e).__name__}: {e}"})
            continue
        if not hits:
            continue
        items = _dedupe(hits)
        evidence: dict[str, Any] = {"rule": rule.name, "hits": items[:MAX_HITS_PER_CODE]}
        if len(items) > MAX_HITS_PER_CODE:
            evidence["hits_truncated"] = len(items) - MAX_HITS_PER_CODE
        result.findings.append(judge(observe(rule.code, evidence, policy_rule=f"precheck.{rule.name}"), policy))
    return result
