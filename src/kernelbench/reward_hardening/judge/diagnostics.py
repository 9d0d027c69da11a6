"""The judge's Python profile, a diagnostic (``KERNELGUARD_PROFILE_DIR``; trusted side only).

Where a sample's protocol time goes inside the judge: the profile is written to
``judge-<pid>.prof`` (``pstats`` format) after every release and when the judge exits,
since a judge may be killed after its last release.  It slows the judge; never for
measured runs.
"""

from __future__ import annotations

import cProfile
import os
from typing import Any

__all__ = ["serve_profiled"]


def serve_profiled(judge: Any, profile_dir: str) -> None:
    """Run ``judge.serve()`` under ``cProfile``, dumping the statistics at every release and at exit."""
    prof = cProfile.Profile()
    path = os.path.join(profile_dir, f"judge-{os.getpid()}.prof")
    release = judge.cmd_release

    def dumping_release(header: dict) -> None:
        release(header)
        prof.dump_stats(path)  # (which stops the profiler)
        prof.enable()

    judge.cmd_release = dumping_release  # the command table is read from the instance
    prof.enable()
    try:
        judge.serve()
    finally:
        prof.disable()
        prof.dump_stats(path)
