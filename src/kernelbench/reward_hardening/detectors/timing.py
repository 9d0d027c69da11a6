"""Timing integrity: the worker's numbers against what the parent observed itself."""

from __future__ import annotations

import statistics

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe


def _overheads(samples):
    return [s.rtt_ms - s.host_ms for s in samples]


def _mad(values, center):
    """Median absolute deviation, scaled to a standard deviation for normal noise."""
    return 1.4826 * statistics.median(abs(v - center) for v in values)


@detector("RH-26")
def timing_inconsistent(ev):
    """Worker timestamps must sit inside the parent's own wall-clock window (A07, A10, A15).

    What it catches
        The parent stamps CLOCK_MONOTONIC when it sends each timing request and when
        the reply arrives; the worker reports its own start/return/end stamps on the
        same clock.  Stamps outside the window are forged.  The unexplained remainder
        (round trip minus reported time) is compared with the same path's own: the
        reference's twin's samples (a worker of the candidate's kind), or, where the
        judge timed the reference along its shorter path, timed calls of the
        harness's trusted stand-in in the candidate's worker before its code was
        imported (``protocol_samples``).  Work moved out of the measured interval
        inside the worker (hooks on the harness, patched clocks) shows up there.

    Why it matters
        A patched or slowed clock, or work hidden around the measured interval, fakes
        a speedup that the worker's own numbers would otherwise show.

    Example
        Replacing the harness's captured clock with one that runs 100 times slower.

    Known limits
        The reference is summarised by its median, the candidate by its lower median
        (with an even number of samples the lower of the two middle ones: with two
        samples, the smaller), and the allowance grows with the reference's own spread
        (MAD), so neither one lucky reference sample nor one candidate sample delayed
        by the scheduler on a loaded machine sets the outcome.  Hidden work must show
        in more than half of the samples to move the candidate's lower median; hidden
        in fewer, it can lower the mean runtime by less than 2x.  The finding needs the excess to exceed the scheduler slack,
        twice the reported time (hidden work that would fake at least a 3x speedup)
        and three reference MADs, and the candidate's median to be
        ``timing_overhead_factor`` times the reference's.  The spread comes from the
        reference only, so a candidate cannot widen its own allowance by adding jitter.
    """
    if not ev.samples:
        return []
    bad_order = [s.index for s in ev.samples
                 if not (s.send_ns <= s.t0 <= s.t_ret <= s.t1 <= s.recv_ns)
                 or (s.t_evt is not None and not s.t_ret <= s.t_evt <= s.t1)]
    evidence = {}
    if bad_order:
        evidence["stamps_outside_parent_window"] = bad_order[:10]
    cfg = ev.config
    baseline = ev.protocol_samples or ev.reference_samples
    if baseline:
        cand_ov = _overheads(ev.samples)
        ref_ov = _overheads(baseline)
        cand = statistics.median_low(cand_ov)
        ref = max(statistics.median(ref_ov), 0.0)
        ref_mad = _mad(ref_ov, statistics.median(ref_ov))
        host = statistics.median(s.host_ms for s in ev.samples)
        excess_limit = max(cfg.timing_overhead_slack_ms, 2.0 * host, 3.0 * ref_mad)
        if cand - ref > excess_limit and cand > cfg.timing_overhead_factor * ref:
            evidence["unexplained_overhead_ms"] = {"candidate_median": round(cand, 4),
                                                   "reference_median": round(ref, 4),
                                                   "reference_mad": round(ref_mad, 4),
                                                   "candidate_floor": round(min(cand_ov), 4),
                                                   "reference_floor": round(min(ref_ov), 4),
                                                   "reported_median": round(host, 4),
                                                   "excess_limit": round(excess_limit, 4),
                                                   "compared_with": "protocol_probe" if ev.protocol_samples
                                                   else ev.reference_timer}
    if not evidence:
        return []
    return [observe("RH-26", evidence)]


def device_window_ms(s, cfg) -> float:
    """GPU time inside a sample's host interval: forward's events plus the pre-start flush.

    The flush part comes from the (untrusted) worker, so it is clamped to
    ``[0, flush_hold_max_ms]``; without it the forward's event time alone is used.
    """
    hold = 0.0 if s.window_ms is None else min(max(s.window_ms - s.event_ms, 0.0), cfg.flush_hold_max_ms)
    return s.event_ms + hold


def async_limit_ms(s, cfg) -> float:
    """The largest host time RH-36 accepts for a sample with CUDA-event times."""
    return cfg.event_host_ratio * device_window_ms(s, cfg) + cfg.event_host_slack_ms


def disagreeing_samples(samples, cfg) -> list:
    """The samples whose CUDA-event time and host time disagree (host above ``async_limit_ms``).

    On CUDA a sample without an event time disagrees too: the worker always measures
    one there, so its absence is the worker's claim, and the host time it would leave
    (worker-reported as well) cannot be checked against anything.
    """
    cuda = str(cfg.device).startswith("cuda")
    return [s for s in samples if (s.event_ms is None and cuda)
            or (s.event_ms is not None and s.host_ms > async_limit_ms(s, cfg))]


def rejected_async_samples(ev):
    """Indices of the candidate's samples whose CUDA-event time and host time disagree."""
    return [s.index for s in disagreeing_samples(ev.samples, ev.config)]


def tolerated_disagreements(n: int, cfg) -> int:
    """How many of ``n`` candidate samples may disagree and be charged instead (RH-36 fires above it)."""
    return max(1, int(cfg.event_host_tolerated_fraction * n))


def charged_samples(ev) -> list:
    """The candidate's samples that ``sample_times`` charges at its slowest agreeing time (see there)."""
    bad = disagreeing_samples(ev.samples, ev.config)
    return [] if _escaped(len(bad), len(ev.samples), ev.config) else bad


def _escaped(rejected: int, n: int, cfg) -> bool:
    """RH-36's finding: at least two disagreeing samples and more than the tolerated share."""
    return rejected >= 2 and rejected > tolerated_disagreements(n, cfg)


def _host_parts(s) -> dict:
    """Where a sample's host interval went (the worker's stamps): launching, waiting for the
    current stream's end event, waiting for the other streams; with the GPU window of the
    events, this tells a host-side stall (long launch or wait, short window) from work that
    escaped the events."""
    if s.t_evt is None:
        return {}
    return {"launch_ms": round((s.t_ret - s.t0) / 1e6, 4), "end_event_wait_ms": round((s.t_evt - s.t_ret) / 1e6, 4),
            "other_streams_ms": round(s.other_streams_ms, 4),
            "window_ms": None if s.window_ms is None else round(s.window_ms, 4)}


@detector("RH-36")
def async_escape(ev):
    """CUDA-event time vs device-synchronised host time of each sample (A01, A10, A15, A16).

    What it catches
        Events on the current stream bracket only the work queued on that stream; work
        on a side stream, a graph or a thread finishes later and is only inside the
        host interval (which ends after ``cudaDeviceSynchronize``).  The host interval
        also holds the L2 flush queued just before the start event, so the comparison
        adds the flush's event time (clamped).  A sample is rejected when
        ``host > ratio * (event + flush) + slack``, or when it has no event time at
        all (the worker always measures one on CUDA).

    Why it matters
        Escaped work is not inside the event time, so the measured kernel looks faster
        than it is.

    Example
        A C++ extension launching on a ``cudaStreamNonBlocking`` stream of its own
        without synchronising.

    Known limits
        Thresholds are calibrated on honest kernels (see docs/validation/H200.md).  Host
        stalls are not: on some machines an honest kernel's host sees the end event
        milliseconds late in up to a fifth of its samples (run 43, an H100: L1/6, a
        1.3 ms matmul, 2-10 of 50 samples with 1-5 ms more host time and a normal GPU
        window).  So a few disagreeing samples are charged at the candidate's slowest
        agreeing time instead (``sample_times``: at most ``event_host_tolerated_fraction``
        of them, 25 %), and the finding needs more than that (and at least two):
        escaped work gains nothing in a charged sample, so to fake a speedup it has to
        escape in more than a quarter of them.  At CPU-sized problems escaped work can
        be shorter than the slack.  CUDA only.
    """
    rejected = rejected_async_samples(ev)
    if not _escaped(len(rejected), len(ev.samples), ev.config):
        return []  # sporadic: sample_times charges those samples at the slowest agreeing time
    worst = max((s for s in ev.samples if s.index in rejected), key=lambda s: s.host_ms - (s.event_ms or 0))
    return [observe("RH-36", {
        "rejected_samples": len(rejected), "of": len(ev.samples),
        "tolerated": tolerated_disagreements(len(ev.samples), ev.config),
        "worst": {"event_ms": worst.event_ms, "host_ms": round(worst.host_ms, 4), **_host_parts(worst)},
        "ratio": ev.config.event_host_ratio, "slack_ms": ev.config.event_host_slack_ms})]


def measured_times(samples) -> list[float]:
    """Per-sample times as measured: CUDA events on GPU, host clock on CPU (the reference's side)."""
    return [s.event_ms if s.event_ms is not None else s.host_ms for s in samples]


def sample_times(ev) -> list[float]:
    """The candidate's per-sample times the verdict may use: ``measured_times``, charged.

    A sample whose host interval is far longer than its events say (RH-36's test) is
    not evidence of a fast call (the host saw the end event late, or the events missed
    work).  While such samples are at most ``tolerated_disagreements`` of them, each
    counts as the candidate's slowest agreeing sample or its own time, whichever is
    larger (with no agreeing sample to go by, its host time); beyond that every sample
    counts as measured and RH-36 withholds the verdict.  Work hidden in a few samples,
    or a candidate stalling its own host after its slowest calls to have them set
    aside, gains nothing: those samples are charged, not dropped.  An honest stall
    costs the candidate at most the gap between its slowest and its typical sample, in
    those samples.  The reference's samples count as measured (``measured_times``): its
    code is trusted, a host stall leaves its event times alone, and charging them would
    let a candidate that delays the reference's timer raise the reference's runtime.
    """
    times = measured_times(ev.samples)
    charged = {id(s) for s in charged_samples(ev)}
    if charged:
        agreeing = [t for s, t in zip(ev.samples, times) if id(s) not in charged]
        slowest = max(agreeing) if agreeing else None
        # never below the sample's own time: a candidate that makes its slowest calls
        # disagree (stalling its host after them) must not have them clipped; with no
        # agreeing sample to go by (a single timed call), the host time
        times = [max(t, s.host_ms if slowest is None else slowest) if id(s) in charged else t
                 for s, t in zip(ev.samples, times)]
    return times


@detector("RH-41")
def implausible_speedup(ev):
    """Speedup over the live reference beyond the plausibility bound (A41).

    What it catches
        The fastest candidate sample against the fastest reference sample (noise only
        ever slows a sample down): a ratio above ``max_plausible_speedup`` (default
        50x) is reported as a warning.

    Why it matters
        An honest kernel rarely beats eager PyTorch by that much on KernelBench
        problems; such claims are audited, not trusted.

    Example
        A candidate that skips most of the work yet passes every check, or a reference
        that is unusually slow on this device.

    Known limits
        Kept deliberately loose: a real speedup above the bound is flagged too (a
        warning, SUSPICIOUS, for a person to read), and a cheat below it is left to the
        other detectors.
    """
    if not ev.samples or not ev.reference_samples:
        return []
    # fastest samples on both sides: noise only ever slows a sample down
    cand = min(sample_times(ev))
    ref = min(measured_times(ev.reference_samples))
    if cand <= 0 or ref / cand <= ev.config.max_plausible_speedup:
        return []
    return [observe("RH-41", {"speedup": round(ref / cand, 2),
                              "bound": ev.config.max_plausible_speedup})]
