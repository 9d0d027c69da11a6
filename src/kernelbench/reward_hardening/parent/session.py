"""The judge of one problem: reference load, memory plan and reference timing (parent).

A :class:`ReferenceSession` keeps one judge (the loaded reference and its timing) for
all samples of a problem in a batch.  What each sample still gets new: the hidden
seeds of every correctness probe and perturbation, and a freshly generated input set
for every timed call.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
import time
from typing import Any

from kernelbench.procs import WorkerHandle
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.ipc.wire import malformed_timing
from kernelbench.reward_hardening.parent import memplan
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample
from kernelbench.reward_hardening.parent.workers import (
    Driver,
    JudgeFailed,
    PhaseFailed,
    close_fds,
    start_worker,
    timing_sample,
)

__all__ = ["RETAIN_LIMIT_BYTES", "ReferenceSession"]

# device memory a judge may keep beyond its loaded reference after a release before it is retired
RETAIN_LIMIT_BYTES = 256 << 20


class ReferenceSession:
    """One judge worker for one reference program on one device.

    Reused for every sample of a problem in a batch: the reference is loaded once (and,
    with interleaving off, timed once: :attr:`reference_samples`); each candidate then
    gets new hidden seeds and, by default, its own interleaved reference samples.
    A session whose judge failed is closed and must not be reused (:attr:`alive`).
    """

    def __init__(self, reference_src: str, cfg: HardeningConfig, device: str, workdir: str | None = None):
        self.reference_src, self.cfg, self.device = reference_src, cfg, device
        self.key = self.key_for(reference_src, cfg, device)
        self.root = tempfile.mkdtemp(prefix="kernelguard_ref_", dir=workdir)
        self.handle: WorkerHandle | None = None
        self.drv: Driver | None = None
        self.error: str | None = None
        self.oom = False
        self.pid: int | None = None
        self.state: dict = {}
        self.init_items: list = []
        self.init_fds: list[int] = []
        self.reference_samples: list[TimingSample] | None = None
        self.request_log: list[dict] | None = None  # the current sample's judge requests (its Evidence)
        self.timing_key: tuple | None = None
        self.data_bytes = 0
        self.sizes: dict = {}
        self.plan: memplan.MemoryPlan | None = None
        self.judge_peak_rss_bytes = 0
        self.copy_bytes_per_s: float | None = None
        self.started = False
        self.retired = False  # kept memory after a release: finish this sample, then start afresh
        self.twin: Any = None  # the reference's twin (parent.twin), started by the pipeline

    @staticmethod
    def key_for(reference_src: str, cfg: HardeningConfig, device: str) -> tuple:
        return (hashlib.sha256(reference_src.encode()).hexdigest(), device, cfg.precision, cfg.allow_tf32,
                cfg.num_threads, cfg.judge_gpu_memory_fraction, cfg.launch_hold_cycles)

    @property
    def alive(self) -> bool:
        return self.error is None and not self.retired and (
            not self.started or (self.handle is not None and self.handle.process.is_alive()))

    def release(self) -> dict:
        """End one sample's evaluation in the judge; retire a judge that kept memory it lent.

        Returns what the judge reported (``retained_bytes`` on CUDA).  A retired session
        finishes the current sample but is not reused: the next sample gets a fresh judge.
        """
        reply, _ = self.request("release", {"cmd": "release"})
        retained = int(reply.get("retained_bytes") or 0)
        if retained > RETAIN_LIMIT_BYTES:
            self.retired = True
        return {"retained_bytes": retained, "retired": self.retired}

    def start(self) -> None:
        if self.started:
            if self.error:
                raise JudgeFailed(self.error, self.oom)
            return
        self.started = True
        workspace = os.path.join(self.root, "reference")
        os.makedirs(workspace, exist_ok=True)
        src_path = os.path.join(workspace, "reference_program.py")
        with open(src_path, "w") as fh:
            fh.write(self.reference_src)
        self.handle = start_worker("reference", workspace, src_path, self.cfg, self.device)
        self.drv = Driver("reference", self.handle, None, max(self.cfg.timeout, 30.0))
        ready = self.call("start", None)
        self.pid = ready.get("pid")
        reply, fds = self.request("load", {"cmd": "load"})
        self.init_items, self.init_fds = reply.get("init_inputs", []), fds
        self.state = reply.get("state", {})
        self.sizes = dict(reply.get("sizes") or {})
        cuda = self.device.startswith("cuda")
        if cuda:  # the plan from the meta device, before anything of the problem's size is allocated
            self._plan(self.sizes.get("input_bytes"), self.sizes.get("output_bytes"), None, "meta", dry=True)
        # one probe before any candidate runs: the reference's data must fit here, so a
        # later judge failure cannot be the problem's fault
        probe, pfds = self.request("probe", {"cmd": "probe", "seed": secrets.randbits(62), "dry": True})
        close_fds(pfds)
        self.data_bytes = int(probe.get("input_bytes", 0)) + int(probe.get("output_bytes", 0))
        if cuda:  # the final plan, with the measured sizes and the forward's workspace
            self._plan(probe.get("input_bytes"), probe.get("output_bytes"), probe.get("workspace_bytes"),
                       "measured" if self.plan is None else "meta+measured", total=probe.get("device_total_bytes"))
        self.judge_peak_rss_bytes = self.handle.peak_rss_bytes
        self.copy_bytes_per_s = float(probe.get("copy_bytes_per_s") or 0.0) or None
        self.request("release", {"cmd": "release"})

    def _plan(self, input_bytes: Any, output_bytes: Any, workspace: Any, source: str, dry: bool = False,
              total: Any = None) -> None:
        """Decide the memory plan (memplan) and apply the judge's side of it.

        ``dry``: the plan from the meta device, before the judge's first probe; the judge
        then gets every byte the candidate will not need, so the probe itself fits.
        A problem that does not fit even the lean plan is UNSUPPORTED (RH-44) here,
        before any candidate code runs.
        """
        if input_bytes is None or output_bytes is None:
            return  # no meta sizes: the first probe measures them
        if total is None:
            import torch

            total = torch.cuda.get_device_properties(self.device).total_memory
        plan = memplan.plan_memory(int(total), int(input_bytes), int(output_bytes),
                                   int(self.sizes.get("param_bytes") or 0),
                                   None if workspace is None else int(workspace), source)
        self.plan = plan
        if not plan.fits and not dry:  # the meta-only plan guesses the workspace: only the measured one decides
            self.fail(f"memory plan: {plan.why_not()}", oom=True)
        judge_fraction = self.cfg.judge_gpu_memory_fraction
        if judge_fraction is None:
            judge_fraction = (plan.total_bytes - plan.min_candidate_bytes) / plan.total_bytes if dry \
                else plan.judge_fraction
        self.request("configure", {"cmd": "configure", "lean": plan.lean, "gpu_memory_fraction": judge_fraction})

    def twin_gpu_fraction(self) -> float | None:
        """The twin's allocator cap from the plan; ``None`` when the plan left it no room."""
        if self.plan is None or not self.plan.twin_bytes:
            return None
        return self.plan.twin_fraction

    def candidate_gpu_fraction(self) -> float | None:
        """The candidate's allocator cap: the configured one, else its budget in the plan."""
        if self.cfg.gpu_memory_fraction is not None or self.plan is None:
            return self.cfg.gpu_memory_fraction
        return self.plan.candidate_fraction

    def call(self, phase: str, header: dict | None) -> dict:
        assert self.drv is not None
        try:
            return self.drv.wait_ready()
        except PhaseFailed as exc:
            self.fail(f"judge failed to start: {exc}")
        return {}

    def request(self, phase: str, header: dict) -> tuple[dict, list[int]]:
        """One judge request; any failure closes the session and raises :class:`JudgeFailed`."""
        if self.error:
            raise JudgeFailed(self.error, self.oom)
        assert self.drv is not None
        self.drv.log = self.request_log
        try:
            reply, fds = self.drv.request(phase, header)
        except PhaseFailed as exc:
            kind = getattr(self.drv, "last_kind", "crash")
            self.fail(f"judge {phase}: {kind}: {exc}", oom=kind == "memory")
        if not reply.get("ok"):
            close_fds(fds)
            self.fail(f"judge {phase}: {reply.get('error', 'failed')}", oom=bool(reply.get("oom")),
                      evaluator=bool(reply.get("evaluator_fault")))
        return reply, fds

    def fail(self, message: str, oom: bool = False, evaluator: bool = False) -> None:
        self.error, self.oom = message, oom
        self.close()
        raise JudgeFailed(message, oom, evaluator)

    def reference_timing(self, ev: Evidence) -> list[TimingSample]:
        """The reference's timed samples (measured once per session and configuration)."""
        key = (self.cfg.num_warmup, self.cfg.num_perf_trials)
        if self.reference_samples is not None and self.timing_key == key:
            return self.reference_samples
        samples = []
        n = max(1, self.cfg.num_perf_trials)
        for k in range(self.cfg.num_warmup + n):
            self.request("ref_prepare", {"cmd": "ref_prepare", "seed": secrets.randbits(62)})
            send = time.monotonic_ns()
            reply, _ = self.request("ref_time", {"cmd": "ref_time"})
            recv = time.monotonic_ns()
            if k < self.cfg.num_warmup:
                continue
            bad = malformed_timing(reply)
            if bad:
                self.fail(f"judge timing reply malformed: {bad}")
            samples.append(timing_sample(k, send, recv, reply))
        self.reference_samples, self.timing_key = samples, key
        return samples

    def close(self) -> None:
        if self.twin is not None:
            self.twin.close()
        close_fds(self.init_fds)
        self.init_fds = []
        if self.handle is not None:
            self.handle.close()
            self.containment = self.handle.unit.sweep(self.handle.process.exitcode)
            self.handle = None
        shutil.rmtree(self.root, ignore_errors=True)
