"""Fill a run directory with the bundled demo solutions (one sample per problem).

    uv run python scripts/make_demo_run.py run_name=my_run level=1

Writes ``runs/<run_name>/level_{L}_problem_{P}_sample_0_kernel.py`` for each demo
problem of ``level``, keeping kernel files already there unless ``overwrite=true``;
``runs_dir`` moves ``runs/``.  Then evaluate with ``scripts/eval_from_generations.py
run_name=<run_name> dataset_src=local dataset_path=demo level=<L> device=cpu ...``.

The implementation is :mod:`kernelbench.commands.demo` (also ``kernelguard demo-run``);
this script keeps upstream's file name and takes over the module's names.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import sys

from kernelbench.commands import demo as _impl

# the names this script always had (config class, main, helpers) for code that loads it by path
globals().update({k: v for k, v in vars(_impl).items() if not k.startswith("__")})

if __name__ == "__main__":
    sys.exit(_impl.entry() or 0)
