"""Batch evaluation: upstream layout and metadata keys, per-sample resume, atomic writes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"

WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"
RAISES = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        raise RuntimeError('boom')\n"
SYNTAX = "import torch\nclass ModelNew(torch.nn.Module:\n"
SLEEPY = "import time, torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        time.sleep(60)\n"


def _write_run(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    sol = DEMO / "solutions" / "level1"
    files = {
        (1, 0): (sol / "1_Elementwise_add.py").read_text(),
        (1, 1): WRONG,
        (2, 0): RAISES,
        (3, 0): SYNTAX,
        (4, 0): (sol / "4_Row_softmax.py").read_text(),
        (5, 0): (sol / "5_Square_matmul.py").read_text(),
        (7, 0): SLEEPY,
    }
    for (pid, sid), code in files.items():
        (run_dir / f"level_1_problem_{pid}_sample_{sid}_kernel.py").write_text(code)


def _cmd(runs_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), "run_name=t", "dataset_src=local",
            "dataset_path=demo", "level=1", "device=cpu", "subset=(1,7)", "num_samples_per_problem=2",
            "num_correct_trials=2", "num_perf_trials=3", "timeout=8", f"runs_dir={runs_dir}",
            f"kernel_eval_build_dir={runs_dir / 'cache'}", *extra]


def test_batch_records_outcomes_and_resumes(tmp_path):
    runs_dir = tmp_path / "runs"
    run_dir = runs_dir / "t"
    _write_run(run_dir)
    results = run_dir / "eval_results.json"
    proc = subprocess.Popen(_cmd(runs_dir), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 120
    first = {}
    while time.time() < deadline:  # kill it as soon as some, but not all, samples are written
        if results.exists():
            first = json.loads(results.read_text())
            if sum(len(v) for v in first.values()) >= 2:
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {(k, r["sample_id"]): r for k, v in json.loads(results.read_text()).items() for r in v}
    assert 0 < len(done_before) < 7

    out = subprocess.run(_cmd(runs_dir, "pass_at_k_values=[1,2]"), cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(results.read_text())
    recs = {(k, r["sample_id"]): r for k, v in data.items() for r in v}
    assert set(recs) == {("1", 0), ("1", 1), ("2", 0), ("3", 0), ("4", 0), ("5", 0), ("7", 0)}
    for key, rec in done_before.items():  # finished samples were not recomputed
        assert recs[key] == rec
    for rec in recs.values():
        assert set(rec) == {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}
    assert recs[("1", 0)]["correctness"] and recs[("1", 0)]["runtime"] > 0
    assert recs[("1", 1)]["compiled"] and not recs[("1", 1)]["correctness"]
    assert recs[("1", 1)]["metadata"]["correctness_issue"] == "Output mismatch"
    assert "runtime_error" in recs[("2", 0)]["metadata"]
    assert not recs[("3", 0)]["compiled"] and "compilation_error" in recs[("3", 0)]["metadata"]
    assert recs[("7", 0)]["metadata"]["error"] == "Evaluation timed out"
    assert list(data) == sorted(data, key=int)
    pass_at_k = json.loads((run_dir / "pass_at_k_results.json").read_text())
    assert "avg_pass@1" in pass_at_k["averages"] and pass_at_k["problems"]["1"]["correct_samples"] == 1
