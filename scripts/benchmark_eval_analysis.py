"""Benchmark eval analysis: upstream fast_p next to the integrity-checked verified_fast_p.

Usage (from anywhere; relative paths are resolved against the repository root):

    uv run python scripts/benchmark_eval_analysis.py \\
        run_name=my_run level=1 hardware=H100_Modal baseline=baseline_time_torch

Reads ``runs/<run_name>/eval_results.json`` (upstream metrics, unchanged semantics)
and, when present, ``runs/<run_name>/verified_eval_results.json`` (verified metrics:
only integrity PASS records with a trusted ``verified_runtime`` count), plus
``results/timing/<hardware>/<baseline>.json``.  Optional keys: ``baseline_file``,
``verified_eval_file``, ``eval_results_dir`` (replaces ``runs/``), ``output_file``
(JSON), ``dataset_path`` (dataset root holding ``level{N}/``; ``demo`` for the
bundled demo tasks), ``plot`` (a fast_p / verified_fast_p chart: ``plot=true`` writes
it beside ``output_file`` as ``.png``, or in the run directory as
``fast_p_level{L}_{baseline}.png``; any other value is the PNG path; a second panel
shows the per-problem speedups), and ``reward_hardening_mode``,
``reward_hardening_policy``, ``device``: which records to analyse when the run holds
several configurations (a batch keeps one record per mode/policy/device).

The analysis warns when the baseline does not fit the run: other hardware or device
than the records', problems missing from it, or another demo scale.  The shipped
``results/timing/H200/`` baselines are an NVIDIA H200 on the bundled demo set at
``KERNELBENCH_DEMO_SCALE=64``.

The implementation is :mod:`kernelbench.commands.analyze` (also ``kernelguard analyze``);
this script keeps upstream's file name and takes over the module's names.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import sys

from kernelbench.commands import analyze as _impl

# the names this script always had (config class, main, helpers) for code that loads it by path
globals().update({k: v for k, v in vars(_impl).items() if not k.startswith("__")})

if __name__ == "__main__":
    _impl.main()  # one-line errors exit 2 from inside; the analysis dict is not an exit status
