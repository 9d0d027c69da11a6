"""Render ``docs/attack-catalog.md`` from the attack catalogue, the code table, the fixture
registries and the docstrings of the static rules and runtime detectors.

Runs in the generator (``python -m tools.docgen``), outside the installed package.
"""

from __future__ import annotations

import re

from kernelbench.reward_hardening.catalog import ATTACKS, BY_DESIGN, DEFENCES, NON_DETECTOR_ORIGIN, NOT_COVERED, \
    OUT_OF_SCOPE
from tools.docgen import markdown as md
from tools.docgen import sources
from tools.docgen.common import DocError
from tools.docgen.sources import FixtureRow

_FIXTURE_ID_RE = re.compile(r"`((?:rt|pre|benign|gpu)_[a-z0-9_]+)`")


def _attack_fixtures(rows: list[FixtureRow]) -> dict[str, list[FixtureRow]]:
    out: dict[str, list[FixtureRow]] = {}
    for r in rows:
        out.setdefault(r.attack, []).append(r)
    return out


def _validate_catalogue(codes: dict, rows: list[FixtureRow]) -> None:
    ids = [a.id for a in ATTACKS]
    if ids != [f"A{i:02d}" for i in range(1, 51)]:
        raise DocError("ATTACKS must list A01..A50 in order")
    known = set(ids)
    for info in codes.values():
        for a in info.attacks:
            if a not in known:
                raise DocError(f"{info.code} names unknown attack {a}")
    all_ids = {r.id for r in rows}
    for r in rows:
        if r.attack not in known and r.attack not in ("benign", "DOS"):
            raise DocError(f"fixture {r.id} names unknown attack {r.attack!r}")
        for c in r.must_raise:
            if c not in codes:
                raise DocError(f"fixture {r.id} requires unknown code {c}")
    by_attack = _attack_fixtures(rows)
    for a in ATTACKS:
        mapped = [c for c in codes.values() if a.id in c.attacks]
        has_fixture = bool(by_attack.get(a.id))
        if not mapped and not (isinstance(a.remark, tuple) and a.remark[0] in (BY_DESIGN, NOT_COVERED, OUT_OF_SCOPE)):
            raise DocError(f"{a.id} has no finding code: give ATTACKS a (kind, reason) remark")
        if mapped and not has_fixture and not (isinstance(a.remark, str) and a.remark):
            raise DocError(f"{a.id} has finding codes but no fixture: give ATTACKS a remark saying why")
        text = a.remark[1] if isinstance(a.remark, tuple) else (a.remark or "")
        for fid in _FIXTURE_ID_RE.findall(text):
            if fid not in all_ids:
                raise DocError(f"{a.id}'s remark names fixture {fid}, which does not exist")


def _fixture_line(r: FixtureRow) -> str:
    expect = f"expects {r.expected}" + (f", requires {', '.join(r.must_raise)}" if r.must_raise else "")
    if r.config:
        expect += ", run with " + ", ".join(f"`{k}={v!r}`" for k, v in r.config)
    return f"- `{r.id}` ({r.device}, {r.mode}/{r.policy}; {expect}): {md.text(r.description)}"


def render_attack_catalog() -> str:
    from kernelbench.reward_hardening.codes import CODES

    rows = sources.fixture_rows()
    _validate_catalogue(CODES, rows)
    by_attack = _attack_fixtures(rows)
    rules, dets, emitters = sources.precheck_rules(), sources.runtime_detectors(), sources.literal_emitters()
    n_cpu = sum(1 for r in rows if r.device == "cpu")
    out = md.header("Attack catalogue")
    out += [
        "This page lists the reward hacks KernelGuard is designed against (the catalogue ids A01-A50), the "
        "finding codes that catch each one and the red-team fixtures that prove it, followed by the table of "
        "every finding code and a reference section per code. It is rendered from the code table "
        "(`src/kernelbench/reward_hardening/codes.py`), the fixture registries "
        "(`fixtures/manifest.py`) and the docstrings of the static rules and "
        "runtime detectors.",
        "",
        f"The registries hold {len(rows)} fixtures: {n_cpu} run on the CPU "
        "(`scripts/reward_hardening_redteam.py`), "
        f"{len(rows) - n_cpu} need a CUDA device (`--device cuda`). A fixture's expected status and required "
        "codes are what the suite checks; see [reward-hardening.md](reward-hardening.md) for the evaluation "
        "pipeline and [security-audit.md](security-audit.md) for the limits.",
        "",
        "Coverage labels: **covered** (finding codes and at least one fixture), **detected, no fixture** "
        "(finding codes but no fixture yet, with the reason), **covered by design** (the architecture removes "
        "the attack, no finding code), **not covered** and **out of scope** (with the reason).",
        "",
        "## Contents",
        "",
        "- [Attacks](#attacks)",
        "- [Fixtures outside the catalogue](#fixtures-outside-the-catalogue)",
        "- [Defence families](#defence-families)",
        "- [Finding codes](#finding-codes)",
        "- [Code reference](#code-reference)",
        "",
        "## Attacks",
        "",
        "| Id | Attack | Coverage | Codes | Fixtures |",
        "|---|---|---|---|---|",
    ]
    coverage: dict[str, str] = {}
    for a in ATTACKS:
        mapped = [c.code for c in CODES.values() if a.id in c.attacks]
        fx = by_attack.get(a.id, [])
        if mapped and fx:
            coverage[a.id] = "covered"
        elif mapped:
            coverage[a.id] = "detected, no fixture"
        else:
            coverage[a.id] = a.remark[0]
        out.append(f"| [{a.id}](#{a.id.lower()}) | {md.cell(md.text(a.name))} | {coverage[a.id]} | "
                   f"{', '.join(c.replace('RH-', '') for c in mapped) or '-'} | {len(fx)} |")
    out.append("")
    for a in ATTACKS:
        mapped = [c for c in CODES.values() if a.id in c.attacks]
        fx = by_attack.get(a.id, [])
        out += [f'<a id="{a.id.lower()}"></a>', "", f"### {a.id} {md.text(a.name)}", "", md.text(a.summary), "",
                f"**Coverage:** {coverage[a.id]}.", ""]
        if mapped:
            out.append("**Caught by:**")
            out.append("")
            for c in mapped:
                out.append(f"- [{c.code}](#{c.code.lower()}) `{c.detector}` ({c.stage}): {md.text(c.summary)}")
            out.append("")
        extra = sorted({code for r in fx for code in r.must_raise} - {c.code for c in mapped})
        if fx:
            out.append("**Fixtures:**")
            out.append("")
            out += [_fixture_line(r) for r in fx]
            out.append("")
            if extra:
                out += [f"Its fixtures also require {md.code_links(extra)}, which the code table does not map to "
                        f"{a.id}.", ""]
        benign = [r.id for r in by_attack.get("benign", []) if re.search(rf"\b{a.id}\b", r.description)]
        if benign:
            out += [f"**Benign counterpart:** {md.fixture_list(benign)} (must PASS).", ""]
        if isinstance(a.remark, tuple):
            out += [f"**Why {a.remark[0]}:** {md.text(a.remark[1])}", ""]
        elif a.remark and not fx:
            out += [f"**No fixture yet.** {md.text(a.remark)}", ""]
    out += ["## Fixtures outside the catalogue", "",
            "Benign candidates must PASS with none of the error or warning codes of their policy; they guard "
            "against false positives. `DOS` fixtures attack the evaluator's availability rather than the "
            "score.", ""]
    for label, key in (("Denial of service", "DOS"), ("Benign", "benign")):
        out += [f"### {label}", ""]
        out += [_fixture_line(r) for r in by_attack.get(key, [])] or ["- none"]
        out.append("")
    out += ["## Defence families", "",
            "The defence families of the reference catalogue and what KernelGuard does for each.", "",
            "| Id | Family | KernelGuard |", "|---|---|---|"]
    out += [f"| {d} | {md.cell(md.text(n))} | {md.cell(md.text(t))} |" for d, n, t in DEFENCES]
    out += ["", "## Finding codes", "",
            "Severity is given per policy as `source_strict` / `practical`: `error` makes the verdict FAIL, "
            "`warning` SUSPICIOUS, `info` is recorded only. The fixtures column lists the fixtures that require "
            "the code.", "",
            "| Code | Detector | Stage | Severity (strict / practical) | Summary | Remediation | Attacks | "
            "Fixtures |",
            "|---|---|---|---|---|---|---|---|"]
    required: dict[str, list[str]] = {}
    for r in rows:
        for c in r.must_raise:
            required.setdefault(c, []).append(r.id)
    for c in CODES.values():
        sev = f"{c.severity['source_strict']} / {c.severity['practical']}"
        status = "" if c.status == "stable" else f" ({c.status})"
        out.append(f"| [{c.code}](#{c.code.lower()}){status} | `{c.detector}` | {c.stage} | {sev} | "
                   f"{md.cell(md.text(c.summary))} | {md.cell(md.text(c.remediation))} | "
                   f"{', '.join(c.attacks) or '-'} | {md.cell(md.fixture_list(required.get(c.code, [])))} |")
    out += ["", "## Code reference", "",
            "For each code: where it is implemented and, from the implementation's docstring, what it catches "
            "and its known limits.", ""]
    for c in CODES.values():
        attacks = ", ".join(f"[{a}](#{a.lower()})" for a in c.attacks) or "none (evaluator robustness)"
        needed = md.fixture_list(required[c.code]) if required.get(c.code) else "none"
        out += [f'<a id="{c.code.lower()}"></a>', "", f"### {c.code} `{c.detector}`", "",
                f"- Stage: {c.stage}; severity: {c.severity['source_strict']} under `source_strict`, "
                f"{c.severity['practical']} under `practical`; status: {c.status}.",
                f"- Summary: {md.text(c.summary)}",
                f"- Remediation: {md.text(c.remediation)}",
                f"- Attacks: {attacks}.",
                f"- Required by fixtures: {needed}."]
        impl = []
        if c.code in rules:
            r = rules[c.code]
            mod = r.check.__module__.rsplit(".", 1)[-1]
            impl.append(f"static rule `{r.name}` (`precheck/{mod}.py`)")
        if c.code in dets:
            d = dets[c.code]
            mod = d.func.__module__.rsplit(".", 1)[-1]
            impl.append(f"runtime detector `{d.func.__name__}` (`detectors/{mod}.py`)")
        others = [m for m in emitters.get(c.code, [])
                  if not (c.code in dets and m == f"detectors/{dets[c.code].func.__module__.rsplit('.', 1)[-1]}.py")]
        if others:
            impl.append("also built in " + ", ".join(f"`{m}`" for m in others))
        if others and len(impl) == 1:
            impl[0] = impl[0].replace("also built in", "built in")
        if not impl:
            impl.append("not emitted by any module in this version")
        out.append(f"- Implemented by: {'; '.join(impl)}.")
        if c.code in NON_DETECTOR_ORIGIN and c.code not in rules and c.code not in dets:
            out.append(f"- Origin: {NON_DETECTOR_ORIGIN[c.code]}.")
        out.append("")
        if c.code in rules:
            out += [md.docstring_markdown(rules[c.code].doc), ""]
        if c.code in dets:
            out += [md.docstring_markdown(dets[c.code].func.__doc__ or ""), ""]
    return "\n".join(out).rstrip() + "\n"

