"""The timed calls of a candidate, interleaved with the reference's blocks (parent).

Every timed call gets a freshly generated input set from the judge; spot-checked
outputs are compared after the loop (or at once above ``spot_hold_bytes``), and the
judge times reference blocks between the candidate's (:mod:`.interleave`).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any, Iterator

from kernelbench.reward_hardening.containment import trusted_read
from kernelbench.reward_hardening.ipc.wire import checked_profile, malformed_timing
from kernelbench.reward_hardening.judge.compare import Comparison
from kernelbench.reward_hardening.parent import interleave
from kernelbench.reward_hardening.parent.candidate_io import CandidateIO, comparison
from kernelbench.reward_hardening.parent.evidence import TimingSample
from kernelbench.reward_hardening.parent.workers import JudgeFailed, PhaseFailed, close_fds, repack, timing_sample

__all__ = ["PROTOCOL_PROBES", "TimedCalls"]

PROTOCOL_PROBES = 7  # timed calls of the trusted stand-in where the judge times the reference (RH-26)


class TimedCalls(CandidateIO):
    """The timing phase of a candidate run."""

    def _timing_loop(self) -> None:
        cfg, ev = self.cfg, self.ev
        n = max(1, cfg.num_perf_trials)
        total = cfg.num_warmup + n
        spots = set(self.rng.sample(range(cfg.num_warmup, total), self._spot_count()))
        deferred: list[TimingSample] = []
        inter = self._interleaver()
        for k in range(total):
            inter.before(k)  # the judge's reference block that belongs here, if any
            spot = k in spots
            reply, copied, layouts, send, recv = self._fresh_call("timing", "time", f"timing:{k}", spot)
            if not reply.get("ok"):
                if isinstance(reply.get("oom"), dict):
                    self._oom_event(f"timing:{k}", reply["oom"])
                    raise PhaseFailed("out of memory in a timed call")
                # the type only: a message from a call on hidden inputs could carry them out
                raise RuntimeError(f"timing call failed: raised {str(reply.get('error_name') or 'an exception')[:80]}")
            checked = spot and bool(copied and copied.get("written"))
            verdict, _ = self.s.request("check_inputs", {"cmd": "check_inputs", "spot": checked, "layouts": layouts,
                                                         "defer": True, "hold_bytes": cfg.spot_hold_bytes})
            if k < cfg.num_warmup:
                continue
            bad = malformed_timing(reply)
            if bad:
                raise RuntimeError(f"malformed timing reply: {bad}")
            s = timing_sample(k, send, recv, reply)
            s.inputs_unchanged = bool(verdict.get("inputs_unchanged"))
            if spot:
                cmp = comparison(verdict.get("comparison")) if checked else None
                if checked and verdict.get("deferred"):
                    deferred.append(s)
                s.spot_comparison = cmp or Comparison(False, float("inf"), float("inf"),
                                                      str(copied.get("why") or reply.get("output_problem")
                                                          or "outputs were not written")[:300])
            ev.samples.append(s)
        inter.before(total)
        if deferred:
            res, _ = self.s.request("check_spots", {"cmd": "check_spots"})
            comps = res.get("comparisons") or []
            if len(comps) != len(deferred):
                raise JudgeFailed("judge returned the wrong number of spot comparisons")
            for s, c in zip(deferred, comps):
                s.spot_comparison = comparison(c) or Comparison(False, float("inf"), float("inf"),
                                                                 "no comparison")

    def _spot_count(self) -> int:
        """How many of the timing loop's calls are spot-checked."""
        n = max(1, self.cfg.num_perf_trials)
        return min(max(2, int(round(self.cfg.spot_check_fraction * n))), n)

    def _checked_at_once(self, staging: list[dict]) -> bool:
        """Whether a checked call with outputs this large is always compared at once (never held).

        Above ``spot_hold_bytes`` no spot-checked output is held for after the loop: the
        judge compares it right after the call, and the longer pause before the next call
        tells the candidate, after the fact, which calls were checked (a known limit).
        Reading an unchecked call's outputs there (on level 1 at 100 trials about 16 s,
        of 6-8 GiB each) would hide nothing the pause does not show, and nothing reads
        them afterwards, so only checked calls are read.  Below, every call is read: a
        spot held for the end must look like any other call.
        """
        return sum(int(m.get("nbytes", 0)) for m in staging) > self.cfg.spot_hold_bytes

    def _read_output(self, phase: str, reply: dict, jr: dict, jfds: list[int],
                     check: bool) -> tuple[dict | None, list | None, list[int]]:
        """A timed or profiled call's outputs into the judge's staging: (copied, layouts, lent descriptors).

        On the trusted path the outputs are read with the candidate frozen, after every
        call except an unchecked one whose check would not be held (``_checked_at_once``);
        otherwise the harness copies the output of a call that will be checked into lent
        staging.
        """
        if self.ev.read_path == "trusted":
            if not check and self._checked_at_once(jr["staging"]):
                return None, None, []
            written, layouts, why = self._trusted_read(phase, reply.get("outputs"), jr["staging"], jfds)
            return {"written": written, "why": why}, layouts, []
        if not check:
            return None, None, []
        (lent,), lent_fds = self._lendable("timed", [jr["staging"]], jfds)
        (staging,), sfds = repack([lent], jfds + lent_fds)
        copied, _ = self.drv.request("spot_check", {"cmd": "copy_last", "staging": staging}, sfds)
        self._staged_request(sum(int(m.get("nbytes", 0)) for m in jr["staging"]))
        if copied.get("unreadable"):
            self.ev.read_failures.append({"phase": phase, "kind": "unreadable", "detail": str(copied.get("why"))[:300]})
        return copied, None, lent_fds

    def _fresh_call(self, phase: str, cmd: str, read_phase: str, check: bool,
                    stage: bool = True) -> tuple[dict, dict | None, Any, int, int]:
        """One candidate call (``time`` or ``profile``) on a fresh hidden input set, its output read.

        Staging is prepared before every such call (never only before a checked one), and
        in the trusted path it is never lent: every call looks the same to the candidate.
        Returns the candidate's reply, the read (``copied``, ``layouts``; ``None`` when the
        call failed) and the parent's send and receive stamps around the call.
        """
        # the trusted read on CUDA: the candidate exports its outputs and the judge copies them
        # into staging it never lends
        export = stage and self.ev.read_path == "trusted" and self.device.startswith("cuda")
        jr, jfds = self.s.request("timed_input", {"cmd": "timed_input", "seed": secrets.randbits(62), "stage": stage,
                                                  "private_stage": export, "spots": self._spot_count(),
                                                  "hold_bytes": self.cfg.spot_hold_bytes})
        copied, layouts = None, None
        try:
            (inputs,), fds = repack([jr["inputs"]], jfds)
            send = time.monotonic_ns()
            reply, _ = self.drv.request(phase, {"cmd": cmd, "inputs": inputs, "rng": jr.get("rng"), "export": export},
                                        fds)
            recv = time.monotonic_ns()
            if reply.get("ok") and stage:
                copied, layouts, lent_fds = self._read_output(read_phase, reply, jr, jfds, check)
                jfds = jfds + lent_fds  # closed with the call's own descriptors
        finally:
            close_fds(jfds)
        return reply, copied, layouts, send, recv

    def _protocol_probe(self) -> None:
        """This path's own overhead, before the candidate's code is imported (where the judge times the reference).

        RH-26 compares what a timed call's round trip holds beyond the worker's reported
        time with the reference's.  The reference's twin runs the candidate's path; the
        judge's path is shorter (no lent inputs to map, no descriptors, a smaller reply:
        1.5-4 ms less per call on a loaded two-core host), so where the judge times the
        reference, the comparison uses ``PROTOCOL_PROBES`` timed calls of the harness's
        trusted stand-in (the first input returned) on lent input sets of the problem's
        size, taken in the candidate's worker before anything of the candidate ran.  The
        worker then lets go of those inputs.  A probe that fails leaves the judge's
        samples as the comparison (the earlier behaviour).
        """
        samples = []
        for k in range(PROTOCOL_PROBES):
            reply, _, _, send, recv = self._fresh_call("protocol", "time", "protocol", False, stage=False)
            self.s.request("check_inputs", {"cmd": "check_inputs", "spot": False})
            if not reply.get("ok") or malformed_timing(reply):
                return
            samples.append(timing_sample(k, send, recv, reply))
        reply, _ = self.drv.request("protocol", {"cmd": "let_go"})
        if reply.get("ok"):
            self.ev.protocol_samples = samples

    def _profiled_call(self) -> None:
        """One forward under the profiler, on fresh hidden inputs; its output is judged like a spot check's.

        A candidate can tell that a profiler is active; judging this call's output keeps
        it from showing the profiler a kernel that does not compute the answer.
        """
        ev = self.ev
        reply, copied, layouts, _, _ = self._fresh_call("profile", "profile", "timing:profile", True)
        checked = bool(copied and copied.get("written"))
        verdict, _ = self.s.request("check_inputs", {"cmd": "check_inputs", "spot": checked, "layouts": layouts})
        if reply.get("ok"):
            ev.profile, ev.profile_error = checked_profile(reply)
            why = str((copied or {}).get("why") or "outputs were not written")[:300]
            ev.profile_comparison = (comparison(verdict.get("comparison")) if checked else None) or Comparison(
                False, float("inf"), float("inf"), why)
        else:  # the type only: the forward ran on hidden inputs
            ev.profile_error = f"raised {str(reply.get('error_name') or 'an exception')[:80]}"

    def _interleaver(self) -> interleave.Interleaver:
        """Reference blocks between the candidate's blocks (see :mod:`.interleave`), timed by the twin or the judge."""
        ev = self.ev

        twin = getattr(self.s, "twin", None)
        if ev.reference_timer == "twin" and twin is not None and twin.loaded:
            twin.drv.log = ev.requests  # the twin's calls count in this sample's request_ms

        def time_reference(block: int) -> TimingSample:
            n = len(ev.interleaved_reference_samples)
            if ev.reference_timer == "twin" and twin is not None:
                try:  # the same path as the candidate's calls
                    return twin.sample(n)
                except JudgeFailed as exc:
                    if n:  # one timer per evaluation: a twin lost midway fails the evaluation (RH-32/RH-44)
                        raise
                    # lost before its first sample (its warm-up ran out of memory, say): the judge times
                    # every reference sample of this evaluation instead, and the record says why
                    twin.give_up(f"the twin failed before its first sample: {exc}")
                    ev.reference_timer, ev.reference_timer_note = "judge", twin.error
            return interleave.reference_sample(self.s, n, timing_sample, malformed_timing)

        return interleave.Interleaver(self.cfg, ev, time_reference, self._held_for_reference)

    @contextlib.contextmanager
    def _held_for_reference(self) -> Iterator[None]:
        """The candidate frozen while the judge times a reference block (where the freezer works).

        Between its calls the candidate could otherwise keep a thread or a child busy to
        slow its competitor down.  A freeze that fails is recorded and the block is timed
        anyway (``reference_hold`` in the record's speedup entry says how many were held).
        """
        hold = self.ev.reference_hold
        with contextlib.ExitStack() as stack:
            frozen = False
            if self.ev.read_path == "trusted":  # else no freezer: timed with the candidate idle
                try:
                    stack.enter_context(self._frozen())
                    frozen = True
                except trusted_read.ReadFailed as exc:
                    hold.setdefault("failures", []).append(exc.detail[:200])
            key = "frozen_blocks" if frozen else "unheld_blocks"
            hold[key] = hold.get(key, 0) + 1
            yield
