"""Paths and the error type shared by the documentation generator's modules.

Importing it puts the checkout's ``src/`` first on ``sys.path``, so that a plain
``python -m tools.docgen`` documents the code of this checkout.  Runs in the
generator, outside the installed package.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

PACKAGE_DIR = REPO_ROOT / "src" / "kernelbench" / "reward_hardening"
DOCS_DIR = REPO_ROOT / "docs"
GENERATED = ("attack-catalog.md", "schema-reference.md")
GENERATOR = "python -m tools.docgen"


class DocError(Exception):
    """The sources and the descriptions they are documented with disagree."""
