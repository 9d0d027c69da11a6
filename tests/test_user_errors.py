"""One-line errors a person can act on: every mistake of the user-path review, one test each.

Each script is run as a user runs it (a subprocess); the error must be the last line
of stderr, start with ``error:``, name what to do, and come without a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
PROMPTS = REPO / "src" / "kernelbench" / "prompts"
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"
DEMO_IDS = sorted(int(p.name.split("_", 1)[0]) for p in (DEMO / "level1").glob("*.py") if p.name[0].isdigit())
KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and k != "HF_HUB_OFFLINE"}
    # a Hub that refuses connections at once, and an empty cache: what an offline machine sees
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf_home"),
               LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    return env


def _run(tmp_path: Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=_env(tmp_path, **env))


def _error_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert lines, proc.stdout
    assert lines[-1].startswith("error: "), proc.stderr
    return lines[-1]


def _rac(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(tmp_path, "run_and_check.py", "device=cpu", "reward_hardening_mode=enforce", *args)


# --------------------------------------------------------------------------- run_and_check
def test_missing_kernel_file(tmp_path):
    proc = _rac(tmp_path, "ref_origin=local", f"ref_arch_src_path={PROMPTS / 'model_ex_add.py'}",
                "kernel_src_path=no/such_kernel.py")
    assert proc.returncode == 2
    line = _error_line(proc)
    assert "kernel_src_path: no such file: no/such_kernel.py" in line and "repository root" in line


def test_missing_reference_file(tmp_path):
    proc = _rac(tmp_path, "ref_origin=local", "ref_arch_src_path=nowhere/ref.py",
                f"kernel_src_path={PROMPTS / 'model_new_ex_add_cpu.py'}")
    assert proc.returncode == 2
    assert "ref_arch_src_path: no such file: nowhere/ref.py" in _error_line(proc)


def test_unknown_problem_id_names_the_ids_of_the_level(tmp_path):
    proc = _rac(tmp_path, "ref_origin=kernelbench", "dataset_src=local", "dataset_path=demo", "level=1",
                "problem_id=99", f"kernel_src_path={PROMPTS / 'model_new_ex_add_cpu.py'}")
    assert proc.returncode == 2
    line = _error_line(proc)
    assert "Problem ID 99 not found" in line and f"level 1 has ids {DEMO_IDS[0]}-{DEMO_IDS[-1]}" in line


def test_unknown_level_names_the_levels_and_gives_no_advice_already_taken(tmp_path):
    proc = _rac(tmp_path, "ref_origin=kernelbench", "dataset_src=local", "dataset_path=demo", "level=99",
                "problem_id=1", f"kernel_src_path={PROMPTS / 'model_new_ex_add_cpu.py'}")
    assert proc.returncode == 2
    line = _error_line(proc)
    levels = sorted(int(d.name[5:]) for d in DEMO.iterdir() if d.is_dir() and d.name[5:].isdigit())
    assert "level 99 not found" in line and f"has levels {', '.join(map(str, levels))}" in line
    assert "dataset_path=demo" not in line


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_hardened_cuda_without_cuda_exits_3_with_the_device_hint(tmp_path):
    proc = _run(tmp_path, "run_and_check.py", "ref_origin=local", f"ref_arch_src_path={PROMPTS / 'model_ex_add.py'}",
                f"kernel_src_path={PROMPTS / 'model_new_ex_add_cpu.py'}", "reward_hardening_mode=enforce")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "integrity_status=UNSUPPORTED" in proc.stdout
    line = _error_line(proc)
    assert line.startswith("error: UNSUPPORTED:") and "pass device=cpu" in line


def test_syntax_error_line_is_in_the_summary(tmp_path):
    kernel = tmp_path / "broken.py"
    kernel.write_text("import torch\nclass ModelNew(torch.nn.Module:\n    pass\n")
    proc = _rac(tmp_path, "ref_origin=local", f"ref_arch_src_path={PROMPTS / 'model_ex_add.py'}",
                f"kernel_src_path={kernel}")
    assert proc.returncode == 0, proc.stderr
    assert "syntax error: line 2" in proc.stdout
    assert "uv run kernelguard explain RH-42" in proc.stdout


# --------------------------------------------------------------------------- offline datasets
def test_offline_huggingface_batch_has_its_own_exit_code_and_a_demo_hint(tmp_path):
    (tmp_path / "runs" / "r").mkdir(parents=True)
    proc = _run(tmp_path, "eval_from_generations.py", "run_name=r", "dataset_src=huggingface", "level=1",
                "device=cpu", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    line = _error_line(proc)
    assert "cannot reach the Hugging Face Hub" in line and "dataset_src=local dataset_path=demo" in line
    assert "HF_HUB_OFFLINE=1" in line


def test_offline_generation_is_one_line(tmp_path):
    proc = _run(tmp_path, "generate_samples.py", "run_name=g", "dataset_src=huggingface", "level=1",
                "server_type=google", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "dataset_src=local dataset_path=demo" in _error_line(proc)


@pytest.mark.skipif((REPO / ".env").exists(), reason="a .env at the repository root may hold keys")
def test_generation_without_an_api_key_stops_before_the_first_call(tmp_path):
    proc = _run(tmp_path, "generate_samples.py", "run_name=g", "dataset_src=local", "dataset_path=demo", "level=1",
                "server_type=google", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = _error_line(proc)
    assert "no API key for gemini/gemini-2.5-flash" in line and "GEMINI_API_KEY" in line
    assert "mock_response" in line
    assert not list((tmp_path / "runs" / "g").glob("*_kernel.py"))
    assert "generation" not in proc.stderr.replace(line, "")  # no progress bar was started


@pytest.mark.skipif((REPO / ".env").exists(), reason="a .env at the repository root may hold keys")
def test_single_sample_without_an_api_key_is_one_line(tmp_path):
    proc = _run(tmp_path, "generate_and_eval_single_sample.py", "dataset_src=local", "dataset_path=demo", "level=1",
                "problem_id=1", "server_type=google", "model_name=None", f"logdir={tmp_path / 'logs'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no API key for gemini/gemini-2.5-flash" in _error_line(proc)


def test_offline_huggingface_reference_for_one_candidate_exits_5(tmp_path):
    proc = _rac(tmp_path, "ref_origin=kernelbench", "dataset_src=huggingface", "level=1", "problem_id=1",
                f"kernel_src_path={PROMPTS / 'model_new_ex_add_cpu.py'}")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "dataset_src=local dataset_path=demo" in _error_line(proc)


def test_offline_single_sample_exits_5(tmp_path):
    proc = _run(tmp_path, "generate_and_eval_single_sample.py", "dataset_src=huggingface", "level=1", "problem_id=1",
                "server_type=google", "model_name=None", "mock_response=x", f"logdir={tmp_path / 'logs'}")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "cannot reach the Hugging Face Hub" in _error_line(proc)
