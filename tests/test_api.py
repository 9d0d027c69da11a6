"""The reward API (kernelbench.api): light import, configuration, reward function, a local pool."""

import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench import api

REPO = Path(__file__).resolve().parents[1]
WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"


def _record(status="PASS", verified=True, lower=1.4, point=1.6, codes=()):
    return {"reward_hardening": {
        "integrity_status": status, "verified": verified,
        "verified_runtime": 1.0 if verified else None, "verified_reference_runtime": 1.5 if verified else None,
        "speedup": {"verified": verified, "point": point, "lower_bound": lower, "upper_bound": 2.0},
        "findings": [{"code": c, "severity": "error"} for c in codes]}}


def test_import_is_light():
    code = ("import sys, kernelbench.api; "
            "print(sorted(m for m in ('torch', 'ray', 'litellm', 'datasets', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_reward_is_zero_unless_verified_and_else_the_lower_bound():
    assert api.reward(_record()) == 1.4  # the speedup's lower confidence bound
    assert api.reward(_record(), statistic="mean") == pytest.approx(1.5)
    assert api.reward(_record(lower=0.7)) == 0.7  # verified but slower: still above any failure
    assert api.reward(_record(), cap=1.2) == 1.2
    crash = _record("FAIL", verified=False, codes=("RH-15",))
    wrong = _record("FAIL", verified=False, codes=("RH-18",))
    assert api.reward(crash) == api.reward(wrong) == 0.0  # a crash never scores better than a wrong answer
    assert api.reward(_record("SUSPICIOUS")) == 0.0
    assert api.reward(None) == 0.0 and api.reward({}) == 0.0
    assert not api.evaluator_failed(crash) and not api.evaluator_failed(wrong)
    assert api.evaluator_failed(_record("FAIL", verified=False, codes=("RH-32",)))
    assert api.evaluator_failed(_record("UNSUPPORTED", verified=False, codes=("RH-14",)))
    assert not api.evaluator_failed(_record("FAIL", verified=False, codes=("RH-32", "RH-15")))


def test_configuration_keys_are_checked():
    with pytest.raises(TypeError, match="unknown configuration key"):
        api.evaluate("", "", num_trials=3)
    with pytest.raises(ValueError, match="audit or enforce"):
        api.Pool(mode="off")
    with pytest.raises(ValueError, match="executor"):
        api.Pool(executor="slurm")


@pytest.mark.slow
def test_local_pool_and_evaluate(demo_problem, demo_solution):
    ref, sol = demo_problem(1, "1_Elementwise_add.py"), demo_solution(1, "1_Elementwise_add.py")
    kw = dict(device="cpu", policy="practical", mode="audit", num_correct_trials=1, num_perf_trials=2, timeout=60)
    with api.Pool(workers=1, **kw) as pool:
        good, bad = pool.map([(ref, sol), (ref, WRONG)])
    assert good["reward_hardening"]["schema_version"] == "1.1"
    assert good["reward_hardening"]["integrity_status"] == "PASS" and api.reward(good) > 0
    assert bad["reward_hardening"]["integrity_status"] == "FAIL" and api.reward(bad) == 0.0
    one = api.evaluate(ref, WRONG, **kw)
    assert one["reward_hardening"]["integrity_status"] == "FAIL"
    assert {f["code"] for f in one["reward_hardening"]["findings"]} >= {"RH-18"}


def test_executor_ray_needs_a_hardened_mode(capsys):
    from kernelbench.commands.evaluate import entry

    with pytest.raises(SystemExit) as exc:
        entry(["run_name=x", "dataset_src=local", "level=1", "executor=ray"])
    assert exc.value.code == 2
    assert "executor=ray runs the hardened path" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        entry(["run_name=x", "dataset_src=local", "level=1", "executor=slurm"])
    assert "accepted values: local, ray" in capsys.readouterr().err
