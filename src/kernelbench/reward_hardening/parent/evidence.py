"""Evidence gathered by the pipeline and handed to the runtime detectors.

Everything here lives in the trusted parent and is verdict-sized: the judge's
comparisons (match, errors, fingerprint equality) instead of tensors, what the
candidate worker reported (raw, untrusted) and what the parent observed itself
(round-trip times, exit status, memory, log size, workspace manifest).  The tensor
fields (``ProbeInput.inputs``, ``CallRecord.outputs``, ``TimingSample.spot_outputs``)
are only filled by synthetic tests of the detectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
from typing import Any

__all__ = ["CallRecord", "Evidence", "ProbeInput", "TimingSample", "WorkerEvent"]


@dataclass
class ProbeInput:
    """One hidden input set with its reference outputs."""

    kind: str  # "hidden" | "canary_repeat" | "perturb:<kind>" | "bank"
    inputs: list  # list of tensors / plain values (CPU)
    ref_outputs: list  # list of CPU tensors
    finite: bool = True
    index: int = 0
    variants: dict = field(default_factory=dict)  # reduced-precision reference outputs (synthetic tests)
    reference: dict = field(default_factory=dict)  # the judge's description: container, output dtypes/shapes
    perturbation: str | None = None  # the perturbation the judge applied (heavy_tail may become heavy_tail_signed)


@dataclass
class CallRecord:
    """One correctness-phase call of the candidate."""

    probe: ProbeInput
    ok: bool
    outputs: list = field(default_factory=list)  # CPU tensors after sync
    evidence: dict = field(default_factory=dict)
    stable: bool = True
    input_digests_after: list = field(default_factory=list)
    input_digests_before: list = field(default_factory=list)
    concurrency: dict = field(default_factory=dict)
    apis: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)
    l2: dict | None = None
    error: str | None = None
    call_ms: float = 0.0
    comparison: Any = None  # the judge's Comparison (or computed from ``outputs`` by the detectors)
    replay: bool | None = None  # judge: a wrong output equal to an earlier input's (or call's) output
    inputs_unchanged: bool | None = None  # judge: the lent inputs' fingerprints after the call
    variant_errors: dict = field(default_factory=dict)  # judge: reduced-precision variants' errors vs reference
    error_name: str | None = None  # the exception's qualified type name (raised calls)
    traceback: str | None = None  # the candidate's traceback text (untrusted; only frame lines are used)
    oom: dict | None = None  # allocator facts when the call ran out of device memory
    judged_by: str = "allclose"  # allclose | relative (the heavy-tail perturbation's norm criterion)


@dataclass
class TimingSample:
    index: int
    send_ns: int
    recv_ns: int
    t0: int
    t_ret: int
    t1: int
    event_ms: float | None
    threads_delta: int = 0
    bank_index: int = 0
    roll: int = 0
    spot_outputs: list | None = None  # candidate outputs fetched for a spot check
    spot_ref: list | None = None
    t_evt: int | None = None  # CUDA: host time when the current stream's end event completed
    l2: dict | None = None  # CUDA: persisting-L2 state right after the call
    window_ms: float | None = None  # CUDA: events around flush + forward (the host interval's GPU part)
    spot_comparison: Any = None  # judge: staged outputs of a spot-checked timed call vs the reference
    inputs_unchanged: bool | None = None  # judge: the timed inputs' fingerprints after the call
    block: int | None = None  # interleaved timing: the block this sample belongs to

    @property
    def other_streams_ms(self) -> float:
        """Time the device kept working after the current stream had finished."""
        return 0.0 if self.t_evt is None else (self.t1 - self.t_evt) / 1e6

    @property
    def host_ms(self) -> float:
        return (self.t1 - self.t0) / 1e6

    @property
    def rtt_ms(self) -> float:
        return (self.recv_ns - self.send_ns) / 1e6


@dataclass
class WorkerEvent:
    """A failure the parent observed (timeout, crash, limit) while talking to a worker."""

    role: str
    phase: str
    kind: str  # timeout | crash | too_large | frame | error
    detail: str


@dataclass
class Evidence:
    config: Any
    precheck: Any = None
    reference_ok: bool = False
    reference_error: str | None = None
    reference_samples: list[TimingSample] = field(default_factory=list)
    baseline: dict = field(default_factory=dict)  # candidate worker state before loading code
    loaded: bool = False
    load_error: str | None = None
    load_snapshot: dict = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    samples: list[TimingSample] = field(default_factory=list)
    profile: dict | None = None
    profile_error: str | None = None
    profile_comparison: Any = None  # the judge's Comparison of the profiled call's output against the reference
    final_snapshot: dict = field(default_factory=dict)
    events: list[WorkerEvent] = field(default_factory=list)
    log_text: str = ""
    log_size: int = 0
    workspace_changes: dict = field(default_factory=dict)
    exit_code: int | None = None
    phases: list[dict] = field(default_factory=list)
    completed: bool = False  # the candidate answered every request the pipeline made
    candidate_started: bool = False  # the candidate's worker was started (its code may have run)
    skipped_probes: list[dict] = field(default_factory=list)  # perturbations left out, with the reason
    candidate_peak_rss_bytes: int = 0  # largest private resident memory the parent saw
    candidate_rss_limit_bytes: int | None = None  # the limit it was held to
    containment: dict = field(default_factory=dict)  # role -> containment.Unit.sweep() report
    candidate_source: str = ""  # the candidate's source (frame lines of its exceptions are quoted from it)
    memory_plan: dict = field(default_factory=dict)  # memplan.MemoryPlan.as_dict() of the problem on this device
    oom_events: list[dict] = field(default_factory=list)  # out-of-memory errors of the candidate, per phase
    # how the candidate's outputs reached the judge: "trusted" (the parent froze the candidate
    # and read them with process_vm_readv) or "in_process" (the candidate's harness copied them)
    read_path: str = "in_process"
    read_path_detail: str = ""
    reads: list[dict] = field(default_factory=list)  # trusted reads: phase, bytes, ms, freeze_ms
    read_failures: list[dict] = field(default_factory=list)  # phase, kind, detail (RH-60)
    requests: list[dict] = field(default_factory=list)  # every candidate request: phase, cmd, ms (+ bytes)
    judge_requests: list[dict] = field(default_factory=list)  # the judge's requests for this sample: phase, cmd, ms
    copy_bytes_per_s: float | None = None  # the judge's plain copy rate on the device (RH-61)
    signals: list[dict] = field(default_factory=list)  # phase, SigCgt read by the parent (RH-62)
    dispatch: list[dict] = field(default_factory=list)  # phase, watched operators whose kernels changed
    interleaved_reference_samples: list[TimingSample] = field(default_factory=list)  # labelled by block
    # where ``reference_samples`` came from: "session" (the judge's own run before the
    # candidate, reused across a problem's samples) or "interleaved" (the blocks above)
    reference_timing: str = "session"
    # who timed the interleaved reference samples: "twin" (a candidate-kind worker, parent.twin)
    # or "judge"; reference_timer_note says why not the twin
    reference_timer: str = "judge"
    # where the judge times the reference: the candidate worker's own protocol overhead,
    # measured with the harness's trusted stand-in before the candidate's code is imported
    # (RH-26 compares the candidate's overhead with these, not with the judge's shorter path)
    protocol_samples: list[TimingSample] = field(default_factory=list)
    reference_timer_note: str | None = None
    reference_hold: dict = field(default_factory=dict)  # frozen_blocks, unheld_blocks, failures
    host_load: list[int] = field(default_factory=list)  # other runnable processes, at each reference block
    usable_cpus: int = 0  # CPUs the evaluator may run on
    t0: float = field(default_factory=time.monotonic)
