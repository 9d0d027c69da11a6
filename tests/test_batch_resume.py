"""Resume keyed by configuration, one-line errors, the post-batch summary and Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench import batch, runs

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"
SYNTAX = "import torch\nclass ModelNew(torch.nn.Module:\n"
SLEEPY = "import time, torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        time.sleep(60)\n"


def _solution(pid: int) -> str:
    (path,) = (DEMO / "solutions" / "level1").glob(f"{pid}_*.py")
    return path.read_text()


def _run_dir(tmp_path: Path, files: dict) -> Path:
    run_dir = tmp_path / "runs" / "t"
    run_dir.mkdir(parents=True)
    for (pid, sid), code in files.items():
        (run_dir / runs.kernel_file_name(1, pid, sid)).write_text(code)
    return run_dir


def _cmd(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), "run_name=t", "dataset_src=local",
            "dataset_path=demo", "level=1", "subset=(1,2)", "num_correct_trials=1", "num_perf_trials=2",
            "timeout=30", f"runs_dir={tmp_path / 'runs'}", f"kernel_eval_build_dir={tmp_path / 'build'}", *extra]


def _script(tmp_path: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(tmp_path, *extra), cwd=REPO, capture_output=True, text=True, timeout=400,
                          env=dict(os.environ, **(env or {})))


def _records(path: Path) -> dict:
    return {(k, r["sample_id"]): r for k, v in json.loads(path.read_text()).items() for r in v}


# --------------------------------------------------------------------------- planning (fast)
class _Problem(SimpleNamespace):
    pass


class _Dataset:
    def __init__(self, ids):
        self.problems = {i: _Problem(path=None, code=f"# reference {i}\n", name=f"p{i}") for i in ids}

    def get_problem_ids(self):
        return sorted(self.problems)

    def get_problem_by_id(self, pid):
        return self.problems[pid]


def _cfg(**over):
    base = dict(reward_hardening_mode="audit", reward_hardening_policy="source_strict", device="cpu",
                precision="fp32", backend="cuda", num_correct_trials=5, num_perf_trials=100,
                timing_method="cuda_event", measure_performance=True, allow_tf32=False)
    base.update(over)
    return SimpleNamespace(**base)


def _stamped(items, config_of):
    results = {}
    for it in items:
        rec = {"sample_id": it.sample_id, "compiled": True, "metadata": {"eval_config": config_of(it)}}
        results.setdefault(str(it.problem_id), []).append(rec)
    return results


def test_plan_keeps_records_of_another_configuration(tmp_path):
    ds = _Dataset([1, 2])
    for pid in (1, 2):
        for sid in (0, 1):
            (tmp_path / runs.kernel_file_name(1, pid, sid)).write_text(f"# kernel {pid} {sid}\n")
    audit = batch.eval_config(_cfg())
    first = batch.plan_batch(ds, 1, tmp_path, 2, {}, audit)
    assert len(first.pending) == 4 and all(it.config["mode"] == "audit" for it in first.pending)
    assert [(it.problem_id, it.sample_id) for it in first.pending] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    results = _stamped(first.pending, lambda it: it.config)

    again = batch.plan_batch(ds, 1, tmp_path, 2, results, audit)
    assert again.pending == [] and again.done == 4

    # another mode or device: evaluated in a slot of its own, the stored records are kept
    enforce = batch.eval_config(_cfg(reward_hardening_mode="enforce"))
    plan = batch.plan_batch(ds, 1, tmp_path, 2, results, enforce)
    assert len(plan.pending) == 4 and plan.stale_lines() == []
    assert plan.kept_lines() == ["[eval] kept the records of other configurations in the same file: "
                                 "audit/source_strict/cpu (4)"]
    on_gpu = _stamped(first.pending, lambda it: dict(it.config, device="cuda"))
    gpu_then_cpu = batch.plan_batch(ds, 1, tmp_path, 2, on_gpu, audit)
    assert len(gpu_then_cpu.pending) == 4 and gpu_then_cpu.other_slots == {"audit/source_strict/cuda": 4}

    # same slot, other settings: kept and said, replaced only with overwrite=true
    fewer_trials = batch.eval_config(_cfg(num_perf_trials=10))
    kept = batch.plan_batch(ds, 1, tmp_path, 2, results, fewer_trials)
    assert kept.pending == [] and kept.done == 4
    assert kept.kept_lines()[0].startswith("[eval] kept 4 records made with other settings "
                                           "(num_perf_trials: 100 -> 10)")
    forced = batch.plan_batch(ds, 1, tmp_path, 2, results, fewer_trials, overwrite=True)
    assert len(forced.pending) == 4 and "num_perf_trials: 100 -> 10" in forced.stale_lines()[0]

    # an edited kernel: its record describes another candidate, so it is evaluated again
    (tmp_path / runs.kernel_file_name(1, 2, 1)).write_text("# edited kernel\n")
    changed = batch.plan_batch(ds, 1, tmp_path, 2, results, audit)
    assert [(it.problem_id, it.sample_id) for it in changed.pending] == [(2, 1)]
    assert "candidate source changed" in changed.stale_lines()[0]


def test_plan_keeps_records_without_configuration_unless_overwrite(tmp_path):
    ds = _Dataset([1])
    (tmp_path / runs.kernel_file_name(1, 1, 0)).write_text("# k\n")
    old = {"1": [{"sample_id": 0, "compiled": True, "correctness": True, "metadata": {"device": "cpu"}}]}
    off = batch.eval_config(_cfg(reward_hardening_mode="off"))
    plan = batch.plan_batch(ds, 1, tmp_path, 1, old, off)
    assert plan.pending == [] and "older version" in plan.kept_lines()[0]
    plan = batch.plan_batch(ds, 1, tmp_path, 1, old, off, overwrite=True)
    assert len(plan.pending) == 1 and "older version" in plan.stale_lines()[0]


def test_off_mode_configuration_ignores_policy_and_keeps_timing_method():
    off = batch.eval_config(_cfg(reward_hardening_mode="off"))
    assert off["policy"] is None and off["timing_method"] == "cuda_event" and off["mode"] == "off"
    assert batch.eval_config(_cfg(reward_hardening_mode="off", reward_hardening_policy="practical")) == off
    assert batch.eval_config(_cfg(device="cuda:1"))["device"] == "cuda"


# --------------------------------------------------------------------------- the scripts (subprocess)
def test_audit_then_enforce_on_one_run_name_evaluates_under_enforce_and_keeps_audit(tmp_path):
    run_dir = _run_dir(tmp_path, {(1, 0): SYNTAX, (2, 0): SYNTAX})
    first = _script(tmp_path, "device=cpu", "reward_hardening_mode=audit")
    assert first.returncode == 0, first.stdout + first.stderr
    second = _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "kept the records of other configurations in the same file: audit/source_strict/cpu (2)" in second.stdout
    assert "2 samples to evaluate" in second.stdout
    both = json.loads((run_dir / "verified_eval_results.json").read_text())
    assert [[r["reward_hardening"]["mode"] for r in both[p]] for p in ("1", "2")] == [["audit", "enforce"]] * 2
    recs = {(k, r["sample_id"]): r for k, v in both.items() for r in v if r["reward_hardening"]["mode"] == "enforce"}
    assert set(recs) == {("1", 0), ("2", 0)}
    for rec in recs.values():
        assert rec["reward_hardening"]["mode"] == "enforce"
        assert rec["metadata"]["eval_config"]["mode"] == "enforce"
        assert len(rec["metadata"]["eval_config"]["candidate_sha256"]) == 64
    # the summary: counts per status, the frequent codes with their one-line summaries, the file
    assert "[eval] summary: 2 of 2 selected samples have a record" in second.stdout
    assert "integrity: FAIL 2" in second.stdout
    from kernelbench.reward_hardening.codes import CODES

    code = next(f["code"] for f in recs[("1", 0)]["reward_hardening"]["findings"])
    assert f"{code} x2: {CODES[code].summary}" in second.stdout
    assert f"results: {run_dir / 'verified_eval_results.json'}" in second.stdout
    third = _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce")
    assert "0 samples to evaluate (2 already done" in third.stdout


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_unsupported_then_cpu_reevaluates_and_says_why(tmp_path):
    run_dir = _run_dir(tmp_path, {(1, 0): SYNTAX, (2, 0): _solution(2)})
    gpu = _script(tmp_path, "device=cuda", "reward_hardening_mode=enforce")
    assert gpu.returncode == 3, gpu.stdout + gpu.stderr
    last = gpu.stderr.strip().splitlines()[-1]
    assert last.startswith("error: every sample is UNSUPPORTED") and "device=cpu" in last
    assert "Traceback" not in gpu.stderr
    recs = _records(run_dir / "verified_eval_results.json")
    assert {r["reward_hardening"]["integrity_status"] for r in recs.values()} == {"UNSUPPORTED"}
    cpu = _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce")
    assert cpu.returncode == 0, cpu.stdout + cpu.stderr
    assert "other configurations in the same file: enforce/source_strict/cuda (2)" in cpu.stdout
    data = json.loads((run_dir / "verified_eval_results.json").read_text())
    cpu_recs = [r for v in data.values() for r in v if runs.config_slot(r)[2] == "cpu"]
    assert len(cpu_recs) == 2
    assert all(r["reward_hardening"]["integrity_status"] != "UNSUPPORTED" for r in cpu_recs)
    again = _script(tmp_path, "device=cuda", "reward_hardening_mode=enforce")  # UNSUPPORTED is never "done"
    assert again.returncode == 3 and "re-evaluating 2 samples: stored record differs (stored record is " \
        "UNSUPPORTED)" in again.stdout


def test_changed_kernel_file_is_reevaluated(tmp_path):
    run_dir = _run_dir(tmp_path, {(1, 0): SYNTAX, (2, 0): SYNTAX})
    assert _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce").returncode == 0
    before = _records(run_dir / "verified_eval_results.json")
    (run_dir / runs.kernel_file_name(1, 2, 0)).write_text(_solution(2))
    out = _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "re-evaluating 1 sample: stored record differs (candidate source changed)" in out.stdout
    after = _records(run_dir / "verified_eval_results.json")
    assert after[("1", 0)] == before[("1", 0)]  # unchanged kernel: the record is kept as it was
    assert after[("2", 0)] != before[("2", 0)]
    assert after[("2", 0)]["metadata"]["eval_config"]["candidate_sha256"] == batch.sha256_text(_solution(2))


@pytest.mark.parametrize("args,needle", [
    (("subset=abc",), "subset must be (start,end)"),
    (("subset=(5,2)",), "subset start 5 is greater than its end 2"),
    (("subset=(40,50)",), "selects no problem of level 1"),
    (("level=9", "subset=(None,None)"), "level 9"),
    (("problem_ids=[99]",), "problem_ids [99]"),
])
def test_bad_selection_is_a_one_line_error(tmp_path, args, needle):
    _run_dir(tmp_path, {(1, 0): SYNTAX})
    out = _script(tmp_path, "device=cpu", *args)
    lines = [ln for ln in out.stderr.strip().splitlines() if ln]
    assert out.returncode == 2 and len(lines) == 1 and needle in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_missing_kernel_files_and_run_dir_are_one_line_errors(tmp_path):
    (tmp_path / "runs" / "t").mkdir(parents=True)
    out = _script(tmp_path, "device=cpu")
    assert out.returncode == 2 and "no kernel files for level 1" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = _script(tmp_path, "device=cpu", "run_name=nope")
    assert out.returncode == 2 and "does not exist" in out.stderr and "Traceback" not in out.stderr


def test_off_mode_summary_and_partial_kernels(tmp_path):
    _run_dir(tmp_path, {(1, 0): SYNTAX})
    out = _script(tmp_path, "device=cpu", "num_samples_per_problem=1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 of 2 selected samples have no kernel file (first: level_1_problem_2_sample_0_kernel.py)" in out.stdout
    assert "compiled 0, correct 0, failed 1" in out.stdout


def test_ctrl_c_exits_with_one_line_and_keeps_saved_records(tmp_path):
    run_dir = _run_dir(tmp_path, {(1, 0): SYNTAX, (2, 0): SLEEPY})
    proc = subprocess.Popen(_cmd(tmp_path, "device=cpu", "timeout=120"), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = run_dir / "eval_results.json"
    deadline = time.time() + 300
    while time.time() < deadline and not results.exists():
        time.sleep(0.05)
    time.sleep(1.0)  # the sleepy sample is running in its worker now
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "interrupted: 1 of 2 saved; rerun to resume"
    assert set(_records(results)) == {("1", 0)}
    assert not list(run_dir.glob(".*.tmp"))


# --------------------------------------------------------------------------- records kept per configuration
def test_three_configurations_on_one_run_name_keep_every_record_and_resume(tmp_path):
    """enforce/practical, enforce/source_strict and off on one run name: all three sets stay."""
    run_dir = _run_dir(tmp_path, {(1, 0): _solution(1), (2, 0): SYNTAX})
    practical = ("device=cpu", "reward_hardening_mode=enforce", "reward_hardening_policy=practical")
    first = _script(tmp_path, *practical)
    assert first.returncode == 0, first.stdout + first.stderr
    after_first = _records(run_dir / "verified_eval_results.json")
    strict = _script(tmp_path, "device=cpu", "reward_hardening_mode=enforce", "reward_hardening_policy=source_strict")
    assert strict.returncode == 0, strict.stdout + strict.stderr
    assert "kept the records of other configurations in the same file: enforce/practical/cpu (2)" in strict.stdout
    off = _script(tmp_path, "device=cpu", "reward_hardening_mode=off")
    assert off.returncode == 0, off.stdout + off.stderr

    data = json.loads((run_dir / "verified_eval_results.json").read_text())
    by_slot = {}
    for pid, records in data.items():
        for r in records:
            by_slot.setdefault(runs.config_slot(r), {})[(pid, r["sample_id"])] = r
    assert set(by_slot) == {("enforce", "practical", "cpu"), ("enforce", "source_strict", "cpu")}
    assert by_slot[("enforce", "practical", "cpu")] == after_first  # untouched by the later runs
    assert by_slot[("enforce", "practical", "cpu")][("1", 0)]["reward_hardening"]["integrity_status"] == "PASS"
    off_records = _records(run_dir / "eval_results.json")  # upstream name and layout
    assert set(off_records) == {("1", 0), ("2", 0)} and "reward_hardening" not in off_records[("1", 0)]

    again = _script(tmp_path, *practical)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 samples to evaluate (2 already done" in again.stdout and "re-evaluating" not in again.stdout
    final = json.loads((run_dir / "verified_eval_results.json").read_text())
    assert final == data


def test_a_cuda_run_on_a_cpu_host_does_not_replace_cpu_records(tmp_path):
    """The issue's case: a rerun without device=cpu stored UNSUPPORTED over a PASS."""
    ds = _Dataset([1])
    (tmp_path / runs.kernel_file_name(1, 1, 0)).write_text("# k\n")
    cpu = batch.eval_config(_cfg(reward_hardening_policy="practical"))
    first = batch.plan_batch(ds, 1, tmp_path, 1, {}, cpu)
    results = _stamped(first.pending, lambda it: it.config)
    cuda = batch.eval_config(_cfg(reward_hardening_policy="source_strict", device="cuda"))
    plan = batch.plan_batch(ds, 1, tmp_path, 1, results, cuda)
    assert len(plan.pending) == 1 and plan.stale_lines() == []
    assert plan.other_slots == {"audit/practical/cpu": 1}
    path = tmp_path / "verified_eval_results.json"
    runs.atomic_write_json(path, results)
    (item,) = plan.pending
    unsupported = {"sample_id": 0, "reward_hardening": {"integrity_status": "UNSUPPORTED"},
                   "metadata": {"eval_config": item.config}}
    assert runs.merge_record(path, 1, unsupported, by_slot=True)
    stored = runs.load_results(path)["1"]
    assert [runs.config_slot(r) for r in stored] == [("audit", "practical", "cpu"), ("audit", "source_strict", "cuda")]
    # an UNSUPPORTED record holds no verdict: the next run in its slot evaluates the sample again
    again = batch.plan_batch(ds, 1, tmp_path, 1, runs.load_results(path), cuda)
    assert len(again.pending) == 1 and "stored record is UNSUPPORTED" in again.stale_lines()[0]


def test_pass_at_k_is_kept_per_configuration_with_its_source(tmp_path):
    run_dir = _run_dir(tmp_path, {(1, 0): SYNTAX, (1, 1): _solution(1), (2, 0): SYNTAX, (2, 1): SYNTAX})
    common = ("device=cpu", "num_samples_per_problem=2", "pass_at_k_values=[1,2]")
    off = _script(tmp_path, *common, "reward_hardening_mode=off")
    assert off.returncode == 0, off.stdout + off.stderr
    enforce = _script(tmp_path, *common, "reward_hardening_mode=enforce", "reward_hardening_policy=practical")
    assert enforce.returncode == 0, enforce.stdout + enforce.stderr
    assert "pass@k: " in enforce.stdout and "(configuration enforce/practical/cpu)" in enforce.stdout
    data = json.loads((run_dir / "pass_at_k_results.json").read_text())
    assert sorted(data["configurations"]) == ["enforce/practical/cpu", "off/cpu"]  # the off entry survived
    off_entry, hard = data["configurations"]["off/cpu"], data["configurations"]["enforce/practical/cpu"]
    assert off_entry["source"] == "eval_results.json" and hard["source"] == "verified_eval_results.json"
    assert data["averages"] == off_entry["averages"]  # upstream's top level is the off-mode entry
    assert off_entry["problems"]["1"]["correct_samples"] == 1 and off_entry["averages"]["avg_pass@2"] == 0.5
    assert "verified_averages" not in off_entry
    assert hard["problems"]["1"]["verified_samples"] == 1  # the honest solution PASSes under practical
    assert hard["verified_averages"] == {"avg_verified_pass@1": 0.25, "avg_verified_pass@2": 0.5}


def test_summary_hint_names_the_most_severe_code():
    def rec(sid, *findings):
        return {"sample_id": sid, "reward_hardening": {"integrity_status": "FAIL", "findings": [
            {"code": c, "severity": sev} for c, sev in findings]}}

    results = {"1": [rec(0, ("RH-13", "warning"), ("RH-31", "error"))], "2": [rec(0, ("RH-13", "warning"))],
               "3": [rec(0, ("RH-42", "error"), ("RH-13", "warning"))]}
    text = "\n".join(batch.summary_lines(results, [(1, 0), (2, 0), (3, 0)], True, Path("r.json")))
    assert "RH-13 x3" in text  # the most frequent code is listed first ...
    assert "details: uv run kernelguard explain RH-31" in text  # ... but the hint names an error (equal errors: the lower code)


def test_summary_explains_its_verified_fast_1():
    record = {"sample_id": 0, "reward_hardening": {"integrity_status": "PASS", "verified": True,
                                                   "verified_runtime": 1.0, "verified_reference_runtime": 2.0,
                                                   "findings": []}}
    lines = batch.summary_lines({"1": [record]}, [(1, 0)], True, Path("r.json"))
    text = "\n".join(lines)
    assert "verified fast_1: 1.000 (1 of 1 samples verified and faster than the reference timed beside" in text
    assert "the analysis's verified_fast_p counts problems, sample 0 only, against the baseline file" in text
