"""Schema 1.1 records: the upstream fields plus the ``reward_hardening`` block."""

from __future__ import annotations

import math
import statistics
from typing import Any

from kernelbench.reward_hardening import policy
from kernelbench.reward_hardening.findings import Capability, Finding, Observation, observe
from kernelbench.reward_hardening.record_schema import SCHEMA_PATH, load_schema, problems

__all__ = ["SCHEMA_PATH", "SCHEMA_VERSION", "build_record", "evaluator_error_record", "failed_record", "load_failed_record",
           "load_schema", "unsupported_record"]

SCHEMA_VERSION = "1.1"

NOT_A_SANDBOX = ("Worker isolation is process-level, not an OS sandbox: the candidate runs as the evaluator's "
                 "user and can read files that user can read; hidden data is kept out of its process, "
                 "environment and workspace instead.")


def _block(cfg: Any) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": cfg.mode,
        "policy": cfg.policy,
        "integrity_status": "FAIL",
        "verified": False,
        "verified_correctness": False,
        "verified_runtime": None,
        "verified_runtime_stats": {},
        "observed_runtime_stats": {},
        "verified_reference_runtime": None,
        "verified_reference_runtime_stats": {},
        "observed_reference_runtime_stats": {},
        "findings": [],
        "capabilities": {},
        "limitations": [],
    }


def unsupported_record(cfg: Any, reason: str) -> dict:
    """The fail-closed record for a missing CUDA runtime (the spec's example, field for field)."""
    f = policy.judge(observe("RH-14"), cfg.policy)
    block = _block(cfg)
    block.update({
        "integrity_status": "UNSUPPORTED",
        "findings": [f.as_dict()],
        "capabilities": {"cuda_runtime": Capability(
            "UNSUPPORTED", policy.requires("cuda_runtime", cfg.policy, cfg.mode),
            "A configured CUDA device is required for local GPU verification").as_dict()},
        "limitations": ["CUDA execution and device-level detectors were not available; no trusted runtime was awarded."],
    })
    return {"compiled": False, "correctness": False, "metadata": {"reward_hardening_unsupported": reason},
            "runtime": -1.0, "runtime_stats": {}, "ref_runtime": -1.0, "ref_runtime_stats": {},
            "reward_hardening": block}


def failed_record(cfg: Any, observation: Observation, limitation: str, metadata: dict) -> dict:
    """A FAIL record with one finding and nothing trusted: no run evidence reached a verdict."""
    block = _block(cfg)
    block.update({"integrity_status": "FAIL", "findings": [policy.judge(observation, cfg.policy).as_dict()],
                  "limitations": [limitation]})
    return {"compiled": False, "correctness": False, "metadata": metadata,
            "runtime": -1.0, "runtime_stats": {}, "ref_runtime": -1.0, "ref_runtime_stats": {},
            "reward_hardening": block}


def evaluator_error_record(cfg: Any, error: str) -> dict:
    metadata = {"reward_hardening_error": error[:2000]}
    return failed_record(cfg, observe("RH-32", {"error": error[:2000]}),
                         "The evaluator failed; nothing about this candidate is trusted.", metadata)


def load_failed_record(cfg: Any, error: str, device: str) -> dict:
    """The record of a candidate whose ahead-of-time build failed (never evaluated)."""
    from kernelbench.reward_hardening.parent.evidence import Evidence

    ev = Evidence(config=cfg)
    ev.load_error = error
    return build_record(cfg, ev, [observe("RH-42", {"error": error[:2000], "stage": "prebuild"})], device,
                        rejected=True)


def _stats(times: list[float], device: str) -> dict:
    from kernelbench.timing import get_timing_stats

    if not times:
        return {}
    stats = get_timing_stats(times)
    stats["device"] = device
    stats["median"] = float(f"{statistics.median(times):.3g}")
    return stats


def _capabilities(cfg: Any, ev: Any, device: str, rejected: bool) -> dict[str, Capability]:
    """What this evaluation could rely on; whether a capability is required is the policy's call."""
    caps: dict[str, Capability] = {}

    def need(name: str) -> bool:
        return policy.requires(name, cfg.policy, cfg.mode)

    if device.startswith("cuda"):
        caps["cuda_runtime"] = Capability("AVAILABLE", need("cuda_runtime"), f"CUDA device {device}")
    else:
        caps["cuda_runtime"] = Capability("SKIPPED", False, "device=cpu: CUDA-level detectors were not run")
    caps["static_precheck"] = Capability("AVAILABLE", need("static_precheck"), "AST precheck of the candidate source")
    from kernelbench.reward_hardening import containment  # OS containment, as measured for this candidate

    cont = containment.record_capabilities(ev.containment or {}, rejected)

    def contained(name: str, mechanism: str) -> Capability:
        status, detail = cont[mechanism]
        return Capability(status, status != "SKIPPED" and policy.requires(name, cfg.policy, cfg.mode), detail)

    caps["containment_process"] = contained("containment_process", "process_containment")
    caps["containment_seccomp"] = contained("containment_seccomp", "seccomp")
    caps["containment_landlock"] = contained("containment_landlock", "landlock")
    caps["containment_capability_drop"] = contained("containment_capability_drop", "capability_drop")
    caps["containment_trusted_not_dumpable"] = contained("containment_trusted_not_dumpable", "trusted_not_dumpable")
    caps["containment_ipc_namespace"] = contained("containment_ipc_namespace", "ipc_namespace")
    caps["containment_memory_accounting"] = contained("containment_memory_accounting", "memory_accounting")
    caps["containment_object_sweep"] = contained("containment_object_sweep", "object_sweep")
    if rejected:
        return caps
    caps["process_isolation"] = Capability(
        "AVAILABLE" if ev.reference_ok else "ERROR", need("process_isolation"),
        "reference and candidate in separate disposable workers with scrubbed environments")
    hidden = any(c.probe.kind == "hidden" for c in ev.calls) or not ev.loaded
    caps["hidden_inputs"] = Capability("AVAILABLE" if (ev.reference_ok and hidden) else "ERROR", need("hidden_inputs"),
                                       "inputs from hidden seeds generated outside the candidate process")
    base = (ev.baseline or {}).get("concurrency") or {}
    caps["thread_introspection"] = Capability(
        "AVAILABLE" if base.get("os_threads", -1) > 0 else "UNSUPPORTED", need("thread_introspection"),
        "OS-level thread and child-process counts from /proc")
    profiler = need("backend_profiler")
    if not cfg.profile_backend:
        caps["backend_profiler"] = Capability("SKIPPED", profiler, "profiler pass disabled by configuration")
    elif ev.profile is not None and device.startswith("cuda") and not ev.profile.get("marker_seen"):
        # the marker kernel launched on the current stream is missing from the trace: the
        # device trace (CUPTI) recorded nothing, so kernel provenance is unknown
        caps["backend_profiler"] = Capability("UNSUPPORTED", profiler,
                                              "profiler ran but its device trace did not record the marker kernel")
    elif ev.profile is not None:
        detail = "torch.profiler (CUPTI) kernel trace" if device.startswith("cuda") else "torch.profiler CPU operators"
        caps["backend_profiler"] = Capability("AVAILABLE", profiler, detail)
    elif ev.loaded and ev.completed and all(c.ok for c in ev.calls):
        caps["backend_profiler"] = Capability("UNSUPPORTED", profiler, f"profiler failed: {ev.profile_error}")
    else:
        caps["backend_profiler"] = Capability("SKIPPED", False, "candidate did not reach the profiler pass")
    path, why = ev.read_path, ev.read_path_detail
    reader = need("trusted_output_read")
    if path == "trusted":
        caps["trusted_output_read"] = Capability(
            "AVAILABLE", reader, f"{why}; {len(ev.reads)} read(s), {len(ev.read_failures)} failed")
    elif not ev.loaded:
        caps["trusted_output_read"] = Capability("SKIPPED", reader, "the candidate did not load")
    else:
        status = "SKIPPED" if "switched off" in why else "UNSUPPORTED"
        caps["trusted_output_read"] = Capability(status, reader, f"in-process copy by the candidate's harness: {why}")
    if device.startswith("cuda"):
        have_events = any(s.event_ms is not None for s in ev.samples)
        caps["async_timing_check"] = Capability("AVAILABLE" if have_events or not ev.samples else "ERROR",
                                                need("async_timing_check"),
                                                "CUDA events compared with device-synchronised host time")
    return caps


def request_totals(requests: list[dict]) -> dict[str, dict]:
    """Where the evaluation's wall time went, by request: ``{"role:cmd": {"n", "ms"}}``, largest first.

    Every request the parent made to the judge or the candidate worker is timed from its
    send to its reply (the worker's work, the transfer, and the parent's wait).  The
    judge reports the parts of some commands it timed itself (``split_ms``): those add
    ``reference:<cmd>.<part>`` entries, counted once per request that had the part.
    """
    out: dict[str, dict] = {}

    def add(key: str, ms: Any) -> None:
        e = out.setdefault(key, {"n": 0, "ms": 0.0})
        e["n"] += 1
        e["ms"] += float(ms)

    for r in requests:
        if r.get("ms") is None:
            continue
        key = f"{r.get('role') or '?'}:{r.get('cmd')}"
        add(key, r["ms"])
        for part, ms in (r.get("split") or {}).items():
            if isinstance(ms, (int, float)) and math.isfinite(ms):
                add(f"{key}.{str(part)[:32]}", ms)
    return {k: {"n": v["n"], "ms": round(v["ms"], 1)} for k, v in sorted(out.items(), key=lambda kv: -kv[1]["ms"])}


def build_record(cfg: Any, ev: Any, observations: list[Observation | Finding], device: str,
                 rejected: bool = False) -> dict:
    """The record of one evaluation: the policy judges ``observations`` here, just before the verdict."""
    from kernelbench.reward_hardening.parent import verdict
    from kernelbench.reward_hardening.detectors.timing import charged_samples, measured_times, sample_times

    caps = _capabilities(cfg, ev, device, rejected)
    missing = {n: c.detail for n, c in caps.items() if c.required and c.status != "AVAILABLE"}
    if missing:
        observations = list(observations) + [observe("RH-34", {"capabilities": missing})]
    findings = policy.apply(_dedupe(observations), cfg.policy)
    status = verdict.decide(findings, caps)
    block = _block(cfg)
    from kernelbench.reward_hardening import containment

    limitations = [containment.limitation(ev.containment or {}) if not rejected else NOT_A_SANDBOX]
    if not device.startswith("cuda"):
        limitations.append("device=cpu: stream, CUDA-event, GPU-profiler and GPU-memory detectors were not run.")
    if rejected:
        limitations.append("Rejected by the static precheck before import; no runtime evidence was gathered.")
    hidden_calls = [c for c in ev.calls if c.probe.kind == "hidden"]
    from kernelbench.reward_hardening.detectors.correctness import right

    observed_correct = bool(hidden_calls) and all(right(ev, c) for c in hidden_calls)
    cand_times = sample_times(ev) if ev.samples else []
    ref_times = measured_times(ev.reference_samples) if ev.reference_samples else []
    observed = _stats(cand_times, device)
    observed_ref = _stats(ref_times, device)
    verified = status == "PASS" and observed_correct and bool(cand_times)
    if status == "PASS" and not verified:  # PASS needs the evidence to exist: fail closed
        findings.append(policy.judge(observe("RH-32", {"error": "no timing or correctness evidence for a PASS"}),
                                     cfg.policy))
        status = "FAIL"
    block.update({
        "integrity_status": status,
        "verified": verified,
        "verified_correctness": verified,
        "verified_runtime": observed["mean"] if verified else None,
        "verified_runtime_stats": observed if verified else {},
        "observed_runtime_stats": observed,
        "verified_reference_runtime": observed_ref.get("mean") if (verified and observed_ref) else None,
        "verified_reference_runtime_stats": observed_ref if verified else {},
        "observed_reference_runtime_stats": observed_ref,
        "findings": [f.as_dict() for f in findings],
        "capabilities": {k: v.as_dict() for k, v in caps.items()},
        "limitations": limitations,
    })
    bound = speedup_block(ev, verified)
    if bound is not None:
        block["speedup"] = bound
    if ev.reference_samples and not verified and ev.reference_ok:
        # the reference was measured in its own worker; its time is trustworthy on its own
        block["verified_reference_runtime"] = observed_ref.get("mean")
        block["verified_reference_runtime_stats"] = observed_ref
    metadata: dict[str, Any] = {"device": device, "reward_hardening_phases": ev.phases}
    metadata["containment"] = containment.record_detail(ev.containment or {})
    try:
        from kernelbench.timing import device_name

        metadata["hardware"] = device_name(device)
    except Exception:
        metadata["hardware"] = device
    if ev.precheck is not None:
        facts = ev.precheck.facts
        metadata["declared_kernels"] = list(getattr(facts, "declared_kernels", []) or [])
    if ev.load_error:
        metadata["compilation_error"] = ev.load_error[:2000]
    metadata.update(_upstream_correctness_metadata(findings))
    if ev.memory_plan:
        metadata["memory_plan"] = ev.memory_plan
    if ev.load_snapshot.get("load_ms") is not None:
        metadata["load_ms"] = ev.load_snapshot["load_ms"]
    if ev.samples:
        metadata["timing_samples"] = {
            "host_ms": [round(s.host_ms, 5) for s in ev.samples],
            "event_ms": [None if s.event_ms is None else round(s.event_ms, 5) for s in ev.samples],
            "other_streams_ms": [round(s.other_streams_ms, 5) for s in ev.samples],
            "rtt_ms": [round(s.rtt_ms, 4) for s in ev.samples],
        }
        if any(s.window_ms is not None for s in ev.samples):
            metadata["timing_samples"]["window_ms"] = [None if s.window_ms is None else round(s.window_ms, 5)
                                                       for s in ev.samples]
    if ev.samples and any(s.block is not None for s in ev.samples):
        metadata["timing_samples"]["block"] = [s.block for s in ev.samples]
    charged = charged_samples(ev) if ev.samples else []
    if charged:  # counted at the slowest agreeing time (RH-36's test failed)
        metadata["timing_samples"]["charged"] = [s.index for s in charged]
    if ev.interleaved_reference_samples:
        metadata["interleaved_reference_samples"] = {
            "host_ms": [round(s.host_ms, 5) for s in ev.interleaved_reference_samples],
            "event_ms": [None if s.event_ms is None else round(s.event_ms, 5)
                         for s in ev.interleaved_reference_samples],
            "block": [s.block for s in ev.interleaved_reference_samples],
        }
        if any(s.window_ms is not None for s in ev.interleaved_reference_samples):
            metadata["interleaved_reference_samples"]["window_ms"] = [
                None if s.window_ms is None else round(s.window_ms, 5) for s in ev.interleaved_reference_samples]
    if ev.protocol_samples:  # RH-26's comparison where the judge timed the reference
        metadata["protocol_overhead_ms"] = [round(s.rtt_ms - s.host_ms, 4) for s in ev.protocol_samples]
    metadata["reference_timing"] = ev.reference_timing
    if metadata["reference_timing"] == "interleaved":
        metadata["reference_timer"] = ev.reference_timer
        if ev.reference_timer_note:
            metadata["reference_timer_note"] = str(ev.reference_timer_note)[:300]
    if ev.reference_samples and metadata["reference_timing"] == "session":  # interleaved: listed above
        metadata["reference_timing_samples"] = {
            "host_ms": [round(s.host_ms, 5) for s in ev.reference_samples],
            "event_ms": [None if s.event_ms is None else round(s.event_ms, 5) for s in ev.reference_samples],
            "rtt_ms": [round(s.rtt_ms, 4) for s in ev.reference_samples],
        }
    if ev.skipped_probes:
        metadata["skipped_probes"] = ev.skipped_probes[:10]
    if ev.loaded:
        reads = ev.reads
        staged = [r for r in ev.requests if r.get("bytes")]
        rate = ev.copy_bytes_per_s
        metadata["output_reads"] = {
            "path": ev.read_path, "detail": ev.read_path_detail,
            "trusted_reads": len(reads), "bytes": sum(r["bytes"] for r in reads),
            "read_ms": round(sum(r["ms"] for r in reads), 3),
            "freeze_ms": round(sum(r["freeze_ms"] for r in reads), 3),
            "map_ms": round(sum(r.get("map_ms", 0.0) for r in reads), 3),
            "failures": len(ev.read_failures),
            "in_process_staging_requests": [{k: r.get(k) for k in ("phase", "cmd", "ms", "work_ms", "bytes")}
                                            for r in staged[:20]],
            "judge_copy_gib_per_s": None if not rate else round(rate / (1 << 30), 3),
            "requests_timed": len(ev.requests),
        }
        metadata["request_ms"] = request_totals(ev.requests + ev.judge_requests)
    if ev.candidate_peak_rss_bytes:
        metadata["host_memory"] = {"candidate_peak_private_bytes": int(ev.candidate_peak_rss_bytes),
                                   "candidate_limit_bytes": ev.candidate_rss_limit_bytes}
    if (ev.final_snapshot or {}).get("gpu_memory"):
        metadata["gpu_memory"] = ev.final_snapshot["gpu_memory"]
    if ev.profile is not None:
        kernels = ev.profile.get("kernels") or []
        metadata["profiler"] = {
            "marker_seen": ev.profile.get("marker_seen"),
            "notes": list(ev.profile.get("profile_errors") or [])[:4],
            "gpu_kernels": len(kernels),
            "top_kernels": [k["name"][:100] for k in sorted(kernels, key=lambda k: -(k.get("device_us") or 0))[:5]],
        }
    if ev.calls:
        metadata["correctness_trials"] = f"({sum(1 for c in hidden_calls if right(ev, c))} / {len(hidden_calls)})"
        judged: dict[str, int] = {}
        for c in ev.calls:  # the probes whose outputs the judge compared with the reference
            if c.comparison is not None:
                judged[c.probe.kind] = judged.get(c.probe.kind, 0) + 1
        metadata["correctness_probes"] = {"judged": judged, "calls": len(ev.calls),
                                          "skipped": [s.get("probe") for s in ev.skipped_probes][:10]}
    record = {
        "compiled": bool(ev.loaded) and not rejected,
        "correctness": observed_correct,
        "metadata": metadata,
        "runtime": observed.get("mean", -1.0) if observed_correct and observed else -1.0,
        "runtime_stats": observed if observed_correct else {},
        "ref_runtime": observed_ref.get("mean", -1.0) if observed_ref else -1.0,
        "ref_runtime_stats": observed_ref,
        "reward_hardening": block,
    }
    broken = problems(record)
    if broken:  # fail closed: a record that breaks its schema is never handed out
        return evaluator_error_record(cfg, "record does not match verified_record.schema.json: "
                                      + "; ".join(broken[:5]))
    return record


def speedup_block(ev: Any, verified: bool) -> dict | None:
    """The ``speedup`` entry: point estimate, bounds and both sides' spread (interleaved samples only).

    ``None`` when there are no interleaved reference samples or a candidate sample
    has no block (timing was cut short).
    """
    from kernelbench.reward_hardening.parent import speedup
    from kernelbench.reward_hardening.detectors.timing import charged_samples, measured_times, sample_times

    refs = list(ev.interleaved_reference_samples)
    cands = list(ev.samples or [])
    if not refs or not cands or any(s.block is None for s in cands + refs):
        return None
    cfg = ev.config
    ref_t, cand_t = measured_times(refs), sample_times(ev)  # the candidate's charged (RH-36's test)
    est = speedup.speedup_estimate(ref_t, [s.block for s in refs], cand_t, [s.block for s in cands],
                                   level=cfg.speedup_confidence, resamples=cfg.speedup_resamples,
                                   floor=cfg.speedup_systematic_floor)
    if est is None:
        return None
    est["verified"] = bool(verified)
    est["reference"] = speedup.side_spread(ref_t)
    est["candidate"] = speedup.side_spread(cand_t)
    est["reference_hold"] = dict(ev.reference_hold or {})
    charged = len(charged_samples(ev))
    if charged:
        est["charged_samples"] = charged
    load = list(ev.host_load)
    if load:
        est["host_load"] = {"other_runnable_median": statistics.median(load), "usable_cpus": ev.usable_cpus}
    return est


def _upstream_correctness_metadata(findings: list[Finding]) -> dict:
    """Upstream's ``correctness_issue`` / ``runtime_error`` keys, filled from RH-18's evidence.

    Upstream stores the exception's message; a message of a call on hidden inputs could
    carry the inputs out, so the type and the candidate's source line stand in for it.
    """
    from kernelbench.reward_hardening.findings import describe

    f = next((f for f in findings if f.code == "RH-18"), None)
    failures = (f.evidence.get("failures") if f is not None else None) or []
    if not failures:
        return {}
    first = failures[0]
    if first.get("class") == "raised":
        where = f" at candidate.py:{first['line']}" if first.get("line") else ""
        return {"runtime_error": f"{first.get('exception')}{where} (message withheld: raised on hidden inputs)",
                "runtime_error_name": str(first.get("exception"))}
    if first.get("class") == "shape":
        return {"correctness_issue": f"Output shape mismatch: {first.get('detail')}",
                "correctness_issue_name": "shape"}
    return {"correctness_issue": describe(f.as_dict()), "correctness_issue_name": str(first.get("class"))}


def _dedupe(observations: list) -> list:
    """One observation per code (the first one, which carries the evidence)."""
    seen, out = set(), []
    for f in observations:
        if f.code not in seen:
            seen.add(f.code)
            out.append(f)
    return out
