"""One evaluation slot that takes samples as sources (a Ray actor's body, or a thread of the API's local pool).

A :class:`SampleRunner` holds the batch's hardened evaluator
(:func:`kernelbench.reward_hardening.parent.batch.hardened_evaluator`, the same
per-sample entry the local batch calls), so it runs the same pipeline with the same
containment, and keeps the judge of the last problem it saw: the samples of one
problem sent to the same runner reuse the loaded reference.  It runs in the process
that owns the slot: a Ray actor's worker process on the node that evaluates the
sample (``executor=ray``), or the caller's process (the API's local pool).

What it receives is the sample's *source*, never a path the driver alone can read:
when the driver's kernel file is readable here with the same content (one machine,
or a shared filesystem) it is used as is, exactly as the local batch would;
otherwise the source is written to a private staging directory beside the build
directory, which is then the directory the pipeline watches for writes.  What it
returns is the sample's record (verdict-sized JSON), never tensors.

This module imports neither Ray nor torch at import time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["CONFIG_FIELDS", "SampleRunner", "pick_slot", "request_for", "script_config"]

# the keys of a script configuration the hardened evaluator reads (sent to remote runners)
CONFIG_FIELDS = ("reward_hardening_mode", "reward_hardening_policy", "device", "precision", "backend",
                 "num_correct_trials", "num_perf_trials", "timeout", "allow_tf32")


def script_config(cfg: Any) -> dict:
    """The plain-data part of a script configuration that a runner needs (it crosses the network)."""
    return {k: getattr(cfg, k) for k in CONFIG_FIELDS if hasattr(cfg, k)}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class SampleRunner:
    """Evaluates samples one at a time under one script configuration (see the module text)."""

    def __init__(self, config: dict, prebuild_failures: dict | None = None, warm: bool = True):
        if warm:  # first: the forkserver's imports (torch) overlap this process's own below
            self.warm()
        from kernelbench.reward_hardening.parent.batch import hardened_evaluator

        self.config = dict(config)
        self._cfg = SimpleNamespace(**self.config)
        self._evaluate = hardened_evaluator(self._cfg, prebuild_failures=prebuild_failures)
        self.problem: int | None = None  # the problem whose reference the judge holds

    def warm(self) -> None:
        """Start the forkserver now (torch preloaded), so the first sample does not pay for it."""
        from kernelbench.procs import start_forkserver

        start_forkserver()

    def device(self) -> str:
        """The device this runner evaluates on (a Ray GPU actor sees its one GPU as ``cuda:0``)."""
        return "cuda:0" if str(self._cfg.device).startswith("cuda") else "cpu"

    def info(self) -> dict:
        """Where this runner lives: host, pid, Ray node id (when in a Ray worker), device."""
        node = None
        try:  # only inside a Ray worker; never imports Ray otherwise
            import sys

            if "ray" in sys.modules:
                node = sys.modules["ray"].get_runtime_context().get_node_id()
        except Exception:
            node = None
        return {"host": socket.gethostname(), "pid": os.getpid(), "node_id": node, "device": self.device(),
                "problem": self.problem}

    def evaluate(self, request: dict) -> dict:
        """Evaluate one sample; ``request`` holds sources and ids only (see :func:`request_for`).

        Keys: ``problem_id``, ``sample_id``, ``problem_name``, ``ref_code``, ``source``,
        ``kernel_path`` (the driver's path, used when it holds the same source here),
        ``build_dir`` and ``keep_build_dir``.
        """
        from kernelbench.batch_parts.plan import WorkItem

        build_dir = Path(request["build_dir"])
        source = request["source"]
        path = request.get("kernel_path")
        staged = None
        if not path or not self._same_file(path, source):
            staged = build_dir / "source"
            staged.mkdir(parents=True, exist_ok=True)
            path = str(staged / (Path(path).name if path else "candidate_kernel.py"))
            Path(path).write_text(source, errors="surrogateescape")
        item = WorkItem(int(request["problem_id"]), int(request["sample_id"]), path, None, request["ref_code"],
                        str(request.get("problem_name", "")))
        try:
            record = self._evaluate(item, self.device(), str(build_dir))
        finally:
            self.problem = item.problem_id
            if not request.get("keep_build_dir", True):
                shutil.rmtree(build_dir, ignore_errors=True)
            elif staged is not None:
                shutil.rmtree(staged, ignore_errors=True)
        return record

    @staticmethod
    def _same_file(path: str, source: str) -> bool:
        try:
            return _sha(Path(path).read_text(errors="surrogateescape")) == _sha(source)
        except OSError:
            return False

    def close(self) -> None:
        """End the judges this runner still holds."""
        close = getattr(self._evaluate, "close", None)
        if close is not None:
            close()


def request_for(item: Any, source: str, build_dir: str, keep_build_dir: bool) -> dict:
    """What crosses to a runner for one :class:`~kernelbench.batch_parts.plan.WorkItem`: ids and sources."""
    return {"problem_id": item.problem_id, "sample_id": item.sample_id, "problem_name": item.problem_name,
            "ref_code": item.ref_code, "source": source, "kernel_path": item.kernel_path,
            "build_dir": build_dir, "keep_build_dir": keep_build_dir}


def pick_slot(free: list, problem_id: int | None) -> Any:
    """The free slot for a sample of ``problem_id``: the one whose judge holds it, else one without a judge, else any.

    A slot is anything with a ``problem`` attribute (the problem of the last sample it ran).
    """
    if problem_id is not None:
        for slot in free:
            if slot.problem == problem_id:
                return slot
    return next((slot for slot in free if slot.problem is None), free[0])
