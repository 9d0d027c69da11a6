"""KernelGuard's hardened evaluation path (``reward_hardening_mode=audit|enforce``).

Architecture, in the order a candidate meets it:

``precheck``   static AST analysis of the source (``precheck/``), before any import
``procs``      disposable forkserver workers, framed non-pickle messages
``worker``     the harness inside the reference and candidate workers (raw evidence)
``pipeline``   hidden seeds, probes, timing protocol; owns all trusted data
``detectors``  evidence -> findings (one small function per code)
``verdict``    findings + capabilities -> integrity_status
``records``    schema-1.1 records

The package's names are imported on first use (PEP 562), so importing a light
submodule (``codes``, ``findings``, ``docgen``: what ``kernelguard explain`` reads)
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
        from kernelbench.reward_hardening.pipeline import evaluate_hardened

        return evaluate_hardened
    if name == "SCHEMA_VERSION":
        from kernelbench.reward_hardening.records import SCHEMA_VERSION

        return SCHEMA_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
