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
bundled demo tasks), ``plot`` (PNG path for a fast_p / verified_fast_p chart).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

from pydra import REQUIRED  # noqa: E402

from kernelbench.analysis import (  # noqa: E402
    AnalysisError,
    analyze_run_files,
    format_report,
    plot_fast_p,
    resolve_repo_path,
)
from kernelbench.cli import ConfigError, KBConfig, cli_main  # noqa: E402

_OPTIONAL_PATH_KEYS = (
    "baseline_file",
    "verified_eval_file",
    "eval_results_dir",
    "output_file",
    "dataset_path",
    "plot",
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
        self.plot = None  # PNG path: fast_p and verified_fast_p against p

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
        png = plot_fast_p(analysis, resolve_repo_path(config.plot, REPO_ROOT))
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
