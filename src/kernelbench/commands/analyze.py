"""Benchmark eval analysis: upstream fast_p next to the integrity-checked verified_fast_p.

Usage (from anywhere; relative paths are resolved against the repository root):

    uv run python scripts/benchmark_eval_analysis.py \\
        run_name=my_run level=1 hardware=H100_Modal baseline=baseline_time_torch

Reads ``runs/<run_name>/eval_results.json`` (upstream metrics, unchanged semantics)
and, when present, ``runs/<run_name>/verified_eval_results.json`` (verified metrics:
only integrity PASS records with a trusted ``verified_runtime`` count), plus
``results/timing/<hardware>/<baseline>.json``.  Optional keys: ``baseline_file``,
``verified_eval_file``, ``eval_results_dir`` (replaces ``runs/``), ``output_file``
(JSON), ``dataset_path`` (dataset root holding ``level{N}/``; ``demo`` for the
bundled demo tasks), ``plot`` (a fast_p / verified_fast_p chart: ``plot=true`` writes
it beside ``output_file`` as ``.png``, or in the run directory as
``fast_p_level{L}_{baseline}.png``; any other value is the PNG path; a second panel
shows the per-problem speedups), and ``reward_hardening_mode``,
``reward_hardening_policy``, ``device``: which records to analyse when the run holds
several configurations (a batch keeps one record per mode/policy/device);
``speedup_statistic`` (``lcb``, the default, or ``mean``): what ``verified_fast_p``
counts (see :func:`kernelbench.analysis.analyze_run`).

The analysis warns when the baseline does not fit the run: other hardware or device
than the records', problems missing from it, or another demo scale.  The shipped
``results/timing/H200/`` baselines are an NVIDIA H200 on the bundled demo set at
``KERNELBENCH_DEMO_SCALE=64``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydra import REQUIRED

from kernelbench.analysis import (
    AnalysisError,
    analyze_run_files,
    default_plot_path,
    format_report,
    parse_plot_option,
    plot_fast_p,
    resolve_repo_path,
)
from kernelbench.cli import ConfigError, KBConfig, cli_main, project_root

REPO_ROOT = project_root()  # baselines, runs/ and relative paths: the checkout, else the working directory

_OPTIONAL_PATH_KEYS = (
    "baseline_file",
    "verified_eval_file",
    "eval_results_dir",
    "output_file",
    "dataset_path",
)


class AnalysisConfig(KBConfig):
    INT_KEYS = ("level",)

    def __init__(self):
        super().__init__()
        self.run_name = REQUIRED  # runs/<run_name>/
        self.level = REQUIRED  # KernelBench level of the run
        self.hardware = REQUIRED  # results/timing/<hardware>/
        self.baseline = REQUIRED  # results/timing/<hardware>/<baseline>.json

        self.baseline_file = None  # replaces results/timing/<hardware>/<baseline>.json
        self.verified_eval_file = None  # replaces runs/<run_name>/verified_eval_results.json
        self.eval_results_dir = None  # replaces <repo>/runs
        self.output_file = None  # write the analysis JSON here
        self.dataset_path = None  # None: <repo>/KernelBench; "demo": bundled demo tasks
        self.plot = None  # true: default PNG beside the output; or a PNG path (fast_p against p)
        # which records, when the run holds several configurations (one record per mode/policy/device)
        self.reward_hardening_mode = None
        self.reward_hardening_policy = None
        self.device = None
        self.speedup_statistic = "lcb"  # verified_fast_p on the in-run lower bound (lcb) or the mean (mean)

    def validate(self) -> None:
        if self.level < 1:
            raise ConfigError("level", f"expected a level >= 1, got {self.level}")
        for key in ("run_name", "hardware", "baseline"):
            value = str(getattr(self, key)).strip()
            if not value:
                raise ConfigError(key, "must not be empty")
            setattr(self, key, value)
        for key in _OPTIONAL_PATH_KEYS:
            value = getattr(self, key)
            if value is None:
                continue
            text = str(value).strip()
            setattr(self, key, None if text == "" or text.lower() == "none" else text)
        self.plot = parse_plot_option(self.plot)  # None, True (default file name) or a path
        for key, accepted in (("reward_hardening_mode", ("off", "audit", "enforce")),
                              ("reward_hardening_policy", ("source_strict", "practical")),
                              ("device", ("cuda", "cpu")), ("speedup_statistic", ("lcb", "mean"))):
            value = getattr(self, key)
            if value is None or str(value).strip().lower() in ("", "none"):
                setattr(self, key, None)
                continue
            value = str(value).strip().lower()
            if key == "device":
                value = value.split(":", 1)[0]
            if value not in accepted:
                raise ConfigError(key, f"got {value!r}; accepted values: {', '.join(accepted)}")
            setattr(self, key, value)

    def __repr__(self) -> str:
        return f"AnalysisConfig({self.to_dict()})"


def _warn(message: str) -> None:
    print(f"[WARN] {message}", file=sys.stderr)


def run_analysis(config: AnalysisConfig) -> dict:
    analysis = analyze_run_files(
        run_name=config.run_name,
        level=config.level,
        hardware=config.hardware,
        baseline=config.baseline,
        baseline_file=config.baseline_file,
        verified_eval_file=config.verified_eval_file,
        eval_results_dir=config.eval_results_dir,
        dataset_path=config.dataset_path,
        root=REPO_ROOT,
        warn=_warn,
        mode=config.reward_hardening_mode,
        speedup_statistic=config.speedup_statistic or "lcb",
        policy=config.reward_hardening_policy,
        device=config.device,
    )
    print(format_report(analysis))
    if config.output_file is not None:
        out = resolve_repo_path(config.output_file, REPO_ROOT)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        with open(tmp, "w") as fh:
            json.dump(analysis, fh, indent=2)
            fh.write("\n")
        tmp.replace(out)
        print(f"\nAnalysis results saved to: {out}")
    if config.plot is not None:
        if config.plot is True:
            runs = REPO_ROOT / "runs"
            if config.eval_results_dir is not None:
                runs = resolve_repo_path(config.eval_results_dir, REPO_ROOT)
            out = resolve_repo_path(config.output_file, REPO_ROOT) if config.output_file else None
            target = default_plot_path(runs / config.run_name, config.level, config.baseline, out)
        else:
            target = resolve_repo_path(config.plot, REPO_ROOT)
            if target.is_dir():
                target = default_plot_path(target, config.level, config.baseline)
        png = plot_fast_p(analysis, target)
        print(f"Plot saved to: {png}")
    return analysis


@cli_main(AnalysisConfig)
def main(config: AnalysisConfig) -> dict | None:
    try:
        return run_analysis(config)
    except (AnalysisError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
