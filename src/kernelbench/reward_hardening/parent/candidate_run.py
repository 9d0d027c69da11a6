"""One candidate's run: its worker, load, correctness, timing, final snapshot and profile (parent).

:class:`CandidateRun` starts the candidate worker in a fresh workspace, walks it
through its phases and gathers everything it leaves behind (exit status, containment
sweep, log, peak memory, workspace changes) into the evidence.
"""

from __future__ import annotations

import os

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent import prebuild
from kernelbench.reward_hardening.parent.candidate_io import phase_time
from kernelbench.reward_hardening.parent.evidence import WorkerEvent
from kernelbench.reward_hardening.parent.probes import CorrectnessProbes, correctness_jobs
from kernelbench.reward_hardening.parent.timed import TimedCalls
from kernelbench.reward_hardening.parent.workers import Driver, PhaseFailed, repack, start_worker

__all__ = ["CandidateRun", "host_limit"]


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


_SKIP = ("tmp", "build")  # the candidate workspace's folders left out of its manifest
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


def host_limit(cfg: HardeningConfig, device: str, data_bytes: int, param_bytes: int = 0,
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


class CandidateRun(CorrectnessProbes, TimedCalls):
    """Runs one candidate against a :class:`~kernelbench.reward_hardening.parent.session.ReferenceSession`."""

    handle = None

    def start(self, cand_src: str) -> None:
        """Start the candidate's worker (its harness only: no candidate code runs before ``load``).

        Called before the judge's session starts, so the worker's start (about 0.25 s on
        the H200, most of it creating the CUDA context) overlaps the judge's load and fit
        check; the allocator cap, known only from the judge's memory plan, travels with
        ``load`` and is set before the candidate's module is imported.
        """
        self.cand_src = cand_src
        self.workspace = workspace = os.path.join(self.root, "candidate")
        os.makedirs(workspace)
        src_path = os.path.join(workspace, "candidate.py")
        with open(src_path, "w") as fh:
            fh.write(cand_src)
        os.chmod(src_path, 0o444)
        self.before = _manifest(workspace, _SKIP)
        self.watched = {d: _manifest(d) for d in self.cfg.watch_dirs}
        self.handle = start_worker("candidate", workspace, src_path, self.cfg, self.device)

    def abandon(self) -> None:
        """Stop a worker started for a run that never came (the judge failed first); else nothing."""
        if self.handle is not None and not self.ev.candidate_started:
            self.handle.close()
            self.handle.unit.sweep(self.handle.process.exitcode if self.handle.process is not None else None)

    def run(self, cand_src: str) -> None:
        cfg, ev = self.cfg, self.ev
        if self.handle is None:
            self.start(cand_src)
        ev.candidate_started = True
        handle = self.handle
        handle.max_rss_bytes = host_limit(cfg, self.device, self.s.data_bytes,
                                           int(self.s.sizes.get("param_bytes") or 0), self.s.judge_peak_rss_bytes)
        self.drv = Driver("candidate", handle, ev, cfg.timeout)
        try:
            self._phases()
        except PhaseFailed:
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
            ev.workspace_changes = _diff_manifest(self.before, _manifest(self.workspace, _SKIP))
            for d, snap in self.watched.items():
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
        ev.phases.append({"t_s": phase_time(ev), "phase": "start", "pid": ready.get("pid"), "state": ready.get("state")})
        if ev.reference_timer != "twin":
            self._protocol_probe()  # this path's own overhead, for RH-26 (the judge's path is shorter)
        (items,), fds = repack([self.s.init_items], self.s.init_fds)
        # the allocator cap of the memory plan, set by the harness before the module is imported
        load = {"cmd": "load", "init_inputs": items, "gpu_memory_fraction": self.s.candidate_gpu_fraction()}
        if prebuild.compiles(self.cand_src):
            # the build has its own limit (build_timeout), and runs under the build directory's
            # lock, so a build killed earlier (its stale baton) never blocks this one
            with prebuild.build_lock(self.handle.spec["build_dir"], cfg.build_timeout) as stale:
                if stale:
                    ev.phases.append({"t_s": phase_time(ev), "phase": "build", "stale_batons_removed": stale})
                reply, _ = drv.request("load", load, fds, timeout=max(cfg.timeout, cfg.build_timeout))
        else:
            reply, _ = drv.request("load", load, fds)
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
        ev.phases.append({"t_s": phase_time(ev), "phase": "load", "pid": reply.get("pid"), "state": reply.get("state")})
        unsettled = False
        jobs = correctness_jobs(cfg)
        for job in jobs:
            # once a call's output changed after it was read, or it left threads or children
            # running, every later probe takes the pause too (the deferred write shows on all)
            job["pause"] = job["pause"] or unsettled
            n = len(ev.calls)
            self._correctness_call(job)
            unsettled = unsettled or (len(ev.calls) > n and self._unsettled(ev.calls[-1]))
        self._precision_profile(jobs[0].get("variants"))
        ev.phases.append({"t_s": phase_time(ev), "phase": "correctness", "pid": self.handle.pid,
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
        ev.phases.append({"t_s": phase_time(ev), "phase": "timing", "pid": reply.get("pid"), "state": reply.get("state")})
        # last: the profiler starts threads of its own, so it runs after the final snapshot
        if cfg.profile_backend and passed:
            self._profiled_call()
            ev.phases.append({"t_s": phase_time(ev), "phase": "profile", "pid": self.handle.pid})
        ev.completed = True
