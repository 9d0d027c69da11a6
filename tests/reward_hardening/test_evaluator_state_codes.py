"""Codes that describe the evaluator's own state, each on its own evidence (no candidate run).

These codes (``fixtures.EVALUATOR_STATE_CODES``) say "this could not be judged here" or
"the evaluator itself failed", never "this candidate attacked": no red-team fixture
raises them on purpose, so each gets one focused test here, fed the evidence its
emitter reads.  ``test_redteam.py`` checks that every such code has a test named
``test_rhNN_...`` in this file.
"""

from __future__ import annotations

import pytest
import torch

from kernelbench.reward_hardening import detectors, policy
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.findings import observe
from kernelbench.reward_hardening.fixtures import EVALUATOR_STATE_CODES
from kernelbench.reward_hardening.parent import records, verdict
from kernelbench.reward_hardening.parent.evidence import CallRecord, Evidence, ProbeInput, TimingSample
from kernelbench.reward_hardening.precheck import run_precheck

MS = 1_000_000


def _cfg(**kw) -> HardeningConfig:
    return HardeningConfig(mode="audit", policy=kw.pop("policy", "source_strict"), device=kw.pop("device", "cpu"),
                           **kw)


def _call(index: int) -> CallRecord:
    x = torch.full((8,), float(index + 1))
    probe = ProbeInput("hidden", [x], [x * 2], True, index, {})
    return CallRecord(probe, True, outputs=[x * 2], evidence={"tensors": []}, stable=True)


def _evidence(cfg: HardeningConfig | None = None) -> Evidence:
    ev = Evidence(config=cfg or _cfg())
    ev.calls = [_call(i) for i in range(3)]
    ev.loaded = True
    return ev


def _codes(found) -> list[str]:
    return [f.code for f in found]


def finding(code: str, policy_name: str = "source_strict", evidence: dict | None = None):
    """The finding ``policy_name`` makes of one observation of ``code``."""
    return policy.judge(observe(code, evidence or {}), policy_name)


def _judged(observations, policy_name: str = "source_strict") -> list:
    return policy.apply(observations, policy_name)


def test_rh14_missing_cuda_runtime_is_unsupported_with_no_runtime():
    record = records.unsupported_record(_cfg(device="cuda"), "torch.cuda.is_available() is False")
    rh = record["reward_hardening"]
    assert [f["code"] for f in rh["findings"]] == ["RH-14"]
    assert rh["integrity_status"] == "UNSUPPORTED"
    assert rh["verified_runtime"] is None and record["runtime"] == -1.0
    assert rh["capabilities"]["cuda_runtime"]["status"] == "UNSUPPORTED"


def test_rh32_a_crashing_detector_fails_closed(monkeypatch):
    def boom(ev):
        raise ZeroDivisionError("detector bug")

    broken = detectors.Detector("RH-41", "RH-IMPLAUSIBLE-SPEEDUP", boom, "")
    monkeypatch.setitem(detectors.REGISTRY, "RH-41", broken)
    found = _judged(o for o in detectors.run_all(_evidence()) if o.code == "RH-32")
    assert len(found) == 1 and found[0].severity == "error"
    assert found[0].evidence == {"detector": "RH-IMPLAUSIBLE-SPEEDUP", "error": "ZeroDivisionError: detector bug"}
    assert verdict.decide(found, {}) == "FAIL"


def test_rh32_evaluator_error_record_trusts_nothing():
    record = records.evaluator_error_record(_cfg(), "RuntimeError: judge pipe closed")
    rh = record["reward_hardening"]
    assert [f["code"] for f in rh["findings"]] == ["RH-32"]
    assert rh["integrity_status"] == "FAIL" and rh["verified_runtime"] is None
    assert rh["findings"][0]["evidence"]["error"] == "RuntimeError: judge pipe closed"


@pytest.mark.parametrize("code", ["RH-33", "RH-44"])
def test_rh33_rh44_reference_failures_are_unsupported_not_the_candidates_fault(code):
    f = finding(code, "source_strict", {"error": "reference raised before the candidate ran"})
    assert f.severity == "error"
    assert verdict.decide([f], {}) == "UNSUPPORTED"
    # and they never hide a real attack: an attack's error finding still decides FAIL
    assert verdict.decide([f, finding("RH-18")], {}) == "FAIL"


def test_rh44_judge_out_of_memory_is_unsupported():
    f = finding("RH-44", "practical", {"error": "CUDA out of memory in the judge", "memory_plan": {}})
    assert verdict.decide([f], {}) == "UNSUPPORTED"


def test_rh44_evidence_names_who_held_the_device(monkeypatch):
    """The GPU's memory and its processes, read with nvidia-smi (no CUDA context in the parent)."""
    import subprocess

    from kernelbench.devices import gpu_memory_report

    calls = []

    def fake(cmd, **kw):
        calls.append(cmd)
        out = "70123, 143771\n" if "--query-gpu=memory.used,memory.total" in cmd else "4242, 69000\n4343, [N/A]\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    report = gpu_memory_report(1, run=fake)
    assert report == {"used_mib": 70123, "total_mib": 143771,
                      "processes": [{"pid": 4242, "used_mib": 69000}, {"pid": 4343, "used_mib": None}]}
    assert all(c[:3] == ["nvidia-smi", "-i", "1"] for c in calls)
    # nvidia-smi numbers every GPU of the host: CUDA's device 1 of a restricted process is the list's second entry
    calls.clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-8a1f")
    assert gpu_memory_report(1, run=fake)["used_mib"] == 70123
    assert gpu_memory_report("cuda:1", run=fake)["used_mib"] == 70123  # the evaluator's device name
    assert all(c[:3] == ["nvidia-smi", "-i", "GPU-8a1f"] for c in calls)
    failed = lambda cmd, **kw: subprocess.CompletedProcess(cmd, 9, "", "NVML: driver not loaded")  # noqa: E731
    assert gpu_memory_report(0, run=failed) is None

    def missing(cmd, **kw):
        raise FileNotFoundError("nvidia-smi")

    assert gpu_memory_report(run=missing) is None


def test_rh45_judge_disrupted_after_the_candidate_started_is_a_failure():
    f = finding("RH-45", "source_strict", {"error": "judge worker exited while the candidate ran"})
    assert f.severity == "error"
    assert verdict.decide([f], {}) == "FAIL"


def test_rh34_a_missing_required_capability_is_unsupported():
    class Cap:
        def __init__(self, status, required):
            self.status, self.required = status, required

    f = finding("RH-34", "source_strict", {"capabilities": {"backend_profiler": "profiler unavailable"}})
    assert verdict.decide([f], {"backend_profiler": Cap("UNSUPPORTED", True)}) == "UNSUPPORTED"
    assert verdict.decide([], {"backend_profiler": Cap("UNSUPPORTED", True)}) == "UNSUPPORTED"
    assert verdict.decide([], {"backend_profiler": Cap("UNSUPPORTED", False)}) == "PASS"


def test_rh46_source_deeper_than_the_analysis_is_incomplete():
    deep = "x = torch" + ".w" * 400 + "\n"  # 400 nested Attribute nodes, past the analysis depth
    result = run_precheck(deep + "class ModelNew:\n    pass\n")
    f = result.by_code("RH-46")
    assert f is not None and f.severity == "warning"
    flat = run_precheck("x = torch.w.w\nclass ModelNew:\n    pass\n")
    assert flat.by_code("RH-46") is None


def _oom(ev: Evidence, requested_gib: int) -> None:
    ev.memory_plan = {"candidate_bytes": 16 << 30}
    ev.calls[0].ok = False
    ev.calls[0].oom = {"requested_bytes": requested_gib << 30, "reserved_bytes": 2 << 30,
                       "device_total_bytes": 140 << 30, "judge_device_free_bytes": 1 << 30}
    ev.oom_events = [{"phase": "correctness:hidden", **ev.calls[0].oom}]


def test_rh47_device_exhausted_within_the_budget_is_the_evaluators_limit():
    within, over = _evidence(_cfg(device="cuda")), _evidence(_cfg(device="cuda"))
    _oom(within, 6)  # 6 GiB on top of 2 GiB under a 16 GiB budget, and the judge saw the device full
    _oom(over, 20)  # past the budget: the candidate's fault (RH-39), not this code
    found = _judged(detectors.REGISTRY["RH-47"].func(within))
    assert _codes(found) == ["RH-47"]
    assert verdict.decide(found, {}) == "UNSUPPORTED"
    assert detectors.REGISTRY["RH-47"].func(over) == []


def _sample(i: int, ms: float, block: int) -> TimingSample:
    t0 = 10 * MS * (i + 1)
    t1 = t0 + int(ms * MS)
    return TimingSample(i, t0 - MS // 20, t1 + MS // 20, t0, t1, t1, None, block=block)


def test_rh54_a_busy_machine_is_noted_as_information_only():
    ev = _evidence()
    ev.samples = [_sample(i, 1.0, i // 2) for i in range(6)]
    ev.interleaved_reference_samples = [_sample(i, 1.0, i // 2) for i in range(6)]
    ev.usable_cpus = 2
    ev.host_load = [2, 1, 2]  # other runnable threads at every reference block, on two CPUs
    found = _judged(detectors.REGISTRY["RH-54"].func(ev))
    assert _codes(found) == ["RH-54"] and found[0].severity == "info"
    assert found[0].evidence["other_runnable_median"] == 2
    assert verdict.decide(found, {}) == "PASS"
    ev.host_load = [0, 0, 0]
    assert detectors.REGISTRY["RH-54"].func(ev) == []


def test_every_evaluator_state_code_is_tested_here():
    import ast
    from pathlib import Path

    names = [n.name for n in ast.parse(Path(__file__).read_text()).body if isinstance(n, ast.FunctionDef)]
    for code in EVALUATOR_STATE_CODES:
        tag = "rh" + code.split("-")[1]
        assert any(n.startswith("test_") and tag in n.split("_") for n in names), code
