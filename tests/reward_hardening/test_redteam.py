"""The red-team regression suite: registry, full CPU run, load-bearing detectors, hidden data.

(a) the fixture manifest is well formed: every fixture named after the code it proves
    (``RH-NN_bad_*`` / benign twin ``RH-NN_good_*``) or ``benign_*``, with an exact
    expected code multiset; every attack code has a documented section, an attack
    fixture, a benign twin, and every evaluator-state code a unit test;
(b) the full CPU red-team run (``scripts/reward_hardening_redteam.py``, one subprocess per
    test session) exits 0 and its JSON says every observation matched exactly;
(c) for every code some CPU fixture requires, switching that code off
    (``--disable-detector``) makes exactly those fixtures mismatch and the suite fail;
(d) the hidden-data probe stayed unverified and was caught by RH-07 and RH-18.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.reward_hardening.codes import CODES
from kernelbench.reward_hardening.fixtures import (
    AMBIENT_CODES,
    EVALUATOR_STATE_CODES,
    FIXTURE_DIR,
    INFO_FORMS,
    FIXTURES,
    Fixture,
    benign_forbidden_codes,
    fixture_source,
    get_fixture,
    observed_matches,
    problem_source,
    select,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "reward_hardening_redteam.py"
CPU = select(device="cpu")
ATTACK_ID = re.compile(r"^(A(0[1-9]|[1-4][0-9]|50)|benign|DOS)$")
FIXTURE_ID = re.compile(r"^(?:RH-(?P<code>\d\d)_(?P<kind>bad|good)_(?P<slug>[a-z0-9_]+)|benign_[a-z0-9_]+)$")
ATTACK_CODES = sorted(c for c, info in CODES.items() if info.status != "removed" and c not in EVALUATOR_STATE_CODES)


# --------------------------------------------------------------------------- (a) registry
def test_ids_unique_and_lookup():
    ids = [f.id for f in FIXTURES]
    assert len(ids) == len(set(ids))
    for f in FIXTURES:
        assert get_fixture(f.id) is f
    with pytest.raises(KeyError):
        get_fixture("no_such_fixture")


def test_enough_cpu_fixtures():
    attacks = [f for f in CPU if not f.benign]
    benign = [f for f in CPU if f.benign]
    assert len(attacks) >= 30, len(attacks)
    assert len(benign) >= 5, len(benign)
    # at least a few of each kind of judgement
    assert sum(f.mode == "enforce" for f in CPU) >= 4
    assert sum(f.mode == "audit" and not f.benign for f in CPU) >= 25
    assert any(f.expected_status == "SUSPICIOUS" for f in CPU)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.id)
def test_fixture_well_formed(fixture: Fixture):
    m = FIXTURE_ID.match(fixture.id)
    assert m, f"{fixture.id}: name it RH-NN_bad_<slug>, RH-NN_good_<slug> or benign_<slug>"
    assert ATTACK_ID.match(fixture.attack), fixture.attack
    assert fixture.policy in ("source_strict", "practical")
    assert fixture.mode in ("audit", "enforce")
    assert fixture.mode == "enforce" if fixture.id.endswith("_pre") else fixture.mode == "audit", fixture.id
    assert fixture.device in ("cpu", "cuda")
    assert fixture.expected_status in ("PASS", "FAIL", "SUSPICIOUS", "UNSUPPORTED")
    assert fixture.description
    assert list(fixture.codes) == sorted(fixture.codes), "codes are a sorted multiset"
    for code in fixture.codes + fixture.unstable:
        assert code in CODES and code not in AMBIENT_CODES, code
    assert not set(fixture.codes) & set(fixture.unstable), "a code is either always raised or unstable"
    # files exist; the candidate file starts with a docstring saying what it is
    assert fixture.source_path.is_file(), fixture.source_path
    assert fixture.source_path.resolve().is_relative_to(FIXTURE_DIR)
    assert fixture.problem_path.is_file(), fixture.problem_path
    assert "class Model" in problem_source(fixture)
    tree = ast.parse(fixture_source(fixture))
    doc = ast.get_docstring(tree)
    assert doc and len(doc) > 80, f"{fixture.source_file} needs a docstring explaining the attack"
    if fixture.benign:
        assert m["kind"] != "bad", fixture.id
        assert fixture.expected_status == "PASS"
        assert not (set(benign_forbidden_codes(fixture.policy)) - INFO_FORMS) & set(fixture.codes), fixture.codes
    else:
        assert m["kind"] == "bad", fixture.id
        assert fixture.expected_status != "PASS" and fixture.codes
        assert f"RH-{m['code']}" in fixture.codes, f"{fixture.id} must raise the code it is named after"
    if m and m["code"]:
        assert f"RH-{m['code']}" not in fixture.unstable, "the code a fixture proves is never unstable"


def test_every_attack_code_has_a_section_an_attack_a_twin_and_an_exact_multiset():
    catalogue = (REPO / "docs" / "attack-catalog.md").read_text()
    by_id = {f.id: f for f in FIXTURES}
    problems = []
    for code in ATTACK_CODES:
        if f'<a id="{code.lower()}"></a>' not in catalogue:
            problems.append(f"{code}: no section in docs/attack-catalog.md")
        attacks = [f for f in FIXTURES if f.id.startswith(f"{code}_bad_")]
        if not attacks:
            problems.append(f"{code}: no attack fixture named {code}_bad_<slug>")
        twins = [by_id.get(f.id.replace("_bad_", "_good_", 1)) for f in attacks]
        if not any(t is not None and t.benign for t in twins):
            problems.append(f"{code}: no benign twin {code}_good_<slug> of any of {[f.id for f in attacks]}")
        for f in attacks:
            if code not in f.codes:
                problems.append(f"{f.id}: its exact multiset {f.codes} lacks {code}")
    assert not problems, "\n".join(problems)


def test_info_forms_are_the_codes_detectors_emit_as_info_only():
    src = REPO / "src" / "kernelbench" / "reward_hardening"
    seen = set()
    for path in src.rglob("*.py"):
        seen |= set(re.findall(r'observe\("(RH-\d+)"[^)]*info_only=True', path.read_text(), flags=re.S))
    assert seen == set(INFO_FORMS)


def test_every_evaluator_state_code_has_a_unit_test():
    path = REPO / "tests" / "reward_hardening" / "test_evaluator_state_codes.py"
    names = [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)]
    for code in EVALUATOR_STATE_CODES:
        assert code in CODES and CODES[code].status != "removed", code
        tag = "rh" + code.split("-")[1]
        assert any(n.startswith("test_") and tag in n.split("_") for n in names), f"{code} has no unit test"
    # and no fixture is named after one of them: they are not attacks
    assert not [f.id for f in FIXTURES if f.id[:5] in EVALUATOR_STATE_CODES]


def test_twins_differ_from_their_attack():
    by_id = {f.id: f for f in FIXTURES}
    for f in FIXTURES:
        if "_good_" not in f.id:
            continue
        bad = by_id.get(f.id.replace("_good_", "_bad_", 1))
        assert bad is not None, f"{f.id} is the twin of no attack"
        assert (bad.problem, bad.device) == (f.problem, f.device), f.id
        # a twin shares the attack's source only when it differs in policy or settings instead
        if bad.source_file == f.source_file:
            assert (bad.policy, bad.config) != (f.policy, f.config), f.id


def test_every_source_file_is_used_and_never_a_package():
    used = {f.source_path.resolve() for f in FIXTURES}
    on_disk = {p.resolve() for sub in ("cpu", "cuda") for p in (FIXTURE_DIR / sub).glob("*.py")}
    assert on_disk == used, sorted(p.name for p in on_disk ^ used)
    for sub in ("cpu", "cuda"):  # the attacks must never be importable
        assert not (FIXTURE_DIR / sub / "__init__.py").exists()


def test_twins_share_a_source():
    strict = get_fixture("RH-31_bad_torch_fallback")
    twin = get_fixture("RH-31_good_torch_fallback")
    assert strict.source_file == twin.source_file
    assert (strict.policy, strict.expected_status) == ("source_strict", "FAIL")
    assert (twin.policy, twin.expected_status) == ("practical", "PASS")


def test_select_filters():
    assert select(device="cuda") == [f for f in FIXTURES if f.device == "cuda"]
    assert [f.id for f in select(ids=["RH-19_bad_cache_shape", "benign_add_solution"])] == [
        "benign_add_solution", "RH-19_bad_cache_shape"]  # registry order
    assert "RH-19_bad_cache_shape" not in [f.id for f in select(exclude=["RH-19_bad_cache_shape"])]
    with pytest.raises(KeyError):
        select(ids=["nope"])


def _record(status, codes):
    return {"reward_hardening": {"integrity_status": status, "findings": [{"code": c} for c in codes]}}


def test_observed_matches_is_exact():
    f = get_fixture("RH-21_bad_background_thread")
    want = list(f.codes)
    ok, reasons = observed_matches(f, _record("FAIL", want))
    assert ok and reasons == []
    assert observed_matches(f, _record("FAIL", want + ["RH-54"]))[0]  # the machine's load is left out
    ok, reasons = observed_matches(f, _record("FAIL", [c for c in want if c != "RH-21"]))
    assert not ok and any("missing" in r and "RH-21" in r for r in reasons)
    ok, reasons = observed_matches(f, _record("FAIL", want + ["RH-26"]))  # a superset is a mismatch now
    assert not ok and any("unexpected" in r and "RH-26" in r for r in reasons)
    ok, reasons = observed_matches(f, _record("FAIL", want + ["RH-21"]))  # so is a code seen twice
    assert not ok and any("unexpected" in r and "RH-21" in r for r in reasons)
    u = get_fixture("RH-18_bad_memorised_table")  # RH-41 follows the machine's speed there
    assert u.unstable == ("RH-41",)
    assert observed_matches(u, _record("FAIL", list(u.codes)))[0]
    assert observed_matches(u, _record("FAIL", list(u.codes) + ["RH-41"]))[0]
    assert not observed_matches(u, _record("FAIL", list(u.codes) + ["RH-41", "RH-41"]))[0]
    ok, reasons = observed_matches(f, _record("SUSPICIOUS", want))
    assert not ok and any("status" in r for r in reasons)
    b = get_fixture("benign_softmax_solution")
    assert b.codes == ("RH-13", "RH-31")  # info-level under practical, declared exactly
    assert observed_matches(b, _record("PASS", ["RH-13", "RH-31"]))[0]
    ok, reasons = observed_matches(b, _record("PASS", ["RH-13", "RH-31", "RH-26"]))
    assert not ok and any("RH-26" in r for r in reasons)
    assert not observed_matches(b, {})[0]


def test_cli_list_and_usage_errors(capsys):
    import reward_hardening_redteam as rt

    assert rt.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(f.id in out for f in CPU)
    for bad in (["--only", "no_such_fixture"], ["--disable-detector", "RH-99"], ["--timeout", "0"]):
        with pytest.raises(SystemExit) as exc:
            rt.main(bad + ["--list"])
        assert exc.value.code == 2


# --------------------------------------------------------------------------- (b) the full CPU run
@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("redteam")
    full, summary = out / "redteam.json", out / "summary.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--timeout", "5", "--jobs", "2", "--output", str(full), "--summary-output", str(summary),
         "--no-progress"],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
            "full": json.loads(full.read_text()) if full.exists() else None,
            "summary": json.loads(summary.read_text()) if summary.exists() else None}


@pytest.mark.slow
def test_full_cpu_run_exits_zero(full_run):
    summary = full_run["summary"]
    assert summary is not None, full_run["stderr"][-3000:]
    assert summary["mismatches"] == [], json.dumps(summary["mismatches"], indent=1)
    assert full_run["rc"] == 0, full_run["stdout"][-3000:] + full_run["stderr"][-3000:]
    assert summary["ok"] is True
    assert summary["counts"]["fixtures"] == len(CPU)
    assert summary["counts"]["matched"] == len(CPU)
    # a regression guard on the per-fixture cost (builds included), loose enough for a loaded
    # 2-core CI machine: two fixtures run at a time
    assert summary["wall_s"] < 6.0 * len(CPU), (summary["wall_s"], len(CPU))


@pytest.mark.slow
def test_full_cpu_run_json(full_run):
    data = full_run["full"]
    assert data is not None
    assert set(data["fixtures"]) == {f.id for f in CPU}
    assert data["config"]["timeout"] == 5.0 and data["config"]["device"] == "cpu"
    from kernelbench.reward_hardening.config import cpu_threads_per_evaluation

    assert data["config"]["num_threads"] == cpu_threads_per_evaluation(2)  # two jobs share the cores
    for f in CPU:
        r = data["fixtures"][f.id]
        assert r["match"] is True, (f.id, r["reasons"])
        assert r["expected"] == {"status": f.expected_status, "codes": list(f.codes), "unstable": list(f.unstable)}
        assert r["observed"]["status"] == r["record"]["reward_hardening"]["integrity_status"]
        assert r["wall_s"] >= 0
        rh = r["record"]["reward_hardening"]
        assert rh["schema_version"] == "1.1"
        assert (rh["mode"], rh["policy"]) == (f.mode, f.policy)
        # only a PASS carries a trusted runtime
        assert rh["verified"] is (f.expected_status == "PASS")
        assert (rh["verified_runtime"] is not None) is (f.expected_status == "PASS")
        if f.id == "RH-24_bad_thread_dtype_pollution":  # both halves of the pollution are seen
            changes = next(x for x in rh["findings"] if x["code"] == "RH-24")["evidence"]["changes"]
            assert changes["num_threads"]["before"] == 2 and changes["num_threads"]["after"] == 1, changes
            assert "default_dtype" in changes
        static_error = any(CODES[c].stage == "static" and CODES[c].severity.get(f.policy) == "error"
                           for c in f.must_raise)
        if f.mode == "enforce" and static_error:  # rejected before import: no runtime evidence at all
            assert r["record"]["compiled"] is False
            assert not r["record"]["metadata"].get("reward_hardening_phases")


@pytest.mark.slow
def test_full_cpu_run_covers_every_required_code(full_run):
    cov = full_run["summary"]["coverage"]
    required = {c for f in CPU for c in f.must_raise}
    assert set(full_run["summary"]["codes_required"]) == required
    for code in required:
        assert cov[code]["required_and_observed"] == cov[code]["required_by"], code
    for code, entry in cov.items():
        assert entry["unexpected_in"] == [], (code, entry["unexpected_in"])


# --------------------------------------------------------------------------- (c) every detector is load-bearing
# the evaluator-state codes (RH-34: a required capability is missing, ...) come from the
# record's own checks, not from a detector one can switch off; their unit tests prove them
REQUIRED_CODES = sorted({c for f in CPU for c in f.must_raise} - set(EVALUATOR_STATE_CODES))


@pytest.fixture(scope="module")
def disabled_runs():
    """For every required code: its first fixture, evaluated with only that code switched off.

    Codes are switched off in one place each (the precheck's rule loop, the runtime
    detector registry), so one fixture per code shows the switch reaches the verdict;
    the full run shows every fixture raises what it requires.  The pairs are evaluated
    two at a time through the script's own parser and ``run_fixture``.
    """
    import concurrent.futures as cf

    import reward_hardening_redteam as rt

    by_id = {f.id: f for f in CPU}
    parser = rt.build_parser()

    def one(code: str) -> tuple[str, dict, list]:
        # the switched-off code is missing whatever the sample counts: the fewest that run every phase
        # (two at a time: --jobs 2 gives each worker its share of the cores)
        args = parser.parse_args(["--disable-detector", code, "--timeout", "5", "--no-progress", "--jobs", "2",
                                  "--num-perf-trials", "3", "--num-correct-trials", "1"])
        rt._validate(args, parser)
        fid = next(f.id for f in CPU if code in f.must_raise)
        return code, rt.run_fixture(by_id[fid], args), list(args.disable_detector)

    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        return {code: (r, disabled) for code, r, disabled in pool.map(one, REQUIRED_CODES)}


@pytest.mark.slow
@pytest.mark.parametrize("code", REQUIRED_CODES)
def test_disabling_a_detector_breaks_the_suite(code, disabled_runs):
    r, disabled = disabled_runs[code]
    assert disabled == [code]
    assert r["match"] is False, r["id"]
    assert code not in r["observed"]["codes"], r["id"]
    assert any(code in reason for reason in r["reasons"]), (r["id"], r["reasons"])


@pytest.mark.slow
def test_disable_detector_on_the_command_line_reaches_the_output(tmp_path):
    import reward_hardening_redteam as rt

    out = tmp_path / "disabled.json"
    rc = rt.main(["--only", "RH-02_bad_subprocess_probe", "--disable-detector", "RH-02", "--timeout", "5",
                  "--output", str(out), "--no-progress"])
    assert rc == 1
    data = json.loads(out.read_text())
    assert data["config"]["disabled_detectors"] == ["RH-02"]
    r = data["fixtures"]["RH-02_bad_subprocess_probe"]
    assert r["match"] is False and "RH-02" not in r["observed"]["codes"]


def test_fixtures_of_one_problem_share_a_judge_unless_asked_not_to(tmp_path):
    import reward_hardening_redteam as rt

    by_problem: dict = {}
    for f in select(device="cpu"):
        if not f.config and f.expected_status == "PASS":
            by_problem.setdefault(f.problem, []).append(f.id)
    pair = next(ids[:2] for ids in by_problem.values() if len(ids) >= 2)

    def reused(extra):
        out = tmp_path / f"shared{len(extra)}.json"
        assert rt.main(["--only", ",".join(pair), "--timeout", "5", "--output", str(out), "--no-progress",
                        *extra]) == 0
        data = json.loads(out.read_text())["fixtures"]
        return [next(p for p in data[i]["record"]["metadata"]["reward_hardening_phases"]
                     if p["phase"] == "reference")["reused"] for i in pair]

    assert reused([]) == [False, True]  # the second fixture's judge is the first one's, as in a batch
    assert reused(["--fresh-judges"]) == [False, False]


# --------------------------------------------------------------------------- (d) hidden data stays hidden
@pytest.mark.slow
def test_hidden_data_probe_learned_nothing(full_run):
    r = full_run["full"]["fixtures"]["RH-07_bad_hidden_data_probe"]
    record = r["record"]
    rh = record["reward_hardening"]
    codes = [f["code"] for f in rh["findings"]]
    assert rh["integrity_status"] == "FAIL"
    assert rh["verified"] is False and rh["verified_correctness"] is False and rh["verified_runtime"] is None
    assert "RH-18" in codes and "RH-07" in codes
    # it was imported and ran (audit mode), yet was wrong on every hidden input: had any seed
    # leaked into its environment, its parent's /proc entries or the files around its
    # workspace, the replayed answer would have matched at least one hidden input.
    assert record["compiled"] is True
    assert record["correctness"] is False
    rh18 = next(f for f in rh["findings"] if f["code"] == "RH-18")
    # every hidden call failed, as values (the probe's replayed answer), never as a replay of a right one
    assert rh18["evidence"]["failed"] == rh18["evidence"]["checked"] > 0
    assert {f["class"] for f in rh18["evidence"]["failures"]} <= {"values", "shape", "non-finite"}
    assert record["metadata"]["correctness_trials"].startswith("(0 /")
