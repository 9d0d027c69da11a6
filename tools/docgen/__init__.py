"""Render KernelGuard's generated reference pages from the code.

    python -m tools.docgen            # rewrite the pages
    python -m tools.docgen --check    # exit 1 if they are stale

Run it from the repository root (``uv run python -m tools.docgen``, or a plain
``python -m tools.docgen``, which puts the checkout's ``src/`` on the path).  Two
Markdown files under ``docs/`` are generated, never edited by hand:

``attack-catalog.md`` (:mod:`tools.docgen.attack_catalog`)
    one section per catalogued attack (A01-A50, from
    :mod:`kernelbench.reward_hardening.catalog`): a short description, the finding
    codes that the code table maps to it, the red-team fixtures that exercise it, and
    a stated reason where no code or no fixture exists; then the defence families, the
    table of every finding code and one reference section per code built from the
    static rule's module docstring or the runtime detector's docstring.
``schema-reference.md`` (:mod:`tools.docgen.schema_reference`)
    every field of a schema-1.1 record and of its ``reward_hardening`` block (type,
    meaning and unit read from ``verified_record.schema.json``), the metadata keys,
    every capability name ``records.py`` emits, the statuses, the verdict rule and
    every finding code; the prose for the values the schema cannot describe field by
    field is in :mod:`tools.docgen.record_notes`.

Sources: the attack catalogue and the code table, the fixture manifest
(``fixtures.manifest``, both devices), the runtime detector registry, the
precheck rule registry, the JSON Schema, ``records.py`` and ``verdict.py``
(:mod:`tools.docgen.sources`).  Generation fails (exit status 2) rather than guess when
the sources and their descriptions disagree: a schema field without a description, a
capability, metadata key or status without a description, a description of something
that no longer exists, a fixture naming an unknown attack or code, or an uncovered
attack without a reason.

``--check`` compares a fresh rendering with the files on disk and exits 1 (listing
the stale files and a short diff) when they differ, in the manner of ruff's
``generate_docs`` / ``check_docs_formatted``.  Runs from a checkout, outside the
installed package.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

# common first: importing it puts the checkout's src/ on sys.path for the modules below
from tools.docgen.common import DOCS_DIR, GENERATED, GENERATOR, DocError  # isort: skip
from tools.docgen.attack_catalog import render_attack_catalog
from tools.docgen.schema_reference import render_schema_reference

__all__ = ["DocError", "GENERATED", "check", "main", "render_all", "render_attack_catalog",
           "render_schema_reference", "write"]


def render_all() -> dict[str, str]:
    return {"attack-catalog.md": render_attack_catalog(), "schema-reference.md": render_schema_reference()}


def write(docs_dir: Path = DOCS_DIR) -> list[Path]:
    docs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all().items():
        path = docs_dir / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def check(docs_dir: Path = DOCS_DIR) -> list[str]:
    """Names of generated files that are missing or differ from a fresh rendering, with a diff excerpt."""
    problems = []
    for name, text in render_all().items():
        path = docs_dir / name
        if not path.exists():
            problems.append(f"{name}: missing")
            continue
        current = path.read_text()
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), f"{name} (on disk)",
                                             f"{name} (fresh)", lineterm="", n=1))
            excerpt = "\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else "")
            problems.append(f"{name}: stale\n{excerpt}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=GENERATOR,
                                description="Render docs/attack-catalog.md and docs/schema-reference.md.")
    p.add_argument("--check", action="store_true",
                   help="do not write; exit 1 if the files on disk differ from a fresh rendering")
    p.add_argument("--docs-dir", type=Path, default=DOCS_DIR, help=f"output directory (default {DOCS_DIR})")
    args = p.parse_args(argv)
    try:
        if args.check:
            problems = check(args.docs_dir)
            if problems:
                for msg in problems:
                    print(msg, file=sys.stderr)
                print(f"generated docs are stale; run `{GENERATOR}`", file=sys.stderr)
                return 1
            print("generated docs are up to date")
            return 0
        for path in write(args.docs_dir):
            print(f"wrote {path}")
        return 0
    except DocError as exc:
        print(f"docgen: {exc}", file=sys.stderr)
        return 2
