import json
import subprocess
import sys

import pytest

from kernelbench import runs
from kernelbench.cli import ConfigError, parse_bool

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_atomic_upsert_sorts_and_replaces(tmp_path):
    path = tmp_path / "eval_results.json"
    runs.upsert_record(path, 10, {"sample_id": 0, "compiled": True})
    runs.upsert_record(path, 2, {"sample_id": 1, "compiled": False})
    runs.upsert_record(path, 2, {"sample_id": 0, "compiled": True})
    runs.upsert_record(path, 2, {"sample_id": 1, "compiled": True})
    data = json.loads(path.read_text())
    assert list(data) == ["2", "10"]
    assert [r["sample_id"] for r in data["2"]] == [0, 1] and data["2"][1]["compiled"] is True
    assert runs.record_exists(data, 2, 1) and not runs.record_exists(data, 10, 1)
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("text,value", [("true", True), ("FALSE", False), ("T", True), ("0", False), (True, True)])
def test_parse_bool(text, value):
    assert parse_bool("k", text) is value


def test_parse_bool_rejects_garbage():
    with pytest.raises(ConfigError, match="k"):
        parse_bool("k", "maybe")


def _script(name, *args):
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_cli_errors_are_one_line():
    r = _script("eval_from_generations.py", "run_name=x", "dataset_src=local", "level=1", "timing_method=bogus")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(lines) == 1 and "timing_method" in lines[0] and "cuda_event" in lines[0]
    r = _script("run_and_check.py", "ref_origin=local", "kernel_src_path=x.py", "verbose=maybe",
                "ref_arch_src_path=y.py")
    assert r.returncode == 2 and "verbose" in r.stderr and "Traceback" not in r.stderr
    r = _script("run_and_check.py", "ref_origin=local", "kernel_src_path=x.py", "reward_hardening_mode=on",
                "ref_arch_src_path=y.py")
    assert r.returncode == 2 and "off, audit, enforce" in r.stderr


def test_a_missing_required_key_is_named():
    r = _script("eval_from_generations.py", "dataset_src=local", "level=1")
    assert r.returncode == 2 and r.stderr.strip() == "error: missing required key run_name (pass run_name=...)"


def test_hardened_mode_requires_local_eval_mode():
    r = _script("run_and_check.py", "ref_origin=local", "kernel_src_path=x.py", "ref_arch_src_path=y.py",
                "reward_hardening_mode=audit", "eval_mode=modal")
    assert r.returncode == 2 and "eval_mode=local" in r.stderr


# --------------------------------------------------------------------------- one set of eval keys, cast by pydantic
def _load(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"kg_keys_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_evaluating_commands_share_one_set_of_eval_keys_and_defaults():
    from kernelbench.cli import EvalKeysConfig
    from kernelbench.commands.check import ScriptConfig
    from kernelbench.commands.evaluate import EvalConfig

    single = _load(REPO / "scripts" / "generate_and_eval_single_sample.py").EvalConfig
    for cls in (ScriptConfig, EvalConfig, single):
        assert issubclass(cls, EvalKeysConfig), cls
        cfg = cls()
        assert {k: getattr(cfg, k) for k in EvalKeysConfig.DEFAULTS} == EvalKeysConfig.DEFAULTS, cls
        assert set(EvalKeysConfig.BOOL_KEYS) <= set(cls.BOOL_KEYS) and set(EvalKeysConfig.INT_KEYS) <= set(cls.INT_KEYS)
        assert all(cls.CHOICES[k] == v for k, v in EvalKeysConfig.CHOICES.items()), cls


def test_keys_are_cast_by_a_pydantic_model():
    from pydantic import BaseModel

    from kernelbench import cli
    from kernelbench.commands.check import ScriptConfig

    values = {"json": " On ", "num_perf_trials": 7.0, "precision": "BF16", "level": "None", "timeout": 3}
    assert cli.cast_keys(ScriptConfig, values) == {"json": True, "num_perf_trials": 7, "precision": "bf16",
                                                    "level": None, "timeout": 3.0}
    assert issubclass(cli._model_for(ScriptConfig, frozenset(values)), BaseModel)
    for bad, message in (({"num_perf_trials": 5.5}, "num_perf_trials: expected an integer, got 5.5"),
                         ({"num_perf_trials": True}, "num_perf_trials: expected an integer, got True"),
                         ({"timeout": "soon"}, "timeout: expected a number, got 'soon'"),
                         ({"precision": "fp8"}, "precision: got 'fp8'; accepted values: fp32, fp16, bf16")):
        with pytest.raises(ConfigError, match=__import__("re").escape(message)):
            cli.cast_keys(ScriptConfig, bad)
