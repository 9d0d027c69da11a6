"""Evaluate one candidate against one reference and print correctness and speedup.

    uv run python scripts/run_and_check.py ref_origin=local \
        ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py \
        kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py \
        eval_mode=local reward_hardening_mode=enforce reward_hardening_policy=source_strict

Upstream keys and defaults, plus ``dataset_path``, ``device`` (``cuda``/``cpu``),
``reward_hardening_mode`` (off/audit/enforce), ``reward_hardening_policy``,
``measure_torch_compile`` (default: on for CUDA, off for CPU), ``allow_tf32``,
``output_file`` (write the result record as JSON) and ``json`` (print the whole record).
The candidate and the reference timings each run in a disposable worker process.

In ``audit``/``enforce`` mode the script prints a short block (verdict, verified and
observed runtime, reference runtime, speedup, findings with their summaries) and ends
with one machine-readable line::

    [KernelGuard] integrity_status=PASS verified_runtime=0.123 verified_reference_runtime=0.456 findings=-

The full schema-1.1 record goes to ``output_file=PATH``; ``json=true`` prints it too.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from pydra import REQUIRED

from kernelbench.cli import (
    DATASET_SOURCES,
    ConfigError,
    EvalKeysConfig,
    cli_main,
    project_root,
    validate_eval_keys,
)

REPO_ROOT = project_root()  # default runs/ and relative paths: the checkout, else the working directory


class ScriptConfig(EvalKeysConfig):
    BOOL_KEYS = EvalKeysConfig.BOOL_KEYS + ("measure_performance", "clear_cache", "check_kernel", "json")
    INT_KEYS = EvalKeysConfig.INT_KEYS
    OPTIONAL_INT_KEYS = ("level", "problem_id")
    FLOAT_KEYS = ("timeout",)
    CHOICES = {**EvalKeysConfig.CHOICES, "ref_origin": ("local", "kernelbench"), "dataset_src": DATASET_SOURCES}

    def __init__(self):
        self.set_eval_defaults()  # eval_mode, device, precision, backend, timing_method, trials, hardening keys
        self.ref_origin = REQUIRED
        self.ref_arch_src_path = ""
        self.dataset_src = "huggingface"
        self.dataset_name = "ScalingIntelligence/KernelBench"
        self.dataset_path = None
        self.level = None
        self.problem_id = None
        self.kernel_src_path = ""
        self.gpu = "L40S"
        self.timeout = 300
        self.measure_performance = True
        self.measure_torch_compile = None
        self.build_dir_prefix = ""
        self.clear_cache = False
        self.gpu_arch = None  # None: build for the visible GPU (upstream defaulted to ["Ada"])
        self.check_kernel = True
        self.output_file = None
        self.json = False  # print the whole record (hardened modes), not only the summary block

    def validate(self):
        validate_eval_keys(self)
        if not self.kernel_src_path:
            raise ConfigError("kernel_src_path", "is required")
        if self.ref_origin == "local" and not self.ref_arch_src_path:
            raise ConfigError("ref_arch_src_path", "is required when ref_origin=local")
        if self.ref_origin == "kernelbench" and (self.level is None or self.problem_id is None):
            raise ConfigError("level", "level and problem_id are required when ref_origin=kernelbench")
        if self.measure_torch_compile is not None:
            from kernelbench.cli import parse_bool

            self.measure_torch_compile = parse_bool("measure_torch_compile", self.measure_torch_compile)


def _resolve(path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() or p.exists() else REPO_ROOT / p


# Exit codes (README, "Evaluating one candidate")
EXIT_USAGE = 2  # bad key or value, missing file, unknown level or problem id (one line)
EXIT_UNSUPPORTED = 3  # the verdict is UNSUPPORTED (device=cuda without CUDA: pass device=cpu)
EXIT_DATASET = 5  # the dataset could not be fetched (offline Hugging Face Hub)


class ScriptError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def _read_source(key: str, value: str) -> tuple[Path, str]:
    path = _resolve(value)
    if not path.is_file():
        where = "" if Path(value).is_absolute() else " (relative paths are read from the working directory, " \
                                                     "then from the repository root)"
        raise ScriptError(f"{key}: no such file: {value}{where}")
    try:
        return path, path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{key}: cannot read {path}: {exc}") from None


def _load_reference(cfg) -> tuple[str, str]:
    if cfg.ref_origin == "local":
        path, code = _read_source("ref_arch_src_path", cfg.ref_arch_src_path)
        return path.name, code
    from kernelbench.dataset import DatasetUnavailable, construct_kernelbench_dataset

    try:
        ds = construct_kernelbench_dataset(cfg.level, source=cfg.dataset_src, dataset_name=cfg.dataset_name,
                                           base_path=cfg.dataset_path)
        problem = ds.get_problem_by_id(cfg.problem_id)
    except DatasetUnavailable as exc:
        raise ScriptError(str(exc), EXIT_DATASET) from None
    except (FileNotFoundError, ValueError) as exc:
        raise ScriptError(str(exc).strip().splitlines()[0]) from None
    return problem.name, problem.code


def _static_check(cfg, kernel_src: str) -> bool:
    try:
        from kernelbench.kernel_static_checker import validate_kernel_static
    except ImportError:
        return True
    valid, errors, warnings = validate_kernel_static(kernel_src, backend=cfg.backend, precision=cfg.precision)
    for w in warnings:
        print(f"[static check] warning: {w}")
    for e in errors:
        print(f"[static check] error: {e}")
    return valid


def _ms(value) -> str:
    """A time in ms with three significant figures and its unit; '-' when absent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return "-"
    return f"{value:.3g} ms"


def _mean(stats) -> float | None:
    mean = stats.get("mean") if isinstance(stats, dict) else None
    return mean if isinstance(mean, (int, float)) and not isinstance(mean, bool) and mean > 0 else None


def _samples(stats) -> str:
    if not isinstance(stats, dict) or not stats.get("num_trials"):
        return ""
    extra = f", median {_ms(stats['median'])}" if isinstance(stats.get("median"), (int, float)) else ""
    return f" (mean of {stats['num_trials']} samples{extra})"


def status_line(record: dict) -> str:
    """The last line of a hardened run, kept stable for scripts that grep it."""
    rh = record["reward_hardening"]
    return (f"[KernelGuard] integrity_status={rh['integrity_status']} verified_runtime={rh['verified_runtime']} "
            f"verified_reference_runtime={rh['verified_reference_runtime']} findings="
            f"{','.join(f['code'] for f in rh['findings']) or '-'}")


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def most_severe(findings: list[dict]) -> dict:
    """The finding to explain first: the most severe, the first reported among equals."""
    return min(findings, key=lambda f: _SEVERITY_RANK.get(str(f.get("severity")), 3))


def format_summary(record: dict, output_file: str | None = None) -> str:
    """A short, readable block for one hardened record (all times in milliseconds).

    Each finding gets one line of evidence (:func:`~kernelbench.reward_hardening.findings.describe`),
    never an exception message or a value of a call on hidden inputs.
    """
    from kernelbench.reward_hardening.findings import describe

    rh = record["reward_hardening"]
    meta = record.get("metadata") or {}
    status = rh["integrity_status"]
    where = meta.get("device") or "-"
    if meta.get("hardware") and meta.get("hardware") != where:
        where = f"{where} ({meta['hardware']})"
    reason = meta.get("reward_hardening_unsupported") or meta.get("reward_hardening_error")
    verdict = status + (" (verified)" if rh.get("verified") else f": {reason}" if reason else ": no trusted runtime")
    verified = rh.get("verified_runtime")
    observed = _mean(rh.get("observed_runtime_stats"))
    ref = rh.get("verified_reference_runtime") or _mean(rh.get("observed_reference_runtime_stats"))
    rows = [("verdict", verdict)]
    if verified:
        rows.append(("verified runtime", _ms(verified) + _samples(rh.get("verified_runtime_stats"))))
    else:
        rows.append(("verified runtime", "none (only a PASS earns one)"))
    rows.append(("observed runtime", (_ms(observed) + _samples(rh.get("observed_runtime_stats"))) if observed
                 else "not measured"))
    rows.append(("reference runtime", _ms(ref) if ref else "not measured"))
    if verified and rh.get("verified_reference_runtime"):
        rows.append(("speedup", f"{rh['verified_reference_runtime'] / verified:.2f}x (reference / verified runtime)"))
    elif observed and ref:
        rows.append(("speedup", f"none verified (observed {ref / observed:.2f}x, not trusted)"))
    else:
        rows.append(("speedup", "none"))
    trials = meta.get("correctness_trials")
    if trials:
        rows.append(("correctness", f"{str(trials).strip('()')} hidden-input calls matched"))
    findings = rh.get("findings") or []
    counts = {s: sum(1 for f in findings if f.get("severity") == s) for s in ("error", "warning", "info")}
    rows.append(("findings", "none" if not findings else
                 f"{len(findings)} ({', '.join(f'{n} {s}' for s, n in counts.items() if n)})"))
    missing = [name for name, cap in (rh.get("capabilities") or {}).items()
               if cap.get("required") and cap.get("status") != "AVAILABLE"]
    width = max(len(k) for k, _ in rows)
    lines = [f"KernelGuard {rh['mode']} / {rh['policy']} on {where}"]
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    for f in findings:
        lines.append(f"    {f['code']} {f.get('severity', ''):<7} {f.get('summary', '')}")
        line = describe(f)
        if line:
            lines.append(f"      {line}")
    if missing:
        lines.append(f"  {'missing':<{width}}  required capabilities: {', '.join(missing)}")
    if findings:
        worst = most_severe(findings)
        lines.append(f"  {'details':<{width}}  uv run kernelguard explain {worst['code']}"
                     f" (or {worst.get('more_info', 'docs/attack-catalog.md')})")
    record_hint = str(output_file) if output_file else "pass output_file=PATH to save it, or json=true to print it"
    lines.append(f"  {'full record':<{width}}  {record_hint}")
    return "\n".join(lines)


def main(cfg: ScriptConfig) -> int:
    try:
        return _main(cfg)
    except ScriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code


def _main(cfg: ScriptConfig) -> int:
    _, kernel_src = _read_source("kernel_src_path", cfg.kernel_src_path)
    ref_name, ref_src = _load_reference(cfg)
    from kernelbench.procs import start_forkserver

    start_forkserver()  # its torch import overlaps ours

    import torch

    from kernelbench.reward_hardening.config import default_build_dir

    if cfg.gpu_arch and cfg.device.startswith("cuda") and torch.cuda.is_available():
        from kernelbench.utils import set_gpu_arch

        set_gpu_arch(cfg.gpu_arch)
    # stable per-source build dir (upstream used the salted hash(), so builds were never reused)
    build_dir = Path(default_build_dir(kernel_src, str(Path(cfg.build_dir_prefix) / "kernelguard_builds")
                                       if cfg.build_dir_prefix else None))
    if cfg.clear_cache:
        import shutil

        shutil.rmtree(build_dir, ignore_errors=True)

    if cfg.reward_hardening_mode != "off":
        from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened

        hcfg = HardeningConfig.from_script_config(cfg, build_dir=str(build_dir))
        record = evaluate_hardened(ref_src, kernel_src, hcfg)
        if cfg.output_file:
            from kernelbench.runs import atomic_write_json

            atomic_write_json(cfg.output_file, record, indent=2)
        if cfg.json:
            print(json.dumps(record, indent=2))
        else:
            print(format_summary(record, cfg.output_file))
        print(status_line(record))
        if record["reward_hardening"]["integrity_status"] == "UNSUPPORTED":
            reason = (record.get("metadata") or {}).get("reward_hardening_unsupported") or "a required capability " \
                "is missing"
            hint = "; pass device=cpu to evaluate on the CPU" if cfg.device.startswith("cuda") and \
                not torch.cuda.is_available() else ""
            print(f"error: UNSUPPORTED: {reason}{hint}", file=sys.stderr)
            return EXIT_UNSUPPORTED
        return 0

    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: CUDA is not available; pass device=cpu to run on the CPU", file=sys.stderr)
        return 2
    if cfg.check_kernel and not _static_check(cfg, kernel_src):
        print("error: the static checker rejected the kernel (set check_kernel=False to skip)", file=sys.stderr)
        return 1
    device = "cuda:0" if cfg.device == "cuda" else cfg.device
    from kernelbench.procs import run_oneshot

    os.makedirs(build_dir, exist_ok=True)
    timing_method = cfg.timing_method if device.startswith("cuda") else "host_time"
    out = run_oneshot("kernelbench.batch:evaluate_single_sample", dict(
        ref_code=ref_src, kernel_code=kernel_src, device=device, build_dir=str(build_dir),
        num_correct_trials=cfg.num_correct_trials, num_perf_trials=cfg.num_perf_trials,
        measure_performance=cfg.measure_performance, timing_method=timing_method, backend=cfg.backend,
        precision=cfg.precision, verbose=cfg.verbose), timeout=cfg.timeout,
        workspace=str(build_dir / "workspace"), log_path=str(build_dir / "worker.log"))
    result = out["result"] if out["ok"] else {"compiled": False, "correctness": False, "runtime": -1.0,
                                               "metadata": {"error": out["error"]}}
    print("[eval] result:", json.dumps(result, indent=2))

    compile_too = cfg.measure_torch_compile if cfg.measure_torch_compile is not None else device.startswith("cuda")
    ref_times: dict[str, dict | None] = {}
    variants = [("eager", False)] + ([("torch.compile", True)] if compile_too else [])
    for label, use_compile in variants:
        ws = tempfile.mkdtemp(prefix="kb_ref_")
        r = run_oneshot(
            "kernelbench.timing:measure_ref_program_time",
            dict(ref_arch_name=ref_name, ref_arch_src=ref_src, num_trials=cfg.num_perf_trials,
                 timing_method=timing_method, use_torch_compile=use_compile, device=device,
                 precision=cfg.precision), timeout=cfg.timeout, workspace=ws)
        ref_times[label] = r["result"] if r["ok"] else None

    kernel_ms = result.get("runtime", -1.0)
    print("=" * 60)
    for label, stats in ref_times.items():
        print(f"[timing] reference {label}: {stats['mean'] if stats else 'failed'} ms")
    print(f"[timing] custom kernel: {kernel_ms} ms")
    out_record = {"kernel": result, "reference": ref_times}
    if result.get("correctness") and kernel_ms and kernel_ms > 0:
        for label, stats in ref_times.items():
            if stats and stats.get("mean", -1) > 0:
                speedup = stats["mean"] / kernel_ms
                out_record[f"speedup_vs_{label}"] = speedup
                print(f"[speedup] vs {label}: {speedup:.2f}x")
    else:
        print("[speedup] not computed: the kernel is not correct")
    if cfg.output_file:
        from kernelbench.runs import atomic_write_json

        atomic_write_json(cfg.output_file, out_record, indent=2)
    return 0


entry = cli_main(ScriptConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
