"""Make ``kernelbench`` importable when a script runs from a plain checkout.

With ``uv run`` the package is installed; with ``PYTHONPATH=src python3 scripts/...``
or a bare ``python3 scripts/...`` this inserts ``<repo>/src`` on ``sys.path``.
"""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
_SRC = str(REPO_ROOT / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
