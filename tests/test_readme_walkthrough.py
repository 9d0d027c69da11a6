"""A fresh-clone walk-through of the README's CPU batch commands, in the order shown.

The README fills ``runs/my_run`` from the demo solutions, runs an audit batch under
``source_strict`` and an enforce batch under ``practical`` on the same run name, then
analyses the enforce records.  Each command is taken from the README as written; the
test only adds keys that move the run into a temporary directory and shorten it (two
problems, fewer trials).  The enforce batch must really evaluate (not report "0
samples to evaluate"), and the audit records must still be there afterwards.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _readme_commands(script: str) -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for cmd in block.replace("\\\n", " ").splitlines():
            if f"scripts/{script}" in cmd:
                out.append(cmd.split(f"scripts/{script}", 1)[1].split())
    return out


def _run(script: str, args: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc


def _key(args: list[str], key: str) -> str | None:
    return next((a.split("=", 1)[1] for a in args if a.startswith(f"{key}=")), None)


@pytest.mark.slow
def test_readme_cpu_walkthrough_from_demo_solutions_to_analysis(tmp_path):
    (make,) = _readme_commands("make_demo_run.py")
    batches = [c for c in _readme_commands("eval_from_generations.py") if "device=cpu" in c]
    analyses = [c for c in _readme_commands("benchmark_eval_analysis.py") if "device=cpu" in c]
    assert [(_key(c, "reward_hardening_mode"), _key(c, "reward_hardening_policy")) for c in batches[:2]] == \
        [("audit", "source_strict"), ("enforce", "practical")]
    assert analyses and _key(analyses[0], "dataset_path") == "demo"

    made = _run("make_demo_run.py", [*make, f"runs_dir={tmp_path}"])
    run = tmp_path / _key(make, "run_name")
    assert "11 kernel files written" in made.stdout and (run / "level_1_problem_1_sample_0_kernel.py").is_file()
    (run / "level_1_problem_1_sample_1_kernel.py").write_text((run / "level_1_problem_1_sample_0_kernel.py")
                                                             .read_text())

    quick = ["problem_ids=[1,2]", "num_correct_trials=2", "num_perf_trials=4", "timeout=60",
             f"runs_dir={tmp_path}", f"kernel_eval_build_dir={tmp_path / 'cache'}"]
    audit = _run("eval_from_generations.py", [*batches[0], *quick])
    assert "1 kernel files of samples beyond num_samples_per_problem=1 are not evaluated " \
           "(first: level_1_problem_1_sample_1_kernel.py); pass num_samples_per_problem=2" in audit.stdout
    # on failure: the summary block and every error finding of the records
    summary = audit.stdout[audit.stdout.find("integrity:"):] + json.dumps(
        {pid: [(f["code"], f.get("evidence")) for r in recs for f in r["reward_hardening"]["findings"]
               if f["severity"] == "error"]
         for pid, recs in json.loads((run / "verified_eval_results.json").read_text()).items()}, default=str)[:6000]
    assert "integrity: FAIL 2" in audit.stdout, summary  # plain PyTorch is not trusted under source_strict, and says so:
    assert "note: 2 of 2 samples FAIL under source_strict because they run high-level PyTorch" in audit.stdout, summary
    enforce = _run("eval_from_generations.py", [*batches[1], *quick])
    assert "2 samples to evaluate" in enforce.stdout, enforce.stdout  # not "0 samples": another configuration
    assert "kept the records of other configurations in the same file: audit/source_strict/cpu (2)" in enforce.stdout
    assert "integrity: PASS 2" in enforce.stdout, enforce.stdout[enforce.stdout.find("integrity:"):]

    data = json.loads((run / "verified_eval_results.json").read_text())
    for pid in ("1", "2"):
        audit_rec, enforce_rec = data[pid]
        assert (audit_rec["reward_hardening"]["mode"], enforce_rec["reward_hardening"]["mode"]) == ("audit", "enforce")
        assert audit_rec["reward_hardening"]["integrity_status"] == "FAIL"
        assert {"RH-13", "RH-31"} & {f["code"] for f in audit_rec["reward_hardening"]["findings"]}
        assert enforce_rec["metadata"]["eval_config"]["policy"] == "practical"

    analysis = _run("benchmark_eval_analysis.py", [*analyses[0], f"eval_results_dir={tmp_path}"])
    assert "Verified metrics from verified_eval_results.json, enforce/practical/cpu" in analysis.stdout
    assert "Verified (integrity PASS with a trusted runtime): 2 out of 11" in analysis.stdout
    assert "Per problem (sample 0" in analysis.stdout
