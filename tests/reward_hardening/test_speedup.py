"""The speedup's bound, interleaved blocks, the reward helper, the analysis and the batch summary (no workers)."""

import contextlib

import numpy as np
import pytest

from kernelbench import analysis, batch
from kernelbench.reward_hardening.parent import speedup
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample
from kernelbench.reward_hardening.parent.interleave import Interleaver, block_of, enabled
from kernelbench.reward_hardening.parent.reward import verified_speedup


def _blocked(rng, k, per_ref, per_cand, ratio=1.0, noise=0.05, shared_drift=0.05, own_drift=0.0):
    """Reference and candidate times in ``k`` interleaved blocks; the true speedup is ``ratio``."""
    drift = rng.normal(0, shared_drift, k)
    ref, rb, cand, cb = [], [], [], []
    for b in range(k):
        ref += list(rng.lognormal(0, noise, per_ref) * (1 + drift[b] + rng.normal(0, own_drift)))
        cand += list(rng.lognormal(0, noise, per_cand) * (1 + drift[b] + rng.normal(0, own_drift)) / ratio)
        rb += [b] * per_ref
        cb += [b] * per_cand
    return ref, rb, cand, cb


def test_aa_false_claims_stay_below_the_level():
    rng = np.random.default_rng(20)
    runs = [speedup.speedup_estimate(*_blocked(rng, 10, 5, 10, own_drift=0.02), resamples=500) for _ in range(200)]
    claims = sum(r["claims_faster"] for r in runs)
    assert claims <= 2  # nominal 1% of 200; the drift of each side's own block is the hard case
    assert all(abs(r["point"] - 1) < 0.05 for r in runs)
    assert all(r["method"] == speedup.METHOD_BLOCKS and r["blocks"] == 10 for r in runs)


def test_a_ten_percent_difference_is_found_both_ways():
    rng = np.random.default_rng(21)
    # 5% noise per sample and 2% drift per block (more than either seen on the H200)
    faster = [speedup.speedup_estimate(*_blocked(rng, 10, 5, 10, ratio=1.1, shared_drift=0.02), resamples=500)
              for _ in range(50)]
    slower = [speedup.speedup_estimate(*_blocked(rng, 10, 5, 10, ratio=1 / 1.1, shared_drift=0.02), resamples=500)
              for _ in range(50)]
    assert sum(r["claims_faster"] for r in faster) >= 48
    assert all(r["claims_slower"] and r["upper_bound"] < 1 for r in slower)
    assert all(r["lower_bound"] <= r["point"] <= r["upper_bound"] for r in faster + slower)


def test_the_systematic_floor_keeps_a_path_difference_below_it_from_being_claimed():
    """A 0.1 % CV (large matmuls on the H200) and a 0.2 % difference between the two paths."""
    rng = np.random.default_rng(22)
    data = [_blocked(rng, 10, 5, 5, ratio=1.002, noise=0.001, shared_drift=0.0005) for _ in range(20)]
    bare = [speedup.speedup_estimate(*d, resamples=500) for d in data]
    floored = [speedup.speedup_estimate(*d, resamples=500, floor=0.005) for d in data]
    assert sum(r["claims_faster"] for r in bare) >= 10  # the sampling bound alone calls 0.2 % a speedup
    assert not any(r["claims_faster"] or r["claims_slower"] for r in floored)
    assert all(f["systematic_floor"] == 0.005 and f["point"] == b["point"] for f, b in zip(floored, bare))
    assert all(f["lower_bound"] == pytest.approx(b["lower_bound"] / 1.005, abs=1e-4) for f, b in zip(floored, bare))
    # a real 2 % difference is still found both ways (the power arms' extra work on the H200)
    faster = speedup.speedup_estimate(*_blocked(rng, 10, 5, 5, ratio=1.02, noise=0.003, shared_drift=0.001),
                                      resamples=500, floor=0.005)
    slower = speedup.speedup_estimate(*_blocked(rng, 10, 5, 5, ratio=1 / 1.02, noise=0.003, shared_drift=0.001),
                                      resamples=500, floor=0.005)
    assert faster["claims_faster"] and slower["claims_slower"]


def test_shared_drift_cancels_but_an_unblocked_run_does_not_cover_it():
    rng = np.random.default_rng(22)
    ref, rb, cand, cb = _blocked(rng, 10, 5, 10, shared_drift=0.3)
    blocked = speedup.speedup_estimate(ref, rb, cand, cb)
    pooled = speedup.speedup_estimate(ref, None, cand, None)
    assert blocked["method"] == speedup.METHOD_BLOCKS and pooled["method"] == speedup.METHOD_IID
    assert pooled["blocks"] == 1
    # the estimate is reproducible: the generator is seeded from the samples
    assert speedup.speedup_estimate(ref, rb, cand, cb) == blocked


def test_blocks_with_one_side_only_are_left_out_and_nothing_gives_none():
    est = speedup.speedup_estimate([1.0, 1.0, 5.0], [0, 0, 2], [1.0, 1.0, 1.0], [0, 1, 1])
    assert est["blocks"] == 1 and est["point"] == 1.0
    assert speedup.speedup_estimate([1.0], [3], [1.0], [4]) is None
    assert speedup.speedup_estimate([0.0, 0.0], [0, 0], [1.0], [0]) is None


def test_bound_holds_on_two_humped_samples():
    # a loaded machine: most calls wait a scheduler slice, some do not
    rng = np.random.default_rng(23)
    claims = 0
    for _ in range(100):
        def times(n):
            return list(np.where(rng.random(n) < 0.45, 0.4, 12.0) * rng.lognormal(0, 0.1, n))
        ref, cand = times(20), times(20)
        claims += speedup.speedup_estimate(ref, [i // 2 for i in range(20)], cand, [i // 2 for i in range(20)],
                                           resamples=300)["claims_faster"]
    assert claims <= 1
    lo, hi = speedup.median_bounds(np.arange(1.0, 101.0), 0.005)
    assert 30 <= lo < 50.5 < hi <= 71  # ranks of a 99.5% bound on the median of 100 samples


def test_side_spread():
    s = speedup.side_spread([1.0] * 9 + [10.0])
    assert s["n"] == 10 and s["median_ms"] == 1.0 and s["outliers"] == 1 and s["cv"] > 1
    assert speedup.side_spread([]) == {"n": 0}
    assert speedup.side_spread([2.0, 2.0])["cv"] == 0.0


def _sample(i):
    return TimingSample(i, 0, 10, 1, 2, 3, None)


@pytest.mark.parametrize("n,blocks,per,expect_blocks,expect_per", [(100, 10, 5, 10, 5), (6, 10, 5, 3, 2),
                                                                   (30, 10, 5, 10, 3), (5, 0, 5, 0, 5)])
def test_interleaver_layout(n, blocks, per, expect_blocks, expect_per):
    cfg = HardeningConfig(device="cpu", num_perf_trials=n, num_warmup=2, interleave_blocks=blocks,
                          interleave_reference_samples=per)
    ev = Evidence(config=cfg)
    order = []

    held = []

    @contextlib.contextmanager
    def hold():
        held.append(True)
        try:
            yield
        finally:
            held.append(False)

    def time_reference(b):
        assert held and held[-1], "a reference sample was timed outside the hold"
        order.append(("R", b))
        return _sample(len(order))

    inter = Interleaver(cfg, ev, time_reference, hold)
    assert inter.enabled == enabled(cfg) == bool(expect_blocks)
    total = cfg.num_warmup + n
    for k in range(total):
        inter.before(k)
        order.append(("C", k))
        if k >= cfg.num_warmup:
            ev.samples.append(_sample(k))
    inter.before(total)
    assert inter.blocks == expect_blocks
    if not expect_blocks:
        assert not ev.interleaved_reference_samples and all(s.block is None for s in ev.samples)
        return
    assert inter.per_block == expect_per
    assert len(ev.interleaved_reference_samples) == expect_blocks * expect_per
    assert [s.block for s in ev.samples] == [block_of(j, n, expect_blocks) for j in range(n)]
    # even blocks: the reference right before the block's first candidate sample; odd: right after its last
    for b in range(expect_blocks):
        first = cfg.num_warmup + min(j for j in range(n) if block_of(j, n, expect_blocks) == b)
        last = cfg.num_warmup + max(j for j in range(n) if block_of(j, n, expect_blocks) == b)
        at = order.index(("R", b))
        assert order[at + expect_per] == ("C", first) if b % 2 == 0 else order[at - 1] == ("C", last)
    assert len(ev.host_load) == expect_blocks
    assert held == [True, False] * expect_blocks  # one hold per block, released after it


def _record(status="PASS", lcb=1.05, point=1.2, vt=1.0, ref=1.2, bound=True):
    rh = {"integrity_status": status, "verified": status == "PASS", "verified_correctness": status == "PASS",
          "verified_runtime": vt if status == "PASS" else None, "verified_reference_runtime": ref, "findings": []}
    if bound:
        rh["speedup"] = {"point": point, "lower_bound": lcb, "upper_bound": point * 1.1, "level": 0.99,
                         "verified": status == "PASS", "claims_faster": lcb > 1}
    return {"reward_hardening": rh, "correctness": True, "runtime": vt}


def test_reward_helper():
    assert verified_speedup(_record()) == 1.05
    assert verified_speedup(_record(), "mean") == pytest.approx(1.2)
    assert verified_speedup(_record(status="FAIL")) == 0.0
    assert verified_speedup(_record(bound=False)) == 0.0  # fail closed: no bound, no lcb reward
    assert verified_speedup(_record(bound=False), "mean") == pytest.approx(1.2)
    assert verified_speedup(None, default=-1.0) == -1.0
    with pytest.raises(ValueError):
        verified_speedup(_record(), "median")


def test_verified_fast_p_on_the_bound():
    names = {1: "a.py", 2: "b.py"}
    baseline = {"level1": {"a.py": {"mean": 1.6}, "b.py": {"mean": 1.6}}}
    # problem 1: 1.6x against the baseline, but the in-run bound is only 1.0 / 1.25 of the point estimate
    verified = {"1": [dict(_record(lcb=1.0, point=1.25), sample_id=0)], "2": [dict(_record(bound=False), sample_id=0)]}
    warnings = []
    out = {s: analysis.analyze_run(run_name="r", level=1, hardware="h", baseline="b", problem_names=names,
                                   baseline_results=baseline, verified_results=verified, warn=warnings.append,
                                   speedup_statistic=s) for s in ("lcb", "mean")}
    assert out["mean"]["verified_fast_p"]["1.5"] == 1.0
    assert out["lcb"]["verified_fast_p"]["1.5"] == 0.5  # 1.6 * 1.0 / 1.25 = 1.28 for problem 1
    assert out["lcb"]["verified_fast_p"]["1.0"] == 1.0
    assert out["lcb"]["records_without_bound"] == 1 and out["mean"]["records_without_bound"] == 0
    assert any("carry no speedup bound" in w for w in warnings)
    assert any("timed by an unrecorded method" in w for w in warnings)
    row = out["lcb"]["per_problem"][0]
    assert (row["inrun_speedup"], row["inrun_speedup_lcb"]) == (1.25, 1.0)
    assert "1.25x (>= 1x)" in analysis.format_report(out["lcb"])
    with pytest.raises(analysis.AnalysisError):
        analysis.analyze_run(run_name="r", level=1, hardware="h", baseline="b", problem_names=names,
                             baseline_results=baseline, verified_results=verified, speedup_statistic="max")


def test_batch_summary_shows_the_bound_and_counts_noise(tmp_path):
    noisy = _record(lcb=0.8, point=1.1)
    noisy["reward_hardening"]["findings"] = [{"code": "RH-54", "severity": "info", "evidence": {}}]
    results = {"1": [dict(_record(), sample_id=0)], "2": [dict(noisy, sample_id=0)]}
    text = "\n".join(batch.summary_lines(results, [(1, 0), (2, 0)], True, tmp_path / "r.json"))
    assert "1 of 2 verified samples are faster by their lower bound" in text
    assert "timing noise: 1 of 2 samples" in text
