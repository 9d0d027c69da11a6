"""Timing noise: when the speedup's bound cannot mean much (info only)."""

from __future__ import annotations

import statistics

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.detectors.timing import measured_times, sample_times
from kernelbench.reward_hardening.findings import observe
from kernelbench.reward_hardening.parent.speedup import side_spread


@detector("RH-54")
def timing_noise(ev):
    """Either side's spread, or the machine's load, is too large for the bound (info).

    What it catches
        The interleaved samples of both sides (see
        :mod:`kernelbench.reward_hardening.parent.speedup`) are summarised by their
        coefficient of variation; a side above ``noise_cv_limit`` fires.  The parent
        also reads the number of other runnable threads on the machine at every
        reference block; a median at or above ``noise_load_fraction`` of the CPUs the
        evaluator may use fires too.

    Why it matters
        A busy machine slows both sides by different, varying amounts; the finding
        says why a number moved between runs and lets a batch count the noisy samples.

    Example
        Two other jobs keeping both CPUs of a 2-core machine busy during the timing.

    Known limits
        Describes the machine, not the candidate: it changes no verdict (the bound
        already widens with the spread) and the red team leaves it out of its exact
        comparisons.  A candidate could add jitter to its own side, which only widens
        its own bound.
    """
    cfg = ev.config
    refs = list(ev.interleaved_reference_samples or [])
    if not ev.samples or not refs:
        return []
    evidence = {}
    for side, times in (("candidate", sample_times(ev)), ("reference", measured_times(refs))):
        spread = side_spread(times)
        if spread.get("n", 0) > 1 and spread["cv"] > cfg.noise_cv_limit:
            evidence[f"{side}_cv"] = spread["cv"]
    if evidence:
        evidence["cv_limit"] = cfg.noise_cv_limit
    if ev.host_load:
        load = statistics.median(ev.host_load)
        cpus = max(1, ev.usable_cpus or 1)
        if load >= max(1.0, cfg.noise_load_fraction * cpus):
            evidence["other_runnable_median"] = load
            evidence["usable_cpus"] = cpus
            evidence["load_fraction"] = cfg.noise_load_fraction
    if not evidence:
        return []
    return [observe("RH-54", evidence)]
