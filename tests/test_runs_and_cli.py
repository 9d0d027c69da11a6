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


def test_hardened_mode_requires_local_eval_mode():
    r = _script("run_and_check.py", "ref_origin=local", "kernel_src_path=x.py", "ref_arch_src_path=y.py",
                "reward_hardening_mode=audit", "eval_mode=modal")
    assert r.returncode == 2 and "eval_mode=local" in r.stderr
