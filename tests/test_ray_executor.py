"""executor=ray: verdicts equal to local mode, killed actors, crash semantics (a local 2-CPU Ray cluster).

One cluster serves the whole module (its start is most of the cost).  The failure
tests use a light stand-in for the actors' runner (no torch), so they test the
driver's semantics; the slow test runs the real hardened pipeline on three demo
problems under both executors.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ray = pytest.importorskip("ray")

from kernelbench import api, runs  # noqa: E402
from kernelbench.batch_parts.plan import WorkItem  # noqa: E402
from kernelbench.batch_parts.ray_exec import ray_evaluator  # noqa: E402
from kernelbench.batch_parts.runner import run_batch  # noqa: E402

WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"
CFG = dict(reward_hardening_mode="audit", reward_hardening_policy="practical", device="cpu", precision="fp32",
           backend="cuda", num_correct_trials=1, num_perf_trials=2, timeout=60.0, allow_tf32=False)


@pytest.fixture(scope="module")
def cluster():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the stand-in runner travels by value
    yield ray
    if started:
        ray.shutdown()


class StandInRunner:
    """Evaluates nothing: ``SLEEP s`` sleeps s seconds, ``CRASH`` kills its own process."""

    def __init__(self, config, prebuild_failures=None):
        self.problem = None

    def info(self):
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def evaluate(self, request):
        src = request["source"]
        if src.startswith("CRASH"):
            os._exit(1)
        if src.startswith("SLEEP"):
            time.sleep(float(src.split()[1]))
        return {"sample_id": request["sample_id"], "compiled": True, "correctness": True,
                "metadata": {"pid": os.getpid()}, "runtime": 1.0, "runtime_stats": {}}


def _items(tmp_path, sources):
    items = []
    for i, src in enumerate(sources):
        path = tmp_path / f"level_1_problem_{1 + i // 2}_sample_{i % 2}_kernel.py"
        path.write_text(src)
        items.append(WorkItem(1 + i // 2, i % 2, str(path), None, "REF", f"p{1 + i // 2}"))
    return items


def _records(path):
    data = json.loads(Path(path).read_text())
    return [(int(pid), r["sample_id"]) for pid, rs in data.items() for r in rs]


def test_killed_actor_costs_no_sample(cluster, tmp_path):
    """An actor killed mid-batch: its in-flight sample is retried, every sample gets exactly one record."""
    items = _items(tmp_path, ["SLEEP 2"] * 4)
    cfg = SimpleNamespace(**CFG, ray_actors=2, ray_address=None, keep_build_dirs=False)
    evaluate = ray_evaluator(cfg, runner_cls=StandInRunner)
    pool, results = evaluate.pool, tmp_path / "verified_eval_results.json"
    done = threading.Event()
    thread = threading.Thread(target=lambda: (run_batch(items, evaluate, results, evaluate.devices,
                                                        tmp_path / "build", progress=False), done.set()))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:  # a ready actor running a sample
            victim = next((s for s in pool.slots if s.busy and s.ready and s.pid), None)
            time.sleep(0.1)
        assert victim is not None, "no actor started a sample"
        time.sleep(0.5)
        os.kill(victim.pid, signal.SIGKILL)
        thread.join(120)
        assert done.is_set()
    finally:
        evaluate.close()
    keys = _records(results)
    assert sorted(keys) == [(1, 0), (1, 1), (2, 0), (2, 1)]  # each exactly once
    assert any(e["event"] == "replaced" for e in pool.events)


def test_sample_that_kills_actors_twice_is_the_candidates_fail(cluster, tmp_path):
    """Two deaths on a live node: RH-15 FAIL with both deaths as evidence; reward 0, never an evaluator failure."""
    items = _items(tmp_path, ["CRASH", "SLEEP 0"])
    cfg = SimpleNamespace(**CFG, ray_actors=1, ray_address=None, keep_build_dirs=False)
    evaluate = ray_evaluator(cfg, runner_cls=StandInRunner)
    results = tmp_path / "verified_eval_results.json"
    try:
        run_batch(items, evaluate, results, evaluate.devices, tmp_path / "build", progress=False)
    finally:
        evaluate.close()
    data = runs.load_results(results)
    crashed = runs.find_record(data, 1, 0)
    rh = crashed["reward_hardening"]
    assert rh["integrity_status"] == "FAIL" and [f["code"] for f in rh["findings"]] == ["RH-15"]
    assert len(rh["findings"][0]["evidence"]["actor_deaths"]) == 2
    assert api.reward(crashed) == 0.0 and not api.evaluator_failed(crashed)
    assert runs.find_record(data, 1, 1)["correctness"] is True  # the next sample on a fresh actor
    assert sorted(_records(results)) == [(1, 0), (1, 1)]


@pytest.mark.slow
def test_ray_matches_local_on_three_demo_problems(cluster, tmp_path):
    """Same verdicts and the same AVAILABLE containment capabilities under executor=ray as executor=local."""
    from kernelbench.commands.evaluate import entry
    from kernelbench.demo_run import build_demo_run

    out = {}
    for executor in ("local", "ray"):
        run_dir, _, _ = build_demo_run(tmp_path, executor, 1)
        (run_dir / "level_1_problem_2_sample_0_kernel.py").write_text(WRONG)
        args = [f"run_name={executor}", "dataset_src=local", "dataset_path=demo", "level=1", "problem_ids=[1,2,3]",
                "device=cpu", "reward_hardening_mode=audit", "reward_hardening_policy=practical",
                "num_correct_trials=1", "num_perf_trials=2", "timeout=60", f"runs_dir={tmp_path}",
                f"kernel_eval_build_dir={tmp_path / 'cache'}", f"executor={executor}", "num_gpu_devices=2"]
        assert entry(args) == 0
        out[executor] = json.loads((run_dir / "verified_eval_results.json").read_text())

    def verdicts(data):
        return {pid: (rs[0]["reward_hardening"]["integrity_status"],
                      sorted(f["code"] for f in rs[0]["reward_hardening"]["findings"] if f["severity"] == "error"))
                for pid, rs in data.items()}

    def available(data):
        return {pid: sorted(k for k, c in rs[0]["reward_hardening"]["capabilities"].items()
                            if c["status"] == "AVAILABLE") for pid, rs in data.items()}

    assert verdicts(out["ray"]) == verdicts(out["local"])
    assert verdicts(out["local"])["2"][0] == "FAIL" and verdicts(out["local"])["1"][0] == "PASS"
    assert available(out["ray"]) == available(out["local"])
    assert any(k.startswith("containment_") for k in available(out["ray"])["1"])
