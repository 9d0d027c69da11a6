"""A fresh-clone walk-through of the README's CPU batch commands, in the order shown.

The README shows an audit batch and then an enforce batch on the same run name; the
second must really evaluate under enforce (the stored audit records were made under
another configuration), not report "0 samples to evaluate" and keep them.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOL = REPO / "src" / "kernelbench" / "demo_tasks" / "solutions" / "level1"


def _cpu_batch_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        cmd = block.replace("\\\n", " ")
        if "scripts/eval_from_generations.py" in cmd and "device=cpu" in cmd:
            out.append(cmd.split("scripts/eval_from_generations.py", 1)[1].split())
    return out


@pytest.mark.slow
def test_readme_audit_then_enforce_on_one_run_name(tmp_path):
    commands = _cpu_batch_commands()
    modes = [next(a.split("=", 1)[1] for a in c if a.startswith("reward_hardening_mode=")) for c in commands]
    assert modes[:2] == ["audit", "enforce"], modes
    run = tmp_path / "my_run"
    run.mkdir()
    for pid, name in ((1, "1_Elementwise_add.py"), (2, "2_GELU_activation.py")):
        (run / f"level_1_problem_{pid}_sample_0_kernel.py").write_text((SOL / name).read_text())
    quick = ["problem_ids=[1,2]", "num_correct_trials=2", "num_perf_trials=4", "timeout=60",
             f"runs_dir={tmp_path}", f"kernel_eval_build_dir={tmp_path / 'cache'}"]
    outputs = []
    for args in commands[:2]:
        proc = subprocess.run([sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), *args, *quick],
                              cwd=REPO, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        outputs.append(proc.stdout)
    assert "2 samples to evaluate" in outputs[1], outputs[1]  # not "0 samples": the audit records are stale
    data = json.loads((run / "verified_eval_results.json").read_text())
    for pid in ("1", "2"):
        (rec,) = data[pid]
        assert rec["reward_hardening"]["mode"] == "enforce"
        assert rec["metadata"]["eval_config"]["mode"] == "enforce"
