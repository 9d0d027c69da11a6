"""Documentation of a finding code in the terminal, in the spirit of ``ruff rule``.

    uv run kernelguard explain RH-21        # one code (also rh-21, 21 or RH-OUTPUT-UNSTABLE)
    uv run kernelguard explain --all        # every code
    uv run kernelguard codes                # one line per code

Nothing here is written twice: the summary, remediation, severities and attacks come
from the code table (:mod:`kernelbench.reward_hardening.codes`), the attack names from
the attack catalogue (:mod:`kernelbench.reward_hardening.catalog`), and the long text
from the docstring of the static rule (:data:`~kernelbench.reward_hardening.precheck.RULES`)
or runtime detector (:data:`~kernelbench.reward_hardening.detectors.REGISTRY`) that
emits the code -- the same sources ``docs/attack-catalog.md`` is generated from.  The
runtime detectors are read from their source files (:func:`runtime_detectors`), not
imported, so that ``explain`` does not import torch.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

__all__ = ["UnknownCode", "explain", "explain_data", "list_codes", "resolve_code"]


class UnknownCode(KeyError):
    """The argument names no finding code."""

    def __str__(self) -> str:  # KeyError quotes its argument
        return str(self.args[0])


def resolve_code(name: str) -> str:
    """``RH-21``, ``rh-21``, ``21`` or the detector name ``RH-OUTPUT-UNSTABLE`` -> ``RH-21``."""
    from kernelbench.reward_hardening.codes import CODES

    text = str(name).strip().upper()
    if re.fullmatch(r"\d{1,2}", text):
        text = f"RH-{int(text):02d}"
    if text in CODES:
        return text
    for info in CODES.values():
        if info.detector == text:
            return info.code
    raise UnknownCode(f"unknown finding code {name!r}; known codes: {min(CODES)} to {max(CODES)} "
                      f"(uv run kernelguard codes lists them)")


_DETECTOR_SOURCES: dict[str, tuple[str, str, str]] | None = None


def runtime_detectors() -> dict[str, tuple[str, str, str]]:
    """code -> (function name, module name, docstring) of each runtime detector, read from source.

    The detectors' modules import torch (several seconds); ``explain`` needs only
    their names and docstrings, so it reads the functions registered with
    ``@detector("RH-NN")`` from the files with :mod:`ast` instead of importing them.
    A test checks that this equals the imported registry.
    """
    global _DETECTOR_SOURCES
    if _DETECTOR_SOURCES is None:
        import ast
        from pathlib import Path

        found: dict[str, tuple[str, str, str]] = {}
        directory = Path(__file__).resolve().parent / "reward_hardening" / "detectors"
        for path in sorted(directory.glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for deco in node.decorator_list:
                    func = deco.func if isinstance(deco, ast.Call) else None
                    name = getattr(func, "id", None) or getattr(func, "attr", None)
                    if name == "detector" and deco.args and isinstance(deco.args[0], ast.Constant):
                        found[str(deco.args[0].value)] = (node.name, path.stem,
                                                          ast.get_docstring(node, clean=False) or "")
        _DETECTOR_SOURCES = found
    return _DETECTOR_SOURCES


def _implementations(code: str) -> list[tuple[str, str]]:
    """(where, docstring) of the static rule and the runtime detector behind ``code``."""
    from kernelbench.reward_hardening.precheck import RULES

    out = []
    for rule in RULES:
        if rule.code == code:
            module = rule.check.__module__.rsplit(".", 1)[-1]
            out.append((f"static rule {rule.name} (precheck/{module}.py)", rule.doc))
    det = runtime_detectors().get(code)
    if det is not None:
        name, module, doc = det
        out.append((f"runtime detector {name} (detectors/{module}.py)", doc))
    return out


def explain_data(code: str) -> dict[str, Any]:
    """Everything ``explain`` prints, as a JSON-able dict."""
    from kernelbench.reward_hardening.catalog import ATTACKS, NON_DETECTOR_ORIGIN
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.findings import more_info

    info = CODES[resolve_code(code)]
    attacks = {a.id: a.name for a in ATTACKS}
    impl = _implementations(info.code)
    origin = NON_DETECTOR_ORIGIN.get(info.code) if not impl else None
    return {
        "code": info.code,
        "detector": info.detector,
        "stage": info.stage,
        "status": info.status,
        "summary": info.summary,
        "severity": dict(info.severity),
        "remediation": info.remediation,
        "attacks": [{"id": a, "name": attacks.get(a, "")} for a in info.attacks],
        "implemented_by": [where for where, _ in impl],
        "origin": origin,
        "docs": [inspect.cleandoc(doc) for _, doc in impl if doc and doc.strip()],
        "more_info": more_info(info.code),
    }


def explain(code: str) -> str:
    """Plain-text documentation of one finding code."""
    d = explain_data(code)
    sev = ", ".join(f"{level} under {policy}" for policy, level in d["severity"].items())
    lines = [f"{d['code']} {d['detector']}", "", d["summary"], "",
             f"Stage:       {d['stage']} (status: {d['status']})",
             f"Severity:    {sev}",
             f"Remediation: {d['remediation']}"]
    if d["attacks"]:
        lines.append("Attacks:     " + "\n             ".join(f"{a['id']} {a['name']}" for a in d["attacks"]))
    else:
        lines.append("Attacks:     none (evaluator robustness)")
    if d["implemented_by"]:
        lines.append("Implemented: " + "\n             ".join(d["implemented_by"]))
    elif d["origin"]:
        lines.append(f"Origin:      {d['origin']}")
    lines.append(f"More info:   {d['more_info']}")
    for doc in d["docs"]:
        lines += ["", doc]
    return "\n".join(lines) + "\n"


def list_codes() -> str:
    """One line per code: code, detector, severity (source_strict / practical), summary."""
    from kernelbench.reward_hardening.codes import CODES

    rows = [(c.code, c.detector, f"{c.severity['source_strict']}/{c.severity['practical']}", c.summary)
            for c in CODES.values()]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {s:<{widths[2]}}  {t}" for a, b, s, t in rows) + "\n"


def as_json(codes: list[str]) -> str:
    return json.dumps([explain_data(c) for c in codes], indent=2)
