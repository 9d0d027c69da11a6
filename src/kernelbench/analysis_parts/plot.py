"""The fast_p plot of an analysis (parent process, or any tool reading results).

The ``plot`` option's parsing, the default PNG path, and :func:`plot_fast_p`, which
imports matplotlib (the ``plot`` extra) only when it draws.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from kernelbench.analysis_parts.inputs import AnalysisError

_PLOT_ON = {"true", "yes", "on", "1"}
_PLOT_OFF = {"", "none", "false", "no", "off", "0"}


def parse_plot_option(value: Any) -> bool | str | None:
    """The ``plot`` key: None/false -> no plot, true -> the default file, anything else a path.

    pydra parses ``plot=True`` into the boolean True (and ``plot=1`` into 1); those
    and ``true``/``yes``/``on`` in any case select the default file name.
    """
    if value is None or value is False:
        return None
    if value is True:
        return True
    text = str(value).strip()
    if text.lower() in _PLOT_OFF:
        return None
    if text.lower() in _PLOT_ON:
        return True
    return text


def default_plot_path(run_dir: str | os.PathLike, level: int, baseline: str,
                      output_file: str | os.PathLike | None = None) -> Path:
    """Beside the analysis JSON (``<output_file>`` with ``.png``) when there is one, else in the run dir."""
    if output_file is not None:
        return Path(output_file).with_suffix(".png")
    return Path(run_dir) / f"fast_p_level{level}_{baseline}.png"


def plot_fast_p(analysis: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write a PNG: fast_p (and verified_fast_p) against p, and the per-problem speedups.

    matplotlib is imported lazily with the Agg backend (``plot`` extra / dev group).
    """
    from kernelbench._optional import MissingExtra, require

    try:
        matplotlib = require("matplotlib")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except MissingExtra as exc:
        raise AnalysisError(str(exc)) from None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ps = [float(k) for k in analysis["fast_p"]]
    rows = analysis.get("per_problem") or []
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 1.4]})
    try:
        # fast_p wide and solid, verified_fast_p narrow and dashed on top: both stay visible where they coincide
        ax.plot(ps, list(analysis["fast_p"].values()), marker="o", markersize=9, linewidth=4, alpha=0.5,
                label="fast_p")
        if "verified_fast_p" in analysis:
            ax.plot(ps, [analysis["verified_fast_p"][k] for k in analysis["fast_p"]], marker="s", markersize=4,
                    linewidth=1.5, linestyle="--", color="black", label="verified_fast_p")
        ax.set_xlabel("speedup threshold p")
        ax.set_ylabel("fraction of problems")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{analysis['run_name']} level {analysis['level']} vs {analysis['baseline']}")
        ax.grid(True, alpha=0.3)
        ax.legend()
        # per-problem speedups against the baseline (0 where none: incorrect, unverified or no record)
        xs = list(range(len(rows)))
        verified = "verified_fast_p" in analysis
        width = 0.4 if verified else 0.8
        bx.bar([x - (width / 2 if verified else 0) for x in xs], [r.get("speedup") or 0.0 for r in rows],
               width=width, label="speedup")
        if verified:
            bx.bar([x + width / 2 for x in xs], [r.get("verified_speedup") or 0.0 for r in rows], width=width,
                   label="verified speedup")
        bx.axhline(1.0, color="grey", linewidth=1, linestyle=":")
        bx.set_xticks(xs)
        bx.set_xticklabels([str(r["problem_id"]) for r in rows])
        bx.set_xlabel("problem id")
        bx.set_ylabel("baseline / runtime")
        bx.set_title("per-problem speedup (sample 0)")
        bx.grid(True, axis="y", alpha=0.3)
        bx.legend()
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path
