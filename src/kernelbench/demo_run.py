"""A run directory filled from the bundled demo solutions (``scripts/make_demo_run.py``).

The demo task set (``kernelbench/demo_tasks``) ships one honest solution per problem
under ``solutions/level{L}/``.  :func:`build_demo_run` copies them into KernelBench's
run layout, ``<runs_dir>/<run_name>/level_{L}_problem_{P}_sample_0_kernel.py``, so the
batch evaluator and the analysis can be tried without an LLM.  The solutions are
plain PyTorch: under ``reward_hardening_policy=source_strict`` they are reported as
high-level PyTorch fallbacks (RH-13, RH-31) and FAIL, under ``practical`` they PASS.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelbench.dataset import DEMO_DATASET_PATH, construct_kernelbench_dataset
from kernelbench.runs import kernel_file_name

__all__ = ["build_demo_run", "demo_levels"]


def demo_levels() -> list[int]:
    """Levels that have demo solutions."""
    root = DEMO_DATASET_PATH / "solutions"
    return sorted(int(d.name[5:]) for d in root.iterdir() if d.is_dir() and d.name[5:].isdigit())


def build_demo_run(runs_dir: str | Path, run_name: str, level: int = 1,
                   overwrite: bool = False) -> tuple[Path, list[Path], list[Path]]:
    """Copy the demo solutions of ``level`` into the run directory.

    Returns ``(run_dir, written, kept)``: existing kernel files are kept unless
    ``overwrite``.  Raises ``ValueError`` for a level without demo solutions.
    """
    levels = demo_levels()
    if level not in levels:
        raise ValueError(f"the demo set has solutions for levels {', '.join(map(str, levels))}, not {level}")
    dataset = construct_kernelbench_dataset(level, source="local", base_path="demo")
    solutions = DEMO_DATASET_PATH / "solutions" / f"level{level}"
    run_dir = Path(runs_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for pid in dataset.get_problem_ids():
        source = solutions / dataset.get_problem_by_id(pid).name
        if not source.is_file():
            continue
        target = run_dir / kernel_file_name(level, pid, 0)
        if target.exists() and not overwrite:
            kept.append(target)
            continue
        shutil.copyfile(source, target)
        written.append(target)
    return run_dir, written, kept
