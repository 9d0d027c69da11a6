"""scripts/generate_samples.py end to end, offline (litellm mock_response), plus prompts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "generate_samples.py"

KERNEL_CODE = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a + b"
MOCK_REPLY = f"Here is the optimized model.\n\n```python\n{KERNEL_CODE}\n```\n\nIt fuses nothing but it is a start."


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("kb_generate_samples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)


def _args(runs_dir, run_name="mock_run", **extra):
    args = [
        f"run_name={run_name}",
        "dataset_src=local",
        "dataset_path=demo",
        "level=1",
        "subset=(1,2)",
        "server_type=openai",
        "model_name=openai/gpt-4o-mini",
        f"mock_response={MOCK_REPLY}",
        f"runs_dir={runs_dir}",
        "num_workers=2",
    ]
    args += [f"{k}={v}" for k, v in extra.items()]
    return args


def _config(gen, args):
    config = gen.GenerationConfig()
    gen.pydra.apply_overrides(config, args, finalize=True)
    return config


# --------------------------------------------------------------------------- end to end


def test_end_to_end_and_resume(gen, tmp_path):
    summary = gen.main(_args(tmp_path, log_prompt="True"))
    run_dir = tmp_path / "mock_run"
    assert summary["written"] == 2 and summary["failed"] == 0 and summary["skipped"] == 0

    config = yaml.safe_load((run_dir / "generation_config.yaml").read_text())
    assert config["run_name"] == "mock_run" and config["level"] == 1
    assert config["subset"] == [1, 2] and config["dataset_path"] == "demo"
    assert config["model_name"] == "openai/gpt-4o-mini"
    assert config["mock_response"] == MOCK_REPLY

    for pid in (1, 2):
        kernel = run_dir / f"level_1_problem_{pid}_sample_0_kernel.py"
        assert kernel.read_text() == KERNEL_CODE + "\n"
        prompt = (run_dir / f"level_1_problem_{pid}_sample_0_prompt.txt").read_text()
        assert "ModelNew" in prompt and "class Model" in prompt
    assert not (run_dir / "level_1_problem_3_sample_0_kernel.py").exists()

    # Second run: existing kernels are skipped and left untouched.
    marker = run_dir / "level_1_problem_1_sample_0_kernel.py"
    marker.write_text("# kept\n")
    again = gen.main(_args(tmp_path))
    assert again["skipped"] == 2 and again["written"] == 0
    assert marker.read_text() == "# kept\n"

    # More samples: only the missing sample ids are generated.
    more = gen.main(_args(tmp_path, num_samples=2))
    assert more["skipped"] == 2 and more["written"] == 2
    assert (run_dir / "level_1_problem_2_sample_1_kernel.py").read_text() == KERNEL_CODE + "\n"


def test_reply_without_code_block_fails_without_file(gen, tmp_path):
    args = [a for a in _args(tmp_path, run_name="nocode") if not a.startswith(("mock_response=", "subset="))]
    summary = gen.main(args + ["mock_response=I cannot help with that.", "problem_ids=[3]"])
    assert summary["failed"] == 1 and summary["written"] == 0
    assert not list((tmp_path / "nocode").glob("*_kernel.py"))


# ------------------------------------------------------------------------- static check


def _fake_checker(result=None, exc=None):
    calls = []

    def validate_kernel_static(code, backend, precision):
        calls.append((code, backend, precision))
        if exc is not None:
            raise exc
        return result

    validate_kernel_static.calls = calls
    return validate_kernel_static


def test_failed_check_is_logged_and_sample_kept(gen, tmp_path, monkeypatch):
    checker = _fake_checker(result=(False, ["code_bypass: try/except"], ["pytorch_wrap"]))
    monkeypatch.setattr(gen, "load_static_checker", lambda: checker)
    summary = gen.main(_args(tmp_path, run_name="chk", precision="fp16"))
    run_dir = tmp_path / "chk"
    assert summary["written"] == 2 and summary["check_failed"] == 2
    assert (run_dir / "level_1_problem_1_sample_0_kernel.py").exists()
    records = [json.loads(line) for line in (run_dir / "generation_check_log.jsonl").read_text().splitlines()]
    assert sorted(r["problem_id"] for r in records) == [1, 2]
    assert records[0]["errors"] == ["code_bypass: try/except"] and records[0]["action"] == "kept"
    assert checker.calls[0][1:] == ("cuda", "fp16")


def test_failed_check_dropped_when_asked(gen, tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "load_static_checker", lambda: _fake_checker(result=(False, ["bad"], [])))
    summary = gen.main(_args(tmp_path, run_name="drop", drop_failed_checks="true"))
    assert summary["dropped"] == 2 and summary["written"] == 0
    assert not list((tmp_path / "drop").glob("*_kernel.py"))
    assert len((tmp_path / "drop" / "generation_check_log.jsonl").read_text().splitlines()) == 2


def test_warnings_and_checker_crash_never_drop(gen, tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "load_static_checker", lambda: _fake_checker(result=(True, [], ["pytorch_wrap"])))
    summary = gen.main(_args(tmp_path, run_name="warn", verbose="true"))
    assert summary["written"] == 2 and summary["check_failed"] == 0
    assert not (tmp_path / "warn" / "generation_check_log.jsonl").exists()

    monkeypatch.setattr(gen, "load_static_checker", lambda: _fake_checker(exc=NameError("problem_number")))
    summary = gen.main(_args(tmp_path, run_name="crash"))
    assert summary["written"] == 2 and summary["failed"] == 0


def test_check_kernel_false_skips_checker(gen, tmp_path, monkeypatch):
    def boom():
        raise AssertionError("checker must not be loaded")

    monkeypatch.setattr(gen, "load_static_checker", boom)
    assert gen.main(_args(tmp_path, run_name="nochk", check_kernel="F"))["written"] == 2


# ------------------------------------------------------------------------------ config


def test_bad_backend_is_a_one_line_error(gen, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        gen.main(_args(tmp_path, backend="foo"))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "backend" in err and "'foo'" in err
    for accepted in ("cuda", "triton", "cute", "tilelang", "thunderkittens", "hip"):
        assert accepted in err
    assert not (tmp_path / "mock_run").exists()


def test_bad_backend_from_the_command_line(tmp_path):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *_args(tmp_path), "backend=foo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "backend" in proc.stderr and "thunderkittens" in proc.stderr


@pytest.mark.parametrize(
    "extra, key",
    [
        (["precision=fp64"], "precision"),
        (["prompt_option=two_shot"], "prompt_option"),
        (["server_type=acme"], "server_type"),
        (["subset=(5,1)"], "subset"),
        (["problem_ids=[1]"], "problem_ids"),  # together with subset
        (["include_hardware_info=true"], "hardware_gpu_name"),
        (["custom_prompt_key=my_prompt"], "custom_prompt_key"),
        (["temperature=warm"], "temperature"),
        (["num_workers=0"], "num_workers"),
    ],
)
def test_config_errors(gen, tmp_path, capsys, extra, key):
    with pytest.raises(SystemExit) as info:
        gen.main(_args(tmp_path) + extra)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err


def test_missing_required_key(gen, capsys):
    with pytest.raises(SystemExit) as info:
        gen.main(["dataset_src=local", "level=1", "server_type=openai"])
    assert info.value.code == 2
    assert "run_name" in capsys.readouterr().err


def test_bool_parsing_and_defaults(gen, tmp_path):
    config = _config(gen, _args(tmp_path, verbose="FALSE", log_prompt="yes"))
    assert config.verbose is False and config.log_prompt is True
    assert config.check_kernel is True and config.drop_failed_checks is False
    assert config.backend == "cuda" and config.precision == "fp32" and config.prompt_option == "one_shot"
    assert config.num_samples == 1 and config.store_type == "local"
    assert config.subset == (1, 2)


def test_preset_temperature_applies_unless_overridden(gen, tmp_path):
    preset = gen.SERVER_PRESETS["anthropic"]
    base = [a for a in _args(tmp_path) if not a.startswith(("server_type=", "model_name="))]
    config = _config(gen, base + ["server_type=anthropic"])
    assert config.temperature == preset["temperature"]
    assert config.model_name == preset["model_name"] and config.max_tokens == preset["max_tokens"]

    config = _config(gen, base + ["server_type=anthropic", "temperature=0.0"])
    assert config.temperature == 0.0

    config = _config(gen, base + ["server_type=anthropic", ".greedy"])
    assert config.temperature == 0.0

    config = _config(gen, base + ["model_name=openai/gpt-4o-mini", "server_type=None"])
    assert config.server_type is None and config.temperature == 0.0


def test_backend_precision_coupling(gen, tmp_path):
    assert _config(gen, _args(tmp_path, backend="tilelang")).precision == "fp16"
    assert _config(gen, _args(tmp_path, backend="tilelang", precision="bf16")).precision == "bf16"
    assert _config(gen, _args(tmp_path, backend="thunderkittens")).precision == "bf16"
    assert _config(gen, _args(tmp_path, backend="HIP")).backend == "hip"


def test_problem_ids_selection(gen, tmp_path):
    args = [a for a in _args(tmp_path, run_name="ids") if not a.startswith("subset=")]
    summary = gen.main(args + ["problem_ids=[2,4]"])
    assert summary["written"] == 2
    names = sorted(p.name for p in (tmp_path / "ids").glob("*_kernel.py"))
    assert names == ["level_1_problem_2_sample_0_kernel.py", "level_1_problem_4_sample_0_kernel.py"]

    with pytest.raises(SystemExit) as info:
        gen.main(args + ["problem_ids=[999]"])
    assert info.value.code == 2


# ----------------------------------------------------------------------------- prompts


REF = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n"


def _write_pair(root: Path, name: str, suffix: str = "") -> None:
    (root / f"model_ex_{name}.py").write_text(f"# reference {name}\nclass Model: ...\n")
    (root / f"model_new_ex_{name}{suffix}.py").write_text(f"# solution {name}{suffix}\nclass ModelNew: ...\n")


def test_prompt_options_and_examples(tmp_path):
    from kernelbench.prompt_constructor import build_prompt, find_example_pairs

    _write_pair(tmp_path, "add")
    _write_pair(tmp_path, "relu")
    _write_pair(tmp_path, "add", "_triton")

    assert [p.name for p in find_example_pairs("cuda", tmp_path)] == ["add", "relu"]
    assert [p.name for p in find_example_pairs("triton", tmp_path)] == ["add"]
    assert find_example_pairs("hip", tmp_path) == []

    one = build_prompt(REF, "cuda", "one_shot", "fp32", prompts_dir=tmp_path)
    assert "# solution add\n" in one and "# solution relu" not in one and REF.rstrip() in one
    few = build_prompt(REF, "cuda", "few_shot", "fp32", prompts_dir=tmp_path)
    assert "# solution add\n" in few and "# solution relu" in few
    zero = build_prompt(REF, "cuda", "zero_shot", "fp32", prompts_dir=tmp_path)
    assert "# solution" not in zero and "ModelNew" in zero
    triton = build_prompt(REF, "triton", "one_shot", "fp32", prompts_dir=tmp_path)
    assert "# solution add_triton" in triton and "triton.jit" in triton
    # no HIP example: degrade to zero-shot rather than show a CUDA example
    hip = build_prompt(REF, "hip", "one_shot", "fp32", prompts_dir=tmp_path)
    assert "# solution" not in hip and "hipcc" in hip


def test_prompt_precision_and_hardware(tmp_path):
    from kernelbench.prompt_constructor import BACKENDS, build_prompt

    for backend in BACKENDS:
        text = build_prompt(REF, backend, "zero_shot", "bf16", prompts_dir=tmp_path)
        assert "bfloat16" in text and text.rstrip().endswith("keep any explanation short.")
    hw = build_prompt(REF, "cuda", "zero_shot", "fp32", True, "NVIDIA H100 80GB HBM3", prompts_dir=tmp_path)
    assert "Target hardware: NVIDIA H100 80GB HBM3" in hw and "sm_90" in hw
    assert "Target hardware" not in build_prompt(REF, "cuda", "zero_shot", "fp32", True, None, prompts_dir=tmp_path)
    with pytest.raises(ValueError):
        build_prompt(REF, "opencl")
    with pytest.raises(ValueError):
        build_prompt(REF, "cuda", precision="fp64")


def test_prompt_uses_shipped_example_when_present():
    from kernelbench.prompt_constructor import PROMPTS_DIR, build_prompt

    reference = PROMPTS_DIR / "model_ex_add.py"
    solution = PROMPTS_DIR / "model_new_ex_add.py"
    if not (reference.is_file() and solution.is_file()):
        pytest.skip("shipped example pair not present yet")
    text = build_prompt(REF, "cuda", "one_shot", "fp32")
    assert solution.read_text().strip() in text and reference.read_text().strip() in text
