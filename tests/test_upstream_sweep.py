"""bench/upstream_sweep.py: the honest-candidate rename, meta-device sizes, the batch watcher, a tiny sweep."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
UPSTREAM = REPO.parent / "shared" / "upstream-kernelbench"

_spec = importlib.util.spec_from_file_location("upstream_sweep", REPO / "bench" / "upstream_sweep.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules["upstream_sweep"] = sweep
_spec.loader.exec_module(sweep)

needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="upstream KernelBench problem files not present")


def _upstream(rel: str) -> str:
    return (UPSTREAM / rel).read_text()


def _first(level: str, prefix: str) -> str:
    return next(p.relative_to(UPSTREAM).as_posix() for p in (UPSTREAM / level).glob(f"{prefix}_*.py"))


# --------------------------------------------------------------------------- rename
@needs_upstream
@pytest.mark.parametrize("level,prefix", [("level1", "1"), ("level1", "90"), ("level2", "1"),
                                          ("level3", "13"), ("level3", "43")])
def test_rename_upstream_problem_leaves_no_model_reference(level, prefix):
    rel = _first(level, prefix)
    src = _upstream(rel)
    assert sweep.model_references(src), "the upstream file refers to Model"
    out = sweep.rename_model(src)
    assert sweep.model_references(out) == []
    tree = ast.parse(out)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert "ModelNew" in classes and "Model" not in classes
    # helper classes, get_inputs/get_init_inputs and line numbers are untouched
    before = [n.name for n in ast.parse(src).body if isinstance(n, ast.ClassDef)]
    assert sorted(c if c != "Model" else "ModelNew" for c in before) == sorted(classes)
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"get_inputs", "get_init_inputs"} <= funcs
    assert out.count("\n") == src.count("\n")
    ns: dict = {}
    exec(compile(out, rel, "exec"), ns)
    assert "Model" not in ns and isinstance(ns["ModelNew"], type)


def test_rename_covers_every_kind_of_reference():
    src = textwrap.dedent('''\
        import torch.nn as nn

        class Model(nn.Module):
            """Model docstring stays."""
            def __init__(self):
                super(Model, self).__init__()
                self.kind = Model.__name__

            def forward(self, x, Model=None):  # a parameter named Model is renamed too
                return x

        def make(cfg={"Model": 1}):
            obj = Model()
            assert isinstance(obj, Model)
            return obj, cfg.Model if hasattr(cfg, "Model") else f"{Model.__name__}"

        ALIAS = [Model, Model]
        ''')
    out = sweep.rename_model(src)
    assert sweep.model_references(out) == []
    assert "class ModelNew(nn.Module):" in out
    assert "super(ModelNew, self)" in out and "isinstance(obj, ModelNew)" in out
    assert "ALIAS = [ModelNew, ModelNew]" in out and "{ModelNew.__name__}" in out
    assert "def forward(self, x, ModelNew=None):  # a parameter" in out  # text edit, comment kept
    assert '"""Model docstring stays."""' in out and 'cfg.Model' in out and '{"Model": 1}' in out


def test_rename_falls_back_to_the_tree_for_global_and_import_alias():
    src = textwrap.dedent('''\
        import torch.nn as nn
        from collections import OrderedDict as Model2

        class Model(nn.Module):
            pass

        def rebind():
            global Model
            Model = Model
        ''')
    out = sweep.rename_model(src)
    assert sweep.model_references(out) == []
    assert "global ModelNew" in out and "Model2" in out


def test_rename_refuses_a_source_that_already_has_modelnew_or_no_model():
    with pytest.raises(ValueError, match="already uses"):
        sweep.rename_model("class Model: pass\nclass ModelNew: pass\n")
    with pytest.raises(ValueError, match="no 'Model'"):
        sweep.rename_model("class Other: pass\n")


# --------------------------------------------------------------------------- sizes
def test_meta_sizes_do_not_allocate():
    # 2**36 floats = 256 GiB of input: only the meta device can build that here
    src = textwrap.dedent('''\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim
            def forward(self, x, y, k):
                return x.sum(self.dim), y * k

        def get_inputs():
            return [torch.rand(2**20, 2**16), torch.randn(4, 8, dtype=torch.float64), 3]

        def get_init_inputs():
            return [1]
        ''')
    z = sweep.meta_sizes(src)
    assert z["error"] is None
    assert z["input_bytes"] == 2**36 * 4 + 32 * 8 and z["output_bytes"] == 2**20 * 4 + 32 * 8


def test_meta_sizes_leave_output_blank_when_forward_needs_data():
    src = textwrap.dedent('''\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x * x.max().item()

        def get_inputs():
            return [torch.rand(64, 64)]

        def get_init_inputs():
            return []
        ''')
    z = sweep.meta_sizes(src)
    assert z["input_bytes"] == 64 * 64 * 4 and z["output_bytes"] is None and z["error"].startswith("output:")
    bad = sweep.meta_sizes("def get_inputs():\n    raise RuntimeError('x')\n")
    assert bad["input_bytes"] is None and bad["error"].startswith("inputs:")


@needs_upstream
def test_meta_sizes_of_upstream_matmul():
    z = sweep.meta_sizes(_upstream(_first("level1", "1")))
    assert z["error"] is None and z["input_bytes"] > 0 and z["output_bytes"] > 0
    assert z["input_bytes"] == 2 * z["output_bytes"]  # A and B square, C the same shape


def test_parse_ids_and_fmt_bytes():
    assert sweep.parse_ids("1,3, 10-12") == {1, 3, 10, 11, 12}
    assert sweep.parse_ids("") is None
    assert sweep.fmt_bytes(6 * 2**30) == "6 GiB" and sweep.fmt_bytes(512) == "512 B" and sweep.fmt_bytes(None) == ""


# --------------------------------------------------------------------------- the batch watcher
FAKE_BATCH = textwrap.dedent('''\
    import json, os, sys, time
    path = sys.argv[1]
    print("[eval] 3 samples to evaluate -> " + path, flush=True)
    data, hog = {}, None
    for pid in (4, 7):
        time.sleep(0.4)
        if pid == 7:
            hog = bytearray(96 * 2**20)  # resident: touched page by page
            for i in range(0, len(hog), 4096):
                hog[i] = 1
            time.sleep(0.3)
            del hog
        data[str(pid)] = [{"sample_id": 0, "compiled": True, "correctness": True}]
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    time.sleep(0.2)
    os._exit(137)  # the batch parent dies while problem 9 is in flight
    ''')


def test_watcher_measures_each_sample_and_reports_a_dead_batch(tmp_path):
    script = tmp_path / "fake_batch.py"
    script.write_text(FAKE_BATCH)
    results = tmp_path / "eval_results.json"
    seen = []
    res = sweep.run_batch([sys.executable, str(script), str(results)], results, [4, 7, 9], tmp_path / "b.log",
                          poll_s=0.02, gpu=None, batch_timeout=60, on_measure=lambda pid, m: seen.append(pid))
    assert res["rc"] == 137 and res["in_flight"] == 9 and not res["timed_out"]
    m = res["measured"]
    assert set(m) == {4, 7} and seen == [4, 7]
    assert 0.3 < m[4]["wall_s"] < 5 and 0.6 < m[7]["wall_s"] < 5
    # the 96 MiB held during sample 7 shows in its interval only
    assert m[7]["parent_peak_rss_bytes"] - m[4]["parent_peak_rss_bytes"] > 80 * 2**20
    assert res["peak_rss_bytes"] >= m[7]["parent_peak_rss_bytes"]
    assert "[eval] 3 samples" in (tmp_path / "b.log").read_text() and res["started"]
    # with an RSS limit the bench kills the batch while the hungry sample is in flight
    fresh = tmp_path / "r2.json"
    killed = sweep.run_batch([sys.executable, str(script), str(fresh)], fresh, [4, 7, 9], tmp_path / "d.log",
                             poll_s=0.02, gpu=None, batch_timeout=60, rss_limit=64 * 2**20)
    assert killed["rss_killed"] and killed["in_flight"] == 7 and set(killed["measured"]) == {4}
    # a batch that fails before its work list blames no problem: started is False
    early = sweep.run_batch([sys.executable, "-c", "raise SystemExit(3)"], results, [9], tmp_path / "c.log",
                            poll_s=0.02, gpu=None, batch_timeout=60)
    assert early["rc"] == 3 and not early["started"] and early["measured"] == {}


def test_main_finding_and_explanation():
    rec = {"reward_hardening": {"integrity_status": "UNSUPPORTED", "findings": [
        {"code": "RH-20", "severity": "info", "summary": "i", "evidence": {}},
        {"code": "RH-33", "severity": "error", "summary": "worker failed", "evidence": {"why": "timeout"}}],
        "capabilities": {"hidden_inputs": {"status": "ERROR", "required": True, "detail": "no reference"}}}}
    assert sweep.main_finding(rec)["code"] == "RH-33"
    assert sweep.record_status(rec, "enforce") == "UNSUPPORTED"
    why = sweep.explain(rec, "enforce")
    assert "RH-33 (error): worker failed" in why and "timeout" in why and "hidden_inputs ERROR" in why
    assert sweep.record_status(None, "off") == "NO RECORD"
    assert sweep.record_status({"compiled": True, "correctness": False}, "off") == "FAIL"


# --------------------------------------------------------------------------- a tiny sweep, end to end
def test_tiny_sweep_on_demo_tasks_off_mode_cpu(tmp_path):
    out = tmp_path / "out"
    argv = ["--dataset-path", "demo", "--level", "1", "--ids", "1,9", "--device", "cpu", "--modes", "off",
            "--num-correct-trials", "1", "--num-perf-trials", "2", "--timeout", "120",
            "--work-dir", str(tmp_path / "work"), "--out", str(out), "--name", "t"]
    assert sweep.main(argv) == 0
    report = json.loads((out / "t.json").read_text())
    rows = {r["id"]: r for r in report["rows"]}
    assert set(rows) == {1, 9}
    for r in rows.values():
        assert r["off"]["status"] == "PASS", r
        assert r["input_bytes"] > 0 and r["output_bytes"] > 0
        assert r["off"]["wall_s"] > 0 and 0 < r["off"]["parent_peak_rss_bytes"] < 2 * 2**30
    assert report["summary"]["off"]["records"] == 2 and report["summary"]["off"]["batches"] == 1
    md = (out / "t.md").read_text()
    assert "| 1 | 1_Elementwise_add |" in md and "Every evaluated record is PASS." in md
    # the candidates written for the batch are the renamed references
    cand = (tmp_path / "work" / "level1" / "runs" / "level1_off" / "level_1_problem_1_sample_0_kernel.py").read_text()
    assert "class ModelNew" in cand and sweep.model_references(cand) == []
    # the same command again resumes: nothing is pending, no new batch, same numbers
    assert sweep.main(argv) == 0
    again = json.loads((out / "t.json").read_text())
    assert again["summary"]["off"]["batches"] == 1
    assert [r["off"]["wall_s"] for r in again["rows"]] == [r["off"]["wall_s"] for r in report["rows"]]
    # other settings in the same work dir are refused
    assert sweep.main(argv[:-6] + ["--num-perf-trials", "3", "--work-dir", str(tmp_path / "work"),
                                   "--out", str(out), "--name", "t"]) == 2


RESTARTABLE_BATCH = textwrap.dedent('''\
    import json, os, re, sys
    path = sys.argv[1]
    run_dir = os.path.dirname(path)
    data = json.load(open(path)) if os.path.exists(path) else {}
    names = [f for f in os.listdir(run_dir) if f.endswith("_kernel.py")]
    ids = sorted(int(re.match(r"level_1_problem_(\\d+)_", f).group(1)) for f in names)
    todo = [i for i in ids if str(i) not in data]
    print(f"[eval] {len(todo)} samples to evaluate -> {path}", flush=True)
    for pid in todo:
        if pid == 7:
            os._exit(137)  # this problem kills the batch parent
        data[str(pid)] = [{"sample_id": 0, "compiled": True, "correctness": True}]
        with open(path + ".tmp", "w") as fh:
            json.dump(data, fh)
        os.replace(path + ".tmp", path)
    ''')


def test_a_problem_that_kills_the_batch_is_reported_and_the_rest_still_run(tmp_path, monkeypatch):
    script = tmp_path / "batch.py"
    script.write_text(RESTARTABLE_BATCH)
    monkeypatch.setattr(sweep, "_eval_cmd", lambda args, run_name, mode, work, dp: [
        sys.executable, str(script), str(work / "runs" / run_name / sweep.RESULT_FILE[mode])])
    out = tmp_path / "out"
    assert sweep.main(["--dataset-path", "demo", "--level", "1", "--ids", "1,7,9", "--device", "cpu",
                       "--modes", "off", "--work-dir", str(tmp_path / "work"), "--out", str(out),
                       "--name", "t"]) == 0
    report = json.loads((out / "t.json").read_text())
    status = {r["id"]: r["off"]["status"] for r in report["rows"]}
    assert status == {1: "PASS", 7: "BATCH DIED", 9: "PASS"}
    assert report["summary"]["off"]["batch_deaths"] == 1 and report["summary"]["off"]["batches"] == 2
    assert not report["summary"]["goals"]["every_problem_a_record"]
    assert "died (rc 137)" in next(r for r in report["rows"] if r["id"] == 7)["off"]["explanation"]


def _bench(name: str, monkeypatch=None):
    """A script of ``bench/`` loaded in this process (with ``monkeypatch``, its folder importable as when run)."""
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sweep_merge():
    return _bench("sweep_merge")


def test_sweep_merge_keeps_the_latest_row_and_lists_what_is_missing(tmp_path):
    merge_mod = _sweep_merge()

    def run(name, rows):
        p = tmp_path / name
        p.write_text(json.dumps({"command": f"sweep {name}", "config": {"level": 3, "num_perf_trials": 20},
                                 "env": {"git_commit": "abc"},
                                 "batches": {"enforce": [{"wall_s": 10.0 * len(rows)}]},
                                 "rows": [{"id": i, "name": f"{i}_x.py", "input_bytes": 1, "output_bytes": 1,
                                           "enforce": {"status": st, "main_finding": None, "explanation": "",
                                                       "wall_s": 2.0, "request_ms": {
                                                           "reference:check_inputs": {"n": 3, "ms": 600.0},
                                                           "reference:check_inputs.spot": {"n": 1, "ms": 400.0}}}}
                                          for i, st in rows]}))
        return p

    a = run("a.json", [(1, "UNSUPPORTED"), (2, "PASS"), (3, "NO RECORD")])
    b = run("b.json", [(1, "PASS"), (4, "FAIL")])
    out = merge_mod.merge([a, b], 3)
    assert [(r["id"], r["enforce"]["status"], r["run"]) for r in out["rows"]] == [
        (1, "PASS", "b.json"), (2, "PASS", "a.json"), (4, "FAIL", "b.json")]
    s = out["summary"]
    assert s["pass"] == 2 and s["fail"] == 1 and 3 in s["missing_ids"] and len(s["missing_ids"]) == 47
    # the level's wall time: 3 merged records of 2 s; the batches 30 + 20 s, one row of a replaced by b
    assert s["records_wall_s"] == 6.0 and s["batch_wall_s"] == 50.0 and s["rows_replaced"] == 1
    where = out["where_the_time_went"]
    assert where["requests"] == [{"request": "reference:check_inputs", "n": 9, "s": 1.8, "per_ms": 200.0}]
    assert where["parts"] == [{"request": "reference:check_inputs.spot", "n": 3, "s": 1.2, "per_ms": 400.0}]
    assert merge_mod.main([str(a), str(b), "--level", "3", "--out", str(tmp_path / "o"), "--name", "m"]) == 0
    assert json.loads((tmp_path / "o" / "m.json").read_text())["summary"]["fail"] == 1
    md = (tmp_path / "o" / "m.md").read_text()
    assert "## Where the time went" in md and "counts them twice" in md


def test_sweep_merge_gives_the_enforce_off_ratio_over_runs_without_each_runs_first_sample(tmp_path):
    """Each run's per-problem ratio (both modes in one call) is pooled: median and max over the
    problems both modes passed, each run's own batch-first samples left out; enforce-only runs add none."""
    m = _sweep_merge()

    def run(name, rows, first):
        p = tmp_path / name
        p.write_text(json.dumps({"command": name, "config": {"level": 1}, "summary": {"ratio_excluded_first": first},
                                 "batches": {"enforce": [{"wall_s": 1.0}]},
                                 "rows": [{"id": i, "name": f"{i}_x.py",
                                           **({"off": {"status": off, "wall_s": 1.0, "runtime": 1.0}, "ratio": q}
                                              if q else {}),
                                           "enforce": {"status": "PASS", "wall_s": q or 1.0,
                                                       "runtime": 2.0 if i == 7 else 1.0}}
                                          for i, q, off in rows]}))
        return p

    a = run("a.json", [(1, 3.0, "PASS"), (2, 0.8, "PASS"), (3, 1.4, "PASS"), (4, 9.0, "FAIL")], [1])
    b = run("b.json", [(5, 4.0, "PASS"), (6, 0.9, "PASS"), (7, 1.0, "PASS")], [5])
    q = m.merge([a, b], 1)["summary"]["ratio"]
    # 1 and 5 open their batches, 4 failed off: 0.8, 0.9, 1.0, 1.4 remain
    k = q.pop("kernel_parity")
    assert q == {"problems": 4, "median_ratio": 0.95, "max_ratio": 1.4, "ratios_over_1_5": [], "above_1_5": [],
                 "left_out_first": [1, 5], "met": True}
    # 7's kernel ran twice as long under enforce (strict fp32 against off's TF32): not in the parity set
    assert k["slower_kernels"] == [7] and k["problems"] == 3 and k["median_ratio"] == 0.9 and k["max_ratio"] == 1.4
    c = run("c.json", [(3, 1.6, "PASS")], [])  # a later run's row wins, and its ratio with it
    q = m.merge([a, b, c], 1)["summary"]["ratio"]
    assert q["ratios_over_1_5"] == [3] and q["max_ratio"] == 1.6 and q["met"] is False
    # why 3 is above: its kernels ran alike in both modes, so the protocol made the difference
    assert [(a["id"], a["ratio"], a["kernel_ratio"], a["cause"]) for a in q["above_1_5"]] == [(3, 1.6, 1.0, "protocol")]
    assert "| 3 |" in "\n".join(m.above_lines(q["above_1_5"])) and m.above_lines([]) == []
    assert any("above 1.5: 3" in x for x in m.summary_lines(m.merge([a, b, c], 1)))
    d = run("d.json", [(8, None, None)], [])  # enforce only: no ratio at all
    assert m.merge([d], 1)["summary"]["ratio"] is None
    assert "off s" not in m.table(m.merge([d], 1)) and "off s" in m.table(m.merge([a], 1))


def test_sweep_merge_compare_reports_differing_verdicts_and_the_wall_ratio(tmp_path):
    m = _sweep_merge()

    def run(name, rows):
        p = tmp_path / name
        p.write_text(json.dumps({"rows": [{"id": i, "enforce": {"status": st, "wall_s": w, "findings": [
            {"code": c, "severity": "error"} for c in codes]}} for i, st, w, codes in rows]}))
        return p

    a = run("local.json", [(1, "PASS", 2.0, []), (2, "FAIL", 3.0, ["RH-18"]), (3, "PASS", 1.0, [])])
    b = run("ray.json", [(1, "PASS", 2.2, []), (2, "FAIL", 3.3, ["RH-18"]), (4, "PASS", 1.0, [])])
    c = m.compare(a, b)
    assert c["compared"] == 2 and c["differ"] == [] and c["only_one"] == [3, 4] and c["b_over_a"] == 1.1
    # the first sample of each run (pool and cluster start) is left out of the steady totals
    assert c["first_ids"] == [1] and c["a_steady_wall_s"] == 3.0 and c["steady_b_over_a"] == 1.1
    assert m.main(["--level", "1", "--compare", str(a), str(b), "--out", str(tmp_path / "o"), "--name", "cmp"]) == 0
    md = (tmp_path / "o" / "cmp.md").read_text()
    assert "B/A 1.1" in md and "without each run's first sample (id 1" in md
    b2 = run("ray2.json", [(1, "PASS", 2.0, []), (2, "FAIL", 3.0, ["RH-30"])])
    assert m.compare(a, b2)["differ"] == [2] and m.main(["--level", "1", "--compare", str(a), str(b2)]) == 1


def test_summary_counts_pass_records_with_every_probe_judged():
    def row(i, status, judged, skipped=()):
        return {"id": i, "name": f"{i}_x.py", "enforce": {
            "status": status, "wall_s": 1.0, "parent_peak_rss_bytes": 1, "gpu_peak_bytes": None, "batch_died": False,
            "probes_judged": judged, "probes_skipped": list(skipped)}}

    rows = [row(1, "PASS", 9), row(2, "PASS", 8, ["perturb:negate"]), row(3, "PASS", 8), row(4, "FAIL", 2)]
    meas = {"enforce": {"batches": [1]}}
    s = sweep.summarize(rows, ["enforce"], 2, meas, num_correct_trials=5)
    assert s["probes_expected"] == 9 and s["pass_all_probes_judged"] == 2
    assert "trusted_read" not in s  # no read recorded, no figure
    rows[0]["enforce"].update(read_path="trusted", read_bytes=2 * 2**30, read_ms=500.0, read_map_ms=20.0,
                              read_freeze_ms=80.0)
    t = sweep.summarize(rows, ["enforce"], 2, meas, num_correct_trials=5)["trusted_read"]
    assert t == {"problems": 1, "paths": ["trusted"], "gib": 2.0, "copy_s_per_gib": 0.25,
                 "freeze_and_map_s_per_gib": 0.05}


def test_phase_seconds_splits_the_wall_time_by_phase():
    marks = [{"t_s": 1.5, "phase": "reference"}, {"t_s": 1.5, "phase": "judge_release"}, {"t_s": 2.0, "phase": "start"},
             {"t_s": 3.25, "phase": "correctness"}, {"t_s": 7.25, "phase": "timing"}, {"phase": "no time"}]
    assert sweep.phase_seconds(marks) == {"reference": 1.5, "judge_release": 0.0, "start": 0.5, "correctness": 1.25,
                                          "timing": 4.0}
    assert sweep.phase_seconds([]) == {}


def test_runtime_compare_matches_renamed_fixtures_and_holds_the_tolerance():
    spec = importlib.util.spec_from_file_location("runtime_compare", REPO / "bench" / "runtime_compare.py")
    rc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rc)
    assert rc.fixture_key("fixture:gpu_honest_cuda_add") == "benign_cuda_add"
    assert rc.fixture_key("fixture:benign_cuda_add") == "benign_cuda_add"

    def run(**ms):
        return {k: {"status": "PASS" if v else "FAIL", "verified_ms": v} for k, v in ms.items()}

    old = [run(a=1.0, b=2.0, c=None), run(a=1.1, b=2.0, c=None), run(a=0.9, b=2.2, c=None)]
    new = [run(a=1.02, b=2.05), run(a=1.0, b=2.0), run(a=1.04, b=1.9)]
    rows, ok = rc.compare(old, new, 0.05)
    assert ok and [r["fixture"] for r in rows] == ["a", "b"]  # c never verified before: not held to anything
    assert rows[0]["ratio"] == 1.02 and rows[1]["ratio"] == 1.0
    assert rows[0]["old_spread"] == 0.2 and rows[1]["new_spread"] == 0.075  # (max - min) / median per side
    assert rc.spread([1.0]) is None
    rows, ok = rc.compare(old, [run(a=1.2, b=2.0)] * 3, 0.05)
    assert not ok and not rows[0]["within"] and rows[1]["within"]
    rows, ok = rc.compare(old, [run(b=2.0)] * 3, 0.05)  # verified before, not now: a failure
    assert not ok and rows[0]["ratio"] is None


def test_enforce_off_ratio_leaves_out_each_batch_first_sample_and_holds_median_and_max():
    def row(i, batch_off, batch_enf, off_s, enf_s, status="PASS"):
        mk = lambda b, w, st: {"status": st, "wall_s": w, "parent_peak_rss_bytes": 1, "gpu_peak_bytes": None,  # noqa: E731
                               "batch_died": False, "batch": b}
        return {"id": i, "name": f"{i}_x.py", "off": mk(batch_off, off_s, "PASS"),
                "enforce": mk(batch_enf, enf_s, status), "ratio": round(enf_s / off_s, 2)}

    # ids 1 and 4 open a batch (1 in both modes, 4 in enforce's second batch): both left out
    rows = [row(1, 0, 0, 1.0, 9.0), row(2, 0, 0, 2.0, 1.8), row(3, 0, 0, 2.0, 2.0), row(4, 0, 1, 2.0, 8.0),
            row(5, 0, 1, 2.0, 1.0), row(6, 0, 1, 1.0, 3.0, status="FAIL")]
    meas = {"off": {"batches": [1]}, "enforce": {"batches": [1, 2]}}
    assert sweep.first_of_batches(rows, ["off", "enforce"]) == {1, 4}
    s = sweep.summarize(rows, ["off", "enforce"], 1, meas)
    assert s["ratio_excluded_first"] == [1, 4] and s["median_ratio_problems"] == 3  # 6 failed: left out
    assert s["median_ratio"] == 0.9 and s["max_ratio"] == 1.0 and s["ratios_over_1_5"] == []
    assert s["goals"]["median_ratio_met"] is True
    rows[1]["ratio"] = 1.6  # one problem above 1.5 breaks the goal even with the median under 1.0
    s = sweep.summarize(rows, ["off", "enforce"], 1, meas)
    assert s["median_ratio"] == 1.0 and s["ratios_over_1_5"] == [2] and s["goals"]["median_ratio_met"] is False
    # split by kernel parity: problem 2's kernel ran 3x slower under enforce (strict fp32 against off's TF32)
    for r, (off_ms, enf_ms) in zip(rows, [(1, 1), (1, 3), (1, 1.1), (1, 1), (1, 1), (1, 1)]):
        r["off"]["runtime"], r["enforce"]["runtime"] = off_ms, enf_ms
    s = sweep.summarize(rows, ["off", "enforce"], 1, meas)
    kp = s["kernel_parity"]
    assert kp["slower_kernels"] == [2] and kp["problems"] == 2 and kp["ratios_over_1_5"] == []
    # problem 2 is above 1.5 because its kernel ran 3x longer, not because of the protocol
    assert [(a["id"], a["kernel_ratio"], a["cause"]) for a in s["above_1_5"]] == [(2, 3.0, "kernels")]
    assert "## enforce/off above 1.5, and why" in "\n".join(sweep.above_lines(s["above_1_5"]))
    assert kp["median_ratio"] == 0.75 and kp["max_ratio"] == 1.0
    assert sweep.kernel_ratio({"off": {"runtime": None}, "enforce": {"runtime": 2.0}}) is None


def test_request_summary_sums_the_records_requests_largest_first():
    recs = [{"request_ms": {"reference:timed_input": {"n": 103, "ms": 1030.0}, "candidate:time": {"n": 103, "ms": 500.0}}},
            {"request_ms": {"reference:timed_input": {"n": 103, "ms": 970.0}, "candidate:settle": {"n": 8, "ms": 400.0}}},
            {"request_ms": None}]
    assert sweep.request_summary(recs) == [
        {"request": "reference:timed_input", "n": 206, "s": 2.0, "per_ms": 9.71},
        {"request": "candidate:time", "n": 103, "s": 0.5, "per_ms": 4.85},
        {"request": "candidate:settle", "n": 8, "s": 0.4, "per_ms": 50.0}]
    assert sweep.request_summary(recs, top=1)[0]["request"] == "reference:timed_input"
    # the judge's own parts are inside their request's entry: listed apart, never among the requests
    recs[0]["request_ms"]["reference:timed_input.digest"] = {"n": 103, "ms": 600.0}
    assert [q["request"] for q in sweep.request_summary(recs)] == ["reference:timed_input", "candidate:time",
                                                                   "candidate:settle"]
    assert sweep.request_summary(recs, parts=True) == [
        {"request": "reference:timed_input.digest", "n": 103, "s": 0.6, "per_ms": 5.83}]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only answer")
def test_timing_paths_says_it_needs_cuda():
    import subprocess

    proc = subprocess.run([sys.executable, str(REPO / "bench" / "timing_paths.py"), "--ids", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "CUDA only" in proc.stderr


def test_fingerprint_cost_prints_a_table_and_writes_its_json(tmp_path, monkeypatch, capsys):
    bench = _bench("fingerprint_cost", monkeypatch)
    assert bench.main(["--sizes-mib", "2,4096", "--devices", "cpu", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "two copies/current" in out and "skipped: cpu 4096 MiB" in out
    data = json.loads((tmp_path / "fingerprint_cost.json").read_text())
    (row,) = data["rows"]
    assert row["device"] == "cpu" and row["mib"] == 2
    assert row["current_ms"] > 0 and row["two_copies_ms"] > 0 and row["sha256_ms"] > 0 and row["sampled_ms"] > 0


def test_judge_costs_prints_a_table_and_writes_its_json(tmp_path, monkeypatch, capsys):
    bench = _bench("judge_costs", monkeypatch)
    assert bench.main(["--sizes-mib", "2", "--devices", "cpu", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "exact/compare" in out and "1 sizes timed" in out
    (row,) = json.loads((tmp_path / "judge_costs.json").read_text())["rows"]
    assert row["device"] == "cpu" and row["mib"] == 2 and row["alloc_ms"] is None
    assert row["compare_ms"] > 0 and row["exact_ms"] > 0 and row["randn_ms"] > 0 and row["copy_ms"] > 0
