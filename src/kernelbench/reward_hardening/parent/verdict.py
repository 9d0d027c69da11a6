"""Combine findings and capabilities into an ``integrity_status``.

A pure function of its inputs, so the rule is easy to test and to state:

1. any ``error`` finding other than a missing-capability or not-the-candidate's-fault
   code -> ``FAIL``;
2. otherwise any required capability not ``AVAILABLE``, or a reference that failed or
   does not fit before the candidate ran (RH-33, RH-44), or a device that ran out of
   memory below the candidate's planned budget (RH-47) -> ``UNSUPPORTED``;
3. otherwise any ``warning`` finding -> ``SUSPICIOUS``;
4. otherwise ``PASS``.

Only ``PASS`` carries a ``verified_runtime``; every other status has it ``null``.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["STATUSES", "decide"]

STATUSES = ("PASS", "FAIL", "SUSPICIOUS", "UNSUPPORTED")
# codes that say "this could not be evaluated here", never "this candidate cheated"
_CAPABILITY_CODES = frozenset({"RH-14", "RH-34", "RH-33", "RH-44", "RH-47"})


def decide(findings: Iterable, capabilities: dict) -> str:
    findings = list(findings)
    if any(f.severity == "error" and f.code not in _CAPABILITY_CODES for f in findings):
        return "FAIL"
    missing = [name for name, cap in capabilities.items()
               if cap.required and cap.status != "AVAILABLE"]
    if missing or any(f.code in _CAPABILITY_CODES for f in findings):
        return "UNSUPPORTED"
    if any(f.severity == "warning" for f in findings):
        return "SUSPICIOUS"
    return "PASS"
