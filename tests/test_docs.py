"""The documentation is checked like code.

* The generated pages (``docs/attack-catalog.md``, ``docs/schema-reference.md``) equal a
  fresh rendering of ``python -m tools.docgen`` (the generator under ``tools/docgen/``, run
  from the repository root; it is not part of the installed package).
* Every finding code that appears anywhere in ``src/`` is in the code table and in both
  generated pages.
* Every command shown in a ```bash block of README.md, README.zh-CN.md and docs/*.md
  either runs here, on the CPU, against temporary copies of whatever it needs
  (``runs/my_run``, baselines, output paths), or is listed in ``ALLOWLIST`` with the
  reason it cannot run on a CPU-only CI machine.  Commands that need a GPU are also
  run when CUDA is absent, to check that they fail closed with the documented
  ``UNSUPPORTED`` record.
* The Chinese README shows the same commands, sections and JSON example as README.md.
* JSON examples of records in the docs validate against the JSON Schema, and relative
  links and anchors between the docs resolve.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
DOCS = REPO / "docs"
DEMO = SRC / "kernelbench" / "demo_tasks"
DOC_FILES = [REPO / "README.md", REPO / "README.zh-CN.md"] + sorted(DOCS.glob("*.md"))
GENERATED = [DOCS / "attack-catalog.md", DOCS / "schema-reference.md"]
CODE_RE = re.compile(r"RH-\d\d")
if str(REPO) not in sys.path:  # the generator lives in the checkout (tools/docgen), not in the package
    sys.path.insert(0, str(REPO))


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


HAS_CUDA = _cuda_available()


# --------------------------------------------------------------------------- (a) generated pages
def test_generated_docs_are_fresh():
    from tools import docgen

    problems = docgen.check()
    assert not problems, "\n".join(problems) + "\nrun: uv run python -m tools.docgen"


@pytest.mark.parametrize("where", ["properties", "x-extra-properties"])
def test_docgen_refuses_a_schema_field_without_a_description(monkeypatch, where):
    from kernelbench.reward_hardening import record_schema
    from tools import docgen

    schema = record_schema.load_schema()
    definition = schema["$defs"]["reward_hardening" if where == "properties" else "stats"]
    definition[where]["new_field"] = {"type": "string"}
    monkeypatch.setattr(record_schema, "load_schema", lambda: schema)
    with pytest.raises(docgen.DocError, match="new_field"):
        docgen.render_schema_reference()


def test_schema_reference_reads_meaning_and_unit_from_the_schema(monkeypatch):
    from kernelbench.reward_hardening import record_schema
    from tools import docgen

    schema = record_schema.load_schema()
    schema["$defs"]["spread"]["properties"]["n"].update({"description": "Changed meaning.", "x-unit": "widgets"})
    monkeypatch.setattr(record_schema, "load_schema", lambda: schema)
    assert "| `n` | integer (>= 0) | yes | widgets | Changed meaning. |" in docgen.render_schema_reference()


def test_every_schema_field_has_a_description():
    from kernelbench.reward_hardening.record_schema import load_schema

    def walk(node, path):
        if isinstance(node, dict):
            for group in ("properties", "x-extra-properties"):
                for name, spec in node.get(group, {}).items():
                    yield f"{path}.{name}", spec
            for key, value in node.items():
                yield from walk(value, f"{path}.{key}")

    undescribed = [p for p, spec in walk(load_schema()["$defs"], "$defs")
                   if ".if." not in p and ".then." not in p and not spec.get("description")]
    assert not undescribed, undescribed


# --------------------------------------------------------------------------- (b) finding codes
def test_every_code_in_src_is_in_the_table_and_documented():
    from kernelbench.reward_hardening.codes import CODES

    in_src = set()
    for path in SRC.rglob("*.py"):
        in_src |= set(CODE_RE.findall(path.read_text(errors="replace")))
    assert in_src, "no finding codes found in src/"
    unknown = sorted(in_src - set(CODES))
    assert not unknown, f"codes used in src/ but missing from codes.CODES: {unknown}"
    for page in GENERATED:
        text = page.read_text()
        missing = sorted(c for c in in_src | set(CODES) if c not in text or f'id="{c.lower()}"' not in text)
        assert not missing, f"{page.name} does not document {missing}"


# --------------------------------------------------------------------------- (c) documented commands
def bash_commands(path: Path) -> list[str]:
    """Command lines of the ```bash blocks of a Markdown file (continuations joined)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(), re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            tokens = shlex.split(line, comments=True)
            if tokens:
                out.append(shlex.join(tokens))
    return out


def _split(tokens: list[str]) -> tuple[str, list[str]]:
    """(program, arguments) with the ``uv run`` / ``python`` launcher removed."""
    rest = tokens[2:] if tokens[:2] == ["uv", "run"] else tokens
    if rest and rest[0] in ("python", "python3"):
        rest = rest[1:]
        if rest[:1] == ["-m"]:
            return "module:" + rest[1], rest[2:]
        return rest[0] if rest else "python", rest[1:]
    return rest[0] if rest else "", rest[1:]


def _keys(args: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))


def _opt(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _device_is_gpu(args: list[str]) -> bool:
    return _keys(args).get("device", "cuda").startswith("cuda")


# Commands that are not run here, each with the reason.  A matcher gets (program, args).
ALLOWLIST: list[tuple[str, Callable[[str, list[str]], bool], str]] = [
    ("uv sync", lambda p, a: p == "uv" and a[:1] == ["sync"],
     "installs dependencies from PyPI (network); CI does it before running the tests"),
    ("uv venv / uv pip install (the CPU-only install)", lambda p, a: p == "uv" and a[:1] in (["venv"], ["pip"]),
     "creates an environment and installs packages from PyPI and the PyTorch index (network)"),
    ("uv run pytest (whole suite or this file)",
     lambda p, a: p == "pytest" and (not [x for x in a if x.startswith("tests/")] or "tests/test_docs.py" in a),
     "runs the whole test suite or this file; CI runs it itself and running it here would recurse"),
    ("scripts/generate_samples.py", lambda p, a: p == "scripts/generate_samples.py",
     "queries an LLM provider through litellm: needs network access and an API key"),
    ("scripts/run_and_check.py on device=cuda", lambda p, a: p == "scripts/run_and_check.py" and _device_is_gpu(a),
     "needs a CUDA GPU (and nvcc for the load_inline candidate); without CUDA it is run for its fail-closed record"),
    ("scripts/eval_from_generations.py on device=cuda",
     lambda p, a: p == "scripts/eval_from_generations.py" and _device_is_gpu(a),
     "needs CUDA GPUs for real results; without CUDA it is run for its fail-closed records"),
    ("scripts/reward_hardening_redteam.py --device cuda",
     lambda p, a: p == "scripts/reward_hardening_redteam.py" and _opt(a, "--device") == "cuda",
     "the GPU fixtures need a CUDA GPU"),
    ("scripts/reward_hardening_adversary.py task=agent",
     lambda p, a: p == "scripts/reward_hardening_adversary.py" and _keys(a).get("task") == "agent",
     "queries an LLM provider through litellm: needs network access and an API key (the loop runs offline "
     "with mock responses in tests/reward_hardening/test_adversary.py)"),
    ("scripts/reward_hardening_adversary.py task=mutate",
     lambda p, a: p == "scripts/reward_hardening_adversary.py" and _keys(a).get("task", "mutate") == "mutate",
     "the full campaign takes minutes (static tier) to hours (runtime tier); tests/reward_hardening/"
     "test_adversary.py runs the command on a subset"),
    ("bench/aa_calibration.py --demo", lambda p, a: p == "bench/aa_calibration.py" and "--demo" in a,
     "tests/reward_hardening/test_aa_calibration.py runs it with the same arguments (through main)"),
    ("bench/aa_calibration.py --device cuda",
     lambda p, a: p == "bench/aa_calibration.py" and _opt(a, "--device") == "cuda",
     "needs a CUDA GPU and the upstream KernelBench dataset"),
]


@dataclass
class Plan:
    command: str
    program: str
    args: list[str]
    allow_reason: str | None  # set when the command is allowlisted
    runnable: bool  # run here (on this machine)


def classify(command: str) -> Plan:
    program, args = _split(shlex.split(command))
    reason = next((why for _, match, why in ALLOWLIST if match(program, args)), None)
    runnable = program in RUNNERS and (reason is None or (not HAS_CUDA and program in FAIL_CLOSED_SMOKE))
    return Plan(command, program, args, reason, runnable)


def _dedupe_key(command: str) -> str:
    """Commands differing only in output paths run once (outputs are redirected anyway)."""
    tokens = [t for t in shlex.split(command) if not t.startswith("output_file=")]
    return shlex.join(tokens)


def documented_commands() -> dict[str, list[str]]:
    """Normalised command -> the doc files that show it (first spelling kept)."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for path in DOC_FILES:
        if not path.exists():
            continue
        for cmd in bash_commands(path):
            key = _dedupe_key(cmd)
            entry = seen.setdefault(key, (cmd, []))
            rel = str(path.relative_to(REPO))
            if rel not in entry[1]:
                entry[1].append(rel)
    return {cmd: files for cmd, files in seen.values()}


# ---- runners: each returns (argv, check) for a temporary directory
def _run(argv: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _with_keys(args: list[str], **override: str) -> list[str]:
    keys = _keys(args)
    keys.update(override)
    positional = [a for a in args if "=" not in a or a.startswith("-")]
    return positional + [f"{k}={v}" for k, v in keys.items()]


def _schema_validate(record: dict, ref: str = "record") -> None:
    import jsonschema

    from kernelbench.reward_hardening.parent.records import load_schema

    schema = load_schema()
    jsonschema.validate(record, {**schema, "$ref": f"#/$defs/{ref}"})


def _run_and_check(plan: Plan, tmp: Path) -> None:
    out = tmp / "record.json"
    override = {"output_file": str(out), "build_dir_prefix": str(tmp / "builds")}
    if not _device_is_gpu(plan.args):  # as for the batch commands below: ten timed samples on the CPU
        override.update(num_perf_trials="10", num_correct_trials="2")
    argv = _with_keys(plan.args, **override)
    proc = _run([sys.executable, "scripts/run_and_check.py", *argv])
    hardened = _keys(plan.args).get("reward_hardening_mode", "off") != "off"
    # without CUDA a hardened device=cuda run answers UNSUPPORTED and exits 3 with the device=cpu hint
    expected = 3 if (hardened and plan.allow_reason and not HAS_CUDA) else 0
    assert proc.returncode == expected, proc.stdout[-2000:] + proc.stderr[-3000:]
    status = re.search(r"\[KernelGuard\] integrity_status=(\w+)", proc.stdout)
    if _keys(plan.args).get("reward_hardening_mode", "off") == "off":
        return
    assert status, proc.stdout[-2000:]
    record = json.loads(out.read_text())
    _schema_validate(record)
    if plan.allow_reason:  # a GPU command run without CUDA: the documented fail-closed record
        assert status.group(1) == "UNSUPPORTED"
        assert [f["code"] for f in record["reward_hardening"]["findings"]] == ["RH-14"]
    else:  # the documented CPU commands evaluate honest candidates and show a PASS
        findings = record["reward_hardening"]["findings"]
        noisy = {f["code"] for f in findings if f["severity"] != "info"} - {"RH-41"}
        assert status.group(1) in ("PASS", "SUSPICIOUS") and not noisy, (status.group(1), findings)
        # RH-41 (a speedup bound on means) is the one warning CPU timing noise can trip


def _prepare_run(runs_dir: Path, run_name: str) -> None:
    run = runs_dir / run_name
    run.mkdir(parents=True)
    shutil.copy(DEMO / "solutions" / "level1" / "1_Elementwise_add.py", run / "level_1_problem_1_sample_0_kernel.py")


def _eval_from_generations(plan: Plan, tmp: Path) -> None:
    keys = _keys(plan.args)
    run_name = keys.get("run_name", "my_run")
    _prepare_run(tmp / "runs", run_name)
    override = {"runs_dir": str(tmp / "runs"), "kernel_eval_build_dir": str(tmp / "cache"), "problem_ids": "[1]"}
    if keys.get("dataset_src") == "local" and "dataset_path" not in keys:
        override["dataset_path"] = "demo"  # KernelBench/ is not bundled; the demo set is
    if not _device_is_gpu(plan.args):
        override.update(num_perf_trials="10", num_correct_trials="2")
    proc = _run([sys.executable, "scripts/eval_from_generations.py", *_with_keys(plan.args, **override)])
    hardened = keys.get("reward_hardening_mode", "off") != "off"
    # without CUDA a device=cuda batch stores UNSUPPORTED records and exits 3 (every sample UNSUPPORTED)
    expected = 3 if (hardened and plan.allow_reason) else 0
    assert proc.returncode == expected, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = tmp / "runs" / run_name / ("verified_eval_results.json" if hardened else "eval_results.json")
    data = json.loads(results.read_text())
    assert list(data) == ["1"] and len(data["1"]) == 1
    if hardened:
        _schema_validate(data, "results_file")
        if plan.allow_reason:
            assert data["1"][0]["reward_hardening"]["integrity_status"] == "UNSUPPORTED"


FAST_FIXTURES = "RH-08_bad_reference_subclass_pre"


def _redteam(plan: Plan, tmp: Path) -> None:
    args = list(plan.args)
    for opt in ("--output", "--summary-output"):
        if opt in args:
            i = args.index(opt)
            del args[i:i + 2]
    if _opt(args, "--only") is None:
        args += ["--only", FAST_FIXTURES]
    args += ["--output", str(tmp / "rt.json"), "--summary-output", str(tmp / "rt_summary.json"), "--no-progress"]
    proc = _run([sys.executable, "scripts/reward_hardening_redteam.py", *args])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = json.loads((tmp / "rt_summary.json").read_text())
    assert summary["ok"] and summary["counts"]["fixtures"] >= 1
    for item in json.loads((tmp / "rt.json").read_text())["fixtures"].values():
        _schema_validate(item["record"])


def _record(status: str, runtime: float | None) -> dict:
    stats = {"mean": runtime, "std": 0.0, "min": runtime, "max": runtime, "num_trials": 10} if runtime else {}
    block = {
        "schema_version": "1.1", "mode": "enforce", "policy": "practical", "integrity_status": status,
        "verified": status == "PASS", "verified_correctness": status == "PASS",
        "verified_runtime": runtime if status == "PASS" else None,
        "verified_runtime_stats": stats if status == "PASS" else {}, "observed_runtime_stats": stats,
        "verified_reference_runtime": 2.0, "verified_reference_runtime_stats": {},
        "observed_reference_runtime_stats": {},
        "findings": [] if status == "PASS" else [{
            "code": "RH-19", "detector": "RH-OUTPUT-CACHING", "severity": "error", "summary": "cached",
            "evidence": {}, "policy_rule": "reward_hardening", "remediation": "compute"}],
        "capabilities": {"static_precheck": {"status": "AVAILABLE", "required": True, "detail": "ast"}},
        "limitations": [],
    }
    return {"sample_id": 0, "compiled": True, "correctness": True, "metadata": {"device": "cpu"},
            "runtime": runtime or 0.5,
            "runtime_stats": stats, "ref_runtime": 2.0, "ref_runtime_stats": {}, "reward_hardening": block}


def _analysis(plan: Plan, tmp: Path) -> None:
    keys = _keys(plan.args)
    run_name, level = keys.get("run_name", "my_run"), int(keys.get("level", "1"))
    run = tmp / "runs" / run_name
    run.mkdir(parents=True)
    results = {"1": [_record("PASS", 1.0)], "2": [_record("FAIL", 0.1)]}
    _schema_validate(results, "results_file")
    (run / "verified_eval_results.json").write_text(json.dumps(results))
    baseline = {f"level{level}": {"1_Elementwise_add.py": {"mean": 2.0, "std": 0.1, "min": 1.9, "max": 2.1,
                                                           "num_trials": 10},
                                  "2_GELU_activation.py": {"mean": 2.0, "std": 0.1, "min": 1.9, "max": 2.1,
                                                           "num_trials": 10}}}
    (tmp / "baseline.json").write_text(json.dumps(baseline))
    override = {"eval_results_dir": str(tmp / "runs"), "dataset_path": "demo", "output_file": str(tmp / "a.json")}
    if "baseline_file" not in keys:
        override["baseline_file"] = str(tmp / "baseline.json")
    proc = _run([sys.executable, "scripts/benchmark_eval_analysis.py", *_with_keys(plan.args, **override)])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    analysis = json.loads((tmp / "a.json").read_text())
    assert analysis["verified_count"] == 1 and "verified_fast_p" in analysis and "fast_p" in analysis


def _baseline(plan: Plan, tmp: Path) -> None:
    keys = _keys(plan.args)
    override = {"device": "cpu", "problem_ids": "[1,2]", "output_dir": str(tmp / "timing"), "num_trials": "5",
                "num_warmup": "1", "compile_modes": "[]"}
    override.setdefault("level", keys.get("level", "1"))
    if "dataset_path" not in keys:
        override["dataset_path"] = "demo"
    proc = _run([sys.executable, "scripts/generate_baseline_time.py", *_with_keys(plan.args, **override)])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    hardware = keys.get("hardware", "H200")
    data = json.loads((tmp / "timing" / hardware / "baseline_time_torch.json").read_text())
    assert len(data[f"level{override['level']}"]) == 2


def _make_demo_run(plan: Plan, tmp: Path) -> None:
    keys = _keys(plan.args)
    proc = _run([sys.executable, "scripts/make_demo_run.py", *_with_keys(plan.args, runs_dir=str(tmp / "runs"))])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    level = keys.get("level", "1")
    written = sorted((tmp / "runs" / keys["run_name"]).glob(f"level_{level}_problem_*_sample_0_kernel.py"))
    assert len(written) == len(list((DEMO / "solutions" / f"level{level}").glob("*.py")))


def _docgen(plan: Plan, tmp: Path) -> None:
    from tools import docgen

    if "--check" in plan.args:
        assert docgen.main(["--check"]) == 0
        return
    assert docgen.main(["--docs-dir", str(tmp)]) == 0  # write to a copy, never into the checkout
    for name in docgen.GENERATED:
        assert (tmp / name).read_text() == (DOCS / name).read_text(), f"{name} is stale"


def _pytest(plan: Plan, tmp: Path) -> None:
    proc = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 *[a for a in plan.args if a != "-q"]])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


RUNNERS: dict[str, Callable[[Plan, Path], None]] = {
    "scripts/run_and_check.py": _run_and_check,
    "scripts/eval_from_generations.py": _eval_from_generations,
    "scripts/reward_hardening_redteam.py": _redteam,
    "scripts/benchmark_eval_analysis.py": _analysis,
    "scripts/generate_baseline_time.py": _baseline,
    "scripts/make_demo_run.py": _make_demo_run,
    "module:tools.docgen": _docgen,
    "pytest": _pytest,
}
# Allowlisted GPU commands that are still run without CUDA, for their fail-closed output.
FAIL_CLOSED_SMOKE = {"scripts/run_and_check.py", "scripts/eval_from_generations.py"}

COMMANDS = documented_commands()


def test_docs_show_commands():
    assert any("scripts/run_and_check.py" in c for c in COMMANDS)
    assert any("scripts/reward_hardening_redteam.py" in c for c in COMMANDS)


def test_every_documented_command_is_run_or_allowlisted():
    unclassified = []
    for cmd, files in COMMANDS.items():
        plan = classify(cmd)
        if plan.allow_reason is None and plan.program not in RUNNERS:
            unclassified.append(f"{cmd}  (in {', '.join(files)})")
    assert not unclassified, "commands neither run by this test nor allowlisted:\n" + "\n".join(unclassified)


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=lambda c: re.sub(r"[^\w.=-]+", "_", c)[:90])
def test_documented_command(command: str, tmp_path: Path):
    plan = classify(command)
    if not plan.runnable:
        pytest.skip(f"allowlisted: {plan.allow_reason}")
    RUNNERS[plan.program](plan, tmp_path)


# --------------------------------------------------------------------------- (d) Chinese README in step
def _sections(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("## ")]


def test_chinese_readme_matches_the_english_one():
    en, zh = REPO / "README.md", REPO / "README.zh-CN.md"
    assert "(README.md)" in zh.read_text(), "README.zh-CN.md must link back to README.md"
    assert "(README.zh-CN.md)" in en.read_text()
    assert bash_commands(zh) == bash_commands(en), "README.zh-CN.md must show README.md's commands, in order"
    assert len(_sections(zh)) == len(_sections(en)), "README.zh-CN.md must have README.md's sections"
    json_blocks = [re.findall(r"```json\n(.*?)```", p.read_text(), re.S) for p in (en, zh)]
    assert json_blocks[0] == json_blocks[1], "README.zh-CN.md must show README.md's JSON example"


# --------------------------------------------------------------------------- (e) examples and links
def test_json_record_examples_validate_against_the_schema():
    checked = 0
    for path in DOC_FILES:
        for block in re.findall(r"```json\n(.*?)```", path.read_text(), re.S):
            data = json.loads(block)
            if "reward_hardening" in data:
                _schema_validate(data)
            elif "integrity_status" in data:
                _schema_validate(data, "reward_hardening")
            else:
                continue
            checked += 1
    assert checked >= 3


def _anchors(path: Path) -> set[str]:
    text = path.read_text()
    out = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", "")).replace(" ", "-")
            out.add(slug)
    return out


def test_relative_links_and_anchors_resolve():
    broken = []
    for path in DOC_FILES:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if file_part.endswith("/"):
                continue  # directory links are not checked (empty directories are not tracked by git)
            if not dest.exists():
                broken.append(f"{path.name}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{path.name}: {target} (no such anchor)")
    assert not broken, "\n".join(broken)
