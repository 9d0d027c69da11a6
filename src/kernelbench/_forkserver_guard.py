"""Imported only as a forkserver preload (``procs.get_context``): the forkserver forks every
worker, so a process that could attach to it could run code in all later workers.
``PR_SET_DUMPABLE`` 0 makes it (and, by inheritance, each freshly forked worker until it
chooses otherwise) un-attachable by same-uid processes without ``CAP_SYS_PTRACE``; see
``kernelbench.reward_hardening.containment``.
"""

import sys

if sys.platform.startswith("linux"):
    import ctypes

    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        pass
