"""The memory plan: who gets what of a shared GPU, and when a problem does not fit."""

from __future__ import annotations

import pytest

from kernelbench.reward_hardening.parent import memplan
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.detectors import REGISTRY
from kernelbench.reward_hardening.parent.evidence import Evidence

G = 1 << 30
H200, A100_80 = int(139.8 * G), int(79.6 * G)


def test_an_elementwise_problem_with_6_gib_outputs_fits_and_the_candidate_keeps_room_for_its_outputs():
    p = memplan.plan_memory(H200, 6 * G, 6 * G, 0, 0)
    assert p.fits and not p.lean
    # the candidate holds its output and the next one at once, plus workspace: never short
    assert p.candidate_bytes >= p.min_candidate_bytes >= 2 * 6 * G
    assert p.judge_bytes + p.candidate_bytes <= H200
    assert p.judge_bytes >= p.judge_need_bytes


def test_lean_plan_when_kept_outputs_do_not_fit_and_unsupported_when_nothing_does():
    full = memplan.plan_memory(A100_80, 8 * G, 8 * G, 0, 8 * G)
    assert not full.fits and full.lean  # even recomputing the kept outputs leaves the candidate too little
    assert "exceed the device" in full.why_not()
    lean = memplan.plan_memory(A100_80, 6 * G, 6 * G, 0, 0)
    assert lean.fits


def test_8_gib_in_and_out_with_a_small_workspace_fits_an_80_gb_card_lean():
    """L1/38 and L1/39 (8 GiB in and out, 0.44 GiB of workspace measured): the variants hold one
    half-width set or one TF32 output at a time, so the lean plan leaves the candidate its minimum."""
    ws = int(0.44 * G)
    plan = memplan.plan_memory(int(79.2 * G), 8 * G, 8 * G, 0, ws)
    assert plan.fits and plan.lean and plan.candidate_bytes >= plan.min_candidate_bytes
    assert 52 * G < memplan.judge_need(8 * G, 8 * G, 0, ws, lean=True) < 53 * G  # 59 GiB before
    # a large workspace: the TF32 variant's outputs and workspace are held beside the kept outputs
    assert memplan.judge_need(G, G, 0, 10 * G, lean=True) - memplan.judge_need(G, G, 0, 0, lean=True) == 10 * G
    # the timed calls' input check: whole copies up to SAMPLE_MIN_BYTES, then a sixteenth
    small = memplan.judge_need(64 << 20, 0, 0, 0, lean=True) - memplan.judge_need(0, 0, 0, 0, lean=True)
    assert small == 2 * (64 << 20) + (32 << 20) + (64 << 20)  # lent twice, half-width variant, whole copy


def test_small_problems_give_the_candidate_its_floor_not_the_whole_card():
    p = memplan.plan_memory(H200, 100 << 20, 100 << 20, 0, 0)
    assert p.fits and p.candidate_bytes == memplan.CANDIDATE_FLOOR_BYTES
    assert p.judge_fraction >= memplan.JUDGE_FLOOR_FRACTION - 1e-9


def test_parameters_count_for_both_sides():
    without = memplan.plan_memory(H200, G, G, 0, 0)
    with_params = memplan.plan_memory(H200, G, G, 8 * G, 0)
    assert with_params.min_candidate_bytes == without.min_candidate_bytes + 8 * G
    # the model once, and the variants' copy of it (whole for a moment, before it is halved)
    # in place of the 1 GiB half-width set they held otherwise
    assert with_params.judge_need_bytes == without.judge_need_bytes + 8 * G + (8 * G - G)


def _oom_evidence(requested_gib: float, budget_gib: float = 16, free_gib: int = 1) -> Evidence:
    ev = Evidence(config=HardeningConfig(mode="enforce", policy="practical", device="cuda"))
    ev.memory_plan = {"candidate_bytes": int(budget_gib * G)}
    ev.oom_events = [{"phase": "correctness:hidden", "requested_bytes": int(requested_gib * G),
                      "reserved_bytes": 2 * G, "device_total_bytes": H200, "judge_device_free_bytes": free_gib * G}]
    return ev


@pytest.mark.parametrize("requested, free, codes", [(20, 1, {"RH-39"}), (6, 1, {"RH-47"}), (6, 100, set())])
def test_an_out_of_memory_is_the_candidates_fault_only_over_its_budget(requested, free, codes):
    """Over the budget: RH-39. Under it: RH-47 only when the judge saw the device exhausted;
    a report the judge cannot confirm (a candidate raising OutOfMemoryError itself) is an
    ordinary exception, left to the correctness rules."""
    ev = _oom_evidence(requested, free_gib=free)
    found = {c for c in ("RH-39", "RH-47") for _ in REGISTRY[c].func(ev)}
    assert found == codes


def test_rh47_is_unsupported_not_fail():
    from kernelbench.reward_hardening.findings import Capability, observe
    from kernelbench.reward_hardening.parent.verdict import decide
    from kernelbench.reward_hardening.policy import judge

    assert decide([judge(observe("RH-47"), "source_strict")], {"x": Capability("AVAILABLE", True, "")}) == "UNSUPPORTED"


def test_host_limit_counts_parameters_and_the_judges_footprint():
    from kernelbench.reward_hardening.parent.candidate_run import host_limit as _host_limit

    cfg = HardeningConfig(device="cuda")
    base = _host_limit(cfg, "cuda:0", 0)
    assert base == cfg.host_memory_base_bytes
    assert _host_limit(cfg, "cuda:0", 0, param_bytes=8 * G) == base + int(cfg.host_memory_param_factor * 8 * G)
    assert _host_limit(cfg, "cuda:0", 0, reference_rss_bytes=10 * G) == int(cfg.host_memory_reference_factor * 10 * G)


def test_the_reference_twin_gets_the_reference_footprint_only_where_the_candidate_keeps_its_minimum():
    small = memplan.plan_memory(H200, 100 << 20, 100 << 20, 0, 0)
    assert small.twin_bytes == small.min_candidate_bytes
    assert small.judge_bytes + small.candidate_bytes + small.twin_bytes <= H200
    big = memplan.plan_memory(H200, 6 * G, 6 * G, 0, 0)  # room for all three on the H200
    assert big.twin_bytes == big.min_candidate_bytes and big.candidate_bytes >= big.min_candidate_bytes
    assert big.judge_bytes + big.candidate_bytes + big.twin_bytes <= H200
    tight = memplan.plan_memory(A100_80, 6 * G, 6 * G, 0, 0)  # no room beside the candidate's minimum
    assert tight.fits and tight.twin_bytes == 0 and tight.twin_fraction == 0
    assert tight.candidate_bytes >= tight.min_candidate_bytes
