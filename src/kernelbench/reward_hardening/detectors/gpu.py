"""CUDA-level detectors: deferred work, reduced precision, GPU memory, L2 persistence.

RH-36 (CUDA events vs host time) lives with the other timing detectors.  These run
on evidence the worker gathers only on a CUDA device; on the CPU they see nothing
and stay quiet (except RH-38's error-profile part, which also runs on the CPU).
"""

from __future__ import annotations

from kernelbench.reward_hardening.detectors import detector
from kernelbench.reward_hardening.detectors._compare import compare
from kernelbench.reward_hardening.detectors.correctness import judge
from kernelbench.reward_hardening.findings import finding

_GRAPH_OR_STREAM_APIS = ("cudaGraphLaunch", "cudaStreamBeginCapture", "cudaStreamCreate", "cuGraphLaunch",
                         "cuStreamBeginCapture", "cuStreamCreate")
_REDUCED_KERNEL_MARKERS = ("tf32", "f16", "bf16", "fp16", "half", "hgemm", "h884", "h1688", "s1688", "h16816",
                           "bf16816")


def deferred_limit_ms(s, cfg) -> float:
    """How long the device may stay busy after a sample's current stream finished (RH-37)."""
    return cfg.other_streams_slack_ms + 0.1 * (s.event_ms or 0.0)


@detector("RH-37")
def deferred_gpu_work(ev):
    """GPU work that outlives the current stream, or graph/stream launches in forward (A01, A16, A18).

    Per timed sample the worker waits for the current stream's end event, stamps the
    host clock, then synchronises the whole device and stamps again.  Honest kernels
    on the current stream leave nothing for the second wait; work queued on side
    streams (Python or C++), in graphs or from threads keeps the device busy.  The
    profiler pass also reports stream creation, graph capture and graph launches
    issued by forward, and GPU kernels that ran on a stream other than the current
    one (a marker kernel launched on the current stream names it in the trace).
    """
    cfg = ev.config
    slow = [s for s in ev.samples if s.t_evt is not None and s.other_streams_ms > deferred_limit_ms(s, cfg)]
    evidence = {}
    if len(slow) > max(1, int(0.05 * len(ev.samples))):
        worst = max(slow, key=lambda s: s.other_streams_ms)
        evidence["samples_with_work_after_current_stream"] = len(slow)
        evidence["worst_ms"] = round(worst.other_streams_ms, 4)
    if ev.profile:
        apis = sorted({op["name"] for op in ev.profile.get("ops") or []
                       if any(a in op["name"] for a in _GRAPH_OR_STREAM_APIS)})
        if apis:
            evidence["runtime_apis"] = apis
        current = ev.profile.get("current_stream")
        if current is not None:
            other = [k for k in ev.profile.get("kernels") or []
                     if k.get("stream") is not None and k["stream"] != current]
            if other:
                evidence["kernels_on_other_streams"] = {
                    "count": len(other), "streams": sorted({k["stream"] for k in other})[:8],
                    "names": sorted({k["name"][:80] for k in other})[:8]}
    if not evidence:
        return []
    return [finding("RH-37", cfg.policy, evidence)]


@detector("RH-38")
def reduced_precision_runtime(ev):
    """Reduced precision seen at run time (A37).

    Two kinds of evidence when the requested precision is fp32: GPU kernels whose
    names mark TF32/fp16/bf16 math in the profiler pass, and an error profile: the
    judge also computes the first hidden probe in bf16, fp16 and (on CUDA)
    TF32; a candidate whose error against the fp32 reference is of the same order as
    one of those variants' errors (and far above fp32 rounding) is explained by
    reduced precision.
    """
    cfg = ev.config
    if cfg.precision != "fp32":
        return []
    evidence = {}
    if ev.profile:
        marked = sorted({k["name"][:100] for k in ev.profile.get("kernels", [])
                         if any(m in k["name"].lower() for m in _REDUCED_KERNEL_MARKERS)})
        if marked:
            evidence["reduced_precision_kernels"] = marked[:8]
    for c in ev.calls:
        if not c.ok or not (c.probe.variants or c.variant_errors):
            continue
        cand = judge(ev, c).rel_error
        if not cand > 1e-5:
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
    return [finding("RH-38", cfg.policy, evidence)]


@detector("RH-39")
def gpu_memory(ev):
    """Per-worker GPU memory cap: exceeded, lifted, or out-of-memory (no A-id; robustness).

    The worker caps PyTorch's allocator with ``set_per_process_memory_fraction``;
    the final snapshot reports the peak, the fraction in force and the allocator
    configuration.  A raised fraction, a peak above the cap or an OOM error is a
    clean finding instead of a crash.
    """
    evidence = {}
    for c in ev.calls:
        if not c.ok and c.error and "out of memory" in c.error.lower():
            evidence["oom"] = c.error[:300]
            break
    if ev.load_error and "out of memory" in ev.load_error.lower():
        evidence["oom"] = ev.load_error[:300]
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
    return [finding("RH-39", ev.config.policy, evidence)]


@detector("RH-40")
def l2_persistence(ev):
    """A persisting-L2 carve-out or stream access-policy window set by the candidate (A40).

    Before every timed sample the worker resets the persisting-L2 limit, clears the
    current stream's access-policy window and resets persisting lines, then flushes
    L2; after each call it reads them back.  Anything non-zero was set by the
    candidate, whose timings would then reflect L2 rather than HBM bandwidth.  Outside
    the timed calls the limit is compared with the worker's own start-up value (the
    driver's default carve-out is not zero on every GPU).
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
    return [finding("RH-40", ev.config.policy, {"hits": hits[:3]})]
