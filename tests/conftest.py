import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"
sys.path.insert(0, str(REPO / "scripts"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    if sys.flags.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE: give the suite's processes torch's .pyc once
        from kernelbench._bytecode import write_imported_bytecode

        write_imported_bytecode(("torch", "numpy"))
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
