"""The ``kernelguard`` command does the scripts' jobs as subcommands, over the same keys."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.__main__ import KEY_VALUE_COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
PROMPTS = REPO / "src" / "kernelbench" / "prompts"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"kg_cli_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_help_lists_every_subcommand(capsys):
    assert _exit_code(["--help"]) == 0
    out = capsys.readouterr().out
    for name in (*KEY_VALUE_COMMANDS, "redteam", "explain", "codes"):
        assert name in out, name


@pytest.mark.parametrize("script,module,config", [
    ("run_and_check", "check", "ScriptConfig"),
    ("eval_from_generations", "evaluate", "EvalConfig"),
    ("benchmark_eval_analysis", "analyze", "AnalysisConfig"),
    ("make_demo_run", "demo", "DemoRunConfig"),
])
def test_scripts_are_thin_wrappers_over_the_subcommands_modules(script, module, config):
    wrapper = _script(script)
    impl = importlib.import_module(f"kernelbench.commands.{module}")
    assert getattr(wrapper, config) is getattr(impl, config)  # one config class, one set of keys
    assert (REPO / "scripts" / f"{script}.py").read_text().count("\n") < len(impl.__doc__.splitlines()) + 25
    assert any(m == module for m, _, _ in KEY_VALUE_COMMANDS.values())


def test_demo_run_subcommand_writes_the_run(tmp_path, capsys):
    assert main(["demo-run", "run_name=sub", f"runs_dir={tmp_path}"]) == 0
    assert (tmp_path / "sub" / "level_1_problem_1_sample_0_kernel.py").is_file()
    assert "kernel files written" in capsys.readouterr().out


def test_subcommand_errors_are_the_scripts_one_line_errors(tmp_path, capsys):
    code = _exit_code(["check", "ref_origin=local", f"ref_arch_src_path={PROMPTS / 'model_ex_add.py'}",
                       "kernel_src_path=missing.py", "device=cpu", "reward_hardening_mode=enforce"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "kernel_src_path: no such file: missing.py" in err[0]
    code = _exit_code(["eval", "run_name=none", "dataset_src=local", "level=1", f"runs_dir={tmp_path}",
                       "device=cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "does not exist" in err[0]
    code = _exit_code(["analyze", "run_name=none", "level=1", "hardware=H200", "baseline=baseline_time_torch",
                       f"eval_results_dir={tmp_path}", "dataset_path=demo"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: no eval_results.json")
    assert _exit_code(["check", "bogus_key=1"]) == 2
    assert "unknown config key" in capsys.readouterr().err


def test_subcommand_help_shows_the_keys_under_the_new_name(capsys):
    assert main(["eval", "--help"]) == 0
    out = capsys.readouterr().out
    assert "uv run kernelguard eval run_name=my_run" in out and "reward_hardening_mode" in out


def test_redteam_subcommand_runs_the_suite_script():
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "redteam", "--list"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr
    assert "fixture" in proc.stdout.splitlines()[0] and "RH-02_bad_" in proc.stdout
