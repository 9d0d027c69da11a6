"""RH-26 on a loaded machine: robust statistics, not floors.

The false positive this guards against: an honest candidate (no work outside
``forward``) was rejected because the reference's overhead floor came from one lucky
sample while every other sample, on both sides, paid the same scheduler delay.
"""

from kernelbench.reward_hardening import detectors
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample

MS = 1_000_000
# overhead (round trip minus reported time) seen on a loaded 2-core machine, in ms
LOADED = [7.6, 8.4, 9.1, 7.9, 8.8, 10.2, 8.1, 7.7, 9.5, 8.3, 8.9, 7.8]


def _sample(i, host_ms, overhead_ms):
    t0 = 50 * MS * (i + 1)
    t1 = t0 + int(host_ms * MS)
    half = int(overhead_ms / 2 * MS)
    return TimingSample(i, t0 - half, t1 + half, t0, t1, t1, None)


def _ev(cand_overheads, ref_overheads, host_ms=0.5):
    ev = Evidence(config=HardeningConfig(mode="audit", policy="source_strict", device="cpu"))
    ev.samples = [_sample(i, host_ms, o) for i, o in enumerate(cand_overheads)]
    ev.reference_samples = [_sample(i, host_ms, o) for i, o in enumerate(ref_overheads)]
    return ev


def _rh26(ev):
    return [f.code for f in detectors.REGISTRY["RH-26"].func(ev)]


def test_one_lucky_reference_sample_does_not_reject_an_honest_candidate():
    ref = list(LOADED)
    ref[4] = 0.15  # the one sample the scheduler let through untouched
    cand = [o + 0.3 for o in reversed(LOADED)]  # same load, no lucky sample
    assert _rh26(_ev(cand, ref)) == []


def test_a_noisy_reference_widens_the_allowance():
    # noisy reference: a wide spread widens the allowance
    ref = [0.3, 6.0, 12.0, 2.5, 9.0, 0.4, 11.0, 4.0, 8.0, 1.0]
    cand = [7.0, 9.0, 12.5, 6.5, 10.0, 8.0, 11.5, 7.5, 9.5, 8.5]
    assert _rh26(_ev(cand, ref)) == []


def test_hidden_work_in_every_sample_still_fires_against_a_lucky_reference():
    ref = list(LOADED)
    ref[4] = 0.15
    cand = [o + 40.0 for o in LOADED]  # 40 ms of work moved out of every measured interval
    assert _rh26(_ev(cand, ref)) == ["RH-26"]


def test_hidden_work_in_most_samples_fires():
    ref = [0.2] * 12
    cand = [0.2 + (30.0 if i % 3 else 0.0) for i in range(12)]  # 8 of 12 samples hide 30 ms
    fs = detectors.REGISTRY["RH-26"].func(_ev(cand, ref))
    assert [f.code for f in fs] == ["RH-26"]
    ev = fs[0].evidence["unexplained_overhead_ms"]
    assert ev["candidate_median"] > 25 and ev["reference_median"] < 1


def test_candidate_jitter_does_not_widen_its_own_allowance():
    ref = [0.2, 0.25, 0.3, 0.2, 0.22, 0.28, 0.24, 0.21]
    cand = [20.0, 60.0, 25.0, 55.0, 30.0, 50.0, 35.0, 45.0]  # hidden work plus self-made spread
    assert _rh26(_ev(cand, ref)) == ["RH-26"]


def test_one_delayed_sample_of_two_does_not_reject_an_honest_candidate():
    # a short timing run (num_perf_trials=2) on a loaded machine: one of the two candidate
    # samples waited 10 ms for a CPU; the other looks like the reference's (measured in a
    # batch on the 2-core CI machine)
    ref = [0.45, 0.47]
    assert _rh26(_ev([2.16, 10.46], ref)) == []
    assert _rh26(_ev([12.0, 10.46], ref)) == ["RH-26"]  # both samples hide the work: still caught


def test_the_candidate_paths_own_overhead_is_the_baseline_where_the_judge_timed_the_reference():
    """The judge's path is shorter than the candidate's: an honest candidate's 5.5 ms against the judge's 0.45 ms
    (seen once on a loaded two-core host) is explained by the trusted stand-in's calls on the candidate's path."""
    judge = [0.45, 0.40, 0.50, 0.42, 0.47, 0.44, 0.46, 0.41, 0.48, 0.43]
    cand = [5.5, 5.2, 6.1, 5.8, 5.6, 5.9, 5.4, 6.3, 5.7, 5.5]
    ev = _ev(cand, judge, host_ms=0.3)
    assert _rh26(ev) == ["RH-26"]  # against the judge's path alone: a false verdict
    ev.protocol_samples = [_sample(i, 0.01, o) for i, o in enumerate([4.9, 5.3, 5.1, 6.0, 5.2, 5.5, 4.8])]
    assert _rh26(ev) == []
    # work hidden outside the measured interval still shows against the path's own overhead
    ev.samples = [_sample(i, 0.3, o + 30.0) for i, o in enumerate(cand)]
    fs = detectors.REGISTRY["RH-26"].func(ev)
    assert [f.code for f in fs] == ["RH-26"]
    assert fs[0].evidence["unexplained_overhead_ms"]["compared_with"] == "protocol_probe"
