"""Forkserver preload: the modules every worker would otherwise import on first use.

Imported once in the forkserver (``procs.get_context``), so each forked worker starts
with them loaded instead of importing them itself: the judge's memory plan runs the
reference on the meta device, which pulls in ``torch._dynamo``, ``sympy`` and the
symbolic-shape machinery (about 900 modules, 2-10 s per process on a 2-core machine,
more where no bytecode is cached), and both workers' harness modules.  None of these
imports touches the CUDA driver (a forked child could not use CUDA after that); the
last line checks it, so a torch release that changes this fails loudly in the server
instead of in every worker.

Where ``PYTHONDONTWRITEBYTECODE`` is set (the forkserver inherits it as ``-B``), the
server writes the missing ``.pyc`` files of what it imported, once per environment
(:mod:`kernelbench._bytecode`): otherwise every forkserver, one per evaluating process,
would compile these modules from source again.
"""

from __future__ import annotations

import sys

import numpy  # noqa: F401
import torch
import torch._dynamo  # noqa: F401
import torch.fx.experimental.symbolic_shapes  # noqa: F401
import torch.profiler  # noqa: F401
import torch.testing  # noqa: F401

import kernelbench.reward_hardening.candidate.worker  # noqa: F401
import kernelbench.reward_hardening.judge.worker  # noqa: F401

if sys.flags.dont_write_bytecode:
    try:
        from kernelbench._bytecode import write_imported_bytecode

        write_imported_bytecode(("torch", "numpy", "sympy", "mpmath"))
    except Exception:  # a read-only environment: import from source as before
        pass

if torch.cuda.is_initialized():  # pragma: no cover - a torch change; workers could not use CUDA
    raise RuntimeError("importing the worker preload initialised CUDA in the forkserver")
