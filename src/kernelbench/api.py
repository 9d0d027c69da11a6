"""The reward API: hardened evaluation of (reference, candidate) source pairs for RL trainers (caller's process).

    from kernelbench import api

    record = api.evaluate(reference_src, candidate_src, device="cpu", policy="practical")
    api.reward(record)                       # 0.0 unless verified, else the speedup's lower bound

    with api.Pool(executor="ray", device="cuda") as pool:   # or executor="local", workers=2
        records = pool.map([(reference_src, candidate_src), ...])
        rewards = [api.reward(r) for r in records]

Every record is a schema-1.1 record (``reward_hardening`` block, ``docs/schema-reference.md``)
from the same hardened pipeline as ``kernelguard eval``.  Configuration keys are the
batch command's: ``mode`` / ``reward_hardening_mode`` (default ``enforce``),
``policy`` / ``reward_hardening_policy`` (``source_strict``), ``device`` (``cuda``),
``precision``, ``backend``, ``num_correct_trials``, ``num_perf_trials``, ``timeout``,
``allow_tf32``.

The reward (:func:`reward`) is 0 for every record that is not verified (integrity
PASS with correctness and timing evidence): a wrong answer, a crash, a timeout, a
detected hack, an evaluator failure and an UNSUPPORTED machine all earn 0, so a crash
never scores better than a wrong answer.  A verified record earns its speedup over
the reference timed beside it: by default the one-sided lower confidence bound of
``median(reference) / median(candidate)`` (level 0.99), so timing noise earns about 1
or less; ``statistic="mean"`` gives the point estimate instead.  Optional ``cap``
clips it.  :func:`evaluator_failed` tells an evaluator-side failure (which a trainer
may drop rather than reward) from the candidate's own.

Importing this module imports neither torch, Ray, litellm nor datasets; torch is
imported by the first evaluation, Ray only by ``Pool(executor="ray")``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Mapping

__all__ = ["DEFAULTS", "Pool", "evaluate", "evaluator_failed", "reward"]

DEFAULTS = {
    "reward_hardening_mode": "enforce",
    "reward_hardening_policy": "source_strict",
    "device": "cuda",
    "precision": "fp32",
    "backend": "cuda",
    "num_correct_trials": 5,
    "num_perf_trials": 100,
    "timeout": 180.0,
    "allow_tf32": False,
}
_ALIASES = {"mode": "reward_hardening_mode", "policy": "reward_hardening_policy"}
# finding codes of failures on the evaluator's side (never the candidate's own crash: that is RH-15)
_EVALUATOR_CODES = frozenset({"RH-32", "RH-33", "RH-14"})


def _config(config: Mapping[str, Any]) -> dict:
    out = dict(DEFAULTS)
    for key, value in config.items():
        key = _ALIASES.get(key, key)
        if key not in DEFAULTS:
            raise TypeError(f"unknown configuration key {key!r}; accepted: {', '.join(sorted([*DEFAULTS, *_ALIASES]))}")
        out[key] = value
    if out["reward_hardening_mode"] not in ("audit", "enforce"):
        raise ValueError(f"mode must be audit or enforce, got {out['reward_hardening_mode']!r}")
    return out


def evaluate(reference_src: str, candidate_src: str, **config: Any) -> dict:
    """Evaluate one candidate against its reference in this process's workers; a schema-1.1 record.

    Each call starts its own judge; to evaluate many candidates of one reference, a
    :class:`Pool` keeps the judge (and its reference timing) between them.
    """
    from types import SimpleNamespace

    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened

    cfg = _config(config)
    hcfg = HardeningConfig.from_script_config(SimpleNamespace(**cfg))
    return evaluate_hardened(reference_src, candidate_src, hcfg)


def reward(record: Mapping | None, statistic: str = "lcb", cap: float | None = None) -> float:
    """The scalar reward of a record: 0.0 unless verified, else its verified speedup (see the module text).

    ``statistic``: ``lcb`` (default, the lower confidence bound; a verified record
    without a bound earns 0.0) or ``mean`` (the point estimate).  ``cap``: an upper
    clip, e.g. the configuration's ``max_plausible_speedup``.
    """
    from kernelbench.reward_hardening.parent.reward import verified_speedup

    value = verified_speedup(record, statistic, default=0.0)
    return min(value, float(cap)) if cap is not None else value


def evaluator_failed(record: Mapping | None) -> bool:
    """Whether the record is the evaluator's failure (error, failing reference, no CUDA), not the candidate's."""
    rh = (record or {}).get("reward_hardening") if isinstance(record, Mapping) else None
    if not isinstance(rh, Mapping):
        return True
    if rh.get("integrity_status") == "UNSUPPORTED":
        return True
    codes = {f.get("code") for f in rh.get("findings") or [] if isinstance(f, Mapping)}
    return bool(codes & _EVALUATOR_CODES) and not (codes - _EVALUATOR_CODES - {"RH-34"})


def _problem_id(reference_src: str) -> int:
    return int(hashlib.sha256(reference_src.encode("utf-8", "surrogateescape")).hexdigest()[:12], 16)


class _LocalSlot:
    def __init__(self, runner: Any):
        self.runner, self.problem, self.busy = runner, None, False
        self.thread = ThreadPoolExecutor(max_workers=1)  # one thread per runner: its judge stays with it


class Pool:
    """Concurrent hardened evaluations that keep each reference's judge between its candidates.

    ``executor="local"``: ``workers`` slots (default 1) in this process, each with its
    own judge and disposable candidate workers.  ``executor="ray"``: the actors of
    :class:`kernelbench.batch_parts.ray_exec.RayActorPool` on the cluster at
    ``ray_address`` (None: a local cluster), ``workers`` of them (default one per GPU,
    or per CPU for ``device="cpu"``), with the batch's failure semantics.  A candidate
    goes to a free slot, preferably the one whose judge holds its reference.
    """

    def __init__(self, executor: str = "local", workers: int | None = None, ray_address: str | None = None,
                 **config: Any):
        if executor not in ("local", "ray"):
            raise ValueError(f"executor must be local or ray, got {executor!r}")
        self.executor, self.config = executor, _config(config)
        self._ids = itertools.count()
        self._root = tempfile.mkdtemp(prefix="kernelguard_api_")
        self._cond = threading.Condition()
        if executor == "ray":
            from kernelbench.batch_parts.ray_exec import RayActorPool

            self._ray = RayActorPool(self.config, size=workers, address=ray_address)
            self.size = self._ray.size
        else:
            from kernelbench.batch_parts.sample_runner import SampleRunner

            self.size = max(1, int(workers or 1))
            # several local slots on the CPU: each worker gets its share of the cores (num_gpu_devices
            # is the batch's name for the samples evaluated at a time)
            slot_config = {**self.config, "num_gpu_devices": self.size}
            self._slots = [_LocalSlot(SampleRunner(slot_config, warm=False)) for _ in range(self.size)]
        self._dispatch = ThreadPoolExecutor(max_workers=self.size)

    def _request(self, reference_src: str, candidate_src: str) -> dict:
        from types import SimpleNamespace

        from kernelbench.batch_parts.sample_runner import request_for

        pid, sid = _problem_id(reference_src), next(self._ids)
        item = SimpleNamespace(problem_id=pid, sample_id=sid, problem_name="", ref_code=reference_src,
                               kernel_path=None)
        return request_for(item, candidate_src, os.path.join(self._root, f"{pid:x}", str(sid)), False)

    def _run_local(self, request: dict) -> dict:
        from kernelbench.batch_parts.sample_runner import pick_slot

        with self._cond:
            while not any(not s.busy for s in self._slots):
                self._cond.wait()
            slot = pick_slot([s for s in self._slots if not s.busy], request["problem_id"])
            slot.busy = True
        try:
            return slot.thread.submit(slot.runner.evaluate, request).result()
        finally:
            with self._cond:
                slot.problem, slot.busy = request["problem_id"], False
                self._cond.notify_all()

    def submit(self, reference_src: str, candidate_src: str) -> "Future[dict]":
        """Evaluate one pair in the background; the future's result is its schema-1.1 record."""
        request = self._request(reference_src, candidate_src)
        run = self._ray.run if self.executor == "ray" else self._run_local
        return self._dispatch.submit(run, request)

    def map(self, pairs: Iterable[tuple[str, str]]) -> list[dict]:
        """Records of ``(reference_src, candidate_src)`` pairs, in order."""
        futures = [self.submit(ref, cand) for ref, cand in pairs]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the slots (and a local Ray cluster this pool started); remove the build directories."""
        self._dispatch.shutdown(wait=True, cancel_futures=True)
        if self.executor == "ray":
            self._ray.close()
        else:
            for slot in self._slots:
                slot.thread.shutdown(wait=True)
                slot.runner.close()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
