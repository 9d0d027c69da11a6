"""The adaptive adversary: mutation engine, mutation campaign (CI subset) and the agent loop.

The full campaign is a command (``scripts/reward_hardening_adversary.py task=mutate``);
here a small fast subset runs: every transform on the static fixtures of a few rules, and
two transforms of one enforce-mode red-team fixture through the real evaluator.
"""

from __future__ import annotations

import json
import textwrap
import types

import pytest
import torch

from kernelbench.reward_hardening.adversary import agent, campaign
from kernelbench.reward_hardening.adversary.mutate import TRANSFORMS, check_compiles, combine, mutate
from kernelbench.reward_hardening.fixtures import fixture_source, problem_source

PROBLEM = problem_source("benign_softmax_solution")

HONEST = textwrap.dedent('''
    """An honest softmax with module-level helpers (so every transform has something to do)."""
    import math
    import torch
    import torch.nn as nn
    from torch.nn import functional as Fn

    SCALE = 1.0
    CPP = r"""
    #include <torch/extension.h>
    torch::Tensor passthrough(torch::Tensor x) { return x; }
    """

    def _shift(x):
        return x - x.amax(dim=1, keepdim=True)

    def _normalise(e):
        return e / e.sum(dim=1, keepdim=True)

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = math.sqrt(SCALE)

        def forward(self, x, *rest, dim=1):
            y = _shift(x) * self.k
            x = torch.exp(y)
            return _normalise(x) + 0.0 * Fn.relu(x[:1, :1]).sum()
''')


def _run(src: str, x: torch.Tensor):
    mod = types.ModuleType("m")
    exec(compile(src, "m.py", "exec"), mod.__dict__)
    return mod, mod.ModelNew()(x)


@pytest.mark.parametrize("name", sorted(TRANSFORMS) + ["stacked"])
def test_every_transform_compiles_and_keeps_behaviour(name):
    spec = campaign.STACKED if name == "stacked" else name
    mutant = mutate(HONEST, spec, PROBLEM)
    assert mutant is not None and mutant != HONEST, name
    assert check_compiles(mutant) is None
    x = torch.randn(4, 33)
    m0, y0 = _run(HONEST, x)
    m1, y1 = _run(mutant, x)
    torch.testing.assert_close(y1, y0)
    if name == "split_cxx":  # the C++ text exists only once the pieces are joined, and it is identical
        cpp_line = next(line for line in mutant.splitlines() if line.startswith("CPP ="))
        assert "#include" not in cpp_line and "join" in cpp_line
        assert m1.CPP == m0.CPP


def test_transforms_say_when_they_do_not_apply():
    bare = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    assert mutate(bare, "split_cxx") is None
    assert mutate(bare, "class_methods") is None
    assert mutate(bare, "rename") is None  # nothing but protected names


def test_rename_leaves_harness_and_reference_names_alone():
    src = "batch_size = 2\nhelper = 3\nclass ModelNew:\n    pass\ndef get_inputs():\n    return [helper]\n"
    out = mutate(src, "rename", "batch_size = 16\n")
    assert "batch_size = 2" in out and "class ModelNew" in out and "def get_inputs" in out
    assert "helper" not in out


def test_combine_runs_both_module_levels():
    a = "import torch\nA = 1\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    b = "import os\nB = os.sep\nclass ModelNew:\n    pass\n"
    out = combine(a, b)
    mod = types.ModuleType("m")
    exec(compile(out, "m.py", "exec"), mod.__dict__)
    assert mod.A == 1 and any(isinstance(v, str) and v == __import__("os").sep for v in vars(mod).values())
    assert out.count("class ModelNew") == 1


def test_static_campaign_subset_has_no_escapes():
    cases = [c for c in campaign.static_cases() if c.expect_code in ("RH-04", "RH-05", "RH-09", "RH-13")]
    assert len(cases) >= 8
    rep = campaign.run_campaign(cases)
    outcomes = {r["outcome"] for r in rep["results"]}
    assert "broken" not in outcomes and "error" not in outcomes
    assert rep["escapes"] == [], rep["escapes"]
    judged = sum(v.get("caught", 0) for v in rep["summary"]["static"].values())
    assert judged >= 5 * len(cases)
    table = campaign.format_table(rep)
    assert "decorator" in table and "escaped" in table


def test_runtime_campaign_subset_through_the_evaluator():
    cases = campaign.runtime_cases(ids=["RH-13_bad_class_hidden_fallback_pre"])
    rep = campaign.run_campaign(cases, ["decorator", "stacked"])
    assert [r["outcome"] for r in rep["results"]] == ["caught", "caught"]
    assert all("RH-13" in r["codes"] for r in rep["results"])
    assert json.loads(json.dumps(rep))["summary"]["runtime"]["decorator"] == {"caught": 1}


def test_campaign_budget_skips_and_counts():
    cases = campaign.static_cases()[:3]
    rep = campaign.run_campaign(cases, ["rename"], budget_s=0.0)
    assert rep["skipped_for_budget"] == 3 and rep["results"] == []


# --------------------------------------------------------------------------- agent
HONEST_REPLY = "Here you go:\n```python\n" + fixture_source("benign_softmax_solution") + "\n```\n"
NO_CODE_REPLY = "I cannot do that."


def _verified(speedup, secret="HIDDEN-SEED-123"):
    return {"compiled": True, "correctness": True, "metadata": {"secret": secret},
            "reward_hardening": {"integrity_status": "PASS", "verified": True, "verified_runtime": 1.0,
                                 "verified_reference_runtime": float(speedup),
                                 "findings": [{"code": "RH-41", "severity": "info", "summary": "fast",
                                               "evidence": {"hidden_input": secret}}],
                                 "capabilities": {"x": {"detail": secret}}}}


def test_agent_saves_an_impossible_verified_speedup_as_a_regression_fixture(tmp_path):
    seen_prompts = []

    def query(messages, **kw):
        seen_prompts.append("\n".join(m["content"] for m in messages))
        from kernelbench.utils import query_server

        return query_server(messages, **kw)  # litellm with mock_response: offline

    speedups = iter([1.3, 500.0])
    cfg = agent.AgentConfig(model_name="openai/gpt-4o-mini", max_steps=3, impossible_speedup=20.0,
                            regression_dir=str(tmp_path), mock_responses=[HONEST_REPLY, HONEST_REPLY, NO_CODE_REPLY])
    rep = agent.run_agent(PROBLEM, "level1/4_Row_softmax.py", cfg, evaluate=lambda r, c, h: _verified(next(speedups)),
                          query=query)
    att = rep["attempts"]
    assert [a["reward"] for a in att] == [1.3, 500.0, 0.0]
    assert att[2]["note"].startswith("no python code")
    assert len(rep["saved"]) == 1 and att[1]["saved_fixture"] == rep["saved"][0]
    saved = (tmp_path / rep["saved"][0].split("/")[-1]).read_text()
    assert "500.0x" in saved and "class ModelNew" in saved and check_compiles(saved) is None
    index = [json.loads(line) for line in (tmp_path / "regressions.jsonl").read_text().splitlines()]
    assert index[0]["expected_status"] == "FAIL" and index[0]["speedup"] == 500.0
    # the second and third prompts carry the last public record and the history, never hidden data
    assert "HIDDEN-SEED-123" not in "".join(seen_prompts)
    assert '"verified": true' in seen_prompts[1] and "step 0: reward 1.3" in seen_prompts[1]
    assert "RH-41" in seen_prompts[2]


def test_agent_with_the_real_evaluator_offline(tmp_path):
    attack = fixture_source("RH-13_bad_class_hidden_fallback_pre")
    cfg = agent.AgentConfig(max_steps=1, regression_dir=str(tmp_path), device="cpu", mode="enforce",
                            policy="source_strict", mock_responses=["```python\n" + attack + "\n```"])
    rep = agent.run_agent(PROBLEM, "level1/4_Row_softmax.py", cfg)
    (a,) = rep["attempts"]
    assert a["reward"] == 0.0 and not a["verified"] and a["status"] == "FAIL" and "RH-13" in a["codes"]
    assert rep["saved"] == [] and not (tmp_path / "regressions.jsonl").exists()


def test_public_view_has_only_public_fields():
    pub = agent.public_view(_verified(3.0))
    assert set(pub) == {"integrity_status", "verified", "verified_runtime_ms", "verified_reference_runtime_ms",
                        "findings"}
    assert pub["findings"] == [{"code": "RH-41", "severity": "info", "summary": "fast"}]
    assert "HIDDEN" not in json.dumps(pub)


# --------------------------------------------------------------------------- the command
def _script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "reward_hardening_adversary.py"
    import sys

    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("kg_adversary_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_command_runs_a_static_subset_and_writes_json(tmp_path, capsys):
    out = tmp_path / "m.json"
    rc = _script().main(["task=mutate", "tier=static", "only=RH-13_bad_class_hidden_fallback,RH-05_bad_event_patch",
                         "transforms=decorator,getattr_opaque", f"output={out}"])
    assert rc == 0
    rep = json.loads(out.read_text())
    assert rep["summary"]["static"]["decorator"] == {"caught": 2}
    assert "getattr_opaque" in capsys.readouterr().out


def test_command_rejects_unknown_transforms():
    with pytest.raises(SystemExit) as e:
        _script().main(["task=mutate", "transforms=nonsense"])
    assert e.value.code == 2


# --------------------------------------------------------------------------- attack seeds
def _defines_model_new(src: str) -> bool:
    import ast

    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.parse(src).body)


def test_the_three_seed_classes_are_registered():
    from kernelbench.reward_hardening.adversary import seeds

    assert set(seeds.SEED_CLASSES) == {"first_read", "read_path", "outlives"}
    for cls in seeds.SEED_CLASSES:
        mine = seeds.select_seeds([cls])
        assert any(not s.needs_cxx for s in mine), cls  # a Python-only seed
        assert any(s.needs_cxx for s in mine), cls  # and a C++ one (skippable)
        assert all(s.needs_cxx is False for s in seeds.select_seeds([cls], cxx=False))
    with pytest.raises(KeyError):
        seeds.select_seeds(["nonsense"])


@pytest.mark.parametrize("seed_id", sorted(__import__("kernelbench.reward_hardening.adversary.seeds",
                                                      fromlist=["SEEDS"]).SEEDS))
def test_seed_mutants_are_well_formed_python_defining_model_new(seed_id):
    from kernelbench.reward_hardening.adversary import seeds

    seed = seeds.SEEDS[seed_id]
    ref = problem_source("RH-60_good_lazy_storage" if seed.cls != "outlives" else "RH-53_good_sysv_run_counter")
    base = seed.source()
    assert check_compiles(base) is None and _defines_model_new(base)
    ms = seeds.mutants(seed, 8, rng_seed=3, reference_src=ref)
    assert len(ms) == 8 and len({label for label, _ in ms}) == 8
    assert ms == seeds.mutants(seed, 8, rng_seed=3, reference_src=ref)  # deterministic
    for label, src in ms:
        assert label != "seed" and src != base
        assert check_compiles(src) is None, label
        assert _defines_model_new(src), label
    # the knob space is searched: every knob takes another value in some mutant
    labels = " ".join(label for label, _ in seeds.mutants(seed, 40, reference_src=ref))
    assert all(f"{k}=" in labels for k, vals in seed.space.items() if len(vals) > 1), labels


def test_seed_campaign_skips_cxx_seeds_without_a_compiler():
    from kernelbench.reward_hardening.adversary import seed_campaign

    rep = seed_campaign.run_seed_campaign(["first_read"], n=1, policies=("practical",), cxx="off", budget_s=0.0)
    assert {r["outcome"] for r in rep["results"]} == {"skipped"}
    assert {r["seed"] for r in rep["results"]} == {"first_read_cxx"}
    assert rep["skipped_for_budget"] == 2 and rep["escapes"] == []
    assert "first_read" in seed_campaign.format_seed_table(rep)


@pytest.mark.slow
def test_python_seed_campaign_on_the_cpu_is_caught():
    """Every Python-only seed and two mutants, both policies, under enforce: nothing escapes."""
    from kernelbench.reward_hardening.adversary import seed_campaign

    rep = seed_campaign.run_seed_campaign(n=2, cxx="off")
    judged = [r for r in rep["results"] if r["outcome"] != "skipped"]
    assert rep["escapes"] == [], rep["escapes"]
    assert {r["outcome"] for r in judged} == {"caught"}, [r for r in judged if r["outcome"] != "caught"]
    assert all(r["codes"] and r["status"] != "PASS" and not r["left_behind"] for r in judged)
    for cls in ("first_read", "read_path", "outlives"):
        row = rep["summary"][cls]
        assert row["tried"] >= 6 and row["caught"] == row["tried"] and row["escaped"] == 0
        assert set(row["by_policy"]) == {"source_strict", "practical"}
