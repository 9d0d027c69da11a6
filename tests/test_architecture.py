"""The shape of the tree: module size, no import circles, the trust line in folders, one vocabulary.

These are the structural promises of docs/architecture.md, checked on every run so a
change that breaks one fails here rather than in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "kernelbench"
RH = PKG / "reward_hardening"
MAX_LINES = 500
# Not hand-written logic: attack and benign candidates, demo problems (data for the evaluator).
EXEMPT_DIRS = ("reward_hardening/fixtures/", "demo_tasks/")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(EXEMPT_DIRS):
            continue
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Edges of every import, function-level ones included; ``from pkg import sub`` points at ``sub``."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_hand_written_module_reaches_the_size_limit():
    too_big = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) >= MAX_LINES}
    assert not too_big, too_big


def test_no_import_circle_in_src():
    assert _cycles(_import_graph(_modules())) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("folder, process", [
    ("parent", "parent"), ("judge", "judge"), ("candidate", "candidate"), ("ipc", "wire"),
    ("containment", "contain"), ("precheck", "static"), ("detectors", "evidence"),
])
def test_each_trust_folder_says_which_process_runs_it(folder, process):
    doc = ast.get_docstring(ast.parse((RH / folder / "__init__.py").read_text())) or ""
    assert process in doc.lower(), (folder, doc[:200])


def test_the_candidate_harness_never_imports_the_judge_or_the_parent():
    graph = _import_graph(_modules())
    for name, targets in graph.items():
        if name.startswith("kernelbench.reward_hardening.candidate"):
            bad = {t for t in targets if t.startswith(("kernelbench.reward_hardening.judge",
                                                       "kernelbench.reward_hardening.parent"))}
            assert not bad, (name, bad)


def test_static_and_runtime_provenance_read_one_operator_table():
    from kernelbench.reward_hardening import operators
    from kernelbench.reward_hardening.detectors import provenance
    from kernelbench.reward_hardening.precheck import _kernels

    assert provenance.NON_COMPUTE_OPS is operators.NON_COMPUTE_ATEN
    assert _kernels.NON_COMPUTE_PYTHON is operators.NON_COMPUTE_PYTHON
    # every operator has one role, whichever way it is spelled
    for op in operators.OPERATORS:
        roles = {operators.role_of(s) for s in op.python + op.aten}
        assert roles == {op.role}, op
