"""The policy: what an evaluation's policy and mode make of what was observed (parent).

Detectors, the precheck and the pipeline report observations (a code and its
evidence, :class:`~kernelbench.reward_hardening.findings.Observation`); this module
alone turns them into findings with severities, from the code table
(:mod:`kernelbench.reward_hardening.codes`), and decides which capabilities a record
requires.  The record builder applies it just before the verdict
(:mod:`kernelbench.reward_hardening.parent.verdict`).  The policy and mode names are
defined in :mod:`kernelbench.reward_hardening.config`.
"""

from __future__ import annotations

from typing import Iterable

from kernelbench.reward_hardening.codes import code_info
from kernelbench.reward_hardening.config import ENFORCE, SOURCE_STRICT
from kernelbench.reward_hardening.findings import Finding, Observation

__all__ = ["CONTAINMENT_REQUIRED", "apply", "judge", "rejects_before_run", "requires", "severity"]

# capabilities a record requires under every policy, wherever they apply to the evaluation
_REQUIRED = frozenset({"cuda_runtime", "static_precheck", "process_isolation", "hidden_inputs",
                       "async_timing_check"})
# containment a record requires under ``enforce``: without a process sweep and seccomp a
# candidate can outlive its evaluation or read the evaluator's memory, and without a
# complete object sweep it can leave state for the next one, so nothing it did can be
# trusted.  Landlock, the capability drop, the IPC namespace and memory accounting are
# recorded but not required (kernels before 5.13 lack Landlock; docs/security-audit.md
# says what each one stops).
CONTAINMENT_REQUIRED = frozenset({"containment_process", "containment_seccomp", "containment_object_sweep"})
# required only under source_strict: there the work must be shown to run in custom kernels,
# which only the profiler's trace can show
_REQUIRED_SOURCE_STRICT = frozenset({"backend_profiler"})


def severity(code: str, policy: str) -> str:
    """The severity of ``code`` under ``policy``, from the code table."""
    return code_info(code).severity.get(policy, "error")


def judge(observation: Observation | Finding, policy: str) -> Finding:
    """The finding ``policy`` makes of one observation.

    An observation marked ``info_only`` is ``info`` under every policy.  A finding passes
    through unchanged: it was judged already (the precheck's result, under the same
    policy).
    """
    if isinstance(observation, Finding):
        return observation
    info = code_info(observation.code)
    return Finding(
        code=observation.code,
        detector=info.detector,
        severity="info" if observation.info_only else severity(observation.code, policy),
        summary=observation.summary or info.summary,
        evidence=observation.evidence,
        policy_rule=observation.policy_rule,
        remediation=info.remediation,
    )


def apply(observations: Iterable[Observation | Finding], policy: str) -> list[Finding]:
    """The findings ``policy`` makes of ``observations``, in their order."""
    return [judge(o, policy) for o in observations]


def requires(capability: str, policy: str, mode: str) -> bool:
    """Whether a record under ``policy`` and ``mode`` requires ``capability`` (where it applies at all)."""
    return (capability in _REQUIRED or (capability in _REQUIRED_SOURCE_STRICT and policy == SOURCE_STRICT)
            or (capability in CONTAINMENT_REQUIRED and mode == ENFORCE))


def rejects_before_run(static_findings: Iterable[Finding], mode: str) -> bool:
    """Whether the precheck's findings stop the evaluation before the candidate is imported.

    Under ``enforce`` an ``error`` finding of the static precheck rejects the candidate;
    ``audit`` runs it anyway to gather the runtime evidence.
    """
    return mode == ENFORCE and any(f.severity == "error" for f in static_findings)
