"""Evaluate one candidate against one reference and print correctness and speedup.

    uv run python scripts/run_and_check.py ref_origin=local \
        ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py \
        kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py \
        eval_mode=local reward_hardening_mode=enforce reward_hardening_policy=source_strict

Upstream keys and defaults, plus ``dataset_path``, ``device`` (``cuda``/``cpu``),
``reward_hardening_mode`` (off/audit/enforce), ``reward_hardening_policy``,
``measure_torch_compile`` (default: on for CUDA, off for CPU), ``allow_tf32``,
``output_file`` (write the result record as JSON) and ``json`` (print the whole record).
The candidate and the reference timings each run in a disposable worker process.

In ``audit``/``enforce`` mode the script prints a short block (verdict, verified and
observed runtime, reference runtime, speedup, findings with their summaries) and ends
with one machine-readable line::

    [KernelGuard] integrity_status=PASS verified_runtime=0.123 verified_reference_runtime=0.456 findings=-

The full schema-1.1 record goes to ``output_file=PATH``; ``json=true`` prints it too.

The implementation is :mod:`kernelbench.commands.check` (also ``kernelguard check``);
this script keeps upstream's file name and takes over the module's names.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import sys

from kernelbench.commands import check as _impl

# the names this script always had (config class, main, helpers) for code that loads it by path
globals().update({k: v for k, v in vars(_impl).items() if not k.startswith("__")})

if __name__ == "__main__":
    sys.exit(_impl.entry() or 0)
