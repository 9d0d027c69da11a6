"""Hardened evaluation on a Ray cluster (``executor=ray``): the driver's side (parent process).

:class:`RayActorPool` keeps one long-lived actor per GPU (per CPU slot for
``device=cpu``); each actor is a :class:`~kernelbench.batch_parts.sample_runner.SampleRunner`
with a warm forkserver, running the same hardened pipeline as the local batch, with
the same containment, on its node.  A sample goes to a free actor, preferably the one
whose judge holds the sample's reference.  Only sources go out and only records come
back.  :func:`ray_evaluator` plugs the pool into :func:`kernelbench.batch.run_batch`
(one batch thread per actor), so the driver writes each record as it arrives, under
the same lock, with the same resume, claims, progress bar and summary as local mode.

Failure semantics (``docs/ray.md``): an actor that dies (or outlives the sample's
deadline and is killed) while its node stays up is charged to the sample it was
running; the sample is retried on a fresh actor, and a sample charged twice gets the
candidate's FAIL (RH-15, with both deaths as evidence).  An actor lost with its node,
or found dead while idle, is infrastructure: the sample is retried uncharged, and
after ``MAX_INFRA_LOSSES`` losses it gets an evaluator failure (RH-32).  Either way
the sample gets exactly one record, from the driver.

Ray is imported here only, and only when a pool is started (``ray`` extra).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kernelbench.batch_parts.sample_runner import SampleRunner, pick_slot, request_for, script_config

__all__ = ["MAX_ACTOR_DEATHS", "MAX_INFRA_LOSSES", "RayActorPool", "connect", "crash_record", "ray_evaluator"]

MAX_ACTOR_DEATHS = 2  # actor deaths charged to one sample before it is the candidate's FAIL
MAX_INFRA_LOSSES = 3  # infrastructure losses during one sample before it is an evaluator failure
START_TIMEOUT_S = 600.0  # an actor's start: torch import and forkserver warm-up


def require_ray() -> Any:
    from kernelbench._optional import require

    return require("ray")


def connect(address: str | None = None, num_cpus: int | None = None) -> tuple[Any, bool]:
    """``ray`` connected to ``address`` (None: start a local cluster); whether this call started it."""
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address:
        ray.init(address=address, **kwargs)
    else:  # a checkout run without an install: the workers import kernelbench from the same place
        import kernelbench

        src = os.path.dirname(os.path.dirname(os.path.abspath(kernelbench.__file__)))
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=num_cpus, runtime_env={"env_vars": {"PYTHONPATH": path}}, **kwargs)
    return ray, True


def crash_record(config: dict, deaths: list[dict]) -> dict:
    """The candidate's FAIL after its evaluation killed ``len(deaths)`` actors (RH-15, deaths as evidence)."""
    from kernelbench.reward_hardening.findings import observe
    from kernelbench.reward_hardening.parent.records import failed_record

    text = f"the evaluation of this candidate killed its evaluator process {len(deaths)} times"
    return failed_record(
        _hardening_config(config), observe("RH-15", {"actor_deaths": deaths, "error": text}),
        "The evaluation process died while it ran this candidate, on a node that stayed up, "
        f"{len(deaths)} times; nothing about the candidate is trusted.",
        {"error": text, "ray_actor_deaths": deaths})


def _hardening_config(config: dict) -> Any:
    from types import SimpleNamespace

    from kernelbench.reward_hardening.config import HardeningConfig

    return HardeningConfig.from_script_config(SimpleNamespace(**config))


def _evaluator_failure(config: dict, error: str) -> dict:
    from kernelbench.reward_hardening.parent.records import evaluator_error_record

    return evaluator_error_record(_hardening_config(config), error)


class _Slot:
    def __init__(self, index: int, handle: Any):
        self.index, self.handle = index, handle
        self.ready = False  # its first info() answered (torch imported, forkserver warm)
        self.node_id: str | None = None
        self.pid: int | None = None  # the actor's process on its node
        self.problem: int | None = None
        self.busy = False


class _Stopped(Exception):
    """The pool was interrupted while a sample ran (its record is not a verdict)."""


class RayActorPool:
    """``size`` actors evaluating samples under one script configuration (see the module text).

    ``config`` is :func:`~kernelbench.batch_parts.sample_runner.script_config` of the
    batch's configuration; ``sample_timeout_s`` is the driver's own deadline for one
    sample on an actor (None: four times the per-request timeout plus the build timeout);
    ``runner_cls`` the actors' class, constructed as ``runner_cls(config, prebuild_failures)``
    with the methods ``info()`` and ``evaluate(request)`` of :class:`SampleRunner`.
    """

    def __init__(self, config: dict, size: int | None = None, address: str | None = None,
                 prebuild_failures: dict | None = None, sample_timeout_s: float | None = None,
                 num_cpus: int | None = None, runner_cls: type = SampleRunner):
        self.ray, self.started_cluster = connect(address, num_cpus=num_cpus)
        self.runner_cls = runner_cls  # the actors' class (tests pass a light stand-in)
        self.config = dict(config)
        gpus = int(self.ray.cluster_resources().get("GPU", 0))
        self.gpu = str(self.config.get("device", "cpu")).startswith("cuda") and gpus > 0
        if size is None:
            size = gpus if self.gpu else int(self.ray.cluster_resources().get("CPU", 1))
        self.size = max(1, int(size))
        self.sample_timeout_s = sample_timeout_s or 4 * float(self.config.get("timeout", 180)) + 900.0
        self._failures = dict(prebuild_failures or {})
        self._cond = threading.Condition()
        self._stopping = False
        self._next = 0
        self.events: list[dict] = []  # deaths, losses and replacements, in order (for tests and reports)
        self.slots = [self._start() for _ in range(self.size)]

    # --- actors
    def _start(self) -> _Slot:
        remote = self.ray.remote(self.runner_cls)
        opts = {"num_gpus": 1, "num_cpus": 0} if self.gpu else {"num_cpus": 1}
        handle = remote.options(max_restarts=0, max_task_retries=0, **opts).remote(self.config, self._failures)
        slot = _Slot(self._next, handle)
        self._next += 1
        return slot

    def _replace(self, slot: _Slot, why: str) -> None:
        self._kill(slot.handle)
        fresh = self._start()
        with self._cond:
            self.slots[self.slots.index(slot)] = fresh
            self.events.append({"event": "replaced", "actor": slot.index, "by": fresh.index, "why": why})
            self._cond.notify_all()

    def _kill(self, handle: Any) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except Exception:
            pass

    def _node_alive(self, node_id: str | None) -> bool:
        if node_id is None:
            return True  # never answered: cannot blame the node
        try:
            return any(n.get("NodeID") == node_id and n.get("Alive") for n in self.ray.nodes())
        except Exception:
            return True

    def _acquire(self, problem_id: int | None) -> _Slot:
        with self._cond:
            while True:
                if self._stopping:
                    raise _Stopped()
                free = [s for s in self.slots if not s.busy]
                if free:
                    slot = pick_slot(free, problem_id)
                    slot.busy = True
                    return slot
                self._cond.wait(0.5)

    def _wait(self, ref: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if self._stopping:
                raise _Stopped()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer within {timeout:.0f} s")
            done, _ = self.ray.wait([ref], timeout=min(0.5, left))
            if done:
                return self.ray.get(ref)

    # --- one sample
    def run(self, request: dict) -> dict:
        """Evaluate one sample on some actor, with the failure semantics of the module text."""
        from ray.exceptions import RayActorError

        deaths: list[dict] = []
        losses: list[dict] = []
        while True:
            slot = self._acquire(request.get("problem_id"))
            try:
                if not self._alive(slot, RayActorError):  # lost while idle: infrastructure, not charged
                    losses.append({"actor": slot.index, "when": "idle"})
                    self._replace(slot, "lost while idle")
                else:
                    try:
                        record = self._wait(slot.handle.evaluate.remote(request), self.sample_timeout_s)
                        slot.problem = request.get("problem_id")
                        return record
                    except RayActorError as exc:
                        event = {"actor": slot.index, "node_id": slot.node_id, "error": str(exc).splitlines()[0][:300]}
                        if self._node_alive(slot.node_id):
                            deaths.append({**event, "cause": "actor died while running this sample"})
                            self._replace(slot, "died while running a sample")
                        else:
                            losses.append({**event, "when": "node lost"})
                            self._replace(slot, "node lost")
                    except TimeoutError as exc:
                        deaths.append({"actor": slot.index, "node_id": slot.node_id,
                                       "cause": f"killed at the driver's deadline: {exc}"})
                        self._replace(slot, "deadline")
            finally:
                self._release(slot)
            with self._cond:
                self.events.append({"event": "retry", "problem_id": request.get("problem_id"),
                                    "sample_id": request.get("sample_id"), "deaths": len(deaths),
                                    "losses": len(losses)})
            if len(deaths) >= MAX_ACTOR_DEATHS:
                return crash_record(self.config, deaths)
            if len(losses) >= MAX_INFRA_LOSSES:
                return _evaluator_failure(self.config, f"infrastructure: {len(losses)} actors or nodes lost "
                                                       f"while this sample waited or ran: {losses}")

    def _release(self, slot: _Slot) -> None:
        with self._cond:
            if slot in self.slots:
                slot.busy = False
            self._cond.notify_all()

    def _alive(self, slot: _Slot, actor_error: type) -> bool:
        """Ask the actor where it is (the first call waits for its start); False when it is gone."""
        try:
            info = self._wait(slot.handle.info.remote(), 30.0 if slot.ready else START_TIMEOUT_S)
        except (actor_error, TimeoutError):
            return False
        slot.ready, slot.node_id, slot.pid = True, info.get("node_id"), info.get("pid")
        return True

    def actors(self) -> list[Any]:
        """The live actor handles (tests kill one to show a sample survives)."""
        with self._cond:
            return [s.handle for s in self.slots]

    def interrupt(self) -> None:
        """Stop waiting for running samples and kill the actors (Ctrl-C, SIGTERM)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for slot in list(self.slots):
            self._kill(slot.handle)

    def close(self) -> None:
        """Kill the actors, and stop the local cluster if this pool started it."""
        self.interrupt()
        if self.started_cluster:
            try:
                self.ray.shutdown()
            except Exception:
                pass


def ray_evaluator(cfg: Any, prebuild_failures: dict | None = None, **pool_options: Any) -> Callable:
    """An ``evaluate(item, device, build_dir)`` for :func:`kernelbench.batch.run_batch` running on actors.

    ``evaluate.devices`` is the device list to hand :func:`run_batch` (one batch thread
    per actor); ``evaluate.pool`` the :class:`RayActorPool`; ``evaluate.close()`` and
    ``evaluate.interrupt()`` stop it.  ``pool_options`` go to :class:`RayActorPool`.
    """
    pool = RayActorPool(script_config(cfg), size=getattr(cfg, "ray_actors", None),
                        address=getattr(cfg, "ray_address", None), prebuild_failures=prebuild_failures,
                        **pool_options)

    def evaluate(item: Any, device: str, build_dir: str) -> dict:
        source = Path(item.kernel_path).read_text(errors="surrogateescape")
        try:
            return pool.run(request_for(item, source, build_dir, bool(getattr(cfg, "keep_build_dirs", True))))
        except _Stopped:
            raise RuntimeError("interrupted") from None

    kind = "cuda" if str(cfg.device).startswith("cuda") else "cpu"
    evaluate.devices = [kind] * pool.size  # type: ignore[attr-defined]
    evaluate.pool = pool  # type: ignore[attr-defined]
    evaluate.close = pool.close  # type: ignore[attr-defined]
    evaluate.interrupt = pool.interrupt  # type: ignore[attr-defined]
    return evaluate


def prebuild_on_cluster(items: list, build_root: str, device: str, timeout: float) -> dict[tuple[int, int], str]:
    """``build_cache=true`` under Ray: each compiling candidate is built by a Ray task into the shared build root.

    The tasks take one CPU (and a sliver of a GPU for ``device=cuda``: the build
    constructs the model on the device as the evaluation will); ``build_root`` must be
    a filesystem every node sees (``docs/ray.md``).  Returns ``(problem, sample) ->
    error`` for the failed builds, as :func:`~kernelbench.reward_hardening.parent.prebuild.prebuild_items`.
    """
    ray = require_ray()
    from kernelbench.reward_hardening.parent.prebuild import compiles, prebuild

    task = ray.remote(prebuild).options(num_cpus=1, num_gpus=0.01 if device.startswith("cuda") else 0)
    refs = {}
    for it in items:
        src = Path(it.kernel_path).read_text()
        if compiles(src):
            build_dir = str(Path(build_root) / str(it.problem_id) / str(it.sample_id) / "build")
            dev = "cuda:0" if device.startswith("cuda") else device
            refs[(it.problem_id, it.sample_id)] = (build_dir, task.remote([(src, it.ref_code, build_dir)], dev, 1,
                                                                          timeout))
    failed = {}
    for key, (build_dir, ref) in refs.items():
        try:
            res = (ray.get(ref) or {}).get(build_dir) or {}
        except Exception as exc:  # the task or its node died: the build failed
            res = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if not res.get("ok"):
            failed[key] = str(res.get("error") or "build failed")[:2000]
    return failed
