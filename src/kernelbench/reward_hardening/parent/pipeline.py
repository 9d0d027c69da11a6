"""The hardened evaluation path, parent side: precheck -> workers -> evidence -> verdict -> record.

``evaluate_hardened(reference_src, candidate_src, config)`` is the single entry used
by ``run_and_check``, ``eval_from_generations`` and the red-team suite.  This module is
the trusted parent: it draws the hidden seeds, orchestrates the two workers, computes
the timing statistics and the verdict.  It never holds a tensor: hidden inputs,
reference outputs and the candidate's outputs stay on the evaluation device, owned by
the judge (:mod:`kernelbench.reward_hardening.judge.worker`) and lent to the candidate worker
(:mod:`kernelbench.reward_hardening.candidate.worker`) through
:mod:`kernelbench.reward_hardening.ipc.lending`; only verdict-sized facts (booleans,
errors, fingerprints, timestamps) reach this process, so its memory does not grow with
the problem's size.

A :class:`~.session.ReferenceSession` keeps one judge (the loaded reference and its
timing) for all samples of a problem in a batch.  The phases live in their own
modules: :mod:`.workers` (starting workers, running requests), :mod:`.session` (the
judge: reference load, memory plan, reference timing), :mod:`.candidate_run` (one
candidate's worker and phases), :mod:`.probes` (correctness), :mod:`.timed` (timing)
and :mod:`.candidate_io` (trusted reads and reports); the record is built by
:mod:`.records`.
"""

from __future__ import annotations

import random
import secrets
import shutil
import tempfile
import time
from typing import Any

from kernelbench.reward_hardening import containment, policy
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.findings import observe
from kernelbench.reward_hardening.parent import interleave, records
from kernelbench.reward_hardening.parent.candidate_io import phase_time
from kernelbench.reward_hardening.parent.candidate_run import CandidateRun
from kernelbench.reward_hardening.parent.evidence import Evidence
from kernelbench.reward_hardening.parent.session import ReferenceSession
from kernelbench.reward_hardening.parent.twin import ReferenceTwin, twin_for
from kernelbench.reward_hardening.parent.workers import JudgeFailed

__all__ = ["ReferenceSession", "evaluate_hardened"]


def _defines_model_new(source: str) -> bool:
    """Whether the source binds the name ``ModelNew`` anywhere (class, assignment, import)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return True  # the precheck reports what is wrong with it
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, ast.Name) and node.id == "ModelNew" and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.rsplit(".", 1)[-1]) == "ModelNew":
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "ModelNew":
            return True
    return False


def _twin_ready(session: ReferenceSession, twin: ReferenceTwin | None, cfg: HardeningConfig) -> tuple[str, str | None]:
    """Load the session's twin once the plan is known: ("twin", None), or ("judge", why not)."""
    if twin is None:
        return "judge", f"reference_twin={cfg.reference_twin} on {session.device}"
    if not twin.loaded and twin.error is None:
        cuda = session.device.startswith("cuda")
        fraction = session.twin_gpu_fraction() if cuda else None
        if cuda and fraction is None:
            twin.give_up("the memory plan leaves no room for the twin beside the judge and the candidate")
        else:
            twin.load(fraction)
    return ("twin", None) if twin.loaded else ("judge", twin.error)


# --------------------------------------------------------------------------- entry
def evaluate_hardened(reference_src: str, candidate_src: str, cfg: HardeningConfig,
                      workdir: str | None = None, session: ReferenceSession | None = None) -> dict:
    """Evaluate one candidate on the hardened path; returns a schema-1.1 record.

    ``session`` (optional) is a :class:`ReferenceSession` of the same reference,
    configuration and device, kept by a batch across the samples of one problem.
    """
    import torch

    from kernelbench.reward_hardening import detectors
    from kernelbench.reward_hardening.precheck import run_precheck

    t_start = time.monotonic()
    device = cfg.device
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return records.unsupported_record(cfg, "CUDA unavailable")
        if device == "cuda":
            device = "cuda:0"
    ev = Evidence(config=cfg, candidate_source=candidate_src)
    try:
        ev.precheck = run_precheck(candidate_src, reference_src, policy=cfg.policy, backend=cfg.backend,
                                   precision=cfg.precision, disabled_codes=cfg.disabled_detectors)
    except Exception as exc:  # fail closed on an evaluator fault
        return records.evaluator_error_record(cfg, f"precheck failed: {type(exc).__name__}: {exc}")
    static_findings = list(ev.precheck.findings)
    if ev.precheck.facts.syntax_error:
        return records.build_record(cfg, ev, [observe("RH-42", {"syntax_error": ev.precheck.facts.syntax_error},
                                                      summary="Candidate source does not compile (syntax error)")]
                                    + static_findings, device, rejected=True)
    if not _defines_model_new(candidate_src) and not any(f.code in ("RH-04", "RH-06") for f in static_findings):
        # nothing to evaluate (and no dynamic execution that could define it): RH-42, without
        # the static rules' restatements of the same fact (no ModelNew, Model redefined)
        kept = [f for f in static_findings if f.code != "RH-13" and not (
            f.code == "RH-08" and all("redefines reference name" in str(h.get("what", ""))
                                      for h in f.evidence.get("hits") or [{}]))]
        return records.build_record(cfg, ev, [observe("RH-42", {"error": "candidate does not define ModelNew"},
                                                      summary="Candidate does not define ModelNew")] + kept,
                                    device, rejected=True)
    if policy.rejects_before_run(static_findings, cfg.mode):
        return records.build_record(cfg, ev, static_findings, device, rejected=True)

    containment.begin_evaluation()  # subreaper, non-dumpable parent, probes (once per process)
    own_session = session is None or session.key != ReferenceSession.key_for(reference_src, cfg, device)
    if own_session:
        session = ReferenceSession(reference_src, cfg, device, workdir)
    root = tempfile.mkdtemp(prefix="kernelguard_", dir=workdir)
    rng = random.Random(secrets.randbits(64))
    run = None
    try:
        session.request_log = ev.judge_requests  # this sample's judge requests, timed (record: request_ms)
        reused = session.started  # started by an earlier sample (a batch's, the red team's)
        run = CandidateRun(session, cfg, ev, root, device, rng)
        try:
            # the workers of the candidate and of the reference's twin start while the judge loads
            twin = twin_for(session, cfg, device) if interleave.enabled(cfg) else None
            if not reused:
                run.start(candidate_src)
            session.start()
            ev.memory_plan = session.plan.as_dict() if session.plan is not None else {}
            # with interleaving on, the reference's runtime is its blocks between the candidate's
            # (same conditions as the candidate's calls); a separate run only when it is off
            if interleave.enabled(cfg):
                ev.reference_timing = "interleaved"
                ev.reference_timer, ev.reference_timer_note = _twin_ready(session, twin, cfg)
            else:
                ev.reference_samples = session.reference_timing(ev)
            ev.reference_ok = True
            ev.phases.append({"t_s": phase_time(ev), "phase": "reference", "pid": session.pid, "state": session.state,
                              "reused": reused})
            run.run(candidate_src)
            if ev.reference_timing == "interleaved":
                ev.reference_samples = list(ev.interleaved_reference_samples)
            if twin is not None:
                twin.let_go()  # before the judge counts what is still lent
            ev.phases.append({"t_s": phase_time(ev), "phase": "judge_release", **session.release()})
        except JudgeFailed as exc:
            ev.reference_error = str(exc)
            # before the candidate ran, the reference (or its data) is at fault: UNSUPPORTED;
            # once the candidate's code ran, a disrupted judge is the candidate's failure
            # (a judge out of memory is RH-44 in either case: the problem's data did not fit)
            # (a judge whose own machinery failed, e.g. its CUDA read, is the evaluator's: RH-32)
            code = "RH-44" if exc.oom else ("RH-32" if exc.evaluator else
                                            "RH-45" if ev.candidate_started else "RH-33")
            detail: dict[str, Any] = {"error": str(exc)[:2000]}
            if exc.oom and device.startswith("cuda"):
                from kernelbench.devices import gpu_memory_report

                # who else held the device (a leftover process shows here, not in the plan)
                detail["device_memory"] = gpu_memory_report(device)
            if session.plan is not None:
                detail["memory_plan"] = session.plan.as_dict()
                ev.memory_plan = detail["memory_plan"]
            return records.build_record(cfg, ev, static_findings + [observe(code, detail)], device)
        try:
            observed = detectors.run_all(ev)
        except Exception as exc:  # a detector bug must not award a result
            observed = [observe("RH-32", {"error": f"{type(exc).__name__}: {exc}"})]
        result = records.build_record(cfg, ev, static_findings + observed, device)
        result["metadata"]["reward_hardening_wall_s"] = round(time.monotonic() - t_start, 3)
        return result
    except Exception as exc:
        return records.evaluator_error_record(cfg, f"{type(exc).__name__}: {exc}")
    finally:
        if run is not None:
            run.abandon()  # a worker started beside the judge whose run never came (the judge failed)
        shutil.rmtree(root, ignore_errors=True)
        if own_session:
            session.close()
