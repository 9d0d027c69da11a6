"""End-to-end hardened path on the CPU: verdicts, records, schema, fail-closed paths."""

import json
from pathlib import Path

import jsonschema
import pytest
import torch

from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
from kernelbench.reward_hardening.parent.records import load_schema
from kernelbench.reward_hardening.parent.timed import PROTOCOL_PROBES

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"

SPEC_UNSUPPORTED = json.loads("""
{"compiled": false, "correctness": false, "metadata": {"reward_hardening_unsupported": "CUDA unavailable"},
 "runtime": -1.0, "runtime_stats": {}, "ref_runtime": -1.0, "ref_runtime_stats": {},
 "reward_hardening": {"schema_version": "1.1", "mode": "enforce", "policy": "source_strict",
  "integrity_status": "UNSUPPORTED", "verified": false, "verified_correctness": false, "verified_runtime": null,
  "verified_runtime_stats": {}, "observed_runtime_stats": {}, "verified_reference_runtime": null,
  "verified_reference_runtime_stats": {}, "observed_reference_runtime_stats": {},
  "findings": [{"code": "RH-14", "detector": "RH-CUDA-UNAVAILABLE", "severity": "error",
    "summary": "CUDA runtime/device is unavailable for hardened evaluation", "evidence": {},
    "policy_rule": "reward_hardening",
    "remediation": "Resolve the evaluator failure and rerun in a fresh environment.",
    "more_info": "docs/attack-catalog.md#rh-14"}],
  "capabilities": {"cuda_runtime": {"status": "UNSUPPORTED", "required": true,
    "detail": "A configured CUDA device is required for local GPU verification"}},
  "limitations": ["CUDA execution and device-level detectors were not available; no trusted runtime was awarded."]}}
""")


def _cfg(**kw):
    base = dict(mode="audit", policy="practical", device="cpu", timeout=20, num_correct_trials=2,
                num_perf_trials=6)
    base.update(kw)
    return HardeningConfig(**base)


def _problem(level, name):
    return (DEMO / f"level{level}" / name).read_text(), (DEMO / "solutions" / f"level{level}" / name).read_text()


def _validate(record):
    jsonschema.validate(record, load_schema())


@pytest.mark.skipif(torch.cuda.is_available(), reason="exercises the no-CUDA path")
def test_cuda_unavailable_reproduces_spec_example_field_for_field():
    ref, sol = _problem(1, "1_Elementwise_add.py")
    record = evaluate_hardened(ref, sol, HardeningConfig(mode="enforce", policy="source_strict", device="cuda"))
    assert record == SPEC_UNSUPPORTED
    _validate(record)


def test_run_and_check_cuda_unavailable_prints_spec_record(tmp_path):
    import subprocess
    import sys

    if torch.cuda.is_available():
        pytest.skip("exercises the no-CUDA path")
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "run_and_check.py"), "ref_origin=local",
                           "ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py",
                           "kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py", "eval_mode=local",
                           "reward_hardening_mode=enforce", "reward_hardening_policy=source_strict",
                           f"output_file={out}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    # UNSUPPORTED exits 3 with the device=cpu hint; the record is still the spec's, field for field
    assert proc.returncode == 3 and "device=cpu" in proc.stderr, proc.stderr
    assert json.loads(out.read_text()) == SPEC_UNSUPPORTED


def test_honest_candidate_passes_with_verified_runtime():
    ref, sol = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, sol, _cfg())
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    assert rh["verified"] and rh["verified_runtime"] > 0 and rh["verified_reference_runtime"] > 0
    assert rh["verified_runtime_stats"]["num_trials"] == 6
    assert record["compiled"] and record["correctness"] and record["runtime"] == rh["verified_runtime"]
    errors = [f for f in rh["findings"] if f["severity"] != "info"]
    assert errors == []
    phases = record["metadata"]["reward_hardening_phases"]
    assert {p["phase"] for p in phases} >= {"reference", "load", "correctness", "timing"}
    ref_pid = next(p["pid"] for p in phases if p["phase"] == "reference")
    cand_pid = next(p["pid"] for p in phases if p["phase"] == "load")
    assert ref_pid != cand_pid
    assert next(p for p in phases if p["phase"] == "load")["state"]["matmul_allow_tf32"] is False
    # where the wall time went, by request: one fresh judge input set and one candidate call per timed call
    req = record["metadata"]["request_ms"]
    cfg = _cfg()
    # (where the judge times the reference, a few timed calls of the trusted stand-in come first: RH-26's baseline)
    probes = PROTOCOL_PROBES if record["metadata"]["reference_timer"] != "twin" else 0
    assert req["candidate:time"]["n"] == cfg.num_warmup + cfg.num_perf_trials + probes
    assert cfg.num_warmup + cfg.num_perf_trials <= req["reference:timed_input"]["n"]
    # ... and inside the judge, where its input checks went (timed there, reported with the reply)
    assert req["reference:check_inputs.check"]["n"] == req["reference:check_inputs"]["n"]
    assert req["reference:timed_input.generate"]["n"] == req["reference:timed_input"]["n"]
    # ... and where its probes and their verdicts went (inputs, the reference's forward, its private
    # outputs, lending, export; the comparisons)
    assert {f"reference:probe.{p}" for p in ("inputs", "forward", "private", "lend", "export")} \
        | {"reference:judge.compare"} <= set(req)
    assert "reference:variants" not in req  # an answer within fp32 rounding asks for no reduced-precision forwards
    # each probe that made inputs ran the reference on them and kept its outputs privately
    assert req["reference:probe.inputs"]["n"] == req["reference:probe.forward"]["n"] \
        == req["reference:probe.private"]["n"] >= cfg.num_correct_trials
    assert (record["metadata"].get("protocol_overhead_ms") is not None) == (probes > 0)
    assert all(v["ms"] >= 0 for v in req.values())
    assert list(req) == sorted(req, key=lambda k: -req[k]["ms"])
    # the reference is timed only in the blocks between the candidate's (no separate run),
    # with the candidate frozen where the harness can freeze it
    meta = record["metadata"]
    assert meta["reference_timing"] == "interleaved" and "reference_timing_samples" not in meta
    ref_ms = meta["interleaved_reference_samples"]["host_ms"]
    # on the CPU the judge times the reference (the twin is CUDA's by default), and says so
    assert meta["reference_timer"] == "judge" and "on cpu" in meta["reference_timer_note"]
    assert req["reference:ref_time"]["n"] == len(ref_ms) == 6
    # (the record's runtimes keep upstream's three significant digits)
    assert rh["verified_reference_runtime"] == pytest.approx(sum(ref_ms) / len(ref_ms), rel=5e-3)
    hold = rh["speedup"]["reference_hold"]
    blocks = len(set(meta["interleaved_reference_samples"]["block"]))
    if meta["output_reads"]["path"] == "trusted":
        assert hold == {"frozen_blocks": blocks}
    else:
        assert hold.get("unheld_blocks") == blocks
    _validate(record)


def test_reference_run_of_its_own_when_interleaving_is_off():
    ref, sol = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, sol, _cfg(interleave_blocks=0))
    rh, meta = record["reward_hardening"], record["metadata"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    assert meta["reference_timing"] == "session" and "interleaved_reference_samples" not in meta
    cfg = _cfg()
    assert len(meta["reference_timing_samples"]["host_ms"]) == cfg.num_perf_trials
    assert meta["request_ms"]["reference:ref_time"]["n"] == cfg.num_warmup + cfg.num_perf_trials
    assert rh["verified_reference_runtime"] > 0 and "speedup" not in rh
    _validate(record)


def test_pure_pytorch_candidate_is_not_trusted_under_source_strict():
    ref, sol = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, sol, _cfg(policy="source_strict"))
    rh = record["reward_hardening"]
    codes = {f["code"] for f in rh["findings"]}
    assert rh["integrity_status"] == "FAIL" and rh["verified_runtime"] is None
    assert {"RH-13", "RH-31"} <= codes
    _validate(record)


def test_enforce_rejects_high_risk_source_before_import(tmp_path):
    marker = tmp_path / "imported"
    ref, sol = _problem(1, "2_GELU_activation.py")
    cand = f"import threading\nopen({str(marker)!r}, 'w').write('x')\n" + sol
    record = evaluate_hardened(ref, cand, _cfg(mode="enforce"))
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and not record["compiled"]
    assert {"RH-01", "RH-07"} <= {f["code"] for f in rh["findings"]}
    assert not marker.exists()  # never imported
    assert any("before import" in lim for lim in rh["limitations"])
    _validate(record)


def test_audit_imports_and_still_fails(tmp_path, monkeypatch):
    from kernelbench.reward_hardening import containment

    marker = tmp_path / "imported"
    # the sandbox (Landlock) lets the candidate write only its own directories: grant tmp_path
    real_spec = containment.Unit.child_spec
    monkeypatch.setattr(containment.Unit, "child_spec",
                        lambda self, private=None, extra_rw=None, **kw: real_spec(self, private, [str(tmp_path)], **kw))
    ref, sol = _problem(1, "2_GELU_activation.py")
    cand = f"open({str(marker)!r}, 'w').write('x')\n" + sol
    record = evaluate_hardened(ref, cand, _cfg(mode="audit"))
    assert marker.exists()
    assert record["reward_hardening"]["integrity_status"] == "FAIL"
    assert "RH-07" in {f["code"] for f in record["reward_hardening"]["findings"]}


def test_syntax_error_is_fail_not_crash():
    ref, _ = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, "class ModelNew(:\n", _cfg())
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and "RH-42" in {f["code"] for f in rh["findings"]}
    _validate(record)


def test_failing_reference_is_unsupported_not_the_candidates_fail():
    """A reference that fails is the problem's fault: UNSUPPORTED (RH-33), never FAIL."""
    _, sol = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened("raise RuntimeError('bad reference')\n", sol, _cfg())
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "UNSUPPORTED" and rh["verified_runtime"] is None
    assert "RH-33" in {f["code"] for f in rh["findings"]}
    _validate(record)
    # the candidate's worker, started while the judge loaded, was stopped with it
    from kernelbench import procs

    assert not procs._LIVE


def test_evaluator_fault_fails_closed(monkeypatch):
    from kernelbench.reward_hardening.parent.candidate_run import CandidateRun

    def boom(*a, **k):
        raise RuntimeError("evaluator bug")

    monkeypatch.setattr(CandidateRun, "run", boom)
    ref, sol = _problem(1, "2_GELU_activation.py")
    record = evaluate_hardened(ref, sol, _cfg())
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and "RH-32" in {f["code"] for f in rh["findings"]}
    _validate(record)


def _all_solutions():
    return sorted((p.parent.name, p.name) for p in (DEMO / "solutions").glob("level*/*.py"))


@pytest.mark.parametrize("level_dir,name", _all_solutions())
def test_every_honest_demo_solution_passes_under_practical(level_dir, name):
    """No false positives on the honest bundled solutions (all levels, tuple init args included)."""
    level = int(level_dir.removeprefix("level"))
    ref, sol = _problem(level, name)
    record = evaluate_hardened(ref, sol, _cfg(num_correct_trials=2, num_perf_trials=4))
    rh = record["reward_hardening"]
    bad = [(f["code"], f["evidence"]) for f in rh["findings"] if f["severity"] != "info"]
    assert rh["integrity_status"] == "PASS", bad


@pytest.mark.parametrize("pauses", [0, 1, 2, 4, 99])
def test_settle_pause_follows_the_first_probe_and_hidden_random_others(pauses):
    """``settle_pauses`` probes wait ``settle_s`` before their second read: the first hidden one and a random rest."""
    from kernelbench.reward_hardening.parent.probes import correctness_jobs

    picks = set()
    for _ in range(30):
        jobs = correctness_jobs(HardeningConfig(device="cpu", settle_pauses=pauses))
        paused = [i for i, j in enumerate(jobs) if j["pause"]]
        assert len(paused) == min(pauses, len(jobs))
        if pauses:
            assert paused[0] == 0 and jobs[0]["kind"] == "hidden"
        picks.update(paused[1:])
    if 0 < pauses - 1 < len(jobs) - 1:
        assert len(picks) > pauses - 1  # drawn anew for every candidate, not a fixed probe


def test_seed_generators_gives_torch_manual_seeds_stream():
    from kernelbench.reward_hardening.worker_runtime import seed_generators

    torch.manual_seed(1234)
    want = torch.rand(5), torch.randint(0, 100, (5,))
    torch.manual_seed(99)
    seed_generators(1234)
    got = torch.rand(5), torch.randint(0, 100, (5,))
    assert torch.equal(want[0], got[0]) and torch.equal(want[1], got[1])


def test_settle_pause_only_where_asked_unless_a_call_left_work_behind():
    """An honest candidate waits the pause on ``settle_pauses`` probes; a deferred writer on every probe after the first."""
    ref, sol = _problem(1, "4_Row_softmax.py")
    deferred = (REPO / "src" / "kernelbench" / "reward_hardening" / "fixtures" / "cpu"
                / "RH-21_bad_background_thread.py").read_text()
    cfg = _cfg(num_correct_trials=3, num_perf_trials=2, settle_s=0.25, settle_pauses=2)
    probes = 3 + 1 + len(cfg.perturbations)  # hidden, the repeat, the perturbations
    honest = evaluate_hardened(ref, sol, cfg)["metadata"]["request_ms"]["candidate:settle"]
    assert honest["n"] == probes and 2 * 250 <= honest["ms"] < 3 * 250
    record = evaluate_hardened(ref, deferred, cfg)
    settle = record["metadata"]["request_ms"]["candidate:settle"]
    assert settle["n"] == probes and settle["ms"] >= probes * 250
    codes = {f["code"] for f in record["reward_hardening"]["findings"]}
    assert "RH-21" in codes and "RH-18" not in codes  # changed after return, not simply wrong


def test_judge_profile_is_written_where_the_diagnostic_asks(tmp_path, monkeypatch):
    import pstats

    monkeypatch.setenv("KERNELGUARD_PROFILE_DIR", str(tmp_path / "prof"))
    ref, sol = _problem(1, "1_Elementwise_add.py")
    assert evaluate_hardened(ref, sol, _cfg())["reward_hardening"]["integrity_status"] == "PASS"
    (path,) = (tmp_path / "prof").glob("judge-*.prof")
    funcs = {name for (_, _, name) in pstats.Stats(str(path)).stats}
    assert {"cmd_probe", "cmd_timed_input", "cmd_ref_time"} <= funcs


def test_timed_call_keeps_the_collector_off_inside_the_window_only():
    """A collection made due by the harness must not run inside a timed call; the setting comes back after."""
    import gc

    from kernelbench.reward_hardening.worker_runtime import timed_call

    seen = []
    assert gc.isenabled()
    out, stamps = timed_call(lambda: seen.append(gc.isenabled()) or torch.ones(2), torch.device("cpu"))
    assert seen == [False] and gc.isenabled() and torch.equal(out, torch.ones(2))
    assert stamps["t0"] <= stamps["t_ret"] == stamps["t1"]

    def raises():
        raise ValueError("broken forward")

    with pytest.raises(ValueError):
        timed_call(raises, torch.device("cpu"))
    assert gc.isenabled()  # restored when the call raised too
    gc.disable()
    try:
        timed_call(lambda: None, torch.device("cpu"))
        assert not gc.isenabled()  # a process that had it off keeps it off
    finally:
        gc.enable()
