"""eval_from_generations in hardened modes writes schema-valid verified_eval_results.json."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import torch

from kernelbench.reward_hardening.config import cpu_threads_per_evaluation
from kernelbench.reward_hardening.parent.records import load_schema

REPO = Path(__file__).resolve().parents[2]
SOL = REPO / "src" / "kernelbench" / "demo_tasks" / "solutions" / "level1"
WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"


def _run(runs_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), "run_name=h",
                           "dataset_src=local", "dataset_path=demo", "level=1", "problem_ids=[1,2]",
                           "num_correct_trials=2", "num_perf_trials=4", "timeout=20", f"runs_dir={runs_dir}",
                           f"kernel_eval_build_dir={runs_dir / 'cache'}", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def _layout(runs_dir: Path) -> Path:
    run = runs_dir / "h"
    run.mkdir(parents=True)
    (run / "level_1_problem_1_sample_0_kernel.py").write_text((SOL / "1_Elementwise_add.py").read_text())
    (run / "level_1_problem_2_sample_0_kernel.py").write_text(WRONG)
    return run


def _validate_file(path: Path) -> dict:
    data = json.loads(path.read_text())
    schema = load_schema()
    jsonschema.validate(data, {**schema, "$ref": "#/$defs/results_file"})
    return data


def test_audit_batch_on_cpu(tmp_path):
    run = _layout(tmp_path)
    # two samples at a time on the CPU: each worker gets its share of the cores
    proc = _run(tmp_path, "device=cpu", "reward_hardening_mode=audit", "reward_hardening_policy=practical",
                "num_gpu_devices=2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = _validate_file(run / "verified_eval_results.json")
    assert not (run / "eval_results.json").exists()
    good, bad = data["1"][0]["reward_hardening"], data["2"][0]["reward_hardening"]
    assert good["integrity_status"] == "PASS" and good["verified_runtime"] > 0
    assert bad["integrity_status"] == "FAIL" and "RH-18" in {f["code"] for f in bad["findings"]}
    assert data["1"][0]["sample_id"] == 0 and data["1"][0]["compiled"] is True
    want = cpu_threads_per_evaluation(2)
    for pid in ("1", "2"):
        load = next(p for p in data[pid][0]["metadata"]["reward_hardening_phases"] if p["phase"] == "load")
        assert load["state"]["num_threads"] == want


def test_cpu_threads_follow_the_samples_in_flight():
    from types import SimpleNamespace

    from kernelbench.reward_hardening import HardeningConfig

    cores = len(os.sched_getaffinity(0))
    assert cpu_threads_per_evaluation(1) is None  # one evaluation: torch's default pool
    assert cpu_threads_per_evaluation(2) == max(1, cores // 2)
    assert cpu_threads_per_evaluation(4 * cores) == 1
    base = dict(reward_hardening_mode="audit", reward_hardening_policy="practical")
    assert HardeningConfig.from_script_config(SimpleNamespace(**base, device="cpu", num_gpu_devices=2)).num_threads \
        == max(1, cores // 2)
    assert HardeningConfig.from_script_config(SimpleNamespace(**base, device="cpu")).num_threads is None
    assert HardeningConfig.from_script_config(SimpleNamespace(**base, device="cuda", num_gpu_devices=8)).num_threads \
        is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="exercises the no-CUDA path")
def test_enforce_batch_without_cuda_is_unsupported(tmp_path):
    run = _layout(tmp_path)
    proc = _run(tmp_path, "reward_hardening_mode=enforce")
    assert proc.returncode == 3, proc.stdout + proc.stderr  # every sample UNSUPPORTED: exit 3, one line why
    assert "device=cpu" in proc.stderr.strip().splitlines()[-1]
    data = _validate_file(run / "verified_eval_results.json")
    for pid in ("1", "2"):
        rh = data[pid][0]["reward_hardening"]
        assert rh["integrity_status"] == "UNSUPPORTED" and rh["findings"][0]["code"] == "RH-14"


def test_memory_hungry_candidate_costs_only_its_own_record(tmp_path):
    """A candidate holding 8 GiB is killed at its limit (RH-43); the batch goes on and every
    other record is written, including the next sample of the same problem (same judge)."""
    run = tmp_path / "h"
    run.mkdir(parents=True)
    hog = REPO / "src" / "kernelbench" / "reward_hardening" / "fixtures" / "cpu" / "RH-43_bad_host_memory_hog.py"
    (run / "level_1_problem_1_sample_0_kernel.py").write_text(hog.read_text())
    (run / "level_1_problem_1_sample_1_kernel.py").write_text((SOL / "1_Elementwise_add.py").read_text())
    (run / "level_1_problem_2_sample_0_kernel.py").write_text((SOL / "2_GELU_activation.py").read_text())
    (run / "level_1_problem_2_sample_1_kernel.py").write_text((SOL / "2_GELU_activation.py").read_text())
    proc = _run(tmp_path, "device=cpu", "reward_hardening_mode=audit", "reward_hardening_policy=practical",
                "num_samples_per_problem=2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = _validate_file(run / "verified_eval_results.json")
    status = {(pid, r["sample_id"]): r["reward_hardening"] for pid, rs in data.items() for r in rs}
    assert set(status) == {("1", 0), ("1", 1), ("2", 0), ("2", 1)}
    hog_rh = status[("1", 0)]
    assert hog_rh["integrity_status"] == "FAIL" and "RH-43" in {f["code"] for f in hog_rh["findings"]}
    for key in (("1", 1), ("2", 0), ("2", 1)):
        assert status[key]["integrity_status"] == "PASS", (key, status[key]["findings"])
    # the second sample of each problem reused the judge of the first
    reused = [p for pid, rs in data.items() for r in rs for p in r["metadata"]["reward_hardening_phases"]
              if p["phase"] == "reference" and r["sample_id"] == 1]
    assert reused and all(p["reused"] for p in reused)
    firsts = [p for pid, rs in data.items() for r in rs for p in r["metadata"]["reward_hardening_phases"]
              if p["phase"] == "reference" and r["sample_id"] == 0]
    assert firsts and not any(p["reused"] for p in firsts)  # each problem's first sample started its judge


def test_session_cache_reuses_by_key_replaces_dead_judges_and_closes_the_oldest():
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.parent.batch import SessionCache

    cfg = HardeningConfig(device="cpu")
    cache = SessionCache(2)
    a = cache.get("ref_a", cfg, "cpu")
    assert cache.get("ref_a", cfg, "cpu") is a  # same reference, configuration and device: same judge
    assert cache.get("ref_a", HardeningConfig(device="cpu", allow_tf32=True), "cpu") is not a  # another key
    b = cache.get("ref_b", cfg, "cpu")
    assert len(cache.sessions) == 2 and a not in cache.sessions.values()  # the oldest was pushed out ...
    assert not Path(a.root).exists()  # ... and closed
    b.error = "judge died"  # a failed judge is never handed out again
    fresh = cache.get("ref_b", cfg, "cpu")
    assert fresh is not b and fresh.alive and not Path(b.root).exists()
    cache.close()
    assert not cache.sessions and not Path(fresh.root).exists()
