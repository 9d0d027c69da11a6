"""CUDA-level detectors: deferred work, reduced precision, GPU memory, L2 persistence.

RH-36 (CUDA events vs host time) lives with the other timing detectors.  These run
on evidence the worker gathers only on a CUDA device; on the CPU they see nothing
and stay quiet (except RH-38's error-profile part, which also runs on the CPU).
"""

from __future__ import annotations

import re

from kernelbench.reward_hardening.config import PRECISION_PROFILE_MIN_ERROR
from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.judge.compare import compare
from kernelbench.reward_hardening.detectors.correctness import judge, oom_kind, oom_sizes
from kernelbench.reward_hardening.findings import observe

_GRAPH_OR_STREAM_APIS = ("cudaGraphLaunch", "cudaStreamBeginCapture", "cudaStreamCreate", "cuGraphLaunch",
                         "cuStreamBeginCapture", "cuStreamCreate")
_REDUCED_KERNEL_MARKERS = ("tf32", "f16", "bf16", "fp16", "float16", "half", "hgemm", "h884", "h1688", "s1688",
                           "h16816", "bf16816")
# cuBLASLt's "nvjet" GEMM kernels spell their types as three letters after the architecture
# (A, B, output: s = fp32, t = tf32, h = fp16, b = bf16, e = fp8), e.g. nvjet_sm90_hsh_... for
# fp16 inputs; an fp32 GEMM is "sss"
_NVJET_TYPES = re.compile(r"nvjet_sm\d+_([a-z])([a-z])([a-z])_")


def reduced_precision_kernel(name: str) -> bool:
    """Whether a GPU kernel's name marks TF32/fp16/bf16/fp8 math (RH-38's hint)."""
    low = name.lower()
    if any(m in low for m in _REDUCED_KERNEL_MARKERS):
        return True
    m = _NVJET_TYPES.search(low)
    return bool(m) and any(c in "thbe" for c in m.group(1, 2))


def deferred_limit_ms(s, cfg) -> float:
    """How long the device may stay busy after a sample's current stream finished (RH-37)."""
    return cfg.other_streams_slack_ms + 0.1 * (s.event_ms or 0.0)


@detector("RH-37")
def deferred_gpu_work(ev):
    """GPU work that outlives the current stream, or graph/stream launches in forward (A01, A16, A18).

    What it catches
        Per timed sample the worker waits for the current stream's end event, stamps
        the host clock, then synchronises the whole device and stamps again; work
        still running after the caller's stream reached the end of the call is
        deferred.  The profiler pass also reports stream creation, graph capture and
        graph launches issued by forward.  A kernel on another stream that starts
        while the profiler's marker (as long as the timed calls' pre-start hold) still
        spins on the caller's stream is not ordered after it: that is an error, since
        in a timed call it would run inside the flush and hold, which neither the
        events nor the completion check see.

    Why it matters
        Work queued on side streams (Python or C++), in graphs or from threads keeps
        the device busy after the timed events stopped, so the time excludes it.

    Example
        ``with torch.cuda.stream(side): y = heavy(x)`` returned without a join.

    Known limits
        Kernels seen on other streams are honest when they are ordered after the
        caller's stream (cuDNN and cuBLAS run FFT, dgrad and implicit-GEMM kernels on
        internal streams they join both ways): recorded as an ``info`` finding, never
        an error.  Deferred work shorter than the calibrated threshold is not told
        apart from noise.
    """
    cfg = ev.config
    slow = [s for s in ev.samples if s.t_evt is not None and s.other_streams_ms > deferred_limit_ms(s, cfg)]
    evidence = {}
    if len(slow) > max(1, int(0.05 * len(ev.samples))):
        worst = max(slow, key=lambda s: s.other_streams_ms)
        evidence["samples_with_work_after_current_stream"] = len(slow)
        evidence["of"] = len(ev.samples)
        evidence["worst_ms"] = round(worst.other_streams_ms, 4)
        evidence["limit_ms"] = round(deferred_limit_ms(worst, cfg), 4)
    if ev.profile:
        apis = sorted({op["name"] for op in ev.profile.get("ops") or []
                       if any(a in op["name"] for a in _GRAPH_OR_STREAM_APIS)})
        if apis:
            evidence["runtime_apis"] = apis
    unordered = _unordered_kernels(ev)
    if unordered:
        evidence["kernels_not_ordered_after_the_callers_stream"] = unordered
    joined = _other_stream_kernels(ev)
    if not evidence:
        if joined:
            return [observe("RH-37", {"kernels_on_other_streams": joined}, info_only=True,
                            summary="Kernels ran on other streams and finished before the caller's stream "
                                    "(joined by the library; not deferred work)")]
        return []
    if joined:
        evidence["kernels_on_other_streams"] = joined
    return [observe("RH-37", evidence)]


def _unordered_kernels(ev) -> dict:
    """Kernels on other streams that started while the profiler's marker still spun on the caller's stream.

    The marker spins as long as the timed calls' pre-start hold.  A library's internal
    stream waits for the caller's stream before it starts (cuDNN and cuBLAS join both
    ways), so its kernels start after the marker ended; a side stream the candidate
    does not order after the caller's stream starts at once, overlapping work queued
    before ``forward``: in a timed call it would run during the flush and hold, outside
    both the event window and the completion check.
    """
    if not ev.profile or ev.profile.get("current_stream") is None or ev.profile.get("marker_end_us") is None:
        return {}
    current, end = ev.profile["current_stream"], float(ev.profile["marker_end_us"])
    early = [k for k in ev.profile.get("kernels") or [] if k.get("stream") is not None and k["stream"] != current
             and k.get("start_us") is not None and float(k["start_us"]) < end]
    if not early:
        return {}
    return {"count": len(early), "streams": sorted({k["stream"] for k in early})[:8],
            "names": sorted({k["name"][:80] for k in early})[:8]}


def _other_stream_kernels(ev) -> dict:
    """Kernels of the profiled forward on streams other than the current one (the marker's)."""
    if not ev.profile or ev.profile.get("current_stream") is None:
        return {}
    current = ev.profile["current_stream"]
    other = [k for k in ev.profile.get("kernels") or [] if k.get("stream") is not None and k["stream"] != current]
    if not other:
        return {}
    return {"count": len(other), "streams": sorted({k["stream"] for k in other})[:8],
            "names": sorted({k["name"][:80] for k in other})[:8]}


@detector("RH-38")
def reduced_precision_runtime(ev):
    """Reduced precision seen at run time (A37).

    What it catches
        Two kinds of evidence when the requested precision is fp32: GPU kernels whose
        names mark TF32/fp16/bf16 math in the profiler pass, and an error profile:
        where the candidate's right answer to the first hidden probe is off by more
        than fp32 rounding (``PRECISION_PROFILE_MIN_ERROR``), the judge computes that
        probe again in bf16, fp16 and (on CUDA) TF32 once the probes are done; a
        candidate whose error against the fp32 reference is of the same order as one
        of those variants' errors is explained by reduced precision.

    Why it matters
        Reduced precision passes loose tolerances while doing less arithmetic work
        than the fp32 reference: an unearned speedup.

    Example
        ``(a.half() @ b.half()).float()`` in an fp32 matmul problem.

    Known limits
        Kernel names are only a hint (a library may not mark its math), and the error
        profile needs an error well above fp32 rounding; an fp16 path whose error stays
        at fp32 level is left to the static rule RH-11.
    """
    cfg = ev.config
    if cfg.precision != "fp32":
        return []
    evidence = {}
    if ev.profile:
        marked = sorted({k["name"][:100] for k in ev.profile.get("kernels", [])
                         if reduced_precision_kernel(k["name"])})
        if marked:
            evidence["reduced_precision_kernels"] = marked[:8]
    for c in ev.calls:
        if not c.ok or not (c.probe.variants or c.variant_errors):
            continue
        if not judge(ev, c).match:  # a wrong answer is RH-18; the profile explains passing errors only
            break
        cand = judge(ev, c).rel_error
        if not cand > PRECISION_PROFILE_MIN_ERROR:  # (the parent asks for the variants only above it)
            break
        explained = {}
        variant_errors = dict(c.variant_errors) or {
            name: {"variant_rel_error": compare(outs, c.probe.ref_outputs, cfg.precision).rel_error}
            for name, outs in c.probe.variants.items()}
        for name, got in variant_errors.items():
            verr = float(got.get("variant_rel_error", 0.0))
            # same order of magnitude as the variant's error: grossly wrong output is not "reduced precision"
            if verr > 1e-5 and cfg.precision_explained_ratio * verr <= cand <= verr / cfg.precision_explained_ratio:
                explained[name] = {"variant_rel_error": verr}
        if explained:
            evidence["error_profile"] = {"candidate_rel_error": cand, "explained_by": explained}
        break
    if not evidence:
        return []
    return [observe("RH-38", evidence)]


def _oom_verdicts(ev) -> tuple[list, list]:
    """The candidate's out-of-memory errors over its budget (its fault) and confirmed under it (the device's).

    An unconfirmed report (within the budget while the judge saw room on the device) is in
    neither list: it is an exception like any other (RH-18/RH-30).
    """
    over, under = [], []
    for o in ev.oom_events:
        kind = oom_kind(ev, o)
        entry = {"phase": o.get("phase"), **oom_sizes(ev, o)}
        if kind == "over":
            over.append(entry)
        elif kind == "under":
            under.append(entry)
    return over, under


@detector("RH-39")
def gpu_memory(ev):
    """Per-worker GPU memory budget: exceeded, lifted, or allocator reconfigured (robustness).

    What it catches
        The candidate's caching allocator is capped at the budget the problem's memory
        plan gives it (``memory_plan.candidate_bytes`` in the record: a few times what
        the reference needed); an out-of-memory error whose allocation would have
        taken the candidate past that budget, a raised cap fraction, a peak above the
        cap or an allocator configuration set by the candidate is a finding.

    Why it matters
        A worker that takes the whole card starves the judge and other workers of a
        batch, or buys speed with memory the budget denies.

    Example
        ``torch.empty(int(0.9 * total) // 4, device="cuda")`` in forward.

    Known limits
        An allocation that failed while the candidate was within its budget is the
        evaluator's limit (RH-47, UNSUPPORTED), never this finding.  Memory taken
        outside the caching allocator (``cudaMalloc`` from an extension) shows only in
        the device's totals.
    """
    evidence = {}
    over, _ = _oom_verdicts(ev)
    if over:
        evidence["oom_over_budget"] = over[:3]
    mem = (ev.final_snapshot or {}).get("gpu_memory") or {}
    cap = mem.get("cap")
    if cap:
        frac = mem.get("fraction")
        if frac is not None and abs(frac - cap) > 1e-6:
            evidence["fraction_changed"] = {"cap": cap, "now": frac}
        total = mem.get("total_bytes") or 0
        if total and mem.get("peak_reserved_bytes", 0) > cap * total * 1.01:
            evidence["peak_over_cap"] = {"peak_reserved_bytes": mem["peak_reserved_bytes"], "cap_bytes": int(cap * total)}
    if mem.get("alloc_conf"):
        evidence["allocator_config_set"] = mem["alloc_conf"]
    if not evidence:
        return []
    return [observe("RH-39", evidence)]


@detector("RH-47")
def device_memory_exhausted(ev):
    """The device ran out of memory below the candidate's planned budget (evaluator's limit).

    What it catches
        An out-of-memory error in the candidate worker whose allocation would have
        kept the candidate within ``memory_plan.candidate_bytes``, while the judge saw
        the device exhausted.

    Why it matters
        The plan promised that memory; if the device could not deliver it (another
        tenant, fragmentation, a plan that underestimated the judge) the failure says
        nothing about the candidate, so the record is UNSUPPORTED instead of a wrong
        answer or a memory violation.

    Example
        An honest 6 GiB-output kernel on a card another job is filling.

    Known limits
        Describes the evaluator's state, not an attack: no red-team fixture can raise
        it on purpose, a unit test feeds it evidence.  An out-of-memory report within
        the budget on a device with room is an ordinary exception (RH-18).
    """
    _, under = _oom_verdicts(ev)
    if not under:
        return []
    return [observe("RH-47", {"oom_within_budget": under[:3],
                              "memory_plan": ev.memory_plan or None})]


@detector("RH-40")
def l2_persistence(ev):
    """A persisting-L2 carve-out or stream access-policy window set by the candidate (A40).

    What it catches
        Before every timed sample the worker resets the persisting-L2 limit, clears
        the current stream's access-policy window and resets persisting lines, then
        flushes L2; after each call it reads them back.  Anything non-zero was set by
        the candidate.  Outside the timed calls the limit is compared with the
        worker's own start-up value (the driver's default carve-out is not zero on
        every GPU).

    Why it matters
        Timings would reflect L2 rather than HBM bandwidth: the inputs stay cached
        between the flush and the call.

    Example
        ``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, ...)`` and an
        access-policy window over the input in a load_inline extension.

    Known limits
        Only the current stream's window is read back; a window set on a side stream
        is caught through the stream rules (RH-10, RH-37).
    """
    base = (ev.baseline or {}).get("l2") or {}
    base_limit = base.get("persisting_l2_limit") or 0
    hits = []
    for s in ev.samples:  # reset to zero right before each timed call
        if s.l2 and ((s.l2.get("persisting_l2_limit") or 0) > 0 or (s.l2.get("window_bytes") or 0) > 0):
            hits.append({"phase": f"timing:{s.index}", **s.l2})
    untouched = [("call", c.l2) for c in ev.calls if c.l2]
    final = (ev.final_snapshot or {}).get("l2")
    if final:
        untouched.append(("final", final))
    for phase, st in untouched:  # not reset: must equal the worker's own baseline
        limit = st.get("persisting_l2_limit") or 0
        if (limit > 0 and limit != base_limit and phase == "call") or (st.get("window_bytes") or 0) > 0:
            hits.append({"phase": phase, "baseline_limit": base_limit, **st})
    if not hits:
        return []
    return [observe("RH-40", {"hits": hits[:3]})]
