"""Observation, Finding and Capability records (schema 1.1 shapes).

Detectors, the precheck and the pipeline produce observations (:class:`Observation`):
a code and its evidence, with no severity.  :func:`kernelbench.reward_hardening.policy.apply`
turns them into findings (:class:`Finding`) with the severity the code table gives
under the evaluation's policy.  Used in the parent (and its tools).

Every finding carries ``more_info``: the link to its code's section of the attack
catalogue (``docs/attack-catalog.md#rh-NN``, relative to the repository root), as
bandit's ``more_info`` does; ``uv run kernelguard explain RH-NN`` prints the same
section in a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CATALOG_DOC", "Capability", "Finding", "Observation", "describe", "more_info", "observe"]

SEVERITIES = ("error", "warning", "info")
CATALOG_DOC = "docs/attack-catalog.md"  # relative to the repository root


def more_info(code: str) -> str:
    """Link to ``code``'s section of the attack catalogue (its ``<a id="rh-NN">`` anchor)."""
    return f"{CATALOG_DOC}#{code.lower()}"


@dataclass
class Finding:
    code: str
    detector: str
    severity: str
    summary: str
    evidence: dict = field(default_factory=dict)
    policy_rule: str = "reward_hardening"
    remediation: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "detector": self.detector,
            "severity": self.severity,
            "summary": self.summary,
            "evidence": _jsonable(self.evidence),
            "policy_rule": self.policy_rule,
            "remediation": self.remediation,
            "more_info": more_info(self.code),
        }


@dataclass
class Observation:
    """What was seen: a finding code and its evidence, before any policy gives it a severity.

    ``summary`` replaces the code table's summary when set; ``info_only`` marks a fact
    recorded for the reader that is no violation under any policy (RH-37's library
    kernels on joined streams).
    """

    code: str
    evidence: dict = field(default_factory=dict)
    summary: str | None = None
    policy_rule: str = "reward_hardening"
    info_only: bool = False


def observe(code: str, evidence: dict | None = None, summary: str | None = None,
            policy_rule: str | None = None, info_only: bool = False) -> Observation:
    """An :class:`Observation` of ``code`` with a copy of ``evidence``."""
    return Observation(code, dict(evidence or {}), summary, policy_rule or "reward_hardening", info_only)


@dataclass
class Capability:
    status: str  # AVAILABLE | UNSUPPORTED | ERROR | SKIPPED
    required: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "required": self.required, "detail": self.detail}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# --------------------------------------------------------------------------- one line of evidence
def _g(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else str(x)


def _gib(x: Any) -> str:
    return f"{x / 2**30:.2f} GiB" if isinstance(x, (int, float)) else "?"


def _failure(f: dict) -> str:
    """One failure class of RH-18/RH-30 evidence in words (numbers and source lines, never values)."""
    cls = f.get("class")
    if cls == "raised":
        where = f" at candidate.py:{f['line']}" if f.get("line") else ""
        src = f" `{f['source']}`" if f.get("source") else ""
        return f"raises {f.get('exception', 'an exception')}{where}{src}"
    if cls == "values":
        text = f"max abs error {_g(f.get('max_abs_error'))}"
        if f.get("mean_abs_error") is not None:
            text += f", mean abs error {_g(f.get('mean_abs_error'))}"
        if f.get("mismatched"):
            text += f", {f['mismatched']} values outside the tolerance"
        if f.get("criterion"):
            text += f" ({f['criterion']})"
        return text
    return str(f.get("detail") or cls or "wrong")


def describe(f: dict) -> str:
    """The one line of evidence printed under a finding (run_and_check, batch summaries).

    Built from the finding's evidence only.  It never quotes an exception message or
    a value of a call on hidden inputs (the evidence does not hold them either).
    """
    e = f.get("evidence") or {}
    code = f.get("code")
    try:
        if code == "RH-18" and e.get("failures"):
            first = e["failures"][0]
            more = f"; {len(e['failures']) - 1} other kind(s) of failure" if len(e["failures"]) > 1 else ""
            return f"{_failure(first)} on {first.get('calls', 1)} of {e.get('checked', '?')} hidden-input calls{more}"
        if code == "RH-30" and e.get("hits"):
            h = e["hits"][0]
            return f"{h.get('perturbation')} inputs: {_failure(h)}" + (
                f" (and {len(e['hits']) - 1} more)" if len(e["hits"]) > 1 else "")
        if code == "RH-19" and e.get("hits"):
            return f"{e['hits'][0].get('probe')}: {e['hits'][0].get('reason')}"
        if code == "RH-42":
            if e.get("syntax_error"):
                return f"syntax error: {e['syntax_error']}"[:200]
            return str(e.get("error", "")).strip().splitlines()[-1][:200] if e.get("error") else "load failed"
        if code in ("RH-39", "RH-47"):
            o = (e.get("oom_over_budget") or e.get("oom_within_budget") or [None])[0]
            if o:
                return (f"out of memory in {o.get('phase')}: needed {_gib(o.get('needed_bytes'))}, "
                        f"budget {_gib(o.get('budget_bytes'))}")
        if code == "RH-37":
            if e.get("samples_with_work_after_current_stream"):
                return (f"device busy {_g(e.get('worst_ms'))} ms after the caller's stream finished "
                        f"(limit {_g(e.get('limit_ms'))} ms) in {e['samples_with_work_after_current_stream']} "
                        f"of {e.get('of', '?')} timed samples")
            if e.get("kernels_on_other_streams"):
                k = e["kernels_on_other_streams"]
                return f"{k.get('count')} kernel(s) on stream(s) {k.get('streams')} joined before the caller's stream finished"
        if code == "RH-54":
            parts = [f"{side} CV {_g(e[side + '_cv'])}" for side in ("candidate", "reference") if side + "_cv" in e]
            line = (", ".join(parts) + f" (limit {_g(e.get('cv_limit'))})") if parts else ""
            if "other_runnable_median" in e:
                line += ("; " if line else "") + (f"{_g(e['other_runnable_median'])} other runnable processes on "
                                                   f"{e.get('usable_cpus')} CPUs")
            return line
        if code in ("RH-44", "RH-33", "RH-45", "RH-32") and e.get("error"):
            return str(e["error"]).splitlines()[0][:200]
        if code == "RH-08" and e.get("hits"):
            h = e["hits"][0]
            return f"line {h.get('line')}: {h.get('what')}" + (
                f" ({h.get('candidate_value')} vs {h.get('reference_value')})" if "constant" in h else "")
        if isinstance(e.get("hits"), list) and e["hits"] and isinstance(e["hits"][0], dict):
            h = e["hits"][0]
            if "line" in h and "what" in h:
                return f"line {h['line']}: {h['what']}"[:200]
    except Exception:  # a line of prose must never fail a command
        pass
    parts = [f"{k}={_jsonable(v)}" for k, v in e.items() if k not in ("rule",)][:2]
    return "; ".join(parts)[:200]
