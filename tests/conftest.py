import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"
sys.path.insert(0, str(REPO / "scripts"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# Where PYTHONDONTWRITEBYTECODE is set (CI images), no process of the suite writes .pyc
# files, so every script a test starts, every evaluating process's forkserver and every
# worker compiles the modules it imports from source again: kernelbench's own (about a
# third of a second per process), and in the generation and dataset scripts litellm,
# openai and datasets (seconds per process).  The session writes them once instead
# (kernelbench._bytecode explains why not through uv): what it imported itself, the
# project's source trees, and, in a helper process that may write bytecode, the heavy
# packages only those scripts import.
_SOURCE_TREES = (REPO / "src" / "kernelbench", REPO / "scripts", REPO / "bench")
_NOT_MODULES = re.compile(r"[/\\](fixtures|demo_tasks)[/\\]")  # candidate sources and problems: read as text
_SCRIPT_ONLY_PACKAGES = ("litellm", "openai", "datasets", "matplotlib.pyplot")
_HELPER = "import importlib, sys\nfor name in sys.argv[1:]:\n    try:\n        importlib.import_module(name)\n" \
          "    except Exception:\n        pass\n"
_helper: subprocess.Popen | None = None


def _lacks_bytecode(name: str) -> bool:
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return False
    origin = spec.origin if spec else None
    if not origin or not origin.endswith(".py"):
        return False
    return not os.path.exists(importlib.util.cache_from_source(origin))


def pytest_configure(config):
    global _helper
    missing = [name for name in _SCRIPT_ONLY_PACKAGES if _lacks_bytecode(name)] if sys.flags.dont_write_bytecode else []
    if missing:  # imports run in the background while the session collects
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        _helper = subprocess.Popen([sys.executable, "-c", _HELPER, *missing], env=env, cwd=REPO,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pytest_unconfigure(config):
    if _helper is not None and _helper.poll() is None:
        try:
            _helper.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _helper.kill()
            _helper.wait()


def _write_suite_bytecode() -> None:
    import compileall

    from kernelbench._bytecode import write_imported_bytecode

    write_imported_bytecode(tuple({name.split(".")[0] for name in list(sys.modules)}))
    for tree in _SOURCE_TREES:  # only what is missing or older than its source is written
        compileall.compile_dir(tree, quiet=2, rx=_NOT_MODULES)


# The longest test files, longest first (seconds on a 2-core machine): with
# `-n 2 --dist loadfile` the workers take whole files in collection order, so a long file
# collected last would run alone at the end while the other worker idles.
_LONG_FIRST = ("reward_hardening/test_redteam.py",  # 180-250
               "test_batch_resume.py",  # 90
               "test_ray_executor.py",  # 60
               "test_docs.py",  # 60
               "test_crash_safe.py",  # 50
               "reward_hardening/test_pipeline.py")  # 45


def _long_first(item) -> int:
    path = Path(str(item.fspath)).as_posix()
    return next((i for i, name in enumerate(_LONG_FIRST) if path.endswith("tests/" + name)), len(_LONG_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_long_first)  # stable: the order inside a file and among the rest is kept
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    if sys.flags.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE: give the suite's processes their .pyc once
        _write_suite_bytecode()
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip)


@pytest.fixture
def demo_problem():
    def read(level: int, name: str) -> str:
        return (DEMO / f"level{level}" / name).read_text()

    return read


@pytest.fixture
def demo_solution():
    def read(level: int, name: str) -> str:
        return (DEMO / "solutions" / f"level{level}" / name).read_text()

    return read
