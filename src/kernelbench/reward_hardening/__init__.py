"""KernelGuard's hardened evaluation path (``reward_hardening_mode=audit|enforce``).

The folders draw the trust line (``docs/architecture.md`` walks through them):

``precheck/``     static analysis of the candidate's source, in the parent, before any import
``parent/``       trusted parent: seeds, memory plan, phases, evidence, verdict, records
``judge/``        trusted judge worker: reference model, hidden inputs, every comparison
``candidate/``    untrusted worker: the harness that runs ``ModelNew`` (raw facts only)
``ipc/``          the wire between them: frames, typed messages, device tensors lent
``containment/``  OS mechanisms around the workers and the trusted read of their memory
``detectors/``    evidence -> observations (one small function per code)
``codes``, ``findings``, ``config``, ``worker_runtime``: shared by every process
``catalog``       the attack catalogue and defence families (data, beside the code table)
``record_schema`` the record's JSON Schema (meaning and unit of every field) and its check

The package's names are imported on first use (PEP 562), so importing a light
submodule (``codes``, ``findings``, ``catalog``: what ``kernelguard explain`` reads)
does not import torch through the pipeline.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HardeningConfig", "SCHEMA_VERSION", "evaluate_hardened"]


def __getattr__(name: str) -> Any:
    if name == "HardeningConfig":
        from kernelbench.reward_hardening.config import HardeningConfig

        return HardeningConfig
    if name == "evaluate_hardened":
        from kernelbench.reward_hardening.parent.pipeline import evaluate_hardened

        return evaluate_hardened
    if name == "SCHEMA_VERSION":
        from kernelbench.reward_hardening.parent.records import SCHEMA_VERSION

        return SCHEMA_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
