"""Batch-evaluate generated kernels in ``runs/<run_name>/`` (upstream keys and defaults).

    uv run python scripts/eval_from_generations.py run_name=my_run dataset_src=local level=1 \
        num_gpu_devices=1 eval_mode=local reward_hardening_mode=audit reward_hardening_policy=source_strict

``reward_hardening_mode=off`` writes upstream's ``eval_results.json``; ``audit`` and
``enforce`` write ``verified_eval_results.json`` (schema 1.1).  A file keeps one record
per (problem, sample, mode/policy/device): a run under another configuration adds
records beside the stored ones and never replaces them (``overwrite=true`` re-evaluates
records of the same mode/policy/device made with other settings).  Extra keys beyond
upstream: ``dataset_path`` (``demo`` = bundled demo tasks), ``device`` (``cuda`` or
``cpu``), ``problem_ids`` (now honoured), ``reward_hardening_mode``,
``reward_hardening_policy``, ``keep_build_dirs``, ``allow_tf32``.

The implementation is :mod:`kernelbench.commands.evaluate` (also ``kernelguard eval``);
this script keeps upstream's file name and takes over the module's names.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import sys

from kernelbench.commands import evaluate as _impl

# the names this script always had (config class, main, helpers) for code that loads it by path
globals().update({k: v for k, v in vars(_impl).items() if not k.startswith("__")})

if __name__ == "__main__":
    sys.exit(_impl.entry() or 0)
