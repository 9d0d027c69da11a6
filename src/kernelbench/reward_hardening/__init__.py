"""KernelGuard's hardened evaluation path (``reward_hardening_mode=audit|enforce``).

Architecture, in the order a candidate meets it:

``precheck``   static AST analysis of the source (``precheck/``), before any import
``procs``      disposable forkserver workers, framed non-pickle messages
``worker``     the harness inside the reference and candidate workers (raw evidence)
``pipeline``   hidden seeds, probes, timing protocol; owns all trusted data
``detectors``  evidence -> findings (one small function per code)
``verdict``    findings + capabilities -> integrity_status
``records``    schema-1.1 records
"""

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.pipeline import evaluate_hardened
from kernelbench.reward_hardening.records import SCHEMA_VERSION

__all__ = ["HardeningConfig", "SCHEMA_VERSION", "evaluate_hardened"]
