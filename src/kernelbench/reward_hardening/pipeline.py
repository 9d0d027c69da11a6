"""The hardened evaluation path: precheck -> workers -> evidence -> verdict -> record.

``evaluate_hardened(reference_src, candidate_src, config)`` is the single entry used
by ``run_and_check``, ``eval_from_generations`` and the red-team suite.  The parent
process (this module) owns the hidden seeds, the reference outputs, every comparison,
the timing statistics and the verdict; the workers only report raw evidence.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import tempfile
import time
from typing import Any

from kernelbench.procs import (
    FrameError,
    ResponseTooLarge,
    WorkerCrashed,
    WorkerHandle,
    WorkerTimeout,
    scrubbed_env,
    values_from_wire,
    values_to_wire,
)
from kernelbench.reward_hardening import containment, records
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.evidence import (
    CallRecord,
    Evidence,
    ProbeInput,
    TimingSample,
    WorkerEvent,
)
from kernelbench.reward_hardening.findings import finding

__all__ = ["evaluate_hardened"]

_WORKER_TARGET = "kernelbench.reward_hardening.worker:worker_main"


class _PhaseFailed(Exception):
    """A worker request failed; the event is already recorded."""


# --------------------------------------------------------------------------- wire helpers
def _digest_values(values: list) -> list:
    import hashlib

    import torch

    from kernelbench.procs import tensor_to_wire

    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            meta, data = tensor_to_wire(v)
            h = hashlib.sha256(repr(meta).encode())
            h.update(data)
            out.append(h.hexdigest())
        else:
            out.append(None)
    return out


def _manifest(root: str, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    if not root or not os.path.isdir(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir != "." and rel_dir.split(os.sep)[0] in skip:
            dirnames[:] = []
            continue
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel.split(os.sep)[0] in skip:
                continue
            try:
                st = os.lstat(path)
                out[rel] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue
    return out


_RESULT_FILES = ("eval_results.json", "verified_eval_results.json", "pass_at_k_results.json")


def _without_results(manifest: dict) -> dict:
    """Drop the batch's own result files (and their atomic-write temp files) from a manifest."""
    return {k: v for k, v in manifest.items()
            if not any(k == r or (k.startswith(f".{r}.") and k.endswith(".tmp")) for r in _RESULT_FILES)}


def _diff_manifest(before: dict, after: dict) -> dict[str, list[str]]:
    created = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return {"created": created, "deleted": deleted, "changed": changed}


def _t(ev: Evidence) -> float:
    return round(time.monotonic() - ev.t0, 3)


# --------------------------------------------------------------------------- worker driver
class _Driver:
    """Runs requests against one worker and turns failures into WorkerEvents."""

    def __init__(self, role: str, handle: WorkerHandle, ev: Evidence, timeout: float):
        self.role, self.handle, self.ev, self.timeout = role, handle, ev, timeout

    def request(self, phase: str, header: dict, blobs: list[bytes] | None = None,
                timeout: float | None = None) -> tuple[dict, list[bytes]]:
        try:
            reply, rblobs = self.handle.request(header, blobs, timeout or self.timeout)
        except WorkerTimeout as exc:
            self._event(phase, "timeout", str(exc))
        except ResponseTooLarge as exc:
            self._event(phase, "too_large", str(exc))
        except FrameError as exc:
            self._event(phase, "frame", str(exc))
        except WorkerCrashed as exc:
            self._event(phase, "crash", str(exc))
        if reply.get("fatal"):
            self._event(phase, "crash", reply.get("error", "worker died"))
        return reply, rblobs

    def wait_ready(self) -> dict:
        try:
            reply, _ = self.handle.receive(max(self.timeout, 60.0))
        except WorkerTimeout as exc:
            self._event("start", "timeout", str(exc))
        except (WorkerCrashed, FrameError, ResponseTooLarge) as exc:
            self._event("start", "crash", str(exc))
        if reply.get("event") != "ready":
            self._event("start", "crash", reply.get("error", "worker did not start"))
        return reply

    def _event(self, phase: str, kind: str, detail: str) -> None:
        self.ev.events.append(WorkerEvent(self.role, phase, kind, detail))
        self.handle.kill()
        raise _PhaseFailed(detail)


def _start_worker(role: str, workspace: str, source_path: str, cfg: HardeningConfig, device: str) -> WorkerHandle:
    build_dir = cfg.build_dir or os.path.join(workspace, "build")
    os.makedirs(build_dir, exist_ok=True)
    tmp = os.path.join(workspace, "tmp")
    env = scrubbed_env({"TORCH_EXTENSIONS_DIR": build_dir,
                        # JIT caches live with the build (persistent per source) or in tmp/
                        "TRITON_CACHE_DIR": os.path.join(build_dir, "triton_cache"),
                        "XDG_CACHE_HOME": os.path.join(tmp, ".cache"),
                        # the CUDA driver's PTX JIT cache (default $HOME/.nv): cuDNN JIT-compiles
                        # kernels shipped only as PTX on a newer GPU (seen on the H200 for a
                        # conv2d), which would otherwise read as a workspace write (RH-27)
                        "CUDA_CACHE_PATH": os.path.join(tmp, ".nv", "ComputeCache"),
                        "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor")}, workspace=workspace)
    spec = {
        "role": role, "source_path": source_path, "device": device, "precision": cfg.precision,
        "allow_tf32": cfg.allow_tf32, "num_threads": cfg.num_threads, "build_dir": build_dir,
        "workspace": workspace, "env": env, "log_path": os.path.join(workspace, "..", f"{role}.log"),
        "settle_s": cfg.settle_s, "keep_alive_bytes": cfg.keep_alive_bytes,
        "launch_hold_cycles": cfg.launch_hold_cycles,
        "gpu_memory_fraction": cfg.gpu_memory_fraction,
    }
    spec["log_path"] = os.path.abspath(spec["log_path"])
    # the reference worker runs the trusted problem file: its replies (all hidden inputs and
    # outputs) are not size-limited; the candidate's are
    limit = cfg.response_limit_bytes if role == "candidate" else 1 << 46
    # containment: own cgroup leaf; the candidate is sandboxed in the child (containment.enter)
    unit = containment.new_unit(role)
    spec["containment"] = unit.child_spec(private=[os.path.dirname(os.path.dirname(os.path.abspath(workspace)))])
    handle = WorkerHandle(_WORKER_TARGET, spec, max_response_bytes=limit, log_limit_bytes=cfg.log_limit_bytes)
    handle.start()
    unit.attach(handle.pid)
    handle.unit = unit
    return handle


# --------------------------------------------------------------------------- phases
def _run_reference(ref_src: str, cfg: HardeningConfig, root: str, device: str, ev: Evidence,
                   rng: random.Random) -> dict | None:
    """Hidden inputs, reference outputs and reference timing, from a reference worker."""
    workspace = os.path.join(root, "reference")
    os.makedirs(workspace)
    src_path = os.path.join(workspace, "reference_program.py")
    with open(src_path, "w") as fh:
        fh.write(ref_src)
    handle = _start_worker("reference", workspace, src_path, cfg, device)
    drv = _Driver("reference", handle, ev, max(cfg.timeout, 30.0))
    data: dict[str, Any] = {}
    try:
        drv.wait_ready()
        reply, blobs = drv.request("load", {"cmd": "load"})
        if not reply.get("ok"):
            raise RuntimeError(reply.get("error", "reference failed to load"))
        data["init_items"], data["init_blobs"] = reply.get("init_inputs", []), blobs
        data["state"] = reply.get("state", {})
        data["pid"] = reply.get("pid")
        jobs = [{"seed": secrets.randbits(62), "kind": "hidden"} for _ in range(max(1, cfg.num_correct_trials))]
        if cfg.precision == "fp32" and cfg.precision_variants:
            jobs[0]["variants"] = list(cfg.precision_variants)
        jobs += [{"seed": secrets.randbits(62), "kind": f"perturb:{p}", "perturb": p} for p in cfg.perturbations]
        jobs += [{"seed": secrets.randbits(62), "kind": "bank", "no_outputs": True}
                 for _ in range(max(1, cfg.timing_bank_size))]
        reply, blobs = drv.request("gen", {"cmd": "gen", "jobs": [{k: v for k, v in j.items() if k != "kind"}
                                                                  for j in jobs]})
        if not reply.get("ok"):
            raise RuntimeError(reply.get("error", "reference failed to generate inputs"))
        probes, bank = [], []
        for i, (job, res) in enumerate(zip(jobs, reply["jobs"])):
            p = ProbeInput(job["kind"], values_from_wire(res["inputs"], blobs),
                           values_from_wire(res["outputs"], blobs), bool(res.get("finite", True)), i,
                           {k: values_from_wire(v, blobs) for k, v in (res.get("variants") or {}).items()})
            (bank if job["kind"] == "bank" else probes).append(p)
        # drop perturbations the problem cannot take (non-finite reference output)
        probes = [p for p in probes if p.finite or p.kind == "hidden"]
        data["probes"], data["bank"] = probes, bank
        # timing plan: (bank index, roll) per sample; spot-checked samples chosen now, hidden
        n = max(1, cfg.num_perf_trials)
        plan = [(rng.randrange(len(bank)), rng.randrange(1, 1 << 30)) for _ in range(cfg.num_warmup + n)]
        n_spot = max(2, int(round(cfg.spot_check_fraction * n)))
        spots = sorted(rng.sample(range(cfg.num_warmup, cfg.num_warmup + n), min(n_spot, n)))
        spot_ref = {}
        for k in spots:
            b, r = plan[k]
            items, iblobs = values_to_wire(bank[b].inputs)
            reply, oblobs = drv.request("outputs", {"cmd": "outputs", "inputs": items, "roll": r}, iblobs)
            if not reply.get("ok"):
                raise RuntimeError(reply.get("error", "reference failed on a timing input"))
            spot_ref[k] = values_from_wire(reply["outputs"], oblobs)
        data["plan"], data["spots"], data["spot_ref"] = plan, spots, spot_ref
        # reference timing, same protocol as the candidate
        ev.phases.append({"t_s": _t(ev), "phase": "reference_inputs", "pid": data["pid"], "state": data["state"]})
        ev.reference_samples = _timing_loop(drv, bank, plan, cfg, spots=set(), spot_ref={})
        ev.phases.append({"t_s": _t(ev), "phase": "reference_timing", "pid": data["pid"]})
        ev.reference_ok = True
        return data
    except _PhaseFailed as exc:
        ev.reference_error = str(exc)
        return None
    except Exception as exc:
        ev.reference_error = f"{type(exc).__name__}: {exc}"
        return None
    finally:
        handle.close()
        ev.containment["reference"] = handle.unit.sweep(handle.process.exitcode)


def _timing_loop(drv: _Driver, bank: list[ProbeInput], plan: list[tuple[int, int]], cfg: HardeningConfig,
                 spots: set, spot_ref: dict) -> list[TimingSample]:
    items, blobs = [], []
    for p in bank:
        it, bl = values_to_wire(p.inputs)
        for x in it:
            if "blob" in x:
                x["blob"] += len(blobs)
        items.append(it)
        blobs.extend(bl)
    reply, _ = drv.request("bank", {"cmd": "bank", "bank": items}, blobs)
    if not reply.get("ok"):
        raise RuntimeError(f"bank: {reply.get('error')}")
    samples: list[TimingSample] = []
    for k, (b, r) in enumerate(plan):
        send = time.monotonic_ns()
        reply, _ = drv.request("timing", {"cmd": "time", "bank_index": b, "roll": r})
        recv = time.monotonic_ns()
        if not reply.get("ok"):
            raise RuntimeError(f"timing call failed: {reply.get('error')}")
        if k < cfg.num_warmup:
            continue
        bad = _malformed_timing(reply)
        if bad:
            raise RuntimeError(f"malformed timing reply: {bad}")
        s = TimingSample(k, send, recv, reply["t0"], reply["t_ret"], reply["t1"],
                         reply.get("event_ms"), reply.get("threads_delta", 0), b, r,
                         t_evt=reply.get("t_evt"), l2=reply.get("l2"), window_ms=reply.get("window_ms"))
        if k in spots:
            rep, oblobs = drv.request("spot_check", {"cmd": "last"})
            if not rep.get("ok"):
                raise RuntimeError(f"spot check failed: {rep.get('error')}")
            s.spot_outputs = values_from_wire(rep["outputs"], oblobs)
            s.spot_ref = spot_ref.get(k)
        samples.append(s)
    return samples


def _num(x: Any, none_ok: bool = False) -> bool:
    """A JSON number (``bool`` excluded), or ``None`` where that is allowed."""
    return (x is None and none_ok) or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _int(x: Any, none_ok: bool = False) -> bool:
    """A JSON integer (``bool`` excluded), or ``None`` where that is allowed."""
    return (x is None and none_ok) or (isinstance(x, int) and not isinstance(x, bool))


def _malformed_timing(reply: dict) -> str | None:
    """Why a timing reply does not have the shape the harness sends, or ``None``.

    The reply comes from the candidate's process: junk in it must end as a
    candidate-side timing error (no trusted time), not as an evaluator crash.  Values
    of the right type are judged by the timing detectors (RH-26 checks the order).
    """
    if not all(_int(reply.get(k)) for k in ("t0", "t_ret", "t1")):
        return "t0/t_ret/t1 must be integer nanosecond clock readings"
    if not all(_num(reply.get(k), True) for k in ("event_ms", "window_ms")):
        return "event_ms/window_ms must be numbers"
    if not _int(reply.get("t_evt"), True):
        return "t_evt must be an integer clock reading"
    if not _int(reply.get("threads_delta", 0)):
        return "threads_delta must be an integer"
    l2 = reply.get("l2")
    if l2 is not None and not (isinstance(l2, dict) and all(_num(v, True) for v in l2.values())):
        return "l2 must be a mapping of numbers"
    return None


def _checked_profile(reply: dict) -> tuple[dict | None, str | None]:
    """The profiler reply, if every field has the shape the harness sends; else an error.

    The reply comes from the candidate's process, which can replace the harness; a
    malformed reply leaves the profiler capability unsupported instead of crashing a
    detector or the record.
    """
    ops, kernels = reply.get("ops"), reply.get("kernels")
    ok = (_num(reply.get("wall_ms")) and isinstance(ops, list) and isinstance(kernels, list)
          and all(isinstance(o, dict) and isinstance(o.get("name"), str) and _num(o.get("self_cpu_us"))
                  and _num(o.get("device_us"), True) for o in ops)
          and all(isinstance(k, dict) and isinstance(k.get("name"), str) and _num(k.get("device_us"))
                  and _num(k.get("start_us"), True) and _num(k.get("stream"), True) for k in kernels)
          and _num(reply.get("current_stream"), True) and isinstance(reply.get("marker_seen", False), bool)
          and isinstance(reply.get("profile_errors") or [], list))
    if not ok:
        return None, "malformed profiler reply"
    return {k: reply.get(k) for k in ("wall_ms", "ops", "kernels", "marker_seen", "current_stream",
                                      "profile_errors")}, None


def _run_candidate(cand_src: str, cfg: HardeningConfig, root: str, device: str, ev: Evidence,
                   ref: dict) -> None:
    workspace = os.path.join(root, "candidate")
    os.makedirs(workspace)
    src_path = os.path.join(workspace, "candidate.py")
    with open(src_path, "w") as fh:
        fh.write(cand_src)
    os.chmod(src_path, 0o444)
    skip = ("tmp", "build")
    before = _manifest(workspace, skip)
    watched = {d: _manifest(d) for d in cfg.watch_dirs}
    handle = _start_worker("candidate", workspace, src_path, cfg, device)
    drv = _Driver("candidate", handle, ev, cfg.timeout)
    try:
        ready = drv.wait_ready()
        handle.unit.verify()  # what the kernel says the candidate runs under
        ev.baseline = {k: ready.get(k) for k in ("state", "apis", "concurrency", "pid", "l2")}
        ev.phases.append({"t_s": _t(ev), "phase": "start", "pid": ready.get("pid"), "state": ready.get("state")})
        reply, _ = drv.request("load", {"cmd": "load", "init_inputs": ref["init_items"]}, ref["init_blobs"])
        if not reply.get("ok"):
            ev.load_error = reply.get("error", "load failed")
            ev.completed = True
            return
        ev.loaded = True
        ev.load_snapshot = {k: reply.get(k) for k in ("state", "apis", "concurrency", "pid", "load_ms")}
        ev.phases.append({"t_s": _t(ev), "phase": "load", "pid": reply.get("pid"), "state": reply.get("state")})
        # correctness: hidden inputs, then a repeated-input canary, then perturbations
        hidden = [p for p in ref["probes"] if p.kind == "hidden"]
        order = hidden + ([ProbeInput("canary_repeat", hidden[0].inputs, hidden[0].ref_outputs, True, -1)]
                          if hidden else []) + [p for p in ref["probes"] if p.kind.startswith("perturb:")]
        for probe in order:
            items, blobs = values_to_wire(probe.inputs)
            reply, oblobs = drv.request("correctness", {"cmd": "call", "inputs": items}, blobs)
            rec = CallRecord(probe, bool(reply.get("ok")), input_digests_before=_digest_values(probe.inputs))
            if rec.ok:
                rec.outputs = values_from_wire(reply.get("outputs", []), oblobs)
                rec.evidence = reply.get("evidence", {})
                rec.stable = bool(reply.get("stable", False))
                rec.input_digests_after = reply.get("input_digests_after", [])
                rec.concurrency = reply.get("concurrency", {})
                rec.apis = reply.get("apis", {})
                rec.state = reply.get("state", {})
                rec.l2 = reply.get("l2")
                rec.call_ms = float(reply.get("call_ms", 0.0))
            else:
                rec.error = reply.get("error")
            ev.calls.append(rec)
        ev.phases.append({"t_s": _t(ev), "phase": "correctness", "pid": handle.pid,
                          "state": ev.calls[-1].state if ev.calls else None})
        all_correct = all(c.ok for c in ev.calls)
        if all_correct:
            ev.samples = _timing_loop(drv, ref["bank"], ref["plan"], cfg, set(ref["spots"]), ref["spot_ref"])
        reply, _ = drv.request("final", {"cmd": "snapshot"})
        ev.final_snapshot = reply
        ev.phases.append({"t_s": _t(ev), "phase": "timing", "pid": reply.get("pid"), "state": reply.get("state")})
        # last: the profiler starts threads of its own, so it runs after the final snapshot
        if cfg.profile_backend and hidden:
            items, blobs = values_to_wire(hidden[0].inputs)
            reply, _ = drv.request("profile", {"cmd": "profile", "inputs": items}, blobs)
            if reply.get("ok"):
                ev.profile, ev.profile_error = _checked_profile(reply)
            else:
                ev.profile_error = reply.get("error")
            ev.phases.append({"t_s": _t(ev), "phase": "profile", "pid": handle.pid})
        ev.completed = True
    except _PhaseFailed:
        pass
    except RuntimeError as exc:  # a candidate-side error during timing
        ev.events.append(WorkerEvent("candidate", "timing", "error", str(exc)))
    finally:
        handle.close()
        ev.exit_code = handle.process.exitcode if handle.process is not None else None
        ev.containment["candidate"] = handle.unit.sweep(ev.exit_code)
        ev.log_text, ev.log_size = handle.read_log()
        after = _manifest(workspace, skip)
        ev.workspace_changes = _diff_manifest(before, after)
        for d, snap in watched.items():
            diff = _diff_manifest(_without_results(snap), _without_results(_manifest(d)))
            for k in ("created", "deleted", "changed"):
                ev.workspace_changes.setdefault(k, []).extend(os.path.join(d, p) for p in diff[k])


# --------------------------------------------------------------------------- entry
def evaluate_hardened(reference_src: str, candidate_src: str, cfg: HardeningConfig,
                      workdir: str | None = None) -> dict:
    """Evaluate one candidate on the hardened path; returns a schema-1.1 record."""
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
    ev = Evidence(config=cfg)
    try:
        ev.precheck = run_precheck(candidate_src, reference_src, policy=cfg.policy, backend=cfg.backend,
                                   precision=cfg.precision, disabled_codes=cfg.disabled_detectors)
    except Exception as exc:  # fail closed on an evaluator fault
        return records.evaluator_error_record(cfg, f"precheck failed: {type(exc).__name__}: {exc}")
    static_findings = list(ev.precheck.findings)
    if ev.precheck.facts.syntax_error:
        return records.build_record(cfg, ev, [finding("RH-42", cfg.policy, {"syntax_error": ev.precheck.facts.syntax_error},
                                                      summary="Candidate source does not compile (syntax error)")]
                                    + static_findings, device, rejected=True)
    if cfg.mode == "enforce" and any(f.severity == "error" for f in static_findings):
        return records.build_record(cfg, ev, static_findings, device, rejected=True)

    containment.begin_evaluation()  # subreaper, non-dumpable parent, probes (once per process)
    root = tempfile.mkdtemp(prefix="kernelguard_", dir=workdir)
    rng = random.Random(secrets.randbits(64))
    try:
        ref = _run_reference(reference_src, cfg, root, device, ev, rng)
        if ref is None:
            return records.build_record(cfg, ev, static_findings + [finding(
                "RH-33", cfg.policy, {"error": ev.reference_error})], device)
        _run_candidate(candidate_src, cfg, root, device, ev, ref)
        try:
            runtime_findings = detectors.run_all(ev)
        except Exception as exc:  # a detector bug must not award a result
            runtime_findings = [finding("RH-32", cfg.policy, {"error": f"{type(exc).__name__}: {exc}"})]
        result = records.build_record(cfg, ev, static_findings + runtime_findings, device)
        result["metadata"]["reward_hardening_wall_s"] = round(time.monotonic() - t_start, 3)
        return result
    except Exception as exc:
        return records.evaluator_error_record(cfg, f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
