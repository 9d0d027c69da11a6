"""Starting a worker and running requests against it (parent).

:func:`start_worker` starts the judge or the candidate worker in its containment unit
with a scrubbed environment; :class:`Driver` sends one request at a time, times it and
turns every failure of the worker (timeout, memory, oversized or malformed reply,
crash) into a :class:`~kernelbench.reward_hardening.parent.evidence.WorkerEvent`.
Shared-memory descriptors travel with :func:`repack`.
"""

from __future__ import annotations

import os
import time

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
from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample, WorkerEvent

__all__ = ["Driver", "JudgeFailed", "PhaseFailed", "close_fds", "repack", "start_worker", "timing_sample"]

_CANDIDATE_TARGET = "kernelbench.reward_hardening.candidate.worker:worker_main"
_JUDGE_TARGET = "kernelbench.reward_hardening.judge.worker:judge_main"


class PhaseFailed(Exception):
    """A worker request failed; the event is already recorded."""


class JudgeFailed(Exception):
    """The judge (trusted side) failed while a candidate was being evaluated."""

    def __init__(self, message: str, oom: bool = False, evaluator: bool = False):
        super().__init__(message)
        self.oom = oom
        self.evaluator = evaluator  # the judge's own machinery failed (not the problem, not the candidate)


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def repack(groups: list[list[dict]], fds: list[int]) -> tuple[list[list[dict]], list[int]]:
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
                    raise JudgeFailed("judge sent a shared tensor without its descriptor")
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


def start_worker(role: str, workspace: str, source_path: str, cfg: HardeningConfig, device: str,
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
    if trusted and os.environ.get("KERNELGUARD_PROFILE_DIR"):  # diagnostics: the judge's Python profile
        spec["profile_dir"] = os.path.abspath(os.environ["KERNELGUARD_PROFILE_DIR"])
        os.makedirs(spec["profile_dir"], exist_ok=True)
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


class Driver:
    """Runs requests against one worker and turns failures into WorkerEvents."""

    def __init__(self, role: str, handle: WorkerHandle, ev: Evidence | None, timeout: float):
        self.role, self.handle, self.ev, self.timeout = role, handle, ev, timeout
        # where each timed request goes: the candidate's Evidence, or (the judge, whose worker
        # outlives a sample) the list its session points at the current sample's Evidence
        self.log: list[dict] | None = ev.requests if ev is not None else None

    def request(self, phase: str, header: dict, fds: list[int] | None = None,
                timeout: float | None = None) -> tuple[dict, list[int]]:
        # every request is timed by the parent (RH-61 compares those that move output bytes
        # with a plain copy of their size)
        self.last = {"phase": phase, "cmd": header.get("cmd"), "role": self.role, "ms": None}
        if self.log is not None:
            self.log.append(self.last)
        t0 = time.monotonic_ns()
        try:
            self.handle.send_message(header, fds)
            reply, rfds = self.handle.receive_message(timeout or self.timeout, allow_fds=self.role == "reference")
            self.last["ms"] = (time.monotonic_ns() - t0) / 1e6
            if self.role == "reference" and isinstance(reply, dict) and isinstance(reply.get("split_ms"), dict):
                self.last["split"] = reply["split_ms"]  # the judge's own parts of it (trusted; record only)
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
            close_fds(rfds)
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
        raise PhaseFailed(detail)


def timing_sample(k: int, send: int, recv: int, reply: dict) -> TimingSample:
    """A timed call's reply (the worker's clock stamps) with the parent's send and receive times."""
    return TimingSample(k, send, recv, reply["t0"], reply["t_ret"], reply["t1"], reply.get("event_ms"),
                        reply.get("threads_delta", 0), t_evt=reply.get("t_evt"), l2=reply.get("l2"),
                        window_ms=reply.get("window_ms"))
