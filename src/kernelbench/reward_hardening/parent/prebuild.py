"""Build candidates' extensions ahead of evaluation, in parallel workers.

``load_inline`` of even a tiny CUDA kernel takes about a minute on a GPU host, almost
all of it host compilation of the PyTorch headers.  Building every candidate of a batch
concurrently into its persistent build directory (see
:func:`kernelbench.reward_hardening.config.default_build_dir`) before the timed
evaluation keeps that cost out of each worker's timeout.  The build runs the
candidate's constructor in a disposable worker, exactly as the evaluation will.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["build_lock", "build_one", "compiles", "prebuild", "prebuild_items"]

# what makes a candidate compile something when it is constructed
_COMPILE_MARKS = ("load_inline", "cpp_extension", "triton")


def compiles(candidate_src: str) -> bool:
    """Whether constructing the candidate builds an extension or JIT-compiles kernels."""
    return any(m in candidate_src for m in _COMPILE_MARKS)


@contextlib.contextmanager
def build_lock(build_dir: str, timeout: float):
    """Exclusive use of one build directory by this evaluator, with stale build batons cleared.

    ``torch.utils.cpp_extension`` serialises builds of one extension with a *baton*: a
    ``lock`` file created in the extension's directory and deleted when the build
    ends.  A build that is killed (a timeout, SIGKILL, a crashed worker) leaves it
    behind, and every later build of that source waits for it forever.  Every build
    KernelGuard starts runs under this lock (an ``fcntl`` lock beside the directory,
    released by the kernel when its holder dies), so while it is held no build of
    ours is running there and any baton left in the directory is stale: it is removed.
    Yields the list of batons removed.
    """
    from filelock import FileLock

    os.makedirs(build_dir, exist_ok=True)
    with FileLock(build_dir.rstrip("/") + ".kglock", timeout=timeout):
        removed = []
        for dirpath, _dirs, files in os.walk(build_dir):
            if "lock" in files:
                path = os.path.join(dirpath, "lock")
                try:
                    os.unlink(path)
                    removed.append(os.path.relpath(path, build_dir))
                except OSError:
                    pass
        yield removed


def build_one(candidate_src: str, reference_src: str, build_dir: str, device: str) -> dict:
    """Runs inside a worker: construct ModelNew once so its extensions are compiled."""
    import time

    import torch

    os.makedirs(build_dir, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
    from kernelbench.eval import load_custom_model, load_original_model_and_inputs

    t0 = time.time()
    _, get_init_inputs, _ = load_original_model_and_inputs(reference_src)
    torch.manual_seed(42)
    init = get_init_inputs()
    cls = load_custom_model(candidate_src, None, build_dir)
    if cls is None:
        return {"ok": False, "error": "no ModelNew"}
    with torch.no_grad():
        torch.manual_seed(42)
        cls(*init).to(device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return {"ok": True, "seconds": round(time.time() - t0, 1)}


def prebuild(jobs: list[tuple[str, str, str]], device: str, parallel: int = 8, timeout: float = 900) -> dict:
    """Build ``(candidate_src, reference_src, build_dir)`` jobs concurrently; id -> result."""
    from kernelbench.procs import run_oneshot
    from kernelbench.reward_hardening import containment

    def one(job: tuple[str, str, str]) -> dict[str, Any]:
        cand, ref, build_dir = job
        # the candidate's constructor runs here: contained exactly like the candidate worker
        containment.begin_evaluation()
        unit = containment.new_unit("candidate")
        workspace = tempfile.mkdtemp(prefix="kernelguard_build_")
        extra = {"role": "candidate", "build_dir": build_dir,
                 "containment": unit.child_spec(private=[os.path.dirname(workspace)], device=device)}
        try:
            with build_lock(build_dir, timeout) as stale:
                out = run_oneshot("kernelbench.reward_hardening.parent.prebuild:build_one",
                                  {"candidate_src": cand, "reference_src": ref, "build_dir": build_dir,
                                   "device": device}, timeout=timeout, workspace=workspace, spec_extra=extra,
                                  on_start=lambda h: unit.attach(h.pid, h.spec))
        except Exception as exc:  # the lock timed out: another process builds this source
            return {"ok": False, "error": f"build lock: {type(exc).__name__}: {exc}"}
        finally:
            report = unit.sweep()
            shutil.rmtree(workspace, ignore_errors=True)
        res = out["result"] if out["ok"] else {"ok": False, "error": out.get("error")}
        if report.get("survivors"):
            res = {"ok": False, "error": f"the build left {len(report['survivors'])} process(es) running "
                                         f"(killed): {report['survivors'][:3]}"}
        if stale:
            res["stale_batons_removed"] = stale
        return res

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        results = list(pool.map(one, jobs))
    return {job[2]: res for job, res in zip(jobs, results)}


def prebuild_items(items: list, build_root: str, device: str, num_cpu_workers: int,
                   timeout: float = 900) -> dict[tuple[int, int], str]:
    """Build every batch sample's extensions in parallel, before any GPU evaluation.

    ``items`` are :class:`kernelbench.batch.WorkItem`; each builds into the directory its
    evaluation will use (``<build_root>/<problem>/<sample>/build``, as
    :func:`kernelbench.batch.run_batch` and the hardened evaluator lay it out), so the
    evaluation finds the finished build.  Only candidates that compile something
    (``load_inline``/``load``/Triton) are built.  Returns ``(problem, sample) -> error``
    for the builds that failed; those samples get a load-failure record (RH-42) without
    being evaluated.
    """
    from pathlib import Path

    jobs, keys = [], []
    for it in items:
        src = Path(it.kernel_path).read_text()
        if not compiles(src):
            continue
        jobs.append((src, it.ref_code, str(Path(build_root) / str(it.problem_id) / str(it.sample_id) / "build")))
        keys.append((it.problem_id, it.sample_id))
    if not jobs:
        return {}
    results = prebuild(jobs, device, parallel=max(1, num_cpu_workers), timeout=timeout)
    failed = {}
    for key, job in zip(keys, jobs):
        res = results.get(job[2]) or {}
        if not res.get("ok"):
            failed[key] = str(res.get("error") or "build failed")[:2000]
    return failed
