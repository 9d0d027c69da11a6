"""A/A on the CPU through the real workers: identical code claims no speedup; a busy machine is reported (RH-54)."""

import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.pipeline import evaluate_hardened
from kernelbench.reward_hardening.parent.records import load_schema

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import aa_calibration  # noqa: E402


def _cfg(**kw):
    base = dict(mode="enforce", policy="practical", device="cpu", timeout=60, num_correct_trials=2,
                num_perf_trials=20, perturbations=(), profile_backend=False)
    base.update(kw)
    return HardeningConfig(**base)


def test_aa_bound_claims_no_speedup_on_two_demo_problems(tmp_path):
    code = aa_calibration.main(["--demo", "--ids", "1,2", "--runs", "2", "--arms", "aa", "--num-perf-trials", "20",
                                "--out", str(tmp_path), "--name", "aa"])
    import json

    data = json.loads((tmp_path / "aa.json").read_text())
    runs = [r for per in data["results"].values() for r in per["aa"]]
    assert len(runs) == 4
    for r in runs:
        b = r["speedup"]
        assert r["status"] == "PASS" and b is not None, r
        assert b["lower_bound"] <= b["point"] <= b["upper_bound"], b
        assert b["blocks"] == 10 and b["reference"]["n"] == 20 and b["candidate"]["n"] == 20
        # identical code: no speedup claimed; on a machine so busy that other processes hold its
        # CPUs (seen on a shared two-core machine) the claim must at least carry the noise finding
        assert b["lower_bound"] <= 1.0 or r["noise"], b
    if all(not r["noise"] for r in runs):
        assert code == 0
    assert "A/A: false speedup claims" in (tmp_path / "aa.md").read_text()


def _run(point, lo, hi):
    return {"status": "PASS", "noise": False, "speedup": {
        "point": point, "lower_bound": lo, "upper_bound": hi, "claims_faster": lo > 1.0, "claims_slower": hi < 1.0,
        "candidate": {"cv": 0.01}, "reference": {"cv": 0.01}}}


def test_split_calls_merge_into_one_table_and_one_set_of_checks(tmp_path, capsys):
    import json

    a = {"results": {"L1/1 a": {"aa": [_run(1.0, 0.99, 1.01)] * 3}}}
    b = {"results": {"L1/1 a": {"aa": [_run(1.02, 1.01, 1.03)], "slow_candidate": [_run(0.9, 0.89, 0.91)] * 2},
                     "L1/2 b": {"slow_reference": [_run(1.1, 1.09, 1.11), _run(1.0, 0.99, 1.01)]}}}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    code = aa_calibration.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                                "--out", str(tmp_path), "--name", "m"])
    text = capsys.readouterr().out
    merged = json.loads((tmp_path / "m.json").read_text())["results"]
    assert len(merged["L1/1 a"]["aa"]) == 4 and len(merged["L1/1 a"]["slow_candidate"]) == 2
    assert "1 of 4 runs claim a speedup" in text  # 1 > 0.04 allowed: the A/A check fails
    assert "PASS  slow candidate: upper bound < 1 in every run: 2 of 2" in text
    assert "FAIL  slow reference" in text and "1 of 2 runs" in text and code == 1


def test_a_deadline_starts_no_new_problem_and_writes_what_it_has(tmp_path):
    import json

    code = aa_calibration.main(["--demo", "--ids", "1,2", "--runs", "1", "--arms", "aa", "--deadline-s", "0",
                                "--out", str(tmp_path), "--name", "d"])
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["results"] == {} and data["not_started"] == [1, 2] and code == 0


def test_extra_work_source_runs_and_is_counted():
    ref = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n"
    ns: dict = {}
    exec(compile(aa_calibration.with_extra_work(ref, "Model", 3, "cpu"), "<x>", "exec"), ns)
    import torch

    m = ns["Model"]()
    assert torch.equal(m(torch.zeros(2)), torch.ones(2)) and m._pad.numel() == aa_calibration.PAD_NUMEL
    assert aa_calibration._parse_ids("1-3,47,2") == [1, 2, 3, 47]
    ns = {}
    exec(compile(aa_calibration.with_extra_work(ref, "Model", 1, "cpu", numel=1 << 10), "<x>", "exec"), ns)
    m = ns["Model"]()
    assert torch.equal(m(torch.zeros(2)), torch.ones(2)) and m._pad.numel() == 1 << 10
    iters, ref_ms, op_ms, numel = aa_calibration.calibrate(ref.replace("\n    def", "\n    def") + (
        "def get_inputs():\n    return [torch.rand(4096)]\ndef get_init_inputs():\n    return []\n"), "cpu", 0.1)
    assert iters >= 1 and ref_ms > 0 and op_ms > 0 and numel == aa_calibration.PAD_NUMEL


def _busy_loop_on(cpu: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])


def test_busy_machine_fires_the_noise_finding():
    from kernelbench.dataset import construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(1, source="local", base_path="demo")
    ref = ds.get_problem_by_id(1).code
    cand = aa_calibration.imports_and_classes(aa_calibration.rename_model(ref))
    cpu = sorted(os.sched_getaffinity(0))[0]
    before = os.sched_getaffinity(0)
    busy = _busy_loop_on(cpu)
    try:
        os.sched_setaffinity(0, {cpu})  # the evaluator may use the busy core only
        record = evaluate_hardened(ref, cand, _cfg(num_perf_trials=10))
    finally:
        os.sched_setaffinity(0, before)
        busy.kill()
        busy.wait()
    rh = record["reward_hardening"]
    noise = [f for f in rh["findings"] if f["code"] == "RH-54"]
    assert noise and noise[0]["severity"] == "info", rh["findings"]
    assert noise[0]["evidence"]["other_runnable_median"] >= 1 and noise[0]["evidence"]["usable_cpus"] == 1
    assert rh["integrity_status"] == "PASS"  # info only: the verdict is unchanged
    assert rh["speedup"]["host_load"]["usable_cpus"] == 1
    jsonschema.validate(record, load_schema())


def test_interleaving_off_gives_no_bound():
    from kernelbench.dataset import construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(1, source="local", base_path="demo")
    ref = ds.get_problem_by_id(2).code
    cand = aa_calibration.imports_and_classes(aa_calibration.rename_model(ref))
    record = evaluate_hardened(ref, cand, _cfg(num_perf_trials=6, interleave_blocks=0))
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "PASS" and "speedup" not in rh
    assert "interleaved_reference_samples" not in record["metadata"]
    assert record["ref_runtime"] > 0  # upstream's ref_runtime still comes from the session's own run


@pytest.mark.gpu
def test_cuda_extra_work_takes_its_target_device_time():
    """The slowed arms' extra work, sized by device time queued behind other work (run 40: 2 % for a 10 % target)."""
    numel, ms = aa_calibration.cuda_pad_numel(0.5, "cuda:0")
    assert 0.4 < ms < 0.6 and numel > 1 << 20, (numel, ms)


def test_a_retired_judge_is_closed_before_a_fresh_one_replaces_it(monkeypatch):
    """Run 42: sessions whose judge was retired were dropped unclosed, and their judge and twin
    kept the GPU until later problems ran out of memory."""
    import kernelbench.reward_hardening.parent.pipeline as pipeline

    made, closed = [], []

    class FakeSession:
        def __init__(self, src, cfg, device):
            self.device, self.alive = device, True
            made.append(self)

        def close(self):
            closed.append(self)

    def fake_evaluate(ref, cand, cfg, session):
        session.alive = False  # every sample retires its judge (the slowed reference's lazy buffer did)
        return {"reward_hardening": {"integrity_status": "PASS", "speedup": None, "findings": []},
                "metadata": {"reward_hardening_phases": [{"phase": "judge_release", "retired": True}]}}

    monkeypatch.setattr(pipeline, "ReferenceSession", FakeSession)
    monkeypatch.setattr(pipeline, "evaluate_hardened", fake_evaluate)
    out = aa_calibration.run_arm("ref", "cand", _cfg(), 3)
    assert [r["judge_retired"] for r in out] == [True, True, True]
    assert len(made) == 4 and closed == made  # every session closed, the last one in the finally


def test_the_slowed_reference_allocates_its_buffer_with_the_model():
    ref = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    slowed = aa_calibration.with_extra_work(ref, "Model", 3, "cpu", numel=16)
    ns: dict = {}
    exec(compile(slowed, "<slowed>", "exec"), ns)
    m = ns["Model"]()
    assert m._pad.numel() == 16  # before any forward: part of the judge's base allocation
    # the candidate's class keeps the lazy buffer (assigning __init__ on it is a static finding, RH-09)
    cand = aa_calibration.with_extra_work(ref.replace("class Model", "class ModelNew"), "ModelNew", 3, "cpu", 16)
    assert "__init__ =" not in cand
