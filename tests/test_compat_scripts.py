"""Upstream script command lines: generate_and_eval_single_sample.py and generate_baseline_time.py.

Upstream's README starts with ``generate_and_eval_single_sample.py dataset_src=...
level=... problem_id=... server_type=... model_name=...``; upstream's
``generate_baseline_time.py`` is run with no arguments.  Both work here offline
(``mock_response`` stands in for the LLM; the bundled demo problems stand in for the
KernelBench tree, which a fresh checkout does not have).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pydra
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
SOLUTION = REPO / "src" / "kernelbench" / "demo_tasks" / "solutions" / "level1" / "1_Elementwise_add.py"


def _load_script(name: str):
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=timeout)


# --------------------------------------------------------------------------- baseline


def test_generate_baseline_time_needs_no_arguments():
    mod = _load_script("generate_baseline_time")
    cfg = mod.BaselineConfig()
    pydra.apply_overrides(cfg, [], finalize=True)  # upstream runs it bare: nothing is REQUIRED
    assert cfg.hardware is None and cfg.device is None
    assert cfg.precision == "fp32" and cfg.level is None


def test_generate_baseline_time_defaults_run_on_a_fresh_checkout(tmp_path, monkeypatch):
    import kernelbench.dataset as dataset

    mod = _load_script("generate_baseline_time")
    monkeypatch.setattr(dataset, "DEFAULT_DATASET_PATH", tmp_path / "no_KernelBench_here")
    cfg = mod.BaselineConfig()
    # defaults, narrowed only to keep the test short and out of the repository's results/
    pydra.apply_overrides(cfg, [f"output_dir={tmp_path / 'timing'}", "level=1", "problem_ids=[1]",
                                "compile_modes=[]", "num_trials=2", "num_warmup=1"], finalize=True)
    assert mod.main(cfg) == 0
    expected_hw = mod.hardware_name("cuda:0" if cfg.device == "cuda" else cfg.device)
    assert cfg.hardware == expected_hw and cfg.dataset_path == "demo"
    data = json.loads((tmp_path / "timing" / expected_hw / "baseline_time_torch.json").read_text())
    entry = data["level1"]["1_Elementwise_add.py"]
    assert entry["num_trials"] == 2 and entry["mean"] > 0
    assert (tmp_path / "timing" / expected_hw / "environment.json").is_file()


def test_hardware_name_is_a_plain_directory_name():
    mod = _load_script("generate_baseline_time")
    name = mod.hardware_name("cpu")
    assert name.startswith("CPU_") and "/" not in name and " " not in name


# --------------------------------------------------------------------------- single sample


def test_single_sample_script_keeps_upstreams_required_keys():
    mod = _load_script("generate_and_eval_single_sample")
    cfg = mod.EvalConfig()
    with pytest.raises(ValueError, match="Missing required"):
        pydra.apply_overrides(cfg, ["dataset_src=local", "level=1", "problem_id=1", "server_type=openai"],
                              finalize=True)
    cfg = mod.EvalConfig()
    pydra.apply_overrides(cfg, ["dataset_src=local", "level=1", "problem_id=1", "server_type=openai",
                                "model_name=gpt-4o-mini", ".verbose_logging"], finalize=True)
    assert cfg.log and cfg.log_prompt and cfg.log_generated_kernel and cfg.log_eval_result
    assert (cfg.precision, cfg.backend, cfg.prompt_option, cfg.timing_method) == ("fp32", "cuda", "one_shot",
                                                                                 "cuda_event")
    assert cfg.check_kernel is True and cfg.logdir.endswith(os.path.join("results", "eval_logs"))


@pytest.mark.slow
def test_single_sample_reply_without_code_is_one_line_error(tmp_path):
    proc = _run(["scripts/generate_and_eval_single_sample.py", "dataset_src=local", "dataset_path=demo", "level=1",
                 "problem_id=1", "server_type=openai", "model_name=gpt-4o-mini", "device=cpu",
                 f"logdir={tmp_path}", "mock_response=sorry, no code today", "log_prompt=True"])
    assert proc.returncode == 1, proc.stderr
    assert "no complete ```python or ```cpp code block" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "prompt_level_1_problem_1.txt").read_text().strip()


@pytest.mark.slow
def test_single_sample_generates_and_evaluates_offline(tmp_path):
    reply = f"Here is the kernel:\n```python\n{SOLUTION.read_text()}\n```\n"
    proc = _run(["scripts/generate_and_eval_single_sample.py", "dataset_src=local", "dataset_path=demo", "level=1",
                 "problem_id=1", "server_type=openai", "model_name=gpt-4o-mini", "device=cpu", "check_kernel=F",
                 "num_correct_trials=2", "num_perf_trials=2", f"logdir={tmp_path}", f"mock_response={reply}",
                 ".verbose_logging"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    kernel = (tmp_path / "generated_kernel_level_1_problem_1.py").read_text()
    assert "class ModelNew" in kernel
    log = (tmp_path / "eval_result_level_1_problem_1.txt").read_text()
    record = json.loads(log)
    assert record["kernel"]["compiled"] is True and record["kernel"]["correctness"] is True


# --------------------------------------------------------------------------- dataset hint


def test_missing_default_dataset_error_says_how_to_fix(tmp_path, monkeypatch):
    import kernelbench.dataset as dataset

    with pytest.raises(FileNotFoundError) as err:
        dataset.construct_kernelbench_dataset(1, source="local", base_path=tmp_path / "KernelBench")
    text = str(err.value)
    assert "dataset_path=" in text and "dataset_src=huggingface" in text and "dataset_path=demo" in text
