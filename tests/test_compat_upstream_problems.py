"""Upstream's real problem files load through this project's dataset and checker.

Uses a local copy of upstream KernelBench's problem tree next to the repository
(``<repo>/../shared/upstream-kernelbench/level{1,2,3}``) when one exists; the files are
test data only and are never part of this repository.  Skipped when absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
UPSTREAM = REPO.parent / "shared" / "upstream-kernelbench"

pytestmark = pytest.mark.skipif(not (UPSTREAM / "level1").is_dir(),
                                reason="no local copy of upstream's problem files")


@pytest.mark.parametrize("level,count", [(1, 100), (2, 100), (3, 50)])
def test_upstream_levels_load_with_dataset_path(level, count):
    from kernelbench.dataset import construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(level, source="local", base_path=str(UPSTREAM))
    assert len(ds) == count
    ids = ds.get_problem_ids()
    assert ids == list(range(1, count + 1))  # 1-based and contiguous, as upstream documents
    first = ds.get_problem_by_id(1)
    assert first.name.endswith(".py") and first.level == level and len(first.hash) == 32
    with pytest.raises(ValueError, match="not found"):
        ds.get_problem_by_id(count + 1)


def test_representative_subset_of_the_real_level1():
    from kernelbench.dataset import LEVEL1_REPRESENTATIVE_IDS, construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(1, source="local", base_path=str(UPSTREAM))
    sub = ds.get_representative_subset()
    assert sub.get_problem_ids() == sorted(LEVEL1_REPRESENTATIVE_IDS)


def test_checker_reads_every_level1_reference_without_internal_errors():
    """References are plain PyTorch: parsed without errors, no strict finding, only the missing-kernel check."""
    from kernelbench.dataset import construct_kernelbench_dataset
    from kernelbench.kernel_static_checker import validate_kernel_static

    ds = construct_kernelbench_dataset(1, source="local", base_path=str(UPSTREAM))
    for problem in ds:
        _, errors, warnings = validate_kernel_static(problem.code, backend="cuda", precision="fp32",
                                                     forbidden=["code_bypass", "timing_event_patch",
                                                                "thread_injection", "lazy_eval"])
        assert not any("syntax_error" in e or "internal checker error" in e for e in errors), (problem.name, errors)
        strict = [e for e in errors if not e.startswith("cuda_impl")]
        assert not strict, (problem.name, strict)  # no bypass/patch/thread/lazy findings in a reference
        assert any(e.startswith("cuda_impl") for e in errors)  # and, being PyTorch, no CUDA kernel
