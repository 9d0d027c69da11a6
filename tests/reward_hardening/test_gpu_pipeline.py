"""Hardened path on a real CUDA device (skipped without one; run on the H200)."""

import pytest

from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
from kernelbench.reward_hardening.config import default_build_dir
from kernelbench.reward_hardening.parent.pipeline import ReferenceSession
from kernelbench.reward_hardening.fixtures import fixture_source, get_fixture, observed_matches, problem_source

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("fid", ["benign_triton_add", "RH-37_bad_side_stream_python", "RH-24_bad_tf32_switch"])
def test_gpu_fixture_behaves_as_designed(fid):
    f = get_fixture(fid)
    src = fixture_source(f)
    cfg = HardeningConfig(mode=f.mode, policy=f.policy, device="cuda", timeout=300, num_correct_trials=3,
                          num_perf_trials=20, build_dir=default_build_dir(src))
    record = evaluate_hardened(problem_source(f), src, cfg)
    ok, reasons = observed_matches(f, record)
    assert ok, reasons


def test_cuda_records_event_and_host_times():
    f = get_fixture("benign_triton_add")
    src = fixture_source(f)
    record = evaluate_hardened(problem_source(f), src, HardeningConfig(
        mode="enforce", policy="source_strict", device="cuda", timeout=300, num_perf_trials=10,
        build_dir=default_build_dir(src)))
    ts = record["metadata"]["timing_samples"]
    assert all(e is not None and e > 0 for e in ts["event_ms"])
    assert record["reward_hardening"]["capabilities"]["async_timing_check"]["status"] == "AVAILABLE"
    assert record["reward_hardening"]["capabilities"]["backend_profiler"]["status"] == "AVAILABLE"
    # every output was read by the judge from the frozen worker (CUDA IPC), none by the candidate's harness
    read = record["reward_hardening"]["capabilities"]["trusted_output_read"]
    assert read["status"] == "AVAILABLE" and "0 failed" in read["detail"], read
    assert record["metadata"]["gpu_memory"]["peak_allocated_bytes"] > 0


def _two_samples_in_one_judge(ref: str, cand: str, cfg: HardeningConfig) -> tuple[dict, dict]:
    """Two samples through one session, as a batch runs them; asserts the judge was kept for both."""
    session = ReferenceSession(ref, cfg, "cuda:0")
    try:
        first = evaluate_hardened(ref, cand, cfg, session=session)
        judge = session.pid
        second = evaluate_hardened(ref, cand, cfg, session=session)
    finally:
        session.close()
    for rec in (first, second):
        release = [p for p in rec["metadata"]["reward_hardening_phases"] if p["phase"] == "judge_release"]
        assert release and not release[0]["retired"], release
    assert session.pid == judge  # the second sample ran in the same judge process
    return first, second


def test_identical_code_is_timed_alike_on_both_sides(add_problem):
    """The reference renamed to ModelNew: the reference's and the candidate's timing of one kernel agree.

    Both sides are timed along one path (the reference in its twin, a worker of the
    candidate's kind): on the H200 the judge used to time L1/47's reference 13 % slower
    than the candidate's worker timed the same code, in every run.
    """
    ref = add_problem(4096, 8192)
    cand = ref.replace("class Model(", "class ModelNew(")
    cfg = HardeningConfig(mode="enforce", policy="practical", device="cuda", timeout=300, num_perf_trials=50)
    # the batch path (interleaved reference blocks); the twin lets go of its lent inputs
    # after each sample: the judge is reused, not retired
    record, second = _two_samples_in_one_judge(ref, cand, cfg)
    assert second["reward_hardening"]["integrity_status"] == "PASS"
    rh = record["reward_hardening"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    assert record["metadata"]["reference_timer"] == "twin", record["metadata"].get("reference_timer_note")
    point = rh["speedup"]["point"]
    assert 0.97 < point < 1.03, rh["speedup"]


LAZY_BUFFER_REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """An element-wise add whose first forward builds a 320 MiB buffer it keeps."""

    def __init__(self):
        super().__init__()
        self.scratch = None

    def forward(self, a, b):
        if self.scratch is None:
            self.scratch = torch.zeros(80 << 20, device=a.device)
        return a + b


def get_inputs():
    return [torch.rand(1024, 4096), torch.rand(1024, 4096)]


def get_init_inputs():
    return []
'''


def test_memory_a_reference_keeps_after_its_first_forward_does_not_retire_the_judge():
    """What the reference's first forward keeps (above the 256 MiB retention limit here) is the
    session's base, measured after the fit check: the judge is reused for the next sample."""
    cand = LAZY_BUFFER_REFERENCE.replace("class Model(", "class ModelNew(")
    cfg = HardeningConfig(mode="enforce", policy="practical", device="cuda", timeout=300, num_perf_trials=10)
    _two_samples_in_one_judge(LAZY_BUFFER_REFERENCE, cand, cfg)  # (320 MiB retained would retire it)
