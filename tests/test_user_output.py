"""What a user reads: analysis plot and baseline warnings, run_and_check's summary,
``python -m kernelbench explain``, ``more_info`` links, install extras and their hints."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ANALYSIS = REPO / "scripts" / "benchmark_eval_analysis.py"
SHIPPED = REPO / "results" / "timing" / "H200"


def _py(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    import os

    full = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p))
    full.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full)


# --------------------------------------------------------------------------- item 4: plot and baseline
def _cpu_run(tmp: Path, hardware: str = "cpu", device: str = "cpu") -> Path:
    """runs/r/eval_results.json for demo level 1 problems 1 and 2, evaluated on ``hardware``."""
    run = tmp / "runs" / "r"
    run.mkdir(parents=True)
    rec = {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 0.5, "runtime_stats": {},
           "metadata": {"hardware": hardware, "device": device}}
    (run / "eval_results.json").write_text(json.dumps({"1": [rec], "2": [rec]}))
    return run


def _analysis_args(tmp: Path, **extra: str) -> list[str]:
    args = {"run_name": "r", "level": "1", "hardware": "H200", "baseline": "baseline_time_torch",
            "eval_results_dir": str(tmp / "runs"), "dataset_path": "demo"}
    args.update(extra)
    return [str(ANALYSIS)] + [f"{k}={v}" for k, v in args.items()]


@pytest.mark.parametrize("flag", ["True", "true"])
def test_plot_true_writes_the_default_png_not_a_file_named_true(tmp_path, flag):
    run = _cpu_run(tmp_path)
    out = tmp_path / "out" / "analysis.json"
    proc = _py(*_analysis_args(tmp_path, plot=flag), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "True").exists() and not (REPO / "True").exists() and not (REPO / "true").exists()
    png = run / "fast_p_level1_baseline_time_torch.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and str(png) in proc.stdout
    # with output_file the plot goes beside it
    proc = _py(*_analysis_args(tmp_path, plot=flag, output_file=str(out)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "analysis.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_false_writes_nothing_and_a_path_is_used_as_given(tmp_path):
    run = _cpu_run(tmp_path)
    proc = _py(*_analysis_args(tmp_path, plot="false"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not list(run.glob("*.png")) and "Plot saved" not in proc.stdout
    proc = _py(*_analysis_args(tmp_path, plot=str(tmp_path / "chart.png")), cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "chart.png").is_file()


def test_plot_keeps_fast_p_visible_under_verified_and_adds_per_problem_speedups(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from kernelbench.analysis import plot_fast_p

    figures = []
    real_savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (figures.append(self), real_savefig(self, *a, **k)))
    same = {"0.0": 1.0, "1.0": 0.5}
    analysis = {"run_name": "r", "level": 1, "baseline": "b", "fast_p": same, "verified_fast_p": dict(same),
                "per_problem": [{"problem_id": 1, "speedup": 2.0, "verified_speedup": 2.0},
                                {"problem_id": 2, "speedup": None, "verified_speedup": None}]}
    plot_fast_p(analysis, tmp_path / "p.png")
    (fig,) = figures
    curves, bars = fig.axes
    fast, verified = curves.get_lines()
    assert fast.get_label() == "fast_p" and verified.get_label() == "verified_fast_p"
    # identical values: the curve drawn first is wider and the one on top dashed, so both stay visible
    assert fast.get_linewidth() > verified.get_linewidth() and verified.get_linestyle() == "--"
    heights = sorted(p.get_height() for p in bars.patches)
    assert heights == [0.0, 0.0, 2.0, 2.0]  # speedup and verified speedup per problem; none is drawn as 0
    assert [t.get_text() for t in bars.get_xticklabels()] == ["1", "2"]


def test_parse_plot_option():
    from kernelbench.analysis import parse_plot_option

    assert [parse_plot_option(v) for v in (None, False, "false", "None", "", "0")] == [None] * 6
    assert [parse_plot_option(v) for v in (True, "True", "yes", 1)] == [True] * 4
    assert parse_plot_option("plots/p.png") == "plots/p.png"


def test_cpu_run_against_the_shipped_h200_baseline_warns(tmp_path):
    _cpu_run(tmp_path)
    out = tmp_path / "a.json"
    proc = _py(*_analysis_args(tmp_path, output_file=str(out)), cwd=tmp_path,
               env={"KERNELBENCH_DEMO_SCALE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"baseline was measured on NVIDIA H200 \(cuda\).*evaluated on cpu \(cpu\)", proc.stderr)
    assert "KERNELBENCH_DEMO_SCALE=64" in proc.stderr
    data = json.loads(out.read_text())
    assert data["baseline_hardware"] == ["NVIDIA H200"]
    assert len(data["baseline_warnings"]) == 2


def test_matching_baseline_gives_no_warning(tmp_path):
    _cpu_run(tmp_path, hardware="NVIDIA H200", device="cuda:0")
    out = tmp_path / "a.json"
    proc = _py(*_analysis_args(tmp_path, output_file=str(out)), cwd=tmp_path,
               env={"KERNELBENCH_DEMO_SCALE": "64"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["baseline_warnings"] == []
    assert "different machines" not in proc.stderr


def test_baseline_of_another_problem_set_warns():
    from kernelbench.analysis import baseline_mismatches

    baseline = json.loads((SHIPPED / "baseline_time_torch.json").read_text())
    env = json.loads((SHIPPED / "environment.json").read_text())
    names = {1: "1_Square_matrix_multiplication_.py", 2: "2_Standard_matrix_multiplication_.py"}
    means = {k: v["mean"] for k, v in baseline["level1"].items()}
    messages = baseline_mismatches(baseline, 1, [], names, means, env, dataset_is_demo=False)
    assert any("2 of 2 problems" in m for m in messages)
    assert any("demo task set" in m and "another dataset" in m for m in messages)


def _cuda_record(tf32: dict | None = None, allow_tf32: bool | None = None, device: str = "cuda:0") -> dict:
    meta: dict = {"hardware": "NVIDIA H200", "device": device}
    if tf32 is not None:
        meta["tf32"] = tf32
    if allow_tf32 is not None or tf32 is None:
        meta["eval_config"] = {"mode": "enforce" if allow_tf32 is not None else "off", "allow_tf32": allow_tf32}
    return {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 0.5, "metadata": meta}


def test_off_mode_records_under_cudnn_tf32_warn_against_a_strict_fp32_baseline():
    from kernelbench.analysis_parts.baseline import tf32_mismatch

    env = json.loads((SHIPPED / "environment.json").read_text())  # both switches off
    defaults = {"matmul": False, "cudnn": True}  # PyTorch's defaults, as an off-mode worker finds them
    message = tf32_mismatch([_cuda_record(defaults), _cuda_record(defaults), _cuda_record(allow_tf32=False)], env)
    assert message and "timed with matmul TF32 off, cudnn TF32 off" in message
    assert "2 of 3 CUDA records ran with matmul TF32 off, cudnn TF32 on" in message
    # a hardened run with allow_tf32=true differs on both switches
    assert "matmul TF32 on, cudnn TF32 on" in tf32_mismatch([_cuda_record(allow_tf32=True)], env)


def test_tf32_warning_stays_quiet_where_the_switches_agree_or_are_unknown():
    from kernelbench.analysis_parts.baseline import tf32_mismatch

    env = json.loads((SHIPPED / "environment.json").read_text())
    strict = {"matmul": False, "cudnn": False}
    assert tf32_mismatch([_cuda_record(strict), _cuda_record(allow_tf32=False)], env) is None
    # CPU records, records older than the switches' record (off: allow_tf32 None), no environment
    assert tf32_mismatch([_cuda_record({"matmul": False, "cudnn": True}, device="cpu")], env) is None
    assert tf32_mismatch([_cuda_record()], env) is None
    assert tf32_mismatch([_cuda_record({"matmul": False, "cudnn": True})], None) is None
    assert tf32_mismatch([_cuda_record({"matmul": False, "cudnn": True})], {"gpu": "x"}) is None


def test_the_tf32_warning_reaches_the_analysis(tmp_path):
    from kernelbench.analysis import baseline_mismatches

    baseline = json.loads((SHIPPED / "baseline_time_torch.json").read_text())
    env = json.loads((SHIPPED / "environment.json").read_text())
    names = {1: next(iter(baseline["level1"]))}
    means = {k: v["mean"] for k, v in baseline["level1"].items()}
    rec = _cuda_record({"matmul": False, "cudnn": True})
    messages = baseline_mismatches(baseline, 1, [rec], names, means, env, dataset_is_demo=True)
    assert [m for m in messages if "TF32" in m] and not any("different machines" in m for m in messages)


def test_readme_says_what_the_shipped_baseline_is():
    env = json.loads((SHIPPED / "environment.json").read_text())
    assert env["gpu"] == "NVIDIA H200" and env["demo_scale"] == "64"
    for name in ("README.md", "README.zh-CN.md"):
        text = (REPO / name).read_text()
        assert "KERNELBENCH_DEMO_SCALE=64" in text and "H200" in text, name


# --------------------------------------------------------------------------- item 6: explain and more_info
def _explain(capsys, *argv: str) -> tuple[int, str, str]:
    from kernelbench.__main__ import main

    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_explain_prints_the_code_documentation_from_its_sources(capsys):
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.detectors import REGISTRY

    rc, out, _ = _explain(capsys, "explain", "RH-21")
    info = CODES["RH-21"]
    assert rc == 0
    assert out.startswith("RH-21 RH-OUTPUT-UNSTABLE")
    assert info.summary in out and info.remediation in out
    assert "error under source_strict, error under practical" in out
    assert "A16 Writes that land after return" in out  # attack names from the catalogue
    first_doc_line = REGISTRY["RH-21"].doc.splitlines()[0]
    assert first_doc_line in out  # the detector's own docstring
    assert "docs/attack-catalog.md#rh-21" in out


def test_explain_static_rule_docstring_and_policy_dependent_severity(capsys):
    from kernelbench.reward_hardening.precheck import rule_by_code

    rc, out, _ = _explain(capsys, "explain", "rh-10")
    assert rc == 0 and "error under source_strict, warning under practical" in out
    assert "static rule" in out and rule_by_code("RH-10").doc.strip().splitlines()[0] in out


def test_explain_accepts_a_number_or_detector_name_and_all(capsys):
    from kernelbench.reward_hardening.codes import CODES

    assert _explain(capsys, "explain", "21")[1] == _explain(capsys, "explain", "RH-OUTPUT-UNSTABLE")[1]
    rc, out, _ = _explain(capsys, "explain", "--all")
    assert rc == 0 and all(f"{c} {i.detector}" in out for c, i in CODES.items())
    rc, out, _ = _explain(capsys, "codes")
    assert rc == 0 and len(out.splitlines()) == len(CODES)
    rc, out, _ = _explain(capsys, "explain", "RH-14", "--json")
    data = json.loads(out)
    assert rc == 0 and data[0]["code"] == "RH-14" and data[0]["origin"]


@pytest.mark.parametrize("argv", [["explain", "RH-99"], ["explain", "bogus"], ["explain"], ["nope"]])
def test_explain_unknown_code_is_one_line_exit_2(capsys, argv):
    assert _explain_or_exit(capsys, argv) == 2


def _explain_or_exit(capsys, argv):
    from kernelbench.__main__ import main

    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err
    return rc


def test_python_dash_m_kernelbench_runs():
    proc = _py("-m", "kernelbench", "explain", "RH-99")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "unknown finding code 'RH-99'" in proc.stderr and "Traceback" not in proc.stderr


def test_explain_answers_without_importing_torch():
    code = ("import sys\nfrom kernelbench.__main__ import main\nrc = main(['explain', 'RH-21'])\n"
            "assert rc == 0\nprint('TORCH', 'torch' in sys.modules)")
    proc = _py("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert "RH-21 RH-OUTPUT-UNSTABLE" in proc.stdout and proc.stdout.strip().endswith("TORCH False")


def test_detectors_read_from_source_equal_the_imported_registry():
    from kernelbench.explain import runtime_detectors
    from kernelbench.reward_hardening.detectors import REGISTRY

    from_source = runtime_detectors()
    assert set(from_source) == set(REGISTRY)
    for code, det in REGISTRY.items():
        name, module, doc = from_source[code]
        assert (name, module) == (det.func.__name__, det.func.__module__.rsplit(".", 1)[-1]), code
        assert doc == (det.func.__doc__ or det.doc), code


def test_the_hint_names_the_most_severe_finding():
    rac = _load_run_and_check()
    findings = [{"code": "RH-13", "severity": "warning"}, {"code": "RH-41", "severity": "info"},
                {"code": "RH-31", "severity": "error"}, {"code": "RH-20", "severity": "error"}]
    assert rac.most_severe(findings)["code"] == "RH-31"
    record = _pass_record()
    record["reward_hardening"]["findings"] = [dict(record["reward_hardening"]["findings"][0], code="RH-13",
                                                   severity="warning"),
                                              dict(record["reward_hardening"]["findings"][0], code="RH-31",
                                                   severity="error")]
    assert "uv run kernelguard explain RH-31" in rac.format_summary(record)


def test_redteam_table_spells_codes_out():
    spec = importlib.util.spec_from_file_location("kb_redteam", REPO / "scripts" / "reward_hardening_redteam.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = module.table_row({"id": "rt_fixture", "attack": "A01", "expected": {"status": "FAIL"}, "match": True,
                            "observed": {"status": "FAIL", "codes": ["RH-13", "RH-31"]}, "wall_s": 1.0,
                            "reasons": []})
    assert "RH-13,RH-31" in row


def test_every_code_has_a_more_info_anchor_in_the_catalogue():
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.findings import more_info

    catalogue = (REPO / "docs" / "attack-catalog.md").read_text()
    for code in CODES:
        path, anchor = more_info(code).split("#")
        assert (REPO / path).is_file()
        assert anchor == code.lower() and f'<a id="{anchor}"></a>' in catalogue, code
        # the anchor sits right before the code's own section
        assert re.search(rf'<a id="{anchor}"></a>\s+### {code} ', catalogue), code


def test_findings_in_records_carry_more_info_and_validate():
    import jsonschema

    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.precheck import run_precheck
    from kernelbench.reward_hardening.parent.records import load_schema

    static = run_precheck("import threading\nthreading.Thread(target=print).start()\n")
    assert static.findings and all(f.as_dict()["more_info"] == f"docs/attack-catalog.md#{f.code.lower()}"
                                   for f in static.findings)
    import torch

    if torch.cuda.is_available():
        pytest.skip("the record below is the no-CUDA one")
    record = evaluate_hardened("x = 1\n", "y = 2\n", HardeningConfig(mode="enforce", device="cuda"))
    findings = record["reward_hardening"]["findings"]
    assert [f["more_info"] for f in findings] == ["docs/attack-catalog.md#rh-14"]
    jsonschema.validate(record, load_schema())
    bad = json.loads(json.dumps(record))
    bad["reward_hardening"]["findings"][0]["more_info"] = "elsewhere"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, load_schema())


# --------------------------------------------------------------------------- item 5: run_and_check's summary
def _load_run_and_check():
    import importlib.util

    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("run_and_check_under_test", REPO / "scripts" / "run_and_check.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "scripts"))
    return module


def _pass_record() -> dict:
    stats = {"mean": 0.25, "std": 0.01, "min": 0.24, "max": 0.3, "num_trials": 100, "median": 0.25}
    ref = {"mean": 1.0, "std": 0.02, "min": 0.9, "max": 1.1, "num_trials": 100}
    finding = {"code": "RH-41", "detector": "RH-IMPLAUSIBLE-SPEEDUP", "severity": "warning",
               "summary": "Speedup over the reference exceeds the plausibility bound", "evidence": {},
               "policy_rule": "reward_hardening", "remediation": "check", "more_info": "docs/attack-catalog.md#rh-41"}
    return {"compiled": True, "correctness": True, "runtime": 0.25, "runtime_stats": stats,
            "metadata": {"device": "cuda:0", "hardware": "NVIDIA H200", "correctness_trials": "(5 / 5)"},
            "reward_hardening": {
                "schema_version": "1.1", "mode": "enforce", "policy": "practical", "integrity_status": "PASS",
                "verified": True, "verified_correctness": True, "verified_runtime": 0.25,
                "verified_runtime_stats": stats, "observed_runtime_stats": stats,
                "verified_reference_runtime": 1.0, "verified_reference_runtime_stats": ref,
                "observed_reference_runtime_stats": ref, "findings": [finding],
                "capabilities": {"cuda_runtime": {"status": "AVAILABLE", "required": True, "detail": "ok"}},
                "limitations": []}}


def test_summary_block_shows_verdict_runtimes_speedup_and_findings():
    rac = _load_run_and_check()
    text = rac.format_summary(_pass_record(), "out/record.json")
    assert "enforce / practical on cuda:0 (NVIDIA H200)" in text
    assert re.search(r"verdict\s+PASS \(verified\)", text)
    assert re.search(r"verified runtime\s+0\.25 ms \(mean of 100 samples", text)
    assert re.search(r"observed runtime\s+0\.25 ms", text)
    assert re.search(r"reference runtime\s+1 ms", text)
    assert re.search(r"speedup\s+4\.00x", text)
    assert "RH-41 warning Speedup over the reference exceeds the plausibility bound" in text
    assert "uv run kernelguard explain RH-41" in text and "out/record.json" in text
    assert len(text.splitlines()) < 20


def test_summary_of_a_failed_record_has_no_trusted_numbers():
    rac = _load_run_and_check()
    record = _pass_record()
    rh = record["reward_hardening"]
    rh.update(integrity_status="FAIL", verified=False, verified_correctness=False, verified_runtime=None,
              verified_runtime_stats={})
    rh["findings"][0].update(code="RH-19", severity="error", summary="Output depends on call history")
    text = rac.format_summary(record)
    assert re.search(r"verdict\s+FAIL: no trusted runtime", text)
    assert re.search(r"verified runtime\s+none", text)
    assert re.search(r"speedup\s+none verified \(observed 4\.00x, not trusted\)", text)
    assert "json=true" in text


def test_run_and_check_prints_the_block_not_the_json(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("exercises the no-CUDA record, which needs no worker")
    out = tmp_path / "r.json"
    base = ["scripts/run_and_check.py", "ref_origin=local", "ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py",
            "kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py", "reward_hardening_mode=enforce"]
    proc = _py(*base, f"output_file={out}")
    assert proc.returncode == 3, proc.stderr  # UNSUPPORTED: exit 3 and the device=cpu hint, as the batch does
    assert proc.stderr.strip().endswith("pass device=cpu to evaluate on the CPU")
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == ("[KernelGuard] integrity_status=UNSUPPORTED verified_runtime=None "
                         "verified_reference_runtime=None findings=RH-14")
    assert '"schema_version"' not in proc.stdout and len(lines) < 20
    assert re.search(r"verdict\s+UNSUPPORTED: CUDA unavailable", proc.stdout)
    assert "RH-14 error" in proc.stdout and str(out) in proc.stdout
    record = json.loads(out.read_text())
    assert record["reward_hardening"]["integrity_status"] == "UNSUPPORTED"
    proc = _py(*base, "json=true")
    assert proc.returncode == 3, proc.stderr
    body = proc.stdout.strip().rsplit("\n", 1)
    assert json.loads(body[0]) == record and body[1].startswith("[KernelGuard] integrity_status=UNSUPPORTED")


# --------------------------------------------------------------------------- item 8: extras and hints
def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=;!~]", r, maxsplit=1)[0].lower() for r in requirements}


def test_generation_and_hf_are_extras_and_the_dev_group_keeps_them():
    project = _pyproject()
    base = _names(project["project"]["dependencies"])
    assert {"torch", "numpy", "tqdm", "pydra-config", "pydantic", "pyyaml"} <= base
    assert not base & {"litellm", "python-dotenv", "datasets", "dill"}
    extras = project["project"]["optional-dependencies"]
    assert {"litellm", "python-dotenv"} <= _names(extras["gen"]) and "datasets" in _names(extras["hf"])
    dev = project["dependency-groups"]["dev"]
    assert any(r.replace(" ", "").startswith("kernelbench-guard[gen,hf,ray]") for r in dev)
    assert project["project"]["scripts"]["kernelguard"] == "kernelbench.__main__:main"


def test_missing_litellm_gives_the_gen_hint(monkeypatch):
    from kernelbench import utils
    from kernelbench._optional import MissingExtra

    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm -> ModuleNotFoundError
    with pytest.raises(MissingExtra, match=r"litellm .*'gen' extra \(uv sync --extra gen, or pip install "
                                           r"'kernelbench-guard\[gen\]'\)"):
        utils.query_server("hi", server_type="openai", model_name="gpt-4o-mini", mock_response="ok")


def test_missing_datasets_gives_the_hf_hint(monkeypatch):
    from kernelbench._optional import MissingExtra
    from kernelbench.dataset import construct_kernelbench_dataset

    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingExtra, match=r"datasets .*dataset_src=huggingface.*uv sync --extra hf"):
        construct_kernelbench_dataset(1, source="huggingface")


def test_require_keeps_errors_from_inside_an_installed_package(monkeypatch):
    import importlib

    from kernelbench import _optional

    def broken(name):
        raise ModuleNotFoundError("No module named 'openai'", name="openai")

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="openai") as info:
        _optional.require("litellm")
    assert not isinstance(info.value, _optional.MissingExtra)


def test_missing_extra_in_a_script_is_one_line(monkeypatch, capsys):
    from kernelbench.cli import KBConfig, cli_main
    from kernelbench._optional import require

    class Cfg(KBConfig):
        def __init__(self):
            self.x = 1

    monkeypatch.setitem(sys.modules, "datasets", None)
    entry = cli_main(Cfg)(lambda cfg: require("datasets"))
    with pytest.raises(SystemExit) as info:
        entry([])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and "--extra hf" in err[0]


BLOCK_EXTRAS = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('litellm', 'dotenv', 'datasets', 'tenacity'):
            raise ModuleNotFoundError(f'blocked {name}', name=name)
sys.meta_path.insert(0, _Block())
"""


def test_evaluation_runs_without_the_gen_and_hf_extras(tmp_path):
    """The evaluator's modules and run_and_check's hardened path import none of the extras."""
    out = tmp_path / "r.json"
    code = BLOCK_EXTRAS + f"""
import runpy
import kernelbench, kernelbench.eval, kernelbench.batch, kernelbench.timing, kernelbench.score
import kernelbench.analysis, kernelbench.utils, kernelbench.dataset, kernelbench.prompt_constructor
import kernelbench.reward_hardening, kernelbench.reward_hardening.parent.pipeline, kernelbench.explain
sys.path.insert(0, 'scripts')
sys.argv = ['run_and_check.py', 'ref_origin=local', 'ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py',
            'kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py', 'reward_hardening_mode=enforce',
            'device=cuda', 'output_file={out}']
try:
    runpy.run_path('scripts/run_and_check.py', run_name='__main__')
except SystemExit as exc:
    import torch
    assert exc.code in (None, 0) or (exc.code == 3 and not torch.cuda.is_available()), exc.code
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'dotenv', 'datasets'))
assert not bad, bad
print('EXTRAS-FREE OK')
"""
    proc = _py("-c", code)
    assert proc.returncode == 0 and "EXTRAS-FREE OK" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "[KernelGuard] integrity_status=" in proc.stdout and out.is_file()


def test_readme_dependency_text_matches_pyproject():
    project = _pyproject()
    for name in ("README.md", "README.zh-CN.md"):
        text = (REPO / name).read_text()
        install = text.split("\n## ")[[i for i, part in enumerate(text.split("\n## "))
                                        if part.startswith(("Installation", "安装"))][0]]
        assert "dill" not in install and "GPU DSL" not in install, name
        for dep in _names(project["project"]["dependencies"]):
            assert dep in install, (name, dep)
        for extra, reqs in project["project"]["optional-dependencies"].items():
            assert f"`{extra}`" in install and all(r in install for r in _names(reqs)), (name, extra)
        assert "--torch-backend cpu" in install and "uv venv" in install, name
