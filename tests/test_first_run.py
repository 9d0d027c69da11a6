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


def test_commands_write_torch_bytecode_once_where_python_may_not(monkeypatch):
    from types import SimpleNamespace

    import torch  # noqa: F401  (the command "imported torch")

    from kernelbench import _bytecode, cli

    calls = []
    monkeypatch.setattr(_bytecode, "write_imported_bytecode", lambda prefixes: calls.append(prefixes) or 0)

    class Cfg(cli.KBConfig):
        def __init__(self):
            self.x = 1

    def flags(dont_write: bool) -> SimpleNamespace:
        real = {name: getattr(sys.flags, name) for name in dir(sys.flags)
                if not name.startswith("_") and not callable(getattr(sys.flags, name))}
        return SimpleNamespace(**dict(real, dont_write_bytecode=dont_write))

    entry = cli.cli_main(Cfg)(lambda cfg: 0)
    monkeypatch.setattr(sys, "flags", flags(False))
    assert entry([]) == 0 and calls == []  # Python writes .pyc itself: nothing to do
    monkeypatch.setattr(sys, "flags", flags(True))
    assert entry([]) == 0 and calls == [("torch", "numpy")]
