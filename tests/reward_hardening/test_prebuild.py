"""Ahead-of-time builds of a batch (``build_cache=True``): into the evaluation's build dirs,
in parallel, and a failed build becomes that sample's record."""

from pathlib import Path

from kernelbench.batch import WorkItem
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.prebuild import prebuild_items

REPO = Path(__file__).resolve().parents[2]
REF = (REPO / "src" / "kernelbench" / "demo_tasks" / "level1" / "1_Elementwise_add.py").read_text()

BUILDS = '''# compiled with torch.utils.cpp_extension.load_inline in a real candidate
import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import os
        open(os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "built.txt"), "w").write("ok")
    def forward(self, a, b):
        return a + b
'''
BROKEN = '''# load_inline would fail here: the build error is raised at construction
import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("Error building extension 'kg_add': nvcc exited with 1")
'''
PLAIN = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n        return a + b\n"


def test_prebuild_builds_in_the_evaluation_dirs_and_reports_failures(tmp_path):
    items = []
    for sid, src in enumerate((BUILDS, BROKEN, PLAIN)):
        path = tmp_path / f"level_1_problem_1_sample_{sid}_kernel.py"
        path.write_text(src)
        items.append(WorkItem(1, sid, str(path), None, REF, "add"))
    failed = prebuild_items(items, str(tmp_path / "cache"), "cpu", num_cpu_workers=2, timeout=300)
    assert set(failed) == {(1, 1)} and "nvcc exited" in failed[(1, 1)]
    assert (tmp_path / "cache" / "1" / "0" / "build" / "built.txt").read_text() == "ok"
    assert not (tmp_path / "cache" / "1" / "2").exists()  # nothing to compile: not built


def test_failed_prebuild_is_a_load_failure_record_without_evaluation(tmp_path):
    from types import SimpleNamespace

    from kernelbench.reward_hardening.parent.batch import hardened_evaluator

    cfg = SimpleNamespace(reward_hardening_mode="enforce", reward_hardening_policy="practical", precision="fp32",
                          backend="cuda", num_correct_trials=1, num_perf_trials=2, timeout=10, allow_tf32=False)
    path = tmp_path / "k.py"
    path.write_text(BROKEN)
    evaluate = hardened_evaluator(cfg, prebuild_failures={(1, 0): "nvcc exited with 1"})
    rec = evaluate(WorkItem(1, 0, str(path), None, REF, "add"), "cpu", str(tmp_path / "b"))
    rh = rec["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and [f["code"] for f in rh["findings"]] == ["RH-42"]
    assert rec["compiled"] is False and "nvcc" in rec["metadata"]["compilation_error"]
    evaluate.close()


def test_a_stale_build_baton_is_removed_under_the_build_lock(tmp_path):
    """A killed build leaves torch's ``lock`` baton behind; the next build must not wait on it."""
    from kernelbench.reward_hardening.parent.prebuild import build_lock, compiles

    ext = tmp_path / "build" / "kg_ext"
    ext.mkdir(parents=True)
    (ext / "lock").write_text("")  # what a SIGKILLed cpp_extension build leaves
    with build_lock(str(tmp_path / "build"), timeout=5) as removed:
        assert removed == ["kg_ext/lock"] and not (ext / "lock").exists()
    assert compiles("from torch.utils.cpp_extension import load_inline") and not compiles("import torch")


def test_the_build_lock_excludes_a_second_builder(tmp_path):
    import pytest
    from filelock import Timeout

    from kernelbench.reward_hardening.parent.prebuild import build_lock

    with build_lock(str(tmp_path / "b"), timeout=5):
        with pytest.raises(Timeout):
            with build_lock(str(tmp_path / "b"), timeout=0.1):
                pass
