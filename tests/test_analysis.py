"""kernelbench.analysis and scripts/benchmark_eval_analysis.py on a fixed fake run.

The run mixes honest candidates (integrity PASS with a trusted runtime) and attacks
that upstream scoring rewards (correct and fast, but FAIL / SUSPICIOUS /
UNSUPPORTED in the hardened record).  fast_p must count every correct sample as
upstream does; verified_fast_p must drop exactly the ones without a PASS verdict
and a trusted runtime.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.analysis import (
    FAST_P_THRESHOLDS,
    AnalysisError,
    analyze_run,
    analyze_run_files,
    counts_as_verified,
    format_report,
    load_problem_names,
    select_sample0,
)
from kernelbench.score import fastp

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "scripts" / "benchmark_eval_analysis.py"
P_KEYS = ["0.0", "0.5", "0.8", "1.0", "1.5", "2.0"]

UPSTREAM_KEYS = {
    "run_name",
    "level",
    "hardware",
    "total_count",
    "total_eval",
    "compiled_count",
    "correct_count",
    "compilation_rate",
    "correctness_rate",
    "geo_mean_speedup",
    "fast_p",
}
VERIFIED_KEYS = {
    "verified_count",
    "verified_fast_p",
    "verified_geo_mean_speedup",
    "integrity_status_counts",
    "top_finding_codes",
}

# pid: (name, baseline mean | None, eval record fields | None, hardened block | None)
#   eval fields: (compiled, correctness, runtime)
#   hardened: (integrity_status, verified_runtime, finding codes)
PROBLEMS = {
    1: ("1_A.py", 2.0, (True, True, 1.0), ("PASS", 1.0, [])),  # honest, 2x
    2: ("2_B.py", 3.0, (True, True, 1.0), ("PASS", 1.2, [])),  # honest, trusted 2.5x
    3: ("3_C.py", 1.0, (True, True, 0.1), ("FAIL", None, ["RH-07", "RH-03"])),  # cached output
    4: ("4_D.py", 1.0, (True, True, 0.25), ("SUSPICIOUS", None, ["RH-07"])),  # async escape
    5: ("5_E.py", 1.0, (True, True, 0.5), ("UNSUPPORTED", None, ["RH-14"])),  # no CUDA
    6: ("6_F.py", 1.0, (True, True, 2.0), ("PASS", 2.0, [])),  # honest but slower
    7: ("7_G.py", 1.0, None, None),  # never evaluated
    8: ("8_H.py", None, (True, True, 0.5), ("PASS", 0.5, [])),  # baseline entry is null
    9: ("9_I.py", 1.0, (True, True, 0.8), ("PASS", None, [])),  # PASS without a trusted runtime
}
HONEST = {1, 2, 6}
ATTACKS = {3, 4, 5}


def hardened_block(status, verified_runtime, codes):
    return {
        "schema_version": "1.1",
        "mode": "enforce",
        "policy": "source_strict",
        "integrity_status": status,
        "verified": status == "PASS" and verified_runtime is not None,
        "verified_correctness": status == "PASS",
        "verified_runtime": verified_runtime,
        "verified_runtime_stats": {},
        "observed_runtime_stats": {},
        "verified_reference_runtime": None,
        "findings": [
            {
                "code": code,
                "detector": f"RH-TEST-{code}",
                "severity": "error",
                "summary": "test finding",
                "evidence": {},
                "policy_rule": "reward_hardening",
                "remediation": "none",
            }
            for code in codes
        ],
        "capabilities": {},
        "limitations": [],
    }


def eval_record(sample_id, compiled, correctness, runtime):
    return {
        "sample_id": sample_id,
        "compiled": compiled,
        "correctness": correctness,
        "metadata": {},
        "runtime": runtime,
        "runtime_stats": {},
    }


def build_inputs():
    eval_results, verified, baseline = {}, {}, {"level1": {}, "level2": {"1_A.py": {"mean": 99.0}}}
    for pid, (name, mean, fields, hardened) in PROBLEMS.items():
        baseline["level1"][name] = (
            None
            if mean is None
            else {"mean": mean, "std": 0.01, "min": mean, "max": mean, "num_trials": 100,
                  "hardware": "fake", "device": "cuda:0"}
        )
        if fields is not None:
            # a sample 1 that would change everything if it were (wrongly) used
            eval_results[str(pid)] = [eval_record(0, *fields), eval_record(1, True, True, 1e-6)]
            record = eval_record(0, *fields)
            record.update(ref_runtime=mean or -1.0, ref_runtime_stats={},
                          reward_hardening=hardened_block(*hardened))
            verified[str(pid)] = [record]
    return eval_results, verified, baseline


def make_dataset(root: Path) -> Path:
    level = root / "dataset" / "level1"
    level.mkdir(parents=True)
    for name, *_ in PROBLEMS.values():
        (level / name).write_text("# fake problem\n")
    return root / "dataset"


@pytest.fixture
def run_tree(tmp_path):
    """<tmp>/dataset/level1/*.py, <tmp>/runs/demo_run/{eval,verified}_results.json, <tmp>/baseline.json."""
    eval_results, verified, baseline = build_inputs()
    run_dir = tmp_path / "runs" / "demo_run"
    run_dir.mkdir(parents=True)
    (run_dir / "eval_results.json").write_text(json.dumps(eval_results, indent=4))
    (run_dir / "verified_eval_results.json").write_text(json.dumps(verified, indent=4))
    (tmp_path / "baseline.json").write_text(json.dumps(baseline, indent=4))
    make_dataset(tmp_path)
    return tmp_path


def analyze(tree: Path, **overrides):
    kwargs = dict(
        run_name="demo_run",
        level=1,
        hardware="fake_hw",
        baseline="baseline_time_torch",
        baseline_file=tree / "baseline.json",
        eval_results_dir=tree / "runs",
        dataset_path=tree / "dataset",
    )
    kwargs.update(overrides)
    return analyze_run_files(**kwargs)


def counted(pids, p, runtime_of):
    """Problems among ``pids`` whose baseline / runtime speedup is strictly above p."""
    return {pid for pid in pids if PROBLEMS[pid][1] / runtime_of(pid) > p}


def test_fake_dataset_is_read(run_tree):
    names = load_problem_names(1, run_tree / "dataset")
    assert names == {pid: entry[0] for pid, entry in PROBLEMS.items()}


def test_demo_dataset_and_missing_dataset(tmp_path):
    names = load_problem_names(1, "demo")
    assert names and all(name.endswith(".py") and name.startswith(f"{pid}_") for pid, name in names.items())
    with pytest.raises(AnalysisError):
        load_problem_names(1, tmp_path / "no_such_dataset")


def test_upstream_counts_and_rates(run_tree):
    result = analyze(run_tree)
    assert result["total_count"] == 9
    assert result["total_eval"] == 8  # problem 7 has no record
    assert result["compiled_count"] == 8
    assert result["correct_count"] == 8
    assert result["compilation_rate"] == pytest.approx(8 / 9)
    assert result["correctness_rate"] == pytest.approx(8 / 9)
    assert result["aligned_count"] == 8  # problem 8's baseline entry is null
    assert result["fast_p_source"] == "eval_results.json"


def test_fast_p_counts_every_correct_sample_including_attacks(run_tree):
    result = analyze(run_tree)
    correct_aligned = {1, 2, 3, 4, 5, 6, 9}
    upstream_runtime = {pid: PROBLEMS[pid][2][2] for pid in correct_aligned}
    for p, key in zip(FAST_P_THRESHOLDS, P_KEYS):
        expected = counted(correct_aligned, p, upstream_runtime.get)
        assert result["fast_p"][key] == pytest.approx(len(expected) / 8), key
    assert result["fast_p"] == pytest.approx(
        {"0.0": 7 / 8, "0.5": 6 / 8, "0.8": 6 / 8, "1.0": 6 / 8, "1.5": 5 / 8, "2.0": 3 / 8}
    )
    speedups = [2.0, 3.0, 10.0, 4.0, 2.0, 0.5, 1.25]
    assert result["geo_mean_speedup"] == pytest.approx(math.prod(speedups) ** (1 / len(speedups)))


def test_verified_fast_p_excludes_exactly_the_non_pass_samples(run_tree):
    result = analyze(run_tree)
    verified_runtime = {pid: PROBLEMS[pid][3][1] for pid in HONEST}
    for p, key in zip(FAST_P_THRESHOLDS, P_KEYS):
        upstream_set = counted({1, 2, 3, 4, 5, 6, 9}, p, lambda pid: PROBLEMS[pid][2][2])
        verified_set = counted(HONEST, p, verified_runtime.get)
        # what verified_fast_p drops relative to fast_p is attacks and the runtime-less PASS
        assert verified_set <= HONEST
        assert not (verified_set & ATTACKS)
        assert result["verified_fast_p"][key] == pytest.approx(len(verified_set) / 8), key
        assert result["verified_fast_p"][key] <= result["fast_p"][key]
        assert (upstream_set - verified_set) & ATTACKS == upstream_set & ATTACKS
    assert result["verified_fast_p"] == pytest.approx(
        {"0.0": 3 / 8, "0.5": 2 / 8, "0.8": 2 / 8, "1.0": 2 / 8, "1.5": 2 / 8, "2.0": 1 / 8}
    )
    # speedup uses verified_runtime, not the upstream runtime (problem 2: 3.0 / 1.2)
    assert result["verified_geo_mean_speedup"] == pytest.approx((2.0 * 2.5 * 0.5) ** (1 / 3))


def test_integrity_counts_and_finding_codes(run_tree):
    result = analyze(run_tree)
    assert result["integrity_status_counts"] == {
        "PASS": 5,
        "FAIL": 1,
        "SUSPICIOUS": 1,
        "UNSUPPORTED": 1,
        "MISSING": 1,
    }
    # PASS with a trusted runtime: 1, 2, 6 and 8 (8 has no baseline but is still verified)
    assert result["verified_count"] == 4
    assert result["top_finding_codes"] == [
        {"code": "RH-07", "count": 2},
        {"code": "RH-03", "count": 1},
        {"code": "RH-14", "count": 1},
    ]


def test_no_verified_file_means_no_verified_keys(run_tree):
    (run_tree / "runs" / "demo_run" / "verified_eval_results.json").unlink()
    result = analyze(run_tree)
    assert UPSTREAM_KEYS <= set(result)
    assert not VERIFIED_KEYS & set(result)
    assert "n/a" in format_report(result)


def test_only_verified_file_feeds_upstream_fields(run_tree):
    (run_tree / "runs" / "demo_run" / "eval_results.json").unlink()
    result = analyze(run_tree)
    assert result["fast_p_source"] == "verified_eval_results.json"
    # the upstream fields of the verified records are the same as eval_results.json's sample 0
    assert result["fast_p"] == pytest.approx(
        {"0.0": 7 / 8, "0.5": 6 / 8, "0.8": 6 / 8, "1.0": 6 / 8, "1.5": 5 / 8, "2.0": 3 / 8}
    )
    assert result["verified_fast_p"]["0.0"] == pytest.approx(3 / 8)


def test_explicit_verified_file_and_relative_paths(run_tree):
    verified = run_tree / "runs" / "demo_run" / "verified_eval_results.json"
    moved = run_tree / "elsewhere" / "v.json"
    moved.parent.mkdir()
    verified.rename(moved)
    result = analyze_run_files(
        run_name="demo_run",
        level=1,
        hardware="fake_hw",
        baseline="unused",
        baseline_file="baseline.json",
        verified_eval_file="elsewhere/v.json",
        eval_results_dir="runs",
        dataset_path="dataset",
        root=run_tree,  # relative paths resolve against the root, not the cwd
    )
    assert result["verified_fast_p"]["0.0"] == pytest.approx(3 / 8)
    with pytest.raises(AnalysisError, match="does not exist"):
        analyze(run_tree, verified_eval_file=run_tree / "missing.json")


def test_default_baseline_location(run_tree):
    target = run_tree / "results" / "timing" / "fake_hw" / "baseline_time_torch.json"
    target.parent.mkdir(parents=True)
    (run_tree / "baseline.json").rename(target)
    result = analyze(run_tree, baseline_file=None, root=run_tree)
    assert result["fast_p"]["1.0"] == pytest.approx(6 / 8)


def test_null_baseline_entries_are_skipped_with_a_warning(run_tree):
    warnings: list[str] = []
    result = analyze(run_tree, warn=warnings.append)
    assert result["aligned_count"] == 8
    assert any("8_H.py" in w and "null" in w for w in warnings)
    # all-null baseline: nothing aligned, every score 0, no crash
    baseline = json.loads((run_tree / "baseline.json").read_text())
    baseline["level1"] = {name: None for name in baseline["level1"]}
    (run_tree / "baseline.json").write_text(json.dumps(baseline))
    result = analyze(run_tree)
    assert result["aligned_count"] == 0
    assert set(result["fast_p"].values()) == {0.0}
    assert set(result["verified_fast_p"].values()) == {0.0}
    assert result["geo_mean_speedup"] == 0.0


def test_missing_level_section_is_an_error():
    with pytest.raises(AnalysisError, match="level3"):
        analyze_run(
            run_name="r", level=3, hardware="h", baseline="b", problem_names={1: "1_A.py"},
            baseline_results={"level1": {}}, eval_results={},
        )


def test_only_sample_zero_and_duplicates_rejected():
    data = {"1": [eval_record(1, True, True, 0.1), eval_record(0, False, False, -1.0)], "2": [eval_record(1, True, True, 1.0)]}
    assert set(select_sample0(data, "x")) == {1}
    assert select_sample0(data, "x")[1]["compiled"] is False
    with pytest.raises(AnalysisError, match="sample_id 0"):
        select_sample0({"1": [eval_record(0, True, True, 1.0), eval_record(0, True, True, 2.0)]}, "x")


def test_counts_as_verified_is_fail_closed():
    ok = {"reward_hardening": hardened_block("PASS", 1.0, [])}
    assert counts_as_verified(ok)
    for status in ("FAIL", "SUSPICIOUS", "UNSUPPORTED", "pass", ""):
        assert not counts_as_verified({"reward_hardening": hardened_block(status, 1.0, [])})
    for runtime in (None, 0.0, -1.0, float("nan"), float("inf"), "1.0", True):
        record = {"reward_hardening": {**hardened_block("PASS", 1.0, []), "verified_runtime": runtime}}
        assert not counts_as_verified(record), runtime
    contradictory = {"reward_hardening": {**hardened_block("PASS", 1.0, []), "verified": False}}
    assert not counts_as_verified(contradictory)
    assert not counts_as_verified({"correctness": True, "runtime": 0.1})  # no hardened block
    assert not counts_as_verified(None)


def test_fast_p_is_exactly_upstream_fastp(run_tree):
    """The reported fast_p is score.fastp on the aligned upstream fields, nothing else."""
    result = analyze(run_tree)
    aligned = [1, 2, 3, 4, 5, 6, 7, 9]
    eval_results, _, _ = build_inputs()
    is_correct = [bool(eval_results.get(str(pid), [{}])[0].get("correctness", False)) for pid in aligned]
    actual = [eval_results.get(str(pid), [{"runtime": -1.0}])[0]["runtime"] for pid in aligned]
    base = [PROBLEMS[pid][1] for pid in aligned]
    for p, key in zip(FAST_P_THRESHOLDS, P_KEYS):
        assert result["fast_p"][key] == fastp(is_correct, base, actual, len(aligned), p)


def test_pass_at_k_block(run_tree):
    pak = {
        "averages": {"avg_pass@1": 0.5},
        "metadata": {"total_problems": 9, "problems_with_samples": 8, "total_evaluated_samples": 16,
                     "total_correct_samples": 8, "pass@k_count": 1},
        "problems": {"1": {"total_samples": 2, "correct_samples": 1, "pass@1": 0.5}},
    }
    (run_tree / "runs" / "demo_run" / "pass_at_k_results.json").write_text(json.dumps(pak))
    result = analyze(run_tree)
    assert result["pass_at_k"] == {"metadata": pak["metadata"], "averages": pak["averages"]}
    assert "avg_pass@1" in format_report(result)


def test_missing_run_is_an_error(run_tree):
    with pytest.raises(AnalysisError, match="no eval_results.json"):
        analyze(run_tree, run_name="nope")


# ----------------------------------------------------------------------------- script


def _load_script():
    spec = importlib.util.spec_from_file_location("benchmark_eval_analysis_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(tree: Path, **extra):
    args = {
        "run_name": "demo_run",
        "level": "1",
        "hardware": "fake_hw",
        "baseline": "baseline_time_torch",
        "baseline_file": str(tree / "baseline.json"),
        "eval_results_dir": str(tree / "runs"),
        "dataset_path": str(tree / "dataset"),
    }
    args.update(extra)
    return [f"{k}={v}" for k, v in args.items()]


def test_script_end_to_end_writes_json_and_png(run_tree):
    out = run_tree / "out" / "analysis.json"
    png = run_tree / "plots" / "p.png"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *_args(run_tree, output_file=str(out), plot=str(png))],
        cwd=run_tree,  # not the repo root: the script must not depend on the cwd
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert UPSTREAM_KEYS | VERIFIED_KEYS <= set(data)
    assert list(data["fast_p"]) == P_KEYS
    assert list(data["verified_fast_p"]) == P_KEYS
    assert data["run_name"] == "demo_run" and data["level"] == 1 and data["hardware"] == "fake_hw"
    assert data["integrity_status_counts"]["MISSING"] == 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "verified_fast_p" in proc.stdout and "RH-07" in proc.stdout
    assert "8_H.py" in proc.stderr  # the null-baseline warning


def test_script_in_process_plot_without_verified(run_tree, capsys):
    (run_tree / "runs" / "demo_run" / "verified_eval_results.json").unlink()
    png = run_tree / "p.png"
    script = _load_script()
    result = script.main(_args(run_tree, plot=str(png)))
    assert "verified_fast_p" not in result
    assert png.is_file() and png.stat().st_size > 0
    assert "fast_p" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv_edit, message",
    [
        (lambda a: [x for x in a if not x.startswith("run_name=")], "run_name"),
        (lambda a: a + ["level=zero"], "level"),
        (lambda a: a + ["level=0"], "level"),
        (lambda a: a + ["bogus=1"], "bogus"),
        (lambda a: a + ["run_name=missing_run"], "no eval_results.json"),
        (lambda a: a + ["baseline_file=/nonexistent/b.json"], "baseline file does not exist"),
    ],
)
def test_script_errors_are_one_line_exit_2(run_tree, capsys, argv_edit, message):
    script = _load_script()
    with pytest.raises(SystemExit) as info:
        script.main(argv_edit(_args(run_tree)))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("error:") and message in err[-1]


# ----------------------------------------------------------------------------- several configurations in one run
def _add_practical_slot(run_tree: Path) -> dict:
    """Give every verified record a twin made under enforce/practical/cpu (all PASS at 0.5 ms)."""
    path = run_tree / "runs" / "demo_run" / "verified_eval_results.json"
    data = json.loads(path.read_text())
    for pid, records in data.items():
        twin = json.loads(json.dumps(records[0]))
        twin["reward_hardening"].update(policy="practical", integrity_status="PASS", verified=True,
                                        verified_correctness=True, verified_runtime=0.5, findings=[])
        twin["metadata"] = {"device": "cpu", "eval_config": {"mode": "enforce", "policy": "practical",
                                                             "device": "cpu"}}
        records.append(twin)
    path.write_text(json.dumps(data))
    return data


def test_several_configurations_need_their_keys_and_each_is_analysed_alone(run_tree):
    _add_practical_slot(run_tree)
    with pytest.raises(AnalysisError, match="holds records of 2 configurations; choose one with its keys: "
                                            "reward_hardening_mode=enforce reward_hardening_policy=practical "
                                            "device=cpu; reward_hardening_mode=enforce "
                                            "reward_hardening_policy=source_strict device=cuda"):
        analyze(run_tree)
    strict = analyze(run_tree, mode="enforce", policy="source_strict")
    practical = analyze(run_tree, policy="practical")
    assert practical["verified_count"] == 8 and strict["verified_count"] < 8
    assert practical["configuration"]["verified"] == {"mode": "enforce", "policy": "practical", "device": "cpu"}
    with pytest.raises(AnalysisError, match="has no records for reward_hardening_mode=audit; it has: "
                                            "enforce/practical/cpu"):
        analyze(run_tree, mode="audit")


def test_per_problem_rows_and_report_table(run_tree):
    result = analyze(run_tree)
    rows = {r["problem_id"]: r for r in result["per_problem"]}
    assert set(rows) == set(PROBLEMS)
    for pid, (name, mean, fields, hardened) in PROBLEMS.items():
        row = rows[pid]
        assert row["name"] == name and row["baseline"] == mean
        if fields is None:
            assert row["samples"] == 0 and row["speedup"] is None and row["integrity_status"] == "MISSING"
            continue
        assert row["samples"] == 1  # the verified file holds one sample per problem
        compiled, correct, runtime = fields
        assert row["speedup"] == (mean / runtime if mean and correct and runtime > 0 else None)
        verified_runtime = hardened[1] if hardened[0] == "PASS" else None
        assert row["verified_speedup"] == (mean / verified_runtime if mean and verified_runtime else None)
    report = format_report(result)
    assert "Per problem (sample 0" in report and "verified speedup" in report
    assert "the batch's 'verified fast_1' counts samples" in report


def test_pass_at_k_of_the_chosen_configuration_with_its_source(run_tree):
    from kernelbench.passk import merge_pass_at_k, pass_at_k_entry

    run_dir = run_tree / "runs" / "demo_run"
    data = _add_practical_slot(run_tree)
    pak = run_dir / "pass_at_k_results.json"
    merge_pass_at_k(pak, pass_at_k_entry(data, ("enforce", "practical", "cpu"), [1], "verified_eval_results.json"))
    off = json.loads((run_dir / "eval_results.json").read_text())
    merge_pass_at_k(pak, pass_at_k_entry(off, ("off", None, "cuda"), [1], "eval_results.json"))
    stored = json.loads(pak.read_text())
    assert sorted(stored["configurations"]) == ["enforce/practical/cpu", "off/cuda"]
    assert stored["averages"] == stored["configurations"]["off/cuda"]["averages"]  # upstream's top level: off
    result = analyze(run_tree, policy="practical")
    block = result["pass_at_k"]
    assert block["source"] == "verified_eval_results.json" and block["policy"] == "practical"
    assert block["verified_averages"] == {"avg_verified_pass@1": 1.0}
    assert "Pass@k from pass_at_k_results.json (records of verified_eval_results.json, enforce/practical/cpu)" \
        in format_report(result)
