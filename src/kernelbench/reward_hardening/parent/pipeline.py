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

A :class:`ReferenceSession` keeps one judge (the loaded reference and its timing) for
all samples of a problem in a batch.  What each sample still gets new: the hidden
seeds of every correctness probe and perturbation, and a freshly generated input set
for every timed call.
"""

from __future__ import annotations

import hashlib
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
    WorkerMemoryExceeded,
    WorkerTimeout,
    scrubbed_env,
)
from kernelbench.reward_hardening import containment
from kernelbench.reward_hardening.parent import interleave
from kernelbench.reward_hardening.parent import memplan
from kernelbench.reward_hardening.parent import prebuild
from kernelbench.reward_hardening.parent import records
from kernelbench.reward_hardening.containment import trusted_read
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.judge.compare import Comparison
from kernelbench.reward_hardening.parent.evidence import CallRecord, Evidence, ProbeInput, TimingSample, WorkerEvent
from kernelbench.reward_hardening import policy
from kernelbench.reward_hardening.findings import observe
from kernelbench.reward_hardening.ipc.wire import checked_call_reply, checked_profile, malformed_timing

__all__ = ["ReferenceSession", "evaluate_hardened"]

_CANDIDATE_TARGET = "kernelbench.reward_hardening.candidate.worker:worker_main"
_JUDGE_TARGET = "kernelbench.reward_hardening.judge.worker:judge_main"
GiB = 1 << 30


class _PhaseFailed(Exception):
    """A worker request failed; the event is already recorded."""


class _JudgeFailed(Exception):
    """The judge (trusted side) failed while a candidate was being evaluated."""

    def __init__(self, message: str, oom: bool = False):
        super().__init__(message)
        self.oom = oom


# --------------------------------------------------------------------------- workspace manifests
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
    """Drop the batch's own result files (and their atomic-write temp files and locks) from a manifest."""
    return {k: v for k, v in manifest.items()
            if not any(k == r or k == f".{r}.lock" or (k.startswith(f".{r}.") and k.endswith(".tmp"))
                       for r in _RESULT_FILES)}


def _diff_manifest(before: dict, after: dict) -> dict[str, list[str]]:
    created = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return {"created": created, "deleted": deleted, "changed": changed}


def _t(ev: Evidence) -> float:
    return round(time.monotonic() - ev.t0, 3)


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _repack(groups: list[list[dict]], fds: list[int]) -> tuple[list[list[dict]], list[int]]:
    """Re-number the descriptors that the given shared-tensor descriptions use.

    ``groups`` hold input items (``{"kind": "tensor", "shared": meta}``) or bare metas;
    the result's metas index into the returned descriptor list, which holds only what
    those groups need (staging buffers of a spot check travel later, on their own).
    """
    out_fds: list[int] = []
    out: list[list[dict]] = []
    for group in groups:
        g = []
        for item in group:
            item = dict(item)
            meta = dict(item["shared"]) if "shared" in item else item
            if meta.get("kind") == "cpu":
                idx = meta.get("fd")
                if not isinstance(idx, int) or not 0 <= idx < len(fds):
                    raise _JudgeFailed("judge sent a shared tensor without its descriptor")
                out_fds.append(fds[idx])
                meta["fd"] = len(out_fds) - 1
            if "shared" in item:
                item["shared"] = meta
                g.append(item)
            else:
                g.append(meta)
        out.append(g)
    return out, out_fds


# --------------------------------------------------------------------------- worker start
def _worker_env(workspace: str, build_dir: str) -> dict[str, str]:
    tmp = os.path.join(workspace, "tmp")
    return scrubbed_env({"TORCH_EXTENSIONS_DIR": build_dir,
                         # JIT caches live with the build (persistent per source) or in tmp/
                         "TRITON_CACHE_DIR": os.path.join(build_dir, "triton_cache"),
                         "XDG_CACHE_HOME": os.path.join(tmp, ".cache"),
                         # the CUDA driver's PTX JIT cache (default $HOME/.nv): cuDNN JIT-compiles
                         # kernels shipped only as PTX on a newer GPU (seen on the H200 for a
                         # conv2d), which would otherwise read as a workspace write (RH-27)
                         "CUDA_CACHE_PATH": os.path.join(tmp, ".nv", "ComputeCache"),
                         "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor")}, workspace=workspace)


def _start_worker(role: str, workspace: str, source_path: str, cfg: HardeningConfig, device: str,
                  build_dir: str | None = None, gpu_fraction: float | None = None) -> WorkerHandle:
    build_dir = build_dir or cfg.build_dir or os.path.join(workspace, "build")
    os.makedirs(build_dir, exist_ok=True)
    trusted = role == "reference"
    spec = {
        "role": role, "source_path": source_path, "device": device, "precision": cfg.precision,
        "allow_tf32": cfg.allow_tf32, "num_threads": cfg.num_threads, "build_dir": build_dir,
        "workspace": workspace, "env": _worker_env(workspace, build_dir),
        "log_path": os.path.abspath(os.path.join(workspace, "..", f"{role}.log")),
        "settle_s": cfg.settle_s, "launch_hold_cycles": cfg.launch_hold_cycles,
        "keep_alive_bytes": cfg.keep_alive_bytes,
        # the judge starts under its configured cap (or 0.6) until the memory plan sets it
        "gpu_memory_fraction": (cfg.judge_gpu_memory_fraction or 0.6) if trusted else gpu_fraction,
    }
    # the judge's replies are small (no tensors ever travel as bytes): both are size-limited
    # containment: own cgroup leaf; the candidate is sandboxed in the child (containment.enter);
    # the directory holding every evaluation's root is private to it
    unit = containment.new_unit(role)
    spec["containment"] = unit.child_spec(private=[os.path.dirname(os.path.dirname(os.path.abspath(workspace)))],
                                          device=device, skip=cfg.sandbox_skip)
    handle = WorkerHandle(_JUDGE_TARGET if trusted else _CANDIDATE_TARGET, spec,
                          max_response_bytes=cfg.response_limit_bytes, log_limit_bytes=cfg.log_limit_bytes)
    handle.max_rss_bytes = cfg.judge_host_memory_bytes if trusted else cfg.host_memory_base_bytes
    handle.start()
    unit.attach(handle.pid, spec)
    handle.unit = unit
    return handle


class _Driver:
    """Runs requests against one worker and turns failures into WorkerEvents."""

    def __init__(self, role: str, handle: WorkerHandle, ev: Evidence | None, timeout: float):
        self.role, self.handle, self.ev, self.timeout = role, handle, ev, timeout

    def request(self, phase: str, header: dict, fds: list[int] | None = None,
                timeout: float | None = None) -> tuple[dict, list[int]]:
        # every request is timed by the parent (RH-61 compares those that move output bytes
        # with a plain copy of their size)
        self.last = {"phase": phase, "cmd": header.get("cmd"), "ms": None}
        if self.ev is not None:
            self.ev.requests.append(self.last)
        t0 = time.monotonic_ns()
        try:
            self.handle.send_message(header, fds)
            reply, rfds = self.handle.receive_message(timeout or self.timeout, allow_fds=self.role == "reference")
            self.last["ms"] = (time.monotonic_ns() - t0) / 1e6
        except WorkerTimeout as exc:
            self._event(phase, "timeout", str(exc))
        except WorkerMemoryExceeded as exc:
            self._event(phase, "memory", str(exc))
        except ResponseTooLarge as exc:
            self._event(phase, "too_large", str(exc))
        except FrameError as exc:
            self._event(phase, "frame", str(exc))
        except WorkerCrashed as exc:
            self._event(phase, "crash", str(exc))
        if not isinstance(reply, dict):
            self._event(phase, "frame", "reply is not an object")
        if reply.get("fatal"):
            _close_fds(rfds)
            self._event(phase, "crash", reply.get("error", "worker died"))
        return reply, rfds

    def wait_ready(self) -> dict:
        try:
            reply, _ = self.handle.receive_message(max(self.timeout, 60.0))
        except WorkerTimeout as exc:
            self._event("start", "timeout", str(exc))
        except WorkerMemoryExceeded as exc:
            self._event("start", "memory", str(exc))
        except (WorkerCrashed, FrameError, ResponseTooLarge) as exc:
            self._event("start", "crash", str(exc))
        if reply.get("event") != "ready":
            self._event("start", "crash", reply.get("error", "worker did not start"))
        return reply

    def _event(self, phase: str, kind: str, detail: str) -> None:
        self.last_kind = kind
        if self.ev is not None:
            self.ev.events.append(WorkerEvent(self.role, phase, kind, detail))
        self.handle.kill()
        raise _PhaseFailed(detail)


# --------------------------------------------------------------------------- the judge, per problem
class ReferenceSession:
    """One judge worker for one reference program on one device.

    Reused for every sample of a problem in a batch: the reference is loaded once and
    timed once (:attr:`reference_samples`); each candidate then gets new hidden seeds.
    A session whose judge failed is closed and must not be reused (:attr:`alive`).
    """

    def __init__(self, reference_src: str, cfg: HardeningConfig, device: str, workdir: str | None = None):
        self.reference_src, self.cfg, self.device = reference_src, cfg, device
        self.key = self.key_for(reference_src, cfg, device)
        self.root = tempfile.mkdtemp(prefix="kernelguard_ref_", dir=workdir)
        self.handle: WorkerHandle | None = None
        self.drv: _Driver | None = None
        self.error: str | None = None
        self.oom = False
        self.pid: int | None = None
        self.state: dict = {}
        self.init_items: list = []
        self.init_fds: list[int] = []
        self.reference_samples: list[TimingSample] | None = None
        self.timing_key: tuple | None = None
        self.data_bytes = 0
        self.sizes: dict = {}
        self.plan: memplan.MemoryPlan | None = None
        self.judge_peak_rss_bytes = 0
        self.copy_bytes_per_s: float | None = None
        self.started = False

    @staticmethod
    def key_for(reference_src: str, cfg: HardeningConfig, device: str) -> tuple:
        return (hashlib.sha256(reference_src.encode()).hexdigest(), device, cfg.precision, cfg.allow_tf32,
                cfg.num_threads, cfg.judge_gpu_memory_fraction, cfg.launch_hold_cycles)

    @property
    def alive(self) -> bool:
        return self.error is None and (not self.started or (self.handle is not None
                                                             and self.handle.process.is_alive()))

    def start(self) -> None:
        if self.started:
            if self.error:
                raise _JudgeFailed(self.error, self.oom)
            return
        self.started = True
        workspace = os.path.join(self.root, "reference")
        os.makedirs(workspace, exist_ok=True)
        src_path = os.path.join(workspace, "reference_program.py")
        with open(src_path, "w") as fh:
            fh.write(self.reference_src)
        self.handle = _start_worker("reference", workspace, src_path, self.cfg, self.device)
        self.drv = _Driver("reference", self.handle, None, max(self.cfg.timeout, 30.0))
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
        _close_fds(pfds)
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

    def candidate_gpu_fraction(self) -> float | None:
        """The candidate's allocator cap: the configured one, else its budget in the plan."""
        if self.cfg.gpu_memory_fraction is not None or self.plan is None:
            return self.cfg.gpu_memory_fraction
        return self.plan.candidate_fraction

    def call(self, phase: str, header: dict | None) -> dict:
        assert self.drv is not None
        try:
            return self.drv.wait_ready()
        except _PhaseFailed as exc:
            self.fail(f"judge failed to start: {exc}")
        return {}

    def request(self, phase: str, header: dict) -> tuple[dict, list[int]]:
        """One judge request; any failure closes the session and raises :class:`_JudgeFailed`."""
        if self.error:
            raise _JudgeFailed(self.error, self.oom)
        assert self.drv is not None
        try:
            reply, fds = self.drv.request(phase, header)
        except _PhaseFailed as exc:
            kind = getattr(self.drv, "last_kind", "crash")
            self.fail(f"judge {phase}: {kind}: {exc}", oom=kind == "memory")
        if not reply.get("ok"):
            _close_fds(fds)
            self.fail(f"judge {phase}: {reply.get('error', 'failed')}", oom=bool(reply.get("oom")))
        return reply, fds

    def fail(self, message: str, oom: bool = False) -> None:
        self.error, self.oom = message, oom
        self.close()
        raise _JudgeFailed(message, oom)

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
            samples.append(_sample(k, send, recv, reply))
        self.reference_samples, self.timing_key = samples, key
        return samples

    def close(self) -> None:
        _close_fds(self.init_fds)
        self.init_fds = []
        if self.handle is not None:
            self.handle.close()
            self.containment = self.handle.unit.sweep(self.handle.process.exitcode)
            self.handle = None
        shutil.rmtree(self.root, ignore_errors=True)


def _sample(k: int, send: int, recv: int, reply: dict) -> TimingSample:
    return TimingSample(k, send, recv, reply["t0"], reply["t_ret"], reply["t1"], reply.get("event_ms"),
                        reply.get("threads_delta", 0), t_evt=reply.get("t_evt"), l2=reply.get("l2"),
                        window_ms=reply.get("window_ms"))


# --------------------------------------------------------------------------- the candidate
def _host_limit(cfg: HardeningConfig, device: str, data_bytes: int, param_bytes: int = 0,
                reference_rss_bytes: int = 0) -> int:
    """The candidate's private resident memory limit for a problem (RH-43).

    ``host_memory_base_bytes``, plus ``host_memory_param_factor`` times the reference
    model's parameter bytes (an honest ``ModelNew`` is built on the host before it is
    moved to the device, so its weights pass through private memory), plus, on the
    CPU, ``host_memory_data_factor`` times the problem's input and output bytes; and
    never less than ``host_memory_reference_factor`` times the judge's own measured
    peak after loading the reference and running it once.
    """
    if cfg.host_memory_limit_bytes:
        return int(cfg.host_memory_limit_bytes)
    per_problem = data_bytes * cfg.host_memory_data_factor if not device.startswith("cuda") else 0
    derived = cfg.host_memory_base_bytes + cfg.host_memory_param_factor * param_bytes + per_problem
    return int(max(derived, cfg.host_memory_reference_factor * reference_rss_bytes))


def _rel_limit(cfg: HardeningConfig) -> float:
    """The norm-relative error a passing output may have (RH-28's limit; the heavy-tail probe's criterion)."""
    from kernelbench.reward_hardening.judge.compare import tolerance

    return max(cfg.rel_tol_floor, 10 * tolerance(cfg.precision))


def _correctness_jobs(cfg: HardeningConfig) -> list[dict]:
    n = max(1, cfg.num_correct_trials)
    jobs = [{"kind": "hidden", "index": i, "seed": secrets.randbits(62)} for i in range(n)]
    jobs[0]["keep_first"] = True
    if cfg.precision == "fp32" and cfg.precision_variants:
        jobs[0]["variants"] = list(cfg.precision_variants)
    jobs.append({"kind": "canary_repeat", "index": -1, "repeat_first": True})
    jobs += [{"kind": f"perturb:{p}", "index": n + i, "seed": secrets.randbits(62), "perturb": p}
             for i, p in enumerate(cfg.perturbations)]
    return jobs


def _comparison(d: Any) -> Comparison | None:
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


class _CandidateRun:
    def __init__(self, session: ReferenceSession, cfg: HardeningConfig, ev: Evidence, root: str, device: str,
                 rng: random.Random):
        self.s, self.cfg, self.ev, self.root, self.device, self.rng = session, cfg, ev, root, device, rng

    def run(self, cand_src: str) -> None:
        cfg, ev = self.cfg, self.ev
        self.cand_src = cand_src
        workspace = os.path.join(self.root, "candidate")
        os.makedirs(workspace)
        src_path = os.path.join(workspace, "candidate.py")
        with open(src_path, "w") as fh:
            fh.write(cand_src)
        os.chmod(src_path, 0o444)
        skip = ("tmp", "build")
        before = _manifest(workspace, skip)
        watched = {d: _manifest(d) for d in cfg.watch_dirs}
        ev.candidate_started = True
        self.handle = handle = _start_worker("candidate", workspace, src_path, cfg, self.device,
                                             gpu_fraction=self.s.candidate_gpu_fraction())
        handle.max_rss_bytes = _host_limit(cfg, self.device, self.s.data_bytes,
                                           int(self.s.sizes.get("param_bytes") or 0), self.s.judge_peak_rss_bytes)
        self.drv = _Driver("candidate", handle, ev, cfg.timeout)
        try:
            self._phases()
        except _PhaseFailed:
            pass
        except RuntimeError as exc:  # a candidate-side error during timing
            ev.events.append(WorkerEvent("candidate", "timing", "error", str(exc)))
        finally:
            handle.close()
            ev.exit_code = handle.process.exitcode if handle.process is not None else None
            ev.containment["candidate"] = handle.unit.sweep(ev.exit_code)
            ev.log_text, ev.log_size = handle.read_log()
            ev.candidate_peak_rss_bytes = handle.peak_rss_bytes
            ev.candidate_rss_limit_bytes = handle.max_rss_bytes
            ev.workspace_changes = _diff_manifest(before, _manifest(workspace, skip))
            for d, snap in watched.items():
                diff = _diff_manifest(_without_results(snap), _without_results(_manifest(d)))
                for k in ("created", "deleted", "changed"):
                    ev.workspace_changes.setdefault(k, []).extend(os.path.join(d, p) for p in diff[k])

    def _phases(self) -> None:
        cfg, ev, drv = self.cfg, self.ev, self.drv
        ready = drv.wait_ready()
        self.handle.unit.verify()  # what the kernel says the candidate runs under
        ev.read_path, ev.read_path_detail = self._read_path()
        ev.copy_bytes_per_s = self.s.copy_bytes_per_s
        self._signals("start")  # before the candidate's code is imported
        ev.baseline = {k: ready.get(k) for k in ("state", "apis", "concurrency", "pid", "l2")}
        ev.phases.append({"t_s": _t(ev), "phase": "start", "pid": ready.get("pid"), "state": ready.get("state")})
        (items,), fds = _repack([self.s.init_items], self.s.init_fds)
        if prebuild.compiles(self.cand_src):
            # the build has its own limit (build_timeout), and runs under the build directory's
            # lock, so a build killed earlier (its stale baton) never blocks this one
            with prebuild.build_lock(self.handle.spec["build_dir"], cfg.build_timeout) as stale:
                if stale:
                    ev.phases.append({"t_s": _t(ev), "phase": "build", "stale_batons_removed": stale})
                reply, _ = drv.request("load", {"cmd": "load", "init_inputs": items}, fds,
                                       timeout=max(cfg.timeout, cfg.build_timeout))
        else:
            reply, _ = drv.request("load", {"cmd": "load", "init_inputs": items}, fds)
        if not reply.get("ok"):
            ev.load_error = reply.get("error", "load failed")
            if isinstance(reply.get("oom"), dict):
                self._oom_event("load", reply["oom"])
            ev.completed = True
            return
        ev.loaded = True
        self._signals("load")
        ev.dispatch.append({"phase": "load", "changed": reply.get("dispatch")})
        ev.load_snapshot = {k: reply.get(k) for k in ("state", "apis", "concurrency", "pid", "load_ms")}
        ev.phases.append({"t_s": _t(ev), "phase": "load", "pid": reply.get("pid"), "state": reply.get("state")})
        for job in _correctness_jobs(cfg):
            self._correctness_call(job)
        ev.phases.append({"t_s": _t(ev), "phase": "correctness", "pid": self.handle.pid,
                          "state": ev.calls[-1].state if ev.calls else None})
        # every call returned: the candidate is timed even when an answer was wrong, since
        # deferred work (RH-36/RH-37) shows only in timed samples; the correctness detectors
        # keep a wrong answer a correctness failure (RH-29 needs right hidden answers)
        passed = bool(ev.calls) and all(c.ok for c in ev.calls)
        if passed:
            self._timing_loop()
        reply, _ = drv.request("final", {"cmd": "snapshot"})
        ev.final_snapshot = reply
        self._signals("final")
        ev.dispatch.append({"phase": "final", "changed": reply.get("dispatch")})
        ev.phases.append({"t_s": _t(ev), "phase": "timing", "pid": reply.get("pid"), "state": reply.get("state")})
        # last: the profiler starts threads of its own, so it runs after the final snapshot
        if cfg.profile_backend and passed:
            jr, jfds = self.s.request("timed_input", {"cmd": "timed_input", "seed": secrets.randbits(62)})
            (inputs,), fds = _repack([jr["inputs"]], jfds)
            try:
                reply, _ = drv.request("profile", {"cmd": "profile", "inputs": inputs}, fds)
            finally:
                _close_fds(jfds)
            if reply.get("ok"):
                ev.profile, ev.profile_error = checked_profile(reply)
            else:  # the type only: the forward ran on hidden inputs
                ev.profile_error = f"raised {str(reply.get('error_name') or 'an exception')[:80]}"
            self.s.request("check_inputs", {"cmd": "check_inputs"})
            ev.phases.append({"t_s": _t(ev), "phase": "profile", "pid": self.handle.pid})
        ev.completed = True

    # ---------------------------------------------------------------- trusted reads
    def _read_path(self) -> tuple[str, str]:
        """How outputs reach the judge for this candidate, and why."""
        if self.device.startswith("cuda"):
            return "in_process", ("CUDA: the candidate's harness copies its outputs into the judge's staging "
                                  "buffers (device memory is not readable with process_vm_readv)")
        if not self.cfg.trusted_read:
            return "in_process", "trusted read switched off by configuration (trusted_read=False)"
        ok, why = trusted_read.available()
        if not ok:
            return "in_process", why
        if not trusted_read.can_freeze(self.handle.unit.cgroup):
            return "in_process", "no cgroup freezer for the candidate's cgroup leaf"
        return "trusted", ("the parent freezes the candidate's cgroup after every call and reads each output "
                           "with process_vm_readv into the judge's staging buffers")

    def _signals(self, phase: str) -> None:
        """``SigCgt`` of the candidate, read by the parent (a failed read while it lives is recorded)."""
        pid = self.handle.pid
        mask = trusted_read.caught_signals(pid) if pid else None
        alive = self.handle.process is not None and self.handle.process.is_alive()
        if mask is not None or alive:
            self.ev.signals.append({"phase": phase, "sigcgt": mask})

    def _trusted_read(self, phase: str, facts: Any, staging: list[dict], fds: list[int]) -> tuple[bool, Any, Any]:
        """Freeze the candidate, copy its outputs into the staging buffers, thaw; (written, layouts, why)."""
        cg, pid = self.handle.unit.cgroup, self.handle.pid
        if not isinstance(facts, list):
            facts = []
        try:
            freeze_ms = trusted_read.freeze(cg, timeout=max(1.0, min(self.cfg.timeout, 10.0)))
            try:
                self._signals(phase)
                reads = trusted_read.read_outputs(pid, facts, staging, fds)
            finally:
                trusted_read.thaw(cg)
        except trusted_read.ReadFailed as exc:
            if exc.kind not in ("structure", "layout"):  # a wrong shape or layout is judged as an output
                self.ev.read_failures.append({"phase": phase, "kind": exc.kind, "detail": exc.detail[:300]})
            return False, None, exc.detail[:300]
        self.ev.reads.append({"phase": phase, "bytes": sum(r.nbytes for r in reads),
                              "ms": round(sum(r.read_ms for r in reads), 4), "freeze_ms": round(freeze_ms, 4)})
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
        except _JudgeFailed:
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

    def _correctness_call(self, job: dict) -> None:
        ev = self.ev
        trusted = ev.read_path == "trusted"
        header = {"cmd": "probe", "rel_limit": _rel_limit(self.cfg),
                  **{k: job[k] for k in ("seed", "perturb", "variants", "keep_first", "repeat_first") if k in job}}
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
                (inputs,), fds = _repack([jr["inputs"]], jfds)
                reply, _ = self.drv.request("correctness", {"cmd": "call", "inputs": inputs}, fds)
                if reply.get("ok") and "outputs" in reply:  # (a rejected result type has no facts to read)
                    wa, layouts["layouts_a"], why_a = self._trusted_read(f"call:{job['kind']}", reply.get("outputs"),
                                                                         jr["staging"], jfds)
                    settled, _ = self.drv.request("settle", {"cmd": "settle"})
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
                (inputs, stage_a, stage_b), fds = _repack([jr["inputs"], jr["staging"], jr["staging_after"]], jfds)
                reply, _ = self.drv.request("correctness", {"cmd": "call", "inputs": inputs, "staging": stage_a,
                                                            "staging_after": stage_b}, fds)
                if reply.get("ok") and not self.device.startswith("cuda"):
                    # the request held forward, the pause and two staging copies (on CUDA call_ms
                    # ends at the host's return, before the device finished forward: not comparable)
                    self._staged_request(2 * out_bytes, (reply.get("call_ms") or 0.0) + 1e3 * self.cfg.settle_s)
                    if reply.get("unreadable"):
                        ev.read_failures.append({"phase": f"call:{job['kind']}", "kind": "unreadable",
                                                 "detail": str(reply.get("stage_problem"))[:300]})
        finally:
            _close_fds(jfds)
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
            cmp = judged = _comparison(verdict.get("comparison"))
            if cmp is None or problem:
                why = problem or reply.get("stage_problem") or "outputs were not written"
                cmp = Comparison(False, float("inf"), float("inf"), str(why)[:300])
            rec.comparison = cmp
            after = _comparison(verdict.get("after"))
            rec.stable = bool(verdict.get("stable")) and not reply.get("identity_changed") and (
                after is None or judged is None or after.match == judged.match)
            rec.replay = bool(verdict.get("replay"))
            rec.variant_errors = jr.get("variants") or {}
        else:
            rec.error = str(reply.get("error") or "")
            rec.error_name = str(reply.get("error_name") or "")[:200]
            rec.traceback = str(reply.get("traceback") or "")[-4000:]
            if isinstance(reply.get("oom"), dict):
                rec.oom = self._oom_event(f"correctness:{job['kind']}", reply["oom"])
        ev.calls.append(rec)

    def _timing_loop(self) -> None:
        cfg, ev = self.cfg, self.ev
        trusted = ev.read_path == "trusted"
        n = max(1, cfg.num_perf_trials)
        total = cfg.num_warmup + n
        n_spot = max(2, int(round(cfg.spot_check_fraction * n)))
        spots = set(self.rng.sample(range(cfg.num_warmup, total), min(n_spot, n)))
        deferred: list[TimingSample] = []
        inter = self._interleaver()
        for k in range(total):
            inter.before(k)  # the judge's reference block that belongs here, if any
            spot = k in spots
            # staging is prepared before every timed call (never only before a checked one), and
            # in the trusted path it is never lent: every timed call looks the same to the candidate
            jr, jfds = self.s.request("timed_input", {"cmd": "timed_input", "seed": secrets.randbits(62),
                                                      "stage": True})
            layouts = None
            try:
                (inputs,), fds = _repack([jr["inputs"]], jfds)
                send = time.monotonic_ns()
                reply, _ = self.drv.request("timing", {"cmd": "time", "inputs": inputs}, fds)
                recv = time.monotonic_ns()
                if not reply.get("ok"):
                    if isinstance(reply.get("oom"), dict):
                        self._oom_event(f"timing:{k}", reply["oom"])
                        raise _PhaseFailed("out of memory in a timed call")
                    # the type only: a message from a call on hidden inputs could carry them out
                    raise RuntimeError(f"timing call failed: raised {str(reply.get('error_name') or 'an exception')[:80]}")
                copied = None
                if trusted:  # every timed output is read, with no candidate code running
                    written, layouts, why = self._trusted_read(f"timing:{k}", reply.get("outputs"), jr["staging"],
                                                               jfds)
                    copied = {"written": written, "why": why}
                elif spot:
                    (staging,), sfds = _repack([jr["staging"]], jfds)
                    copied, _ = self.drv.request("spot_check", {"cmd": "copy_last", "staging": staging}, sfds)
                    self._staged_request(sum(int(m.get("nbytes", 0)) for m in jr["staging"]))
                    if copied.get("unreadable"):
                        ev.read_failures.append({"phase": f"timing:{k}", "kind": "unreadable",
                                                 "detail": str(copied.get("why"))[:300]})
            finally:
                _close_fds(jfds)
            checked = spot and bool(copied and copied.get("written"))
            verdict, _ = self.s.request("check_inputs", {"cmd": "check_inputs", "spot": checked, "layouts": layouts,
                                                         "defer": True, "hold_bytes": cfg.spot_hold_bytes})
            if k < cfg.num_warmup:
                continue
            bad = malformed_timing(reply)
            if bad:
                raise RuntimeError(f"malformed timing reply: {bad}")
            s = _sample(k, send, recv, reply)
            s.inputs_unchanged = bool(verdict.get("inputs_unchanged"))
            if spot:
                cmp = _comparison(verdict.get("comparison")) if checked else None
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
                raise _JudgeFailed("judge returned the wrong number of spot comparisons")
            for s, c in zip(deferred, comps):
                s.spot_comparison = _comparison(c) or Comparison(False, float("inf"), float("inf"),
                                                                 "no comparison")

    def _interleaver(self) -> interleave.Interleaver:
        """Reference blocks timed by the judge between the candidate's blocks (see :mod:`.interleave`)."""
        ev = self.ev

        def time_reference(block: int) -> TimingSample:
            return interleave.reference_sample(self.s, len(ev.interleaved_reference_samples), _sample,
                                               malformed_timing)

        return interleave.Interleaver(self.cfg, ev, time_reference)


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
    try:
        try:
            session.start()
            ev.memory_plan = session.plan.as_dict() if session.plan is not None else {}
            ev.reference_samples = session.reference_timing(ev)
            ev.reference_ok = True
            ev.phases.append({"t_s": _t(ev), "phase": "reference", "pid": session.pid, "state": session.state,
                              "reused": not own_session})
            _CandidateRun(session, cfg, ev, root, device, rng).run(candidate_src)
            session.request("release", {"cmd": "release"})
        except _JudgeFailed as exc:
            ev.reference_error = str(exc)
            # before the candidate ran, the reference (or its data) is at fault: UNSUPPORTED;
            # once the candidate's code ran, a disrupted judge is the candidate's failure
            # (a judge out of memory is RH-44 in either case: the problem's data did not fit)
            code = "RH-44" if exc.oom else ("RH-45" if ev.candidate_started else "RH-33")
            detail: dict[str, Any] = {"error": str(exc)[:2000]}
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
        shutil.rmtree(root, ignore_errors=True)
        if own_session:
            session.close()
