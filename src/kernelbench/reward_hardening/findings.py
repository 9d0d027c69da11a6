"""Finding and Capability records (schema 1.1 shapes).

Every finding carries ``more_info``: the link to its code's section of the attack
catalogue (``docs/attack-catalog.md#rh-NN``, relative to the repository root), as
bandit's ``more_info`` does; ``uv run kernelguard explain RH-NN`` prints the same
section in a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelbench.reward_hardening.codes import code_info

__all__ = ["CATALOG_DOC", "Capability", "Finding", "finding", "more_info"]

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


def finding(code: str, policy: str = "source_strict", evidence: dict | None = None,
            summary: str | None = None, policy_rule: str | None = None, severity: str | None = None) -> Finding:
    """Build a finding from the code table (severity chosen by ``policy``)."""
    info = code_info(code)
    return Finding(
        code=code,
        detector=info.detector,
        severity=severity or info.severity.get(policy, "error"),
        summary=summary or info.summary,
        evidence=dict(evidence or {}),
        policy_rule=policy_rule or "reward_hardening",
        remediation=info.remediation,
    )


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
