"""Parallel CPU pre-build of generated kernels (upstream-compatible ``kernelbench.compile``).

Importing each generated kernel once builds its ``load_inline`` extensions into
``<kernel_eval_build_dir>/<run_name>/<problem_id>/<sample_id>``, the directory the
evaluator later uses for that sample, so evaluation finds them already compiled.

Same names and call shapes as upstream: :class:`WorkArgs`,
:func:`compile_single_sample(work_args, config)`, :func:`remove_cache_dir(config,
problem_id, sample_id)`, :func:`batch_compile(total_work, config)` with ``config`` a
dict holding ``run_name``, ``runs_dir``, ``level``, ``kernel_eval_build_dir``,
``num_cpu_workers``, ``timeout`` and optionally ``verbose`` and ``gpu_arch``.

Differences from upstream (deliberate):

* every build runs in its own spawned process and is killed when the build (timed
  from when the process is ready, interpreter start-up excluded) exceeds ``timeout``
  seconds; a timed-out build is retried at most ``max_retries`` times
  (config key, default 1) instead of being resubmitted without limit;
* failures are returned (and printed), not appended to ``error_log.txt`` in the current
  working directory;
* ``batch_compile`` returns ``[(index, compiled)]`` sorted by index, with ``compiled``
  None for a build that crashed or timed out.

A pre-build only compiles; it is never a verdict.  The evaluator imports each
candidate again in its own worker.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["WorkArgs", "batch_compile", "compile_single_sample", "remove_cache_dir"]


@dataclass
class WorkArgs:
    problem_id: int
    sample_id: int
    device: Any = None


def _build_dir(config: dict, problem_id: int, sample_id: int) -> str:
    return os.path.join(config["kernel_eval_build_dir"], config["run_name"], str(problem_id), str(sample_id))


def _kernel_path(config: dict, problem_id: int, sample_id: int) -> str:
    return os.path.join(config["runs_dir"], config["run_name"],
                        f"level_{config['level']}_problem_{problem_id}_sample_{sample_id}_kernel.py")


def compile_single_sample(work_args: WorkArgs, config: dict) -> tuple[bool | None, str, str | None]:
    """Build one generated kernel into its build directory; ``(compiled, stdout, error)``."""
    from kernelbench.eval import build_compile_cache

    pid, sid = work_args.problem_id, work_args.sample_id
    if config.get("gpu_arch"):
        from kernelbench.utils import set_gpu_arch

        set_gpu_arch(config["gpu_arch"])
    path = _kernel_path(config, pid, sid)
    if not os.path.isfile(path):
        return False, "", f"Kernel source file not found: {path}"
    with open(path, encoding="utf-8") as fh:
        src = fh.read()
    try:
        return build_compile_cache(src, verbose=bool(config.get("verbose", False)),
                                   build_dir=_build_dir(config, pid, sid))
    except Exception as exc:  # noqa: BLE001 - one sample's failure must not stop the batch
        return None, "", f"{type(exc).__name__}: {exc}"


def remove_cache_dir(config: dict, problem_id: int, sample_id: int) -> None:
    """Remove one sample's build directory (never the build root)."""
    path = _build_dir(config, problem_id, sample_id)
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def _child(work_args: WorkArgs, config: dict, queue) -> None:
    import kernelbench.eval  # noqa: F401 - import torch before the clock starts

    queue.put("started")
    queue.put(compile_single_sample(work_args, config))


def batch_compile(total_work: list[tuple[int, int]], config: dict) -> list[tuple[int, bool | None]]:
    """Build every ``(problem_id, sample_id)`` of ``total_work`` with ``num_cpu_workers`` processes."""
    if "num_cpu_workers" not in config:
        raise ValueError("batch_compile: config needs num_cpu_workers")
    workers = max(1, int(config["num_cpu_workers"]))
    timeout = float(config.get("timeout", 900))
    max_retries = int(config.get("max_retries", 1))
    verbose = bool(config.get("verbose", False))
    ctx = multiprocessing.get_context("spawn")
    pending = [(i, 0) for i in range(len(total_work))]
    running: dict[int, tuple[Any, Any, float, int]] = {}
    results: dict[int, bool | None] = {}

    while pending or running:
        while pending and len(running) < workers:
            i, attempt = pending.pop(0)
            pid, sid = total_work[i]
            queue = ctx.Queue()
            proc = ctx.Process(target=_child, args=(WorkArgs(pid, sid), config, queue), daemon=True)
            proc.start()
            running[i] = (proc, queue, None, attempt)
        time.sleep(0.05)
        for i, (proc, queue, started, attempt) in list(running.items()):
            pid, sid = total_work[i]
            if started is None and not queue.empty():
                queue.get()  # "started": the build itself begins now (interpreter start-up is not timed)
                started = time.monotonic()
                running[i] = (proc, queue, started, attempt)
            if started is None and proc.is_alive():
                continue
            if not queue.empty() or not proc.is_alive():
                try:
                    outcome = queue.get(timeout=2)
                    if outcome == "started":
                        outcome = queue.get(timeout=2)
                except Exception:  # noqa: BLE001 - died without an answer
                    outcome = (None, "", f"build process exited with code {proc.exitcode}")
                proc.join(timeout=5)
                compiled, _stdout, error = outcome
                results[i] = compiled
                if not compiled:
                    remove_cache_dir(config, pid, sid)
                    print(f"[compile] problem {pid} sample {sid}: failed: {error}")
                elif verbose:
                    print(f"[compile] problem {pid} sample {sid}: built")
                del running[i]
            elif time.monotonic() - started > timeout:
                proc.kill()
                proc.join(timeout=5)
                remove_cache_dir(config, pid, sid)
                del running[i]
                if attempt < max_retries:
                    print(f"[compile] problem {pid} sample {sid}: timed out after {timeout:g} s, retrying")
                    pending.append((i, attempt + 1))
                else:
                    print(f"[compile] problem {pid} sample {sid}: timed out after {timeout:g} s")
                    results[i] = None
    return sorted(results.items())
