"""Render ``docs/schema-reference.md`` from the record's JSON Schema (types, and the meaning
and unit of every field in ``description`` / ``x-unit``), the record builder, the verdict
rule and the code table.

Runs in the generator (``python -m tools.docgen``), outside the installed package.
"""

from __future__ import annotations

import inspect
import json
import re

from tools.docgen import markdown as md
from tools.docgen import sources
from tools.docgen.common import DocError
from tools.docgen.record_notes import CAPABILITY_DOCS, CAPABILITY_STATUS_DOCS, METADATA_DOCS, MODE_DOCS, \
    POLICY_DOCS, STATUS_DOCS

def _type(s: dict) -> str:
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#def-{name})"
    if "const" in s:
        return f"`{json.dumps(s['const'])}`"
    if "enum" in s:
        return "one of " + ", ".join(f"`{v}`" for v in s["enum"])
    t = s.get("type")
    text = " or ".join(t) if isinstance(t, list) else (t or "any")
    if t == "array" and isinstance(s.get("items"), dict):
        text = f"array of {_type(s['items'])}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        text = f"object: name to {_type(s['additionalProperties'])}"
    notes = []
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("minLength", "length >=")):
        if key in s:
            notes.append(f"{word} {s[key]}")
    if "pattern" in s:
        notes.append(f"pattern `{s['pattern']}`")
    return text + (f" ({', '.join(notes)})" if notes else "")


def _fields(definition: dict) -> dict[str, dict]:
    """The named properties of a definition, then those it documents as ``x-extra-properties``
    (keys written beyond the named ones where other keys are allowed)."""
    return {**definition.get("properties", {}), **definition.get("x-extra-properties", {})}


def _validate_schema(schema: dict) -> None:
    defs = schema.get("$defs", {})
    unknown = sorted(set(defs) - set(_TITLES) - {"results_file"})
    if unknown:
        raise DocError(f"schema definitions {unknown} have no section in tools/docgen/schema_reference.py")
    gone = sorted(set(_TITLES) - set(defs))
    if gone:
        raise DocError(f"the schema reference has sections for {gone}, which the schema no longer has")
    for name in _TITLES:
        undescribed = sorted(f for f, spec in _fields(defs[name]).items()
                             if not str(spec.get("description", "")).strip())
        if undescribed:
            raise DocError(f"schema {name} fields without a description: {undescribed}")
    rf = defs.get("results_file")
    if rf is not None and (set(rf) - {"description", "type", "patternProperties", "additionalProperties"}
                           or not rf.get("description")):
        raise DocError("schema results_file changed shape or lost its description; update tools/docgen")


# Section titles and introductions of the schema's definitions, in page order.
_TITLES = {"record": "Record", "reward_hardening": "reward_hardening block", "finding": "finding",
           "capability": "capability", "stats": "stats", "speedup": "speedup", "spread": "spread"}
_INTROS = {
    "record": "Top level of a record. Fields marked required must be present.",
    "reward_hardening": "The integrity block. No other keys are allowed. The schema also enforces: a status "
                        "other than PASS has `verified = false` and `verified_runtime = null`; "
                        "`verified = true` implies PASS and a numeric `verified_runtime`.",
    "finding": "One entry of `findings`. No other keys are allowed.",
    "capability": "One value of `capabilities`. No other keys are allowed.",
    "speedup": "The speedup with its confidence bounds (`reward_hardening.speedup`). No other keys are allowed. "
               "Method and calibration: docs/reward-hardening.md, section Speedup and its bound.",
    "spread": "The spread of one side's samples. No other keys are allowed.",
    "stats": "Timing statistics of a list of samples; `{}` when there are none. Other keys are allowed; "
             "KernelGuard adds `median` and `device`.",
}


def render_schema_reference() -> str:
    from kernelbench.reward_hardening.parent import verdict
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.config import MODES, POLICIES
    from kernelbench.reward_hardening.parent.records import SCHEMA_VERSION
    from kernelbench.reward_hardening.record_schema import load_schema

    schema = load_schema()
    _validate_schema(schema)
    defs = schema["$defs"]
    rh = defs["reward_hardening"]["properties"]
    if list(rh["integrity_status"]["enum"]) != list(verdict.STATUSES):
        raise DocError("schema integrity_status enum differs from verdict.STATUSES")
    if set(STATUS_DOCS) != set(verdict.STATUSES):
        raise DocError("STATUS_DOCS must describe exactly verdict.STATUSES")
    if list(rh["mode"]["enum"]) != list(MODES) or set(MODE_DOCS) != set(MODES):
        raise DocError("schema mode enum, config.MODES and MODE_DOCS disagree")
    if list(rh["policy"]["enum"]) != list(POLICIES) or set(POLICY_DOCS) != set(POLICIES):
        raise DocError("schema policy enum, config.POLICIES and POLICY_DOCS disagree")
    if rh["schema_version"].get("const") != SCHEMA_VERSION:
        raise DocError("schema_version const differs from records.SCHEMA_VERSION")
    cap_status = defs["capability"]["properties"]["status"]["enum"]
    if set(cap_status) != set(CAPABILITY_STATUS_DOCS):
        raise DocError("capability status enum and CAPABILITY_STATUS_DOCS disagree")
    caps = sources.emitted_capabilities()
    if set(caps) != set(CAPABILITY_DOCS):
        raise DocError(f"capabilities emitted by records.py {caps} differ from CAPABILITY_DOCS "
                       f"{sorted(CAPABILITY_DOCS)}")
    meta = sources.metadata_keys()
    if set(meta) != set(METADATA_DOCS):
        raise DocError(f"metadata keys written by records.py/pipeline.py {meta} differ from METADATA_DOCS "
                       f"{sorted(METADATA_DOCS)}")

    out = md.header("Schema reference (record schema 1.1)")
    out += [
        "Every record KernelGuard writes on the hardened path (`run_and_check` with "
        "`reward_hardening_mode=audit|enforce`, and each sample of `verified_eval_results.json`) has the shape "
        "described here. The machine-readable definition is "
        "[`verified_record.schema.json`](../src/kernelbench/reward_hardening/verified_record.schema.json); "
        "types below are read from it, and generation fails if the schema gains a field this page does not "
        "describe. Times inside `reward_hardening` are milliseconds; the upstream fields keep KernelBench's "
        "meaning.",
        "",
        "## Contents",
        "",
        "- [Record](#def-record)",
        "- [reward_hardening block](#def-reward_hardening)",
        "- [finding](#def-finding), [capability](#def-capability), [stats](#def-stats), [speedup](#def-speedup), "
        "[spread](#def-spread)",
        "- [Results file](#results-file)",
        "- [Metadata keys](#metadata-keys)",
        "- [Modes and policies](#modes-and-policies)",
        "- [Integrity statuses](#integrity-statuses)",
        "- [Capabilities](#capabilities)",
        "- [Verdict rule](#verdict-rule)",
        "- [Finding codes](#finding-codes)",
        "",
    ]
    for name, title in _TITLES.items():
        d = defs[name]
        required = set(d.get("required", []))
        out += [f'<a id="def-{name}"></a>', "", f"## {title}", "", _INTROS[name], "",
                "| Field | Type | Required | Unit | Meaning |", "|---|---|---|---|---|"]
        for field, spec in _fields(d).items():
            out.append(f"| `{field}` | {md.cell(_type(spec))} | {'yes' if field in required else 'no'} | "
                       f"{spec.get('x-unit', '-')} | {md.cell(spec['description'])} |")
        out.append("")
    rf = defs.get("results_file")
    if rf:
        pattern = next(iter(rf.get("patternProperties", {})), "")
        out += ['<a id="results-file"></a>', "", "## Results file", "",
                f"{rf['description']} Schema definition `results_file`: keys match `{pattern}`, values are arrays of "
                "[records](#def-record); no other keys.", ""]
    out += ["## Metadata keys", "",
            "Keys the hardened path writes into `metadata` (read from `records.py` and `pipeline.py`). They are "
            "diagnostics only; a key is present only when it applies.", "",
            "| Key | Meaning |", "|---|---|"]
    out += [f"| `{k}` | {md.cell(METADATA_DOCS[k])} |" for k in meta]
    out += ["", "## Modes and policies", "", "| Value | Meaning |", "|---|---|"]
    out += [f"| `mode={m}` | {md.cell(MODE_DOCS[m])} |" for m in MODES]
    out += [f"| `policy={p}` | {md.cell(POLICY_DOCS[p])} |" for p in POLICIES]
    differing = [c for c in CODES.values() if c.severity["source_strict"] != c.severity["practical"]]
    out += ["", "Codes whose severity differs between the policies: " + ", ".join(
        f"[{c.code}](#{c.code.lower()}) ({c.severity['source_strict']} / {c.severity['practical']})"
        for c in differing) + ".", ""]
    out += ["## Integrity statuses", "", "| Status | Meaning |", "|---|---|"]
    fill = {"capability_codes": ", ".join(sorted(getattr(verdict, "_CAPABILITY_CODES", ()))) or "none",
            "warning_codes": ", ".join(c.code for c in CODES.values() if "warning" in c.severity.values())}
    out += [f"| `{s}` | {md.cell(md.text(STATUS_DOCS[s].format(**fill)))} |" for s in verdict.STATUSES]
    out += ["", "## Capabilities", "",
            "Names `records.py` can emit in `capabilities`, and the capability statuses.", "",
            "| Capability | When present, status and whether required |", "|---|---|"]
    out += [f"| `{c}` | {md.cell(CAPABILITY_DOCS[c])} |" for c in caps]
    out += ["", "| Capability status | Meaning |", "|---|---|"]
    out += [f"| `{s}` | {md.cell(CAPABILITY_STATUS_DOCS[s])} |" for s in cap_status]
    rule_lines = _verdict_rule_lines(verdict.__doc__ or "")
    out += ["", "## Verdict rule", "",
            "`verdict.decide(findings, capabilities)` is a pure function; in order:", ""]
    out += rule_lines
    out += ["",
            "The record builder then fails closed: a PASS without at least one hidden-input call that matched "
            "the reference and at least one timing sample is turned into FAIL with RH-32. Findings are "
            "de-duplicated per code (the first, which carries the evidence, is kept). Only a PASS carries "
            "`verified_runtime`, and only PASS records count towards `verified_fast_p`.", "",
            "## Finding codes", "",
            "Every code of the code table; details and the attacks each one covers are in "
            "[attack-catalog.md](attack-catalog.md#finding-codes).", "",
            "| Code | Detector | Stage | Severity (strict / practical) | Summary |", "|---|---|---|---|---|"]
    for c in CODES.values():
        out.append(f'| <a id="{c.code.lower()}"></a>[{c.code}](attack-catalog.md#{c.code.lower()}) | '
                   f"`{c.detector}` | {c.stage} | {c.severity['source_strict']} / {c.severity['practical']} | "
                   f"{md.cell(md.text(c.summary))} |")
    return "\n".join(out).rstrip() + "\n"


def _verdict_rule_lines(doc: str) -> list[str]:
    """The numbered rule of verdict.py's docstring, one Markdown list item per rule."""
    items: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        m = re.match(r"^(\d+)\.\s+(.*)$", line.strip())
        if m:
            items.append(f"{m.group(1)}. {m.group(2)}")
        elif items and line.startswith("   ") and line.strip():
            items[-1] += " " + line.strip()
    if not items:
        raise DocError("verdict.py's docstring no longer states the numbered verdict rule")
    return [md.inline(i.replace("->", "→")) for i in items]

