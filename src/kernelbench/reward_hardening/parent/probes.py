"""The correctness probes of a candidate: hidden inputs, the canary repeat, perturbations (parent).

Each probe's inputs come from the judge (hidden seeds drawn here); the candidate's
outputs reach the judge's staging buffers (trusted read or the harness's copy) and
the judge compares them with the reference's.  Only verdict-sized facts come back,
collected in a :class:`~kernelbench.reward_hardening.parent.evidence.CallRecord`.
"""

from __future__ import annotations

import secrets

from kernelbench.reward_hardening.config import PRECISION_PROFILE_MIN_ERROR, HardeningConfig
from kernelbench.reward_hardening.detectors.process_state import baseline_threads, concurrency_hits
from kernelbench.reward_hardening.ipc.wire import checked_call_reply
from kernelbench.reward_hardening.judge.compare import Comparison, tolerance
from kernelbench.reward_hardening.parent.candidate_io import CandidateIO, comparison
from kernelbench.reward_hardening.parent.evidence import CallRecord, ProbeInput
from kernelbench.reward_hardening.parent.workers import close_fds, repack

__all__ = ["CorrectnessProbes", "correctness_jobs"]


def _rel_limit(cfg: HardeningConfig) -> float:
    """The norm-relative error a passing output may have (RH-28's limit; the heavy-tail probe's criterion)."""
    return max(cfg.rel_tol_floor, 10 * tolerance(cfg.precision))


def correctness_jobs(cfg: HardeningConfig) -> list[dict]:
    """The probes of one candidate: hidden inputs (fresh seeds), the canary repeat, the perturbations."""
    n = max(1, cfg.num_correct_trials)
    jobs = [{"kind": "hidden", "index": i, "seed": secrets.randbits(62)} for i in range(n)]
    jobs[0]["keep_first"] = True
    if cfg.precision == "fp32" and cfg.precision_variants:
        jobs[0]["variants"] = list(cfg.precision_variants)
    jobs.append({"kind": "canary_repeat", "index": -1, "repeat_first": True})
    jobs += [{"kind": f"perturb:{p}", "index": n + i, "seed": secrets.randbits(62), "perturb": p}
             for i, p in enumerate(cfg.perturbations)]
    # the settle pause after the first probe and after hidden-random others (a candidate
    # learns whether a call was paused only after its outputs were read once)
    paused = {0, *secrets.SystemRandom().sample(range(1, len(jobs)), min(max(cfg.settle_pauses - 1, 0),
                                                                          len(jobs) - 1))}
    for i, job in enumerate(jobs):
        job["pause"] = cfg.settle_pauses > 0 and i in paused
    return jobs


def _structure_problem(reference: dict, evidence: dict) -> str | None:
    """Why the candidate's output structure differs from the reference's, or ``None``."""
    want = reference.get("container", "tensor")
    got = evidence.get("container")
    n_want = len([o for o in reference.get("outputs", []) if "shape" in o])
    n_got = len(evidence.get("tensors", []))
    if evidence.get("problem"):
        return evidence["problem"]
    if (want == "tensor") != (got == "tensor") or n_want != n_got:
        return f"returns {got} of {n_got} tensor(s); the reference returns {want} of {n_want}"
    return None


class CorrectnessProbes(CandidateIO):
    """The correctness phase of a candidate run (one call per probe)."""

    def _unsettled(self, rec: CallRecord) -> bool:
        """Whether a returned call left work behind: its output changed between the reads, or threads ran on."""
        if not rec.ok:
            return False
        return not rec.stable or bool(concurrency_hits(rec.concurrency, baseline_threads(self.ev)))

    def _correctness_call(self, job: dict) -> None:
        ev = self.ev
        trusted = ev.read_path == "trusted"
        header = {"cmd": "probe", "rel_limit": _rel_limit(self.cfg),
                  **{k: job[k] for k in ("seed", "perturb", "keep_first", "repeat_first") if k in job}}
        jr, jfds = self.s.request("probe", header)
        layouts: dict = {}
        try:
            if jr.get("skipped"):
                ev.skipped_probes.append({"probe": job["kind"], "reason": jr["skipped"]})
                return
            if jr.get("perturb_skipped"):
                ev.skipped_probes.append({"probe": job["kind"], "reason": "; ".join(jr["perturb_skipped"])[:300]})
            probe = ProbeInput(job["kind"], [], [], bool(jr.get("finite", True)), job["index"])
            probe.reference = jr.get("reference") or {}
            probe.perturbation = jr.get("perturbation")
            out_bytes = sum(int(m.get("nbytes", 0)) for m in jr["staging"])
            if trusted:
                # nothing but the inputs is lent: a correctness call maps what a timed call maps
                (inputs,), fds = repack([jr["inputs"]], jfds)
                reply, _ = self.drv.request("correctness", {"cmd": "call", "inputs": inputs, "rng": jr.get("rng"),
                                                            "export": self.device.startswith("cuda")}, fds)
                if reply.get("ok") and "outputs" in reply:  # (a rejected result type has no facts to read)
                    wa, layouts["layouts_a"], why_a = self._trusted_read(f"call:{job['kind']}", reply.get("outputs"),
                                                                         jr["staging"], jfds)
                    settled, _ = self.drv.request("settle", {"cmd": "settle", "pause": job.get("pause", True)})
                    if not settled.get("ok"):
                        reply = settled
                    else:
                        wb, layouts["layouts_b"], why_b = (
                            self._trusted_read(f"settle:{job['kind']}", reply.get("outputs"), jr["staging_after"],
                                               jfds) if wa else (False, None, why_a))
                        reply = {**reply, **{k: settled.get(k) for k in ("concurrency", "apis", "state", "l2",
                                                                         "identity_changed", "dispatch")},
                                 "written": wa and wb, "stage_problem": why_a or why_b}
            else:
                stages, lent_fds = self._lendable("probe", [jr["staging"], jr["staging_after"]], jfds)
                jfds = jfds + lent_fds  # closed with the probe's own descriptors
                (inputs, stage_a, stage_b), fds = repack([jr["inputs"], *stages], jfds)
                reply, _ = self.drv.request("correctness", {"cmd": "call", "inputs": inputs, "staging": stage_a,
                                                            "staging_after": stage_b, "rng": jr.get("rng"),
                                                            "pause": job.get("pause", True)}, fds)
                if reply.get("ok") and not self.device.startswith("cuda"):
                    # the request held forward, the pause and two staging copies (on CUDA call_ms
                    # ends at the host's return, before the device finished forward: not comparable)
                    pause_ms = 1e3 * self.cfg.settle_s if job.get("pause", True) else 0.0
                    self._staged_request(2 * out_bytes, (reply.get("call_ms") or 0.0) + pause_ms)
                    if reply.get("unreadable"):
                        ev.read_failures.append({"phase": f"call:{job['kind']}", "kind": "unreadable",
                                                 "detail": str(reply.get("stage_problem"))[:300]})
        finally:
            close_fds(jfds)
        rec = CallRecord(probe, bool(reply.get("ok")), judged_by=str(jr.get("judged_by") or "allclose"))
        written = bool(reply.get("written")) if rec.ok else False
        verdict, _ = self.s.request("judge", {"cmd": "judge", "written": written, **layouts})
        rec.inputs_unchanged = bool(verdict.get("inputs_unchanged"))
        if rec.ok:
            ev.dispatch.append({"phase": f"call:{job['kind']}", "changed": reply.get("dispatch")})
            fields = checked_call_reply(reply)
            rec.evidence, rec.call_ms = fields["evidence"], fields["call_ms"]
            rec.concurrency, rec.apis, rec.state, rec.l2 = (fields["concurrency"], fields["apis"], fields["state"],
                                                            fields["l2"])
            problem = _structure_problem(probe.reference, rec.evidence)
            if problem:
                rec.evidence["structure_problem"] = problem
            cmp = judged = comparison(verdict.get("comparison"))
            if cmp is None or problem:
                why = problem or reply.get("stage_problem") or "outputs were not written"
                cmp = Comparison(False, float("inf"), float("inf"), str(why)[:300])
            rec.comparison = cmp
            after = comparison(verdict.get("after"))
            rec.stable = bool(verdict.get("stable")) and not reply.get("identity_changed") and (
                after is None or judged is None or after.match == judged.match)
            rec.replay = bool(verdict.get("replay"))
        else:
            rec.error = str(reply.get("error") or "")
            rec.error_name = str(reply.get("error_name") or "")[:200]
            rec.traceback = str(reply.get("traceback") or "")[-4000:]
            if isinstance(reply.get("oom"), dict):
                rec.oom = self._oom_event(f"correctness:{job['kind']}", reply["oom"])
        ev.calls.append(rec)

    def _precision_profile(self, names: list[str] | None) -> None:
        """RH-38's error profile: the reference's reduced-precision errors on the first hidden input.

        Asked of the judge after every probe was answered, and only where the candidate's
        answer to the first hidden input was right with a norm-relative error above fp32
        rounding (``PRECISION_PROFILE_MIN_ERROR``): the detector looks at the variants for
        no other answer, so an exact answer (a correct fp32 kernel's usual case) costs no
        bf16, fp16 and TF32 forwards of the reference (about 0.2 s a sample on upstream's
        level-2 problems).  Asked after the last probe, so no later answer can follow it.
        """
        first = next((c for c in self.ev.calls if c.probe.kind == "hidden" and c.probe.index == 0), None)
        cmp = first.comparison if first is not None and first.ok else None
        if not names or cmp is None or not cmp.match or not cmp.rel_error > PRECISION_PROFILE_MIN_ERROR:
            return
        reply, fds = self.s.request("variants", {"cmd": "variants", "variants": list(names)})
        close_fds(fds)
        first.variant_errors = reply.get("variants") or {}
