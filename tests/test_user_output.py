"""What a user reads: analysis plot and baseline warnings, run_and_check's summary,
``python -m kernelbench explain``, ``more_info`` links, install extras and their hints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ANALYSIS = REPO / "scripts" / "benchmark_eval_analysis.py"
SHIPPED = REPO / "results" / "timing" / "H200"


def _py(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    import os

    full = dict(os.environ, PYTHONPATH=str(SRC))
    full.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full)


# --------------------------------------------------------------------------- item 4: plot and baseline
def _cpu_run(tmp: Path, hardware: str = "cpu", device: str = "cpu") -> Path:
    """runs/r/eval_results.json for demo level 1 problems 1 and 2, evaluated on ``hardware``."""
    run = tmp / "runs" / "r"
    run.mkdir(parents=True)
    rec = {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 0.5, "runtime_stats": {},
           "metadata": {"hardware": hardware, "device": device}}
    (run / "eval_results.json").write_text(json.dumps({"1": [rec], "2": [rec]}))
    return run


def _analysis_args(tmp: Path, **extra: str) -> list[str]:
    args = {"run_name": "r", "level": "1", "hardware": "H200", "baseline": "baseline_time_torch",
            "eval_results_dir": str(tmp / "runs"), "dataset_path": "demo"}
    args.update(extra)
    return [str(ANALYSIS)] + [f"{k}={v}" for k, v in args.items()]


@pytest.mark.parametrize("flag", ["True", "true"])
def test_plot_true_writes_the_default_png_not_a_file_named_true(tmp_path, flag):
    run = _cpu_run(tmp_path)
    out = tmp_path / "out" / "analysis.json"
    proc = _py(*_analysis_args(tmp_path, plot=flag), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "True").exists() and not (REPO / "True").exists() and not (REPO / "true").exists()
    png = run / "fast_p_level1_baseline_time_torch.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and str(png) in proc.stdout
    # with output_file the plot goes beside it
    proc = _py(*_analysis_args(tmp_path, plot=flag, output_file=str(out)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "analysis.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_false_writes_nothing_and_a_path_is_used_as_given(tmp_path):
    run = _cpu_run(tmp_path)
    proc = _py(*_analysis_args(tmp_path, plot="false"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not list(run.glob("*.png")) and "Plot saved" not in proc.stdout
    proc = _py(*_analysis_args(tmp_path, plot=str(tmp_path / "chart.png")), cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "chart.png").is_file()


def test_parse_plot_option():
    from kernelbench.analysis import parse_plot_option

    assert [parse_plot_option(v) for v in (None, False, "false", "None", "", "0")] == [None] * 6
    assert [parse_plot_option(v) for v in (True, "True", "yes", 1)] == [True] * 4
    assert parse_plot_option("plots/p.png") == "plots/p.png"


def test_cpu_run_against_the_shipped_h200_baseline_warns(tmp_path):
    _cpu_run(tmp_path)
    out = tmp_path / "a.json"
    proc = _py(*_analysis_args(tmp_path, output_file=str(out)), cwd=tmp_path,
               env={"KERNELBENCH_DEMO_SCALE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"baseline was measured on NVIDIA H200 \(cuda\).*evaluated on cpu \(cpu\)", proc.stderr)
    assert "KERNELBENCH_DEMO_SCALE=64" in proc.stderr
    data = json.loads(out.read_text())
    assert data["baseline_hardware"] == ["NVIDIA H200"]
    assert len(data["baseline_warnings"]) == 2


def test_matching_baseline_gives_no_warning(tmp_path):
    _cpu_run(tmp_path, hardware="NVIDIA H200", device="cuda:0")
    out = tmp_path / "a.json"
    proc = _py(*_analysis_args(tmp_path, output_file=str(out)), cwd=tmp_path,
               env={"KERNELBENCH_DEMO_SCALE": "64"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["baseline_warnings"] == []
    assert "different machines" not in proc.stderr


def test_baseline_of_another_problem_set_warns():
    from kernelbench.analysis import baseline_mismatches

    baseline = json.loads((SHIPPED / "baseline_time_torch.json").read_text())
    env = json.loads((SHIPPED / "environment.json").read_text())
    names = {1: "1_Square_matrix_multiplication_.py", 2: "2_Standard_matrix_multiplication_.py"}
    means = {k: v["mean"] for k, v in baseline["level1"].items()}
    messages = baseline_mismatches(baseline, 1, [], names, means, env, dataset_is_demo=False)
    assert any("2 of 2 problems" in m for m in messages)
    assert any("demo task set" in m and "another dataset" in m for m in messages)


def test_readme_says_what_the_shipped_baseline_is():
    env = json.loads((SHIPPED / "environment.json").read_text())
    assert env["gpu"] == "NVIDIA H200" and env["demo_scale"] == "64"
    for name in ("README.md", "README.zh-CN.md"):
        text = (REPO / name).read_text()
        assert "KERNELBENCH_DEMO_SCALE=64" in text and "H200" in text, name
