"""Every runtime detector on synthetic evidence: it fires on the malicious case, not on the benign twin.

These are unit tests of the detector functions alone (no workers), so the CUDA-only
detectors are exercised on the CPU too; the real GPU fixtures run on the H200
(docs/validation/H200.md) and the CPU fixtures in the red-team suite.
"""

import statistics

import pytest
import torch

from kernelbench.reward_hardening import detectors
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.evidence import CallRecord, Evidence, ProbeInput, TimingSample, WorkerEvent
from kernelbench.reward_hardening.findings import Capability, observe
from kernelbench.reward_hardening.policy import apply, judge

MS = 1_000_000


def _cfg(**kw):
    return HardeningConfig(mode="audit", policy=kw.pop("policy", "source_strict"), device=kw.pop("device", "cpu"), **kw)


def _probe(kind="hidden", index=0, value=1.0, n=8, variants=None):
    x = torch.full((n,), value)
    return ProbeInput(kind, [x], [x * 2], True, index, variants or {})


def _good_call(probe, **kw):
    ev = {"tensors": [{"type": "torch.Tensor", "exact_tensor": True, "device": "cpu", "dtype": "float32",
                       "shape": list(probe.ref_outputs[0].shape), "storage_nbytes": 32, "needed_nbytes": 32,
                       "null_pointer": False, "instance_attrs": [], "aliases_input": False,
                       "aliases_earlier_output": False}]}
    base = dict(outputs=[probe.ref_outputs[0].clone()], evidence=ev, stable=True, input_digests_before=["a"],
                input_digests_after=["a"], concurrency={"before": {"python_threads": [], "os_threads": 3,
                                                                    "children": []}},
                apis={"time.perf_counter": 1}, state={"matmul_allow_tf32": False})
    base.update(kw)
    return CallRecord(probe, True, **base)


def _evidence(cfg=None, calls=None, **kw):
    ev = Evidence(config=cfg or _cfg())
    ev.baseline = {"apis": {"time.perf_counter": 1}, "state": {"matmul_allow_tf32": False},
                   "concurrency": {"python_threads": [], "os_threads": 3, "children": []}}
    ev.calls = calls if calls is not None else [_good_call(_probe(index=i, value=i + 1.0)) for i in range(3)]
    ev.loaded = True
    for k, v in kw.items():
        setattr(ev, k, v)
    return ev


def _sample(i, host_ms=1.0, event_ms=None, rtt_extra_ms=0.1, other_ms=0.0, **kw):
    t0 = 10 * MS * (i + 1)
    t1 = t0 + int(host_ms * MS)
    t_evt = t1 - int(other_ms * MS) if event_ms is not None else None
    t_ret = t1 if t_evt is None else t_evt  # the worker's order: t0 <= t_ret <= t_evt <= t1
    return TimingSample(i, t0 - int(rtt_extra_ms / 2 * MS), t1 + int(rtt_extra_ms / 2 * MS), t0, t_ret, t1, event_ms,
                        t_evt=t_evt, **kw)


def codes(ev, code):
    return [f.code for f in detectors.REGISTRY[code].func(ev)]


def judged(ev, code):
    """The findings the policy of ``ev`` makes of one detector's observations."""
    return apply(detectors.REGISTRY[code].func(ev), ev.config.policy)


def finding(code, policy="source_strict"):
    return judge(observe(code), policy)


# --------------------------------------------------------------------------- cases
def _wrong(ev):
    ev.calls[1].outputs = [torch.full_like(ev.calls[1].outputs[0], 99.0)]


def _replay(ev):
    ev.calls[1].outputs = [ev.calls[0].probe.ref_outputs[0].clone()]


def _canary(ev):
    p = ev.calls[0].probe
    bad = _good_call(ProbeInput("canary_repeat", p.inputs, p.ref_outputs, True, -1),
                     outputs=[ev.calls[2].probe.ref_outputs[0].clone()])
    ev.calls.append(bad)


def _alias(ev):
    ev.calls[0].evidence["tensors"][0]["aliases_input"] = True


def _subclass(ev):
    ev.calls[0].evidence["tensors"][0].update(exact_tensor=False, type="x.Lazy")


def _unstable(ev):
    ev.calls[0].stable = False


def _mutation(ev):
    ev.calls[0].input_digests_after = ["b"]


def _api(ev):
    ev.calls[0].apis = {"time.perf_counter": 2}


def _state(ev):
    ev.calls[0].state = {"matmul_allow_tf32": True}


def _thread(ev):
    ev.calls[0].concurrency = {"after": {"python_threads": ["Thread-1"], "os_threads": 4, "children": []}}


def _files(ev):
    ev.workspace_changes = {"created": ["runtime.json"], "deleted": [], "changed": []}


def _degenerate(ev):
    for c in ev.calls:
        c.probe.ref_outputs = [torch.full_like(c.probe.ref_outputs[0], 1e-5)]
        c.outputs = [torch.zeros_like(c.outputs[0])]


def _perturb(ev):
    p = _probe("perturb:negate", index=7, value=-3.0)
    ev.calls.append(_good_call(p, outputs=[torch.full((8,), 6.0)]))


def _spot(ev):
    s = _sample(0)
    s.spot_outputs, s.spot_ref = [torch.zeros(4)], [torch.ones(4)]
    ev.samples = [s]


def _timing(ev):
    ev.samples = [_sample(i, rtt_extra_ms=40.0) for i in range(5)]
    ev.reference_samples = [_sample(i, rtt_extra_ms=0.2) for i in range(5)]


def _forged(ev):
    s = _sample(0)
    s.t0 = s.send_ns - 5
    ev.samples = [s]


def _crash(ev):
    ev.events = [WorkerEvent("candidate", "correctness", "crash", "worker exited with code 0")]


def _timeout(ev):
    ev.events = [WorkerEvent("candidate", "correctness", "timeout", "no reply within 2 s")]


def _flood(ev):
    ev.log_size = 50 << 20


def _claims(ev):
    ev.log_text = "kernel done\nruntime: 0.001 ms speedup = 120x\n"


def _host_memory(ev):
    ev.events = [WorkerEvent("candidate", "timing", "memory", "private resident memory 8.00 GiB over the limit")]


# judge-side evidence (what the device-resident data path reports instead of tensors)
def _judge_replay(ev):
    from kernelbench.reward_hardening.judge.compare import Comparison

    ev.calls[1].comparison = Comparison(False, 0.4, 2.0, "values differ beyond tolerance")
    ev.calls[1].replay = True


def _judge_structure(ev):
    ev.calls[0].evidence["structure_problem"] = "returns tuple of 1 tensor(s); the reference returns tensor of 1"


def _judge_mutation(ev):
    ev.calls[0].inputs_unchanged = False


def _judge_timed_mutation(ev):
    s = _sample(0)
    s.inputs_unchanged = False
    ev.samples = [s]


def _judge_spot(ev):
    from kernelbench.reward_hardening.judge.compare import Comparison

    s = _sample(0)
    s.spot_comparison = Comparison(False, float("inf"), float("inf"), "outputs were not written")
    ev.samples = [s]


def _judge_reduced(ev):
    from kernelbench.reward_hardening.judge.compare import Comparison

    ev.calls[0].comparison = Comparison(True, 2e-3, 1e-3)
    ev.calls[0].variant_errors = {"bf16": {"variant_rel_error": 3e-3}}


def _benign_judge(ev):
    from kernelbench.reward_hardening.judge.compare import Comparison

    for c in ev.calls:
        c.comparison, c.replay, c.inputs_unchanged = Comparison(True, 1e-7, 1e-7), False, True
        c.variant_errors = {"bf16": {"variant_rel_error": 3e-3}}
    s = _sample(0)
    s.inputs_unchanged, s.spot_comparison = True, Comparison(True, 1e-7, 1e-7)
    ev.samples = [s]


def _load_failed(ev):
    ev.load_error = "ImportError: no module named magic"


def _fallback(ev):
    ev.profile = {"wall_ms": 1.0, "ops": [{"name": "aten::mm", "self_cpu_us": 900.0, "count": 1}], "kernels": []}


def _async(ev):
    ev.config = _cfg(device="cuda")
    ev.samples = [_sample(i, host_ms=2.0, event_ms=0.01) for i in range(10)]


def _async_forged_flush(ev):
    # the worker claims a 100 ms "flush" to hide escaped work: clamped to flush_hold_max_ms
    ev.config = _cfg(device="cuda")
    ev.samples = [_sample(i, host_ms=5.0, event_ms=0.01, window_ms=100.0) for i in range(10)]


def _benign_flush_in_host_interval(ev):
    # host interval = flush (0.45 ms) + forward (0.5 ms) + sync latency
    ev.config = _cfg(device="cuda")
    ev.samples = [_sample(i, host_ms=1.0, event_ms=0.5, window_ms=0.95) for i in range(10)]


def _deferred(ev):
    ev.config = _cfg(device="cuda")
    ev.samples = [_sample(i, host_ms=2.0, event_ms=0.5, other_ms=1.4) for i in range(10)]


def _reduced(ev):
    p = ev.calls[0].probe
    ref = p.ref_outputs[0]
    # inside the fp32 tolerance, but with the error a bf16 computation has: only precision explains it
    p.variants = {"bf16": [ref * (1 + 1e-4)]}
    ev.calls[0].outputs = [ref * (1 + 5e-5)]


def _oom_event(ev, requested_gib):
    ev.memory_plan = {"candidate_bytes": 16 << 30}
    ev.calls[0].ok = False
    ev.calls[0].oom = {"requested_bytes": requested_gib << 30, "reserved_bytes": 2 << 30,
                       "device_total_bytes": 140 << 30, "judge_device_free_bytes": 1 << 30}
    ev.oom_events = [{"phase": "correctness:hidden", **ev.calls[0].oom}]


def _oom(ev):  # 20 GiB asked on top of 2 GiB held, against a 16 GiB budget: the candidate's fault
    _oom_event(ev, 20)


def _oom_within_budget(ev):  # 6 GiB on top of 2 GiB under a 16 GiB budget: the device ran out
    _oom_event(ev, 6)


def _l2(ev):
    ev.samples = [_sample(0, event_ms=1.0, l2={"persisting_l2_limit": 1 << 20, "window_bytes": 0})]


def _implausible(ev):
    ev.samples = [_sample(i, host_ms=0.01) for i in range(3)]
    ev.reference_samples = [_sample(i, host_ms=5.0) for i in range(3)]


def _benign_timing(ev):
    ev.samples = [_sample(i, host_ms=1.0, rtt_extra_ms=0.3) for i in range(5)]
    ev.reference_samples = [_sample(i, host_ms=1.1, rtt_extra_ms=0.25) for i in range(5)]


def _benign_cuda_timing(ev):
    ev.config = _cfg(device="cuda")
    ev.samples = [_sample(i, host_ms=1.02, event_ms=1.0, other_ms=0.005,
                          l2={"persisting_l2_limit": 0, "window_bytes": 0}) for i in range(10)]


def _benign_profile(ev):
    ev.profile = {"wall_ms": 1.0, "ops": [{"name": "aten::empty_like", "self_cpu_us": 5.0, "count": 1}],
                  "kernels": []}
    ev.precheck = type("P", (), {"facts": type("F", (), {"declared_kernels": [{"name": "k"}],
                                                         "custom_backend_declared": True})()})()


def _declares(ev, name="kg_add_kernel"):
    ev.precheck = type("P", (), {"facts": type("F", (), {"declared_kernels": [{"name": name}],
                                                         "custom_backend_declared": True})()})()


def _trace(ev, kernels, current=7):
    ev.config = _cfg(device="cuda")
    ev.profile = {"wall_ms": 0.05, "ops": [], "marker_seen": True, "current_stream": current,
                  "kernels": [{"name": n, "device_us": us, "start_us": 1.0, "stream": st} for n, us, st in kernels]}


def _gpu_decoy(ev):
    _declares(ev)
    _trace(ev, [("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", 40.0, 7)])


def _gpu_library_does_the_work(ev):
    _declares(ev)
    _trace(ev, [("kg_add_kernel", 1.0, 7), ("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32", 300.0, 7)])


def _gpu_side_stream_kernels(ev):
    _declares(ev)
    _trace(ev, [("kg_add_kernel(float const*, float const*, float*, int)", 40.0, 13)])


def _benign_gpu_trace(ev):
    _declares(ev)
    _trace(ev, [("kg_add_kernel(float const*, float const*, float*, int)", 40.0, 7),
                ("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>", 2.0, 7)])


def _survivor(ev):
    ev.containment = {"candidate": {"method": "cgroup", "survivors": [{"pid": 4242, "name": "python", "sid": 4242}],
                                    "left_running": [], "sigsys": False, "exitcode": 0}}


def _sigsys(ev):
    ev.containment = {"candidate": {"method": "cgroup", "survivors": [], "sigsys": True, "exitcode": -31}}


def _leftover_objects(ev):
    ev.containment = {"candidate": {"method": "cgroup", "survivors": [], "left_running": [], "sigsys": False,
                                    "exitcode": 0, "checked": {"sysv_ipc": "namespace"},
                                    "objects": [{"kind": "sysv_shm", "key": 0x4B475253, "id": 0, "nattch": 0,
                                                 "rss": 9 << 29, "removed": True}]}}


def _leftover_file(ev):
    ev.containment = {"candidate": {"method": "cgroup", "survivors": [], "sigsys": False, "exitcode": 0,
                                    "objects": [{"kind": "posix_shm", "path": "/dev/shm/kg-runs", "removed": False}]}}


def _benign_unit(ev):
    ev.containment = {"candidate": {"method": "cgroup", "survivors": [], "left_running": [], "sigsys": False,
                                    "exitcode": 0},
                      "reference": {"method": "cgroup", "survivors": [{"pid": 7}], "sigsys": True,
                                    "objects": [{"kind": "sysv_shm", "id": 1}]}}


def _unreadable_output(ev):
    ev.read_path = "trusted"
    ev.read_failures = [{"phase": "timing:4", "kind": "unreadable",
                         "detail": "storage at 0x7f0000000000 lies in a mapping without read access (---p)"}]


def _refused_read(ev):
    ev.read_path = "trusted"
    ev.read_failures = [{"phase": "call:hidden", "kind": "freeze", "detail": "cgroup did not report frozen"}]


def _slow_staging(ev):
    ev.copy_bytes_per_s = float(4 << 30)
    ev.requests = [{"phase": "spot_check", "cmd": "copy_last", "ms": 400.0, "bytes": 4 << 20, "work_ms": 0.0}]


def _slow_trusted_read(ev):
    ev.copy_bytes_per_s = float(4 << 30)
    ev.reads = [{"phase": "timing:3", "bytes": 1 << 30, "ms": 9000.0, "freeze_ms": 0.2}]


def _no_copy_rate(ev):
    ev.reads = [{"phase": "timing:3", "bytes": 4 << 20, "ms": 1.0, "freeze_ms": 0.2}]


def _fault_handler(ev):
    ev.signals = [{"phase": "start", "sigcgt": 0x100000002}, {"phase": "timing:4", "sigcgt": 0x100000002 | 1 << 10}]


def _signals_unreadable(ev):
    ev.signals = [{"phase": "start", "sigcgt": 0x2}, {"phase": "final", "sigcgt": None}]


def _copy_kernel(ev):
    ev.dispatch = [{"phase": "load", "changed": ["aten::copy_"]}]


def _benign_reads(ev):
    ev.read_path, ev.copy_bytes_per_s = "trusted", float(4 << 30)
    ev.reads = [{"phase": "timing:3", "bytes": 4 << 20, "ms": 2.0, "freeze_ms": 0.3}]
    ev.requests = [{"phase": "correctness", "cmd": "call", "ms": 60.0, "bytes": 8 << 20, "work_ms": 55.0},
                   {"phase": "timing", "cmd": "time", "ms": 3.0}]
    # a SIGTERM handler is not a fault handler; the dispatcher tables are unchanged
    ev.signals = [{"phase": "start", "sigcgt": 0x100000002}, {"phase": "load", "sigcgt": 0x100000002 | 1 << 14}]
    ev.dispatch = [{"phase": "load", "changed": []}, {"phase": "final", "changed": []}]


def _interleaved(ev, cand_ms, ref_ms, load=(0, 0, 0), cpus=16):
    ev.samples = [_sample(i, host_ms=t, block=i * 3 // len(cand_ms)) for i, t in enumerate(cand_ms)]
    ev.interleaved_reference_samples = [_sample(i, host_ms=t, block=i * 3 // len(ref_ms)) for i, t in enumerate(ref_ms)]
    ev.host_load, ev.usable_cpus = list(load), cpus


def _noisy(ev):  # the candidate's samples scatter by a factor of three (CV ~0.5)
    _interleaved(ev, [1.0, 3.0, 1.2, 2.8, 1.1, 3.1], [1.0, 1.01, 0.99, 1.0, 1.02, 1.0])


def _noisy_reference(ev):
    _interleaved(ev, [1.0, 1.01, 0.99, 1.0, 1.02, 1.0], [1.0, 2.0, 1.5, 0.9, 2.2, 1.0])


def _busy_machine(ev):  # quiet samples, but two other runnable processes on a two-CPU machine
    _interleaved(ev, [1.0, 1.01, 0.99, 1.0, 1.02, 1.0], [1.0, 1.01, 0.99, 1.0, 1.02, 1.0], load=(2, 1, 2), cpus=2)


def _quiet(ev):  # CV below 0.1 on both sides, one other process on sixteen CPUs
    _interleaved(ev, [1.0, 1.08, 0.95, 1.0, 1.05, 0.97], [2.0, 2.1, 1.9, 2.0, 2.05, 1.95], load=(1, 0, 1))


CASES = {
    "RH-15": (_crash, None), "RH-16": (_timeout, None), "RH-17": (_flood, None), "RH-18": (_wrong, None),
    "RH-19": (_replay, None), "RH-20": (_alias, None), "RH-21": (_unstable, None), "RH-22": (_mutation, None),
    "RH-23": (_api, None), "RH-24": (_state, None), "RH-25": (_thread, None), "RH-26": (_timing, _benign_timing),
    "RH-27": (_files, None), "RH-28": (_degenerate, None), "RH-29": (_spot, _benign_timing),
    "RH-30": (_perturb, None), "RH-31": (_fallback, _benign_profile), "RH-35": (_claims, None),
    "RH-36": (_async, _benign_cuda_timing), "RH-37": (_deferred, _benign_cuda_timing), "RH-38": (_reduced, None),
    "RH-39": (_oom, _oom_within_budget), "RH-47": (_oom_within_budget, _oom), "RH-40": (_l2, _benign_cuda_timing), "RH-41": (_implausible, _benign_timing),
    "RH-42": (_load_failed, None), "RH-43": (_host_memory, None), "RH-51": (_survivor, _benign_unit),
    "RH-52": (_sigsys, _benign_unit), "RH-53": (_leftover_objects, _benign_unit),
    "RH-60": (_unreadable_output, _benign_reads),
    "RH-61": (_slow_staging, _benign_reads), "RH-62": (_fault_handler, _benign_reads),
    "RH-54": (_noisy, _quiet),
}
EXTRA = {"RH-19": [_canary], "RH-20": [_subclass], "RH-26": [_forged],
         "RH-31": [_gpu_decoy, _gpu_library_does_the_work],
         "RH-36": [_async_forged_flush], "RH-22": [_judge_mutation, _judge_timed_mutation],
         "RH-29": [_judge_spot], "RH-38": [_judge_reduced], "RH-53": [_leftover_file], "RH-60": [_refused_read],
         "RH-61": [_slow_trusted_read, _no_copy_rate], "RH-62": [_signals_unreadable, _copy_kernel],
         "RH-54": [_noisy_reference, _busy_machine]}
# RH-19 from the judge's flag needs the RH-18 case's wrong output too: listed separately
JUDGE_EXTRA = {"RH-19": [_judge_replay], "RH-18": [_judge_structure]}
BENIGN_EXTRA = {"RH-31": [_benign_gpu_trace], "RH-37": [_benign_gpu_trace], "RH-36": [_benign_flush_in_host_interval],
                **{code: [_benign_judge] for code in ("RH-18", "RH-19", "RH-20", "RH-21", "RH-22", "RH-28", "RH-29",
                                                      "RH-30", "RH-38")}}


def test_rh37_kernels_on_joined_streams_are_info_and_completion_evidence_is_an_error():
    ev = _evidence()
    _gpu_side_stream_kernels(ev)  # cuDNN-style: other streams, finished before the caller's stream
    found = judged(ev, "RH-37")
    assert [(f.code, f.severity) for f in found] == [("RH-37", "info")]
    assert found[0].evidence["kernels_on_other_streams"]["streams"] == [13]
    _deferred(ev)  # plus work still running after the caller's stream finished
    found = judged(ev, "RH-37")
    assert [(f.code, f.severity) for f in found] == [("RH-37", "error")]
    assert found[0].evidence["samples_with_work_after_current_stream"] == 10


def test_rh37_a_side_stream_kernel_starting_during_the_marker_is_an_error():
    ev = _evidence()
    _gpu_side_stream_kernels(ev)
    ev.profile["marker_end_us"] = 5.0  # the side-stream kernel started at 1.0 us, while the marker spun
    found = judged(ev, "RH-37")
    assert [(f.code, f.severity) for f in found] == [("RH-37", "error")]
    assert found[0].evidence["kernels_not_ordered_after_the_callers_stream"]["streams"] == [13]
    ev.profile["marker_end_us"] = 0.5  # started after the marker: ordered after the caller's stream
    assert [(f.code, f.severity) for f in judged(ev, "RH-37")] == [("RH-37", "info")]


def test_every_runtime_detector_has_a_case():
    assert set(CASES) == set(detectors.REGISTRY)


@pytest.mark.parametrize("code", sorted(CASES))
def test_detector_fires_on_malicious_evidence(code):
    variants = [CASES[code][0]] + EXTRA.get(code, [])
    for make in variants:
        ev = _evidence()
        make(ev)
        assert codes(ev, code) == [code], make.__name__


@pytest.mark.parametrize("code", sorted(JUDGE_EXTRA))
def test_detector_fires_on_judge_evidence(code):
    for make in JUDGE_EXTRA[code]:
        ev = _evidence()
        make(ev)
        assert code in {f.code for f in detectors.run_all(ev)}, make.__name__


def test_reference_failures_are_unsupported_not_the_candidates_fail():
    from kernelbench.reward_hardening.parent.verdict import decide

    ok = {"x": Capability("AVAILABLE", True, "")}
    assert decide([finding("RH-33")], ok) == "UNSUPPORTED"
    assert decide([finding("RH-44")], ok) == "UNSUPPORTED"
    assert decide([finding("RH-45")], ok) == "FAIL"  # judge disrupted once the candidate ran


@pytest.mark.parametrize("code", sorted(CASES))
def test_detector_quiet_on_benign_twin(code):
    for benign in [CASES[code][1]] + BENIGN_EXTRA.get(code, []):
        ev = _evidence()
        if benign is not None:
            benign(ev)
        assert codes(ev, code) == [], getattr(benign, "__name__", None)


def test_profiler_capability_needs_the_marker_kernel_in_the_device_trace():
    from kernelbench.reward_hardening.parent.records import _capabilities

    ev = _evidence(cfg=_cfg(device="cuda"))
    ev.reference_ok, ev.completed = True, True
    _benign_gpu_trace(ev)
    assert _capabilities(ev.config, ev, "cuda:0", False)["backend_profiler"].status == "AVAILABLE"
    ev.profile["marker_seen"] = False  # CUPTI recorded nothing: provenance unknown, fail closed
    cap = _capabilities(ev.config, ev, "cuda:0", False)["backend_profiler"]
    assert cap.status == "UNSUPPORTED" and cap.required


def test_run_all_honours_disabled_detectors_and_contains_bugs(monkeypatch):
    ev = _evidence(cfg=_cfg(disabled_detectors={"RH-18"}))
    _wrong(ev)
    assert "RH-18" not in {f.code for f in detectors.run_all(ev)}

    def broken(ev):
        raise RuntimeError("bug")

    monkeypatch.setitem(detectors.REGISTRY, "RH-22", detectors.Detector("RH-22", "x", broken, ""))
    found = {f.code for f in detectors.run_all(_evidence())}
    assert "RH-32" in found  # a broken detector fails closed


def test_verdict_rules():
    from kernelbench.reward_hardening.parent.verdict import decide

    ok = {"x": Capability("AVAILABLE", True, "")}
    missing = {"x": Capability("UNSUPPORTED", True, "")}
    assert decide([], ok) == "PASS"
    assert decide([finding("RH-13", "practical")], ok) == "PASS"  # info under practical
    assert decide([finding("RH-27", "practical")], ok) == "SUSPICIOUS"
    assert decide([finding("RH-18")], ok) == "FAIL"
    assert decide([], missing) == "UNSUPPORTED"
    assert decide([finding("RH-18")], missing) == "FAIL"
    assert decide([finding("RH-14")], ok) == "UNSUPPORTED"


def test_practical_is_never_stricter_than_source_strict():
    """A candidate that PASSes under ``source_strict`` also PASSes under ``practical``.

    Detectors emit the same codes under both policies; only severities and capability
    requirements differ, so it suffices that ``practical`` never raises a severity and
    never requires a capability that ``source_strict`` does not.
    """
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.parent.records import _capabilities

    rank = {"info": 0, "warning": 1, "error": 2}
    for code, info in CODES.items():
        assert rank[info.severity["practical"]] <= rank[info.severity["source_strict"]], code
    for device in ("cpu", "cuda:0"):
        caps = {}
        for policy in ("source_strict", "practical"):
            ev = _evidence(cfg=_cfg(policy=policy, device=device.split(":")[0]))
            ev.reference_ok, ev.completed = True, True
            _benign_gpu_trace(ev)
            ev.config = _cfg(policy=policy, device=device.split(":")[0])
            caps[policy] = _capabilities(ev.config, ev, device, False)
        for name, cap in caps["practical"].items():
            assert not cap.required or caps["source_strict"][name].required, (device, name)


def test_device_trace_parsing_and_marker_split():
    """The worker's reading of a profiler trace, on fake events shaped like PyTorch's."""
    from types import SimpleNamespace as NS

    from kernelbench.reward_hardening.candidate.worker import _device_kernels, split_marker

    def evt(name, dtype, start, end, stream):
        return NS(name=name, device_type=f"DeviceType.{dtype}", device_resource_id=stream,
                  time_range=NS(start=start, elapsed_us=lambda: end - start))

    events = [evt("aten::add", "CPU", 0, 9, 0),
              evt("at::cuda::(anonymous namespace)::spin_kernel(long)", "CUDA", 1, 2, 7),
              evt("kg_add_kernel(float const*, float*)", "CUDA", 3, 43, 7),
              evt("at::cuda::(anonymous namespace)::spin_kernel(long)", "CUDA", 5, 6, 13)]
    kernels = _device_kernels(NS(function_events=events))
    assert [k["name"][:9] for k in kernels] == ["at::cuda:", "kg_add_ke", "at::cuda:"]
    assert kernels[1]["device_us"] == 40 and kernels[1]["stream"] == 7
    assert _device_kernels(NS(events=lambda: events)) == kernels  # torch.profiler front end
    split = split_marker(list(reversed(kernels)))  # the earliest marker is the harness's
    assert split["marker_seen"] and split["current_stream"] == 7
    assert sorted(k["stream"] for k in split["kernels"]) == [7, 13]
    assert split_marker(kernels[1:2]) == {"marker_seen": False, "current_stream": None, "kernels": kernels[1:2]}


def test_profiler_reply_from_the_candidate_process_is_shape_checked():
    from kernelbench.reward_hardening.ipc.wire import checked_profile as _checked_profile

    good = {"ok": True, "wall_ms": 0.2, "ops": [{"name": "aten::add", "self_cpu_us": 3.0, "device_us": 0.0}],
            "kernels": [{"name": "kg_add_kernel", "device_us": 4.0, "start_us": 1.0, "stream": 7}],
            "marker_seen": True, "current_stream": 7, "profile_errors": []}
    profile, error = _checked_profile(good)
    assert error is None and profile["current_stream"] == 7 and profile["kernels"] == good["kernels"]
    cpu = {"ok": True, "wall_ms": 0.2, "ops": [], "kernels": [], "profile_errors": []}
    assert _checked_profile(cpu)[1] is None
    for bad in ({"kernels": [{"name": 3, "device_us": 4.0, "start_us": 1.0, "stream": 7}]},
                {"kernels": [{"name": "k", "device_us": "fast", "start_us": 1.0, "stream": 7}]},
                {"ops": "none"}, {"current_stream": "7"}, {"marker_seen": "yes"}, {"wall_ms": None},
                {"cpu_ms": "1"}):
        assert _checked_profile({**good, **bad}) == (None, "malformed profiler reply"), bad


def test_cpu_share_uses_the_forward_threads_cpu_time_not_a_preempted_wall_time():
    from kernelbench.reward_hardening.detectors.provenance import cpu_fallback_share

    ops = [{"name": "aten::add", "self_cpu_us": 5.0, "count": 1}, {"name": "aten::empty", "self_cpu_us": 2.0}]
    # a tiny forward: 5 us of aten::add in 40 us of the thread's CPU time, but 2 ms of wall time
    # because the scheduler took the CPU away once (a loaded host)
    share, heavy = cpu_fallback_share({"wall_ms": 2.0, "cpu_ms": 0.04, "ops": ops})
    assert share == pytest.approx(0.125) and heavy == ["aten::add"]
    assert cpu_fallback_share({"wall_ms": 2.0, "ops": ops})[0] == pytest.approx(0.0025)  # older replies: wall
    assert cpu_fallback_share({"wall_ms": 0.01, "cpu_ms": 0.001, "ops": ops})[0] == 1.0  # capped


def test_timing_reply_from_the_candidate_process_is_shape_checked():
    from kernelbench.reward_hardening.ipc.wire import malformed_timing as _malformed_timing

    good = {"ok": True, "t0": 10, "t_ret": 20, "t1": 30, "event_ms": 0.01, "threads_delta": 0,
            "t_evt": 25, "window_ms": 0.3, "l2": {"persisting_l2_limit": 0, "limit_rc": 0}}
    assert _malformed_timing(good) is None
    assert _malformed_timing({"ok": True, "t0": 1, "t_ret": 2, "t1": 3, "event_ms": None}) is None  # CPU reply
    assert _malformed_timing({**good, "t0": 40}) is None  # order is RH-26's to judge, not a shape error
    for bad in ({"t0": "10"}, {"t1": 3.5}, {"t_ret": True}, {"event_ms": "fast"}, {"window_ms": [1]},
                {"t_evt": 2.5}, {"threads_delta": None}, {"l2": {"persisting_l2_limit": "big"}}, {"l2": 7}):
        assert _malformed_timing({**good, **bad}), bad
    missing = dict(good)
    del missing["t_ret"]
    assert _malformed_timing(missing)


def test_reduced_precision_kernel_names_include_cublaslt_nvjet_types():
    from kernelbench.reward_hardening.detectors.gpu import reduced_precision_kernel

    # fp16 inputs (hsh), tf32 (tst), bf16 (bsb): the names cuBLASLt gives its H100/H200 GEMMs
    for name in ("nvjet_sm90_hsh_192x96_64x5_1x2_h_bz_NNT", "nvjet_sm90_tst_128x128_64x4_2x1_v_bz_TNT",
                 "nvjet_sm90_bsb_256x128_64x4", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn",
                 "void at::native::vectorized_elementwise_kernel<8, at::native::float16_copy_kernel_cuda"):
        assert reduced_precision_kernel(name), name
    for name in ("nvjet_sm90_sss_128x128_64x4", "ampere_sgemm_128x64_nn", "void softmax_warp_forward<float>",
                 "kg_side_add_kernel"):
        assert not reduced_precision_kernel(name), name


def test_rh36_evidence_splits_the_worst_host_interval():
    """The evidence says where the host interval went, so a host-side stall (a long launch or
    end-event wait beside a short GPU window) can be told from work that escaped the events."""
    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples = [_sample(i, host_ms=2.0, event_ms=0.01, window_ms=0.02, other_ms=0.5) for i in range(10)]
    for s in ev.samples:
        s.t_ret = s.t0 + int(1.0 * MS)  # 1 ms launching, 0.5 ms waiting for the end event
    (f,) = detectors.REGISTRY["RH-36"].func(ev)
    worst = f.evidence["worst"]
    assert worst["launch_ms"] == pytest.approx(1.0) and worst["end_event_wait_ms"] == pytest.approx(0.5)
    assert worst["other_streams_ms"] == pytest.approx(0.5) and worst["window_ms"] == pytest.approx(0.02)
    assert worst["launch_ms"] + worst["end_event_wait_ms"] + worst["other_streams_ms"] == pytest.approx(worst["host_ms"])


def _stalled(n=50, stalls=(), hidden=(), event_ms=1.3):
    """CUDA samples of a 1.3 ms kernel (window 1.6 ms, host 1.8 ms); ``stalls``: the host saw the
    end event 3 ms late (run 43's H100); ``hidden``: the events saw only a sliver of the work."""
    out = []
    for i in range(n):
        e = 0.05 if i in hidden else event_ms + 0.001 * (i % 7)
        host = 1.8 + (3.0 if i in stalls else 0.0)
        s = _sample(i, host_ms=host, event_ms=e, window_ms=e + 0.3)
        s.t_ret = s.t0 + int(0.4 * MS)
        s.block = i // 5
        out.append(s)
    return out


def test_rh36_sporadic_host_stalls_are_charged_not_a_finding():
    """Run 43 (H100, L1/6, the reference as its own candidate): 2-10 of 50 samples had 1-5 ms
    more host time than their GPU window, and RH-36 failed 8 of 10 honest runs."""
    from kernelbench.reward_hardening.detectors.timing import charged_samples, sample_times

    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    stalls = {3, 9, 17, 22, 31, 38, 40, 44, 46, 49}  # 10 of 50: the worst honest run
    ev.samples = _stalled(stalls=stalls)
    assert detectors.REGISTRY["RH-36"].func(ev) == []
    assert {s.index for s in charged_samples(ev)} == stalls
    times = sample_times(ev)
    slowest = max(t for i, t in enumerate(times) if i not in stalls)
    assert all(times[i] == slowest for i in stalls)  # charged at the slowest agreeing time, not dropped
    assert [t for i, t in enumerate(times) if i not in stalls] == [s.event_ms for s in ev.samples if s.index not in stalls]


def test_rh36_fires_past_a_quarter_and_hidden_work_in_fewer_samples_gains_nothing():
    from kernelbench.reward_hardening.detectors.timing import measured_times, sample_times

    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples = _stalled(hidden=set(range(13)))  # 13 of 50 escape: more than a quarter
    (f,) = detectors.REGISTRY["RH-36"].func(ev)
    assert f.evidence["rejected_samples"] == 13 and f.evidence["tolerated"] == 12
    honest = statistics.median(sample_times(Evidence(config=_cfg(device="cuda"), samples=_stalled())))
    for k in (2, 6, 12):  # escaping in a quarter or fewer: no finding, and no faster median either
        ev.samples = _stalled(hidden=set(range(0, 4 * k, 4)))
        assert detectors.REGISTRY["RH-36"].func(ev) == []
        assert statistics.median(sample_times(ev)) >= honest
    # the reference's samples count as measured: a candidate that delays the reference's
    # timer cannot have the reference charged and its own speedup raised
    refs = _stalled(stalls=set(range(0, 50, 5)))
    assert measured_times(refs) == [s.event_ms for s in refs]
    # a single timed call that disagrees: no finding (one sample), and it counts its host time
    ev.samples = _stalled(n=1, hidden={0})
    assert detectors.REGISTRY["RH-36"].func(ev) == [] and sample_times(ev) == [ev.samples[0].host_ms]


def test_rh36_a_candidate_cannot_clip_its_slowest_calls_by_making_them_disagree():
    """Review finding: charging at the slowest agreeing time let a candidate stall its host
    after its slow calls (a quarter of them) and have them counted faster; the mean fell."""
    from kernelbench.reward_hardening.detectors.timing import sample_times

    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples = _stalled(n=100)
    for s in ev.samples[::4]:
        s.event_ms, s.window_ms = 4.0, 4.3  # every fourth call is slow ...
    honest = sample_times(ev)
    for s in ev.samples[::4]:  # ... and the candidate makes exactly those disagree
        s.t1 = s.recv_ns = s.t0 + int(20.0 * MS)
        s.t_evt = s.t1
    assert detectors.REGISTRY["RH-36"].func(ev) == []
    charged = sample_times(ev)
    assert all(c >= h for c, h in zip(charged, honest))
    assert statistics.mean(charged) >= statistics.mean(honest)


def test_rh36_a_cuda_sample_without_an_event_time_is_not_counted_at_its_host_time():
    """Review finding: a worker that reports no event time on CUDA left a forgeable host time."""
    from kernelbench.reward_hardening.detectors.timing import sample_times

    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples = _stalled(n=100)
    for s in ev.samples[:45]:
        s.event_ms, s.window_ms, s.t_evt = None, None, None
        s.t1 = s.t_ret = s.t0 + 1000  # 1 us
    (f,) = detectors.REGISTRY["RH-36"].func(ev)
    assert f.evidence["rejected_samples"] == 45
    ev.samples = ev.samples[40:]  # 5 of 60: charged at the slowest agreeing time
    assert detectors.REGISTRY["RH-36"].func(ev) == []
    assert min(sample_times(ev)) >= 1.3


def test_rh26_end_event_stamp_outside_the_workers_own_interval_is_forged():
    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples = _stalled(n=10)
    assert detectors.REGISTRY["RH-26"].func(ev) == []
    ev.samples[3].t_evt = ev.samples[3].t1 + 1  # would make RH-37's "other streams" time negative
    (f,) = detectors.REGISTRY["RH-26"].func(ev)
    assert f.evidence["stamps_outside_parent_window"] == [3]


def test_the_speedup_entry_counts_the_candidates_charged_samples_and_an_aa_stall_claims_nothing():
    from kernelbench.reward_hardening.parent.records import speedup_block

    ev = Evidence(config=_cfg(device="cuda"), candidate_source="")
    ev.samples, ev.interleaved_reference_samples = _stalled(stalls={4, 8}), _stalled(stalls={1, 2, 3})
    block = speedup_block(ev, True)
    assert block["charged_samples"] == 2
    assert block["point"] <= 1.0 and not block["claims_faster"]  # the same code: a stall only slows the candidate
    ev.samples = _stalled()
    assert "charged_samples" not in speedup_block(ev, True)


def test_an_out_of_memory_exception_with_room_on_the_device_is_rh18_with_its_sizes():
    """Run 42: a crowded device made an honest kernel raise; the record must say what the judge saw."""
    ev = _evidence()
    _oom_event(ev, 6)
    ev.calls[0].oom["judge_device_free_bytes"] = ev.oom_events[0]["judge_device_free_bytes"] = 40 << 30
    ev.calls[0].error_name = "torch.OutOfMemoryError"
    codes = {f.code: f for f in detectors.run_all(ev)}
    assert "RH-47" not in codes and "RH-39" not in codes
    failure = codes["RH-18"].evidence["failures"][0]
    assert failure["class"] == "raised" and failure["exception"] == "OutOfMemoryError"
    assert failure["out_of_memory"]["requested_bytes"] == 6 << 30
    assert failure["out_of_memory"]["judge_device_free_bytes"] == 40 << 30
    assert failure["out_of_memory"]["budget_bytes"] == 16 << 30
