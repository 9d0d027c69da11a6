"""What every phase of a candidate's run shares: its reads, signals and reports (parent).

:class:`CandidateIO` holds one candidate run's session, configuration and evidence,
and reads the candidate's outputs itself where it can (the trusted read: freeze the
candidate's cgroup, copy each output with ``process_vm_readv``), records its caught
signals, its out-of-memory reports and the requests that moved output bytes (RH-61).
The phases (:mod:`.probes`, :mod:`.timed`, :mod:`.candidate_run`) build on it.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any, Iterator

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.containment import trusted_read
from kernelbench.reward_hardening.judge.compare import Comparison
from kernelbench.reward_hardening.parent.evidence import Evidence
from kernelbench.reward_hardening.parent.session import ReferenceSession
from kernelbench.reward_hardening.parent.workers import JudgeFailed

__all__ = ["CandidateIO", "comparison", "phase_time"]


def phase_time(ev: Evidence) -> float:
    """Seconds since the evaluation started (the ``t_s`` of a phase entry)."""
    return round(time.monotonic() - ev.t0, 3)


def comparison(d: Any) -> Comparison | None:
    """The judge's comparison reply as a :class:`Comparison` (``None`` when there is none)."""
    if not isinstance(d, dict):
        return None

    def num(key: str, default: float) -> float:
        try:
            return float(d.get(key, default))
        except (TypeError, ValueError):
            return default

    return Comparison(bool(d.get("match")), num("rel_error", float("inf")), num("max_abs", float("inf")),
                      str(d.get("reason", ""))[:300], mean_abs=num("mean_abs", float("nan")),
                      non_finite=int(num("non_finite", 0)), mismatched=int(num("mismatched", 0)),
                      numel=int(num("numel", 0)))


class CandidateIO:
    """One candidate run's state and the reads and reports all of its phases use.

    The worker's handle and driver (``self.handle``, ``self.drv``) are set by
    :meth:`~.candidate_run.CandidateRun.run` when it starts the worker.
    """

    def __init__(self, session: ReferenceSession, cfg: HardeningConfig, ev: Evidence, root: str, device: str,
                 rng: random.Random):
        self.s, self.cfg, self.ev, self.root, self.device, self.rng = session, cfg, ev, root, device, rng

    # ---------------------------------------------------------------- trusted reads
    @contextlib.contextmanager
    def _frozen(self) -> Iterator[float]:
        """The candidate's cgroup frozen for the block (yields the milliseconds the freeze took).

        Raises ``ReadFailed`` when the freeze fails (then nothing is left frozen); thaws
        on the way out whatever the block did.
        """
        cg = self.handle.unit.cgroup
        freeze_ms = trusted_read.freeze(cg, timeout=max(1.0, min(self.cfg.timeout, 10.0)))
        try:
            yield freeze_ms
        finally:
            trusted_read.thaw(cg)

    def _read_path(self) -> tuple[str, str]:
        """How outputs reach the judge for this candidate, and why."""
        cuda = self.device.startswith("cuda")
        if not self.cfg.trusted_read:
            return "in_process", "trusted read switched off by configuration (trusted_read=False)"
        if not cuda:
            ok, why = trusted_read.available()
            if not ok:
                return "in_process", why
        if not trusted_read.can_freeze(self.handle.unit.cgroup):
            return "in_process", "no cgroup freezer for the candidate's cgroup leaf"
        if cuda:
            ok, why = self._device_read_selftest()
            if not ok:
                return "in_process", f"CUDA: the judge's read of a frozen worker failed its self-test ({why})"
            return "trusted", ("the parent freezes the candidate's cgroup after every call and the judge copies "
                               "each output through a CUDA IPC handle of its allocation into its staging buffers")
        return "trusted", ("the parent freezes the candidate's cgroup after every call and reads each output "
                           "with process_vm_readv into the judge's staging buffers")

    def _device_read_selftest(self) -> tuple[bool, str]:
        """Before any candidate code: the harness exports a known tensor, the judge reads it from the frozen worker."""
        reply, _ = self.drv.request("start", {"cmd": "export_probe"})
        if not reply.get("ok"):
            return False, str(reply.get("error") or "the harness could not export its probe tensor")[:200]
        try:
            with self._frozen():
                jr, _ = self.s.request("device_read", {"cmd": "device_read", "which": "selftest",
                                                       "outputs": reply.get("outputs")})
        except trusted_read.ReadFailed as exc:
            return False, exc.detail[:200]
        if not jr.get("written"):
            return False, f"{jr.get('kind')}: {jr.get('detail')}"[:200]
        return True, "self-test read matched"

    def _lendable(self, which: str, groups: list[list[dict]], fds: list[int]) -> tuple[list[list[dict]], list[int]]:
        """Staging metas the candidate can open: as the judge sent them, or exported now (CUDA).

        On CUDA the judge exports staging only when it is lent (see ``Judge._export_staging``);
        the descriptors returned are new and belong to the caller.
        """
        if all(m.get("kind") != "unexported" for g in groups for m in g):
            return groups, []
        lr, lfds = self.s.request("lend", {"cmd": "lend", "which": which})
        keys = ("staging",) if which == "timed" else ("staging", "staging_after")
        return [lr[k] for k in keys], lfds

    def _signals(self, phase: str) -> None:
        """``SigCgt`` of the candidate, read by the parent (a failed read while it lives is recorded)."""
        pid = self.handle.pid
        mask = trusted_read.caught_signals(pid) if pid else None
        alive = self.handle.process is not None and self.handle.process.is_alive()
        if mask is not None or alive:
            self.ev.signals.append({"phase": phase, "sigcgt": mask})

    def _device_read(self, phase: str, facts: list) -> list:
        """CUDA: the judge copies the frozen candidate's outputs into the phase's staging (raises ``ReadFailed``)."""
        which = "timed" if phase.startswith("timing") else ("b" if phase.startswith("settle") else "a")
        jr, _ = self.s.request("device_read", {"cmd": "device_read", "which": which, "outputs": facts})
        if not jr.get("written"):
            raise trusted_read.ReadFailed(str(jr.get("kind") or "failed"), str(jr.get("detail") or "")[:300])
        return [trusted_read.OutputRead(int(r.get("nbytes", 0)), True, None, float(r.get("read_ms", 0.0)),
                                        float(r.get("map_ms", 0.0))) for r in jr.get("reads") or []]

    def _trusted_read(self, phase: str, facts: Any, staging: list[dict], fds: list[int]) -> tuple[bool, Any, Any]:
        """Freeze the candidate, copy its outputs into the staging buffers, thaw; (written, layouts, why).

        CPU: the parent reads with ``process_vm_readv``; CUDA: the judge reads through the
        driver's IPC handles (:mod:`kernelbench.reward_hardening.judge.device_read`), and the
        staging then holds the outputs packed in row-major order.
        """
        if not isinstance(facts, list):
            facts = []
        try:
            with self._frozen() as freeze_ms:
                self._signals(phase)
                reads = (self._device_read(phase, facts) if self.device.startswith("cuda")
                         else trusted_read.read_outputs(self.handle.pid, facts, staging, fds))
        except trusted_read.ReadFailed as exc:
            if exc.kind not in ("structure", "layout"):  # a wrong shape or layout is judged as an output
                self.ev.read_failures.append({"phase": phase, "kind": exc.kind, "detail": exc.detail[:300]})
            return False, None, exc.detail[:300]
        entry = {"phase": phase, "bytes": sum(r.nbytes for r in reads),
                 "ms": round(sum(r.read_ms for r in reads), 4), "freeze_ms": round(freeze_ms, 4)}
        if self.device.startswith("cuda"):
            entry["map_ms"] = round(sum(r.map_ms for r in reads), 4)
        queued = sum(r.queued_ms for r in reads)
        if queued:  # the reader waited for a CPU: left out of ``ms`` (RH-61), kept as evidence
            entry["queued_ms"] = round(queued, 4)
        self.ev.reads.append(entry)
        if self.device.startswith("cuda"):
            return True, None, None  # packed row-major by the judge: read back as is
        return True, [{"contiguous": r.contiguous, "stride": r.stride} for r in reads], None

    def _oom_event(self, phase: str, facts: dict) -> dict:
        """Record a candidate's out-of-memory report with the device's free memory as the judge sees it.

        The report comes from the candidate's process: only the judge's reading can
        confirm that the device really was exhausted (RH-47, UNSUPPORTED); an unconfirmed
        report under the budget is an ordinary exception (correctness).
        """
        free = None
        try:
            snap, _ = self.s.request("snapshot", {"cmd": "snapshot"})
            free = (snap.get("gpu_memory") or {}).get("device_free_bytes")
        except JudgeFailed:
            raise
        except Exception:  # pragma: no cover - the snapshot is best effort
            free = None
        event = {"phase": phase, **{k: v for k, v in facts.items() if k != "phase"},
                 "judge_device_free_bytes": free}
        self.ev.oom_events.append(event)
        return event

    def _staged_request(self, nbytes: int, work_ms: float = 0.0) -> None:
        """Mark the last candidate request as one that read ``nbytes`` of output (RH-61)."""
        last = getattr(self.drv, "last", None)
        if last is not None:
            last["bytes"], last["work_ms"] = int(nbytes), round(float(work_ms), 4)
