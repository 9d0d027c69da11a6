"""The reference's twin: its interleaved timed calls in a worker of the candidate's own kind (parent).

The speedup compares two timings, so both must be taken along one path.  On the H200
the judge timed upstream's L1/47 (a sum over 8 GiB) at 2.385 ms in every call while
the candidate's worker, running the very same code, took 2.11 ms in most calls (two
discrete levels, 2.11 and 2.39; L1/19 ReLU 3.03 and 3.38): identical code claimed a
13 % speedup in every A/A run.  A single process timing the same forward under every
condition the two paths differ in (allocator state, fresh or reused input memory,
inputs read first, the hold kernel, inputs lent through CUDA IPC to a second
process, rest before the call; ``bench/timing_paths.py``) always gave the judge's
level.  Whatever in the candidate's path changes the kernel's speed, the fair answer
is to time the reference along that path too.

So the reference's timed samples come from a *twin*: a worker started exactly as the
candidate's (:func:`~.workers.start_worker`, the same harness, the same containment
and a cgroup of its own), loaded with the reference program's ``Model`` under the
same allocator cap rule, fed input sets the judge generated and lent just as it lends
the candidate's, timed by the same ``time`` command, its outputs read by the judge
from the frozen twin as the candidate's are (:class:`~.timed.TimedCalls` does all of
it for both).  Only trusted code runs in the twin; the candidate is frozen while the
twin is timed, as it was while the judge timed the reference.

The twin belongs to the problem's :class:`~.session.ReferenceSession` (one per
problem in a batch, like the judge), starts while the judge loads, and is loaded once
the memory plan gave it room (``MemoryPlan.twin_bytes``).  Without room, or where it
fails to start or load before any candidate code ran, the judge times the reference
as before, and the record's ``reference_timer`` says so.
"""

from __future__ import annotations

import os
import random
import secrets
from typing import Any

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.candidate_run import host_limit
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample
from kernelbench.reward_hardening.parent.session import ReferenceSession
from kernelbench.reward_hardening.parent.timed import TimedCalls
from kernelbench.reward_hardening.ipc.wire import malformed_timing
from kernelbench.reward_hardening.parent.workers import (
    Driver,
    JudgeFailed,
    PhaseFailed,
    repack,
    start_worker,
    timing_sample,
)

__all__ = ["ReferenceTwin", "twin_for"]


class ReferenceTwin(TimedCalls):
    """A candidate-kind worker running the reference, timed as the candidate is."""

    def __init__(self, session: ReferenceSession, cfg: HardeningConfig, device: str):
        super().__init__(session, cfg, Evidence(config=cfg, candidate_source=""), session.root, device,
                         random.Random(secrets.randbits(64)))
        self.handle: Any = None
        self.drv: Any = None
        self.loaded = False
        self.warm = False
        self.error: str | None = None

    def start(self) -> None:
        """Start the worker (its harness only; the reference program is imported by ``load``)."""
        workspace = os.path.join(self.root, "twin")
        os.makedirs(workspace, exist_ok=True)
        src_path = os.path.join(workspace, "reference_program.py")
        with open(src_path, "w") as fh:
            fh.write(self.s.reference_src)
        os.chmod(src_path, 0o444)
        self.handle = start_worker("twin", workspace, src_path, self.cfg, self.device)
        self.drv = Driver("twin", self.handle, self.ev, max(self.cfg.timeout, 30.0))

    def load(self, fraction: float | None) -> bool:
        """Wait for the worker, choose its read path, load the reference; False (and ``error``) when it cannot."""
        # the candidate's host-memory limit rule (RH-43's): the reference holds what an honest candidate does
        self.handle.max_rss_bytes = host_limit(self.cfg, self.device, self.s.data_bytes,
                                               int(self.s.sizes.get("param_bytes") or 0), self.s.judge_peak_rss_bytes)
        try:
            self.drv.wait_ready()
            self.handle.unit.verify()
            self.ev.read_path, _ = self._read_path()
            (items,), fds = repack([self.s.init_items], self.s.init_fds)
            reply, _ = self.drv.request("load", {"cmd": "load", "init_inputs": items,
                                                 "gpu_memory_fraction": fraction}, fds)
        except PhaseFailed as exc:
            return self.give_up(f"start: {exc}")
        if not reply.get("ok"):
            return self.give_up(f"load: {str(reply.get('error') or 'failed')[:300]}")
        self.loaded = True
        return True

    def give_up(self, why: str) -> bool:
        """Stop the twin for good (the session's later samples are timed by the judge); returns False."""
        self.error = why[:300]
        self.close()
        return False

    def sample(self, index: int) -> TimingSample:
        """One timed reference call on a fresh lent input set (the first calls warm the twin up, untimed)."""
        if not self.warm:
            for _ in range(max(1, self.cfg.num_warmup)):
                self._call()
            self.warm = True
        send, recv, reply = self._call()
        bad = malformed_timing(reply)
        if bad:
            raise JudgeFailed(f"reference twin: timing reply malformed: {bad}", evaluator=True)
        return timing_sample(index, send, recv, reply)

    def _call(self) -> tuple[int, int, dict]:
        try:
            # on CUDA every step of the candidate's call, its output's staging and trusted read
            # included (the path run 40 measured); on the CPU no staging and no read, which only
            # follow the call and cost the CPU suite a sixth of its time
            reply, _, _, send, recv = self._fresh_call("timing", "time", "timing:reference", False,
                                                       stage=self.device.startswith("cuda"))
        except PhaseFailed as exc:  # the evaluator's side failed: no verdict either way (RH-32, RH-44)
            oom = getattr(self.drv, "last_kind", "") == "memory"
            raise JudgeFailed(f"reference twin: {exc}", oom=oom, evaluator=not oom) from exc
        self.s.request("check_inputs", {"cmd": "check_inputs", "spot": False})
        if not reply.get("ok"):
            oom = isinstance(reply.get("oom"), dict)
            raise JudgeFailed(f"reference twin: the reference raised {str(reply.get('error_name'))[:80]}",
                              oom=oom, evaluator=not oom)
        return send, recv, reply

    def let_go(self) -> None:
        """End of a sample: the twin drops every input set it was lent (and stays loaded for the next sample).

        The harness keeps lent inputs alive for a while (addresses never repeat within an
        evaluation); the twin outlives the sample, so without this the judge would still
        see that memory as lent when the sample ends, and be retired and restarted for
        the next one (on the H200 after every sample of the 2-D matmul problems).  A twin
        that cannot let go is given up: the judge times the session's later samples.
        """
        if not self.loaded:
            return
        try:
            reply, _ = self.drv.request("let_go", {"cmd": "let_go"})
        except PhaseFailed as exc:
            reply = {"ok": False, "error": str(exc)}
        if not reply.get("ok"):
            self.give_up(f"let_go: {str(reply.get('error') or 'failed')[:200]}")

    def close(self) -> None:
        self.loaded = False
        if self.handle is not None:
            self.handle.close()
            self.handle.unit.sweep(self.handle.process.exitcode if self.handle.process is not None else None)
            self.handle = None


def twin_for(session: ReferenceSession, cfg: HardeningConfig, device: str) -> ReferenceTwin | None:
    """The session's twin, started now if it has none (``None`` where ``reference_twin`` asks for none).

    ``reference_twin``: ``"cuda"`` (the default) on CUDA devices only, ``"all"`` on every
    device, ``"off"`` nowhere.  On the CPU the twin removes the judge path's bias (an honest
    candidate timed 2-8 times slower) but inherits the candidate-kind worker's spread on a
    small shared machine (spikes of 4-7 ms on calls of 0.3 ms), which made RH-41 fire at
    random on a fast attack fixture of the CPU red team; until that spread is understood
    the CPU keeps the judge path.
    """
    if cfg.reference_twin not in ("cuda", "all", "off"):
        raise ValueError(f"reference_twin must be 'cuda', 'all' or 'off', not {cfg.reference_twin!r}")
    if cfg.reference_twin == "off" or (cfg.reference_twin == "cuda" and not device.startswith("cuda")):
        return None
    twin = getattr(session, "twin", None)
    if twin is None:
        twin = session.twin = ReferenceTwin(session, cfg, device)
        twin.start()
    return twin
