"""What the generated pages are read from: fixture registries, rule and detector registries,
the finding constructors and the metadata keys and capabilities the record builder writes.

Runs in the generator (``python -m tools.docgen``), outside the installed package.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from tools.docgen.common import PACKAGE_DIR, DocError


@dataclass(frozen=True)
class FixtureRow:
    id: str
    attack: str
    device: str
    mode: str
    policy: str
    expected: str
    must_raise: tuple[str, ...]
    problem: str
    description: str
    config: tuple = ()  # HardeningConfig settings the suite evaluates it with


def fixture_rows() -> list[FixtureRow]:
    from kernelbench.reward_hardening.fixtures import FIXTURES

    rows = [FixtureRow(f.id, f.attack, f.device, f.mode, f.policy, f.expected_status, tuple(f.must_raise),
                       f.problem, f.description, tuple(f.config)) for f in FIXTURES]
    if len({r.id for r in rows}) != len(rows):
        raise DocError("a fixture id appears twice in the fixture manifest")
    return rows


def precheck_rules() -> dict[str, Any]:
    from kernelbench.reward_hardening.precheck import RULES

    return {r.code: r for r in RULES}


def runtime_detectors() -> dict[str, Any]:
    from kernelbench.reward_hardening.detectors import REGISTRY

    return dict(REGISTRY)


def literal_emitters() -> dict[str, list[str]]:
    """Code -> package modules that build a finding for it with a literal code."""
    out: dict[str, list[str]] = {}
    pattern = re.compile(r'observe\(\s*"(RH-\d\d)"')
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if rel.startswith("fixtures/") or rel in ("catalog.py", "codes.py"):
            continue
        for code in sorted(set(pattern.findall(path.read_text()))):
            out.setdefault(code, []).append(rel)
    return out


def emitted_capabilities() -> list[str]:
    text = (PACKAGE_DIR / "parent" / "records.py").read_text()
    names: list[str] = []
    for m in re.finditer(r'caps\["([a-z_]+)"\]|"capabilities":\s*\{"([a-z_]+)"', text):
        name = m.group(1) or m.group(2)
        if name not in names:
            names.append(name)
    return names


def metadata_keys() -> list[str]:
    """Metadata keys that records.py and pipeline.py write into a record."""
    keys: set[str] = set()

    def const_keys(d: ast.Dict) -> set[str]:
        return {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}

    def is_metadata(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id == "metadata"
        return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value == "metadata")

    for name in ("parent/records.py", "parent/pipeline.py"):
        tree = ast.parse((PACKAGE_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == "metadata" and isinstance(node.value, ast.Dict):
                        keys |= const_keys(node.value)
                    if (isinstance(t, ast.Subscript) and is_metadata(t.value) and isinstance(t.slice, ast.Constant)
                            and isinstance(t.slice.value, str)):
                        keys.add(t.slice.value)
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value == "metadata" and isinstance(v, ast.Dict):
                        keys |= const_keys(v)
    return sorted(keys)


