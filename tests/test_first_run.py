"""First minutes of a user: pytest's summary line with or without -q, no per-run bytecode pass."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text())


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_pytest_prints_its_summary_line_with_or_without_q(quiet):
    ini = _pyproject()["tool"]["pytest"]["ini_options"]
    assert "-q" not in str(ini.get("addopts", "")).split()  # else a habitual -q becomes -qq
    proc = subprocess.run([sys.executable, "-m", "pytest", *quiet, "-p", "no:cacheprovider",
                           "tests/test_score.py::test_fastp_n_zero"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b1 passed\b", proc.stdout), proc.stdout


def test_uv_does_not_recompile_the_environment_on_every_run():
    assert "compile-bytecode" not in _pyproject().get("tool", {}).get("uv", {})


def test_imported_modules_get_their_bytecode_written_once(tmp_path, monkeypatch):
    from kernelbench._bytecode import write_imported_bytecode

    (tmp_path / "kbpyc_probe.py").write_text("VALUE = 41 + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    import kbpyc_probe  # noqa: F401

    cached = Path(importlib.util.cache_from_source(str(tmp_path / "kbpyc_probe.py")))
    assert not cached.exists()
    try:
        assert write_imported_bytecode(("kbpyc_probe",)) == 1 and cached.is_file()
        assert write_imported_bytecode(("kbpyc_probe",)) == 0  # already there: nothing to do
    finally:
        sys.modules.pop("kbpyc_probe", None)
