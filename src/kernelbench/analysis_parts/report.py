"""The human-readable analysis report (parent process, or any tool reading results).

:func:`format_report` turns the analysis dictionary into text: the rates, the fast_p
beside verified_fast_p table, integrity counts, top finding codes, the per-problem table
and the pass@k blocks (tables drawn by tabulate, imported when a table is drawn).
"""

from __future__ import annotations

from typing import Any, Mapping

from kernelbench.analysis_parts.inputs import PASS_AT_K_NAME, VERIFIED_RESULTS_NAME

def _grid(headers: list[str], rows: list[list[str]]) -> str:
    """A boxed table (tabulate's ``grid`` format), cells as given: no number re-formatting."""
    from tabulate import tabulate

    return tabulate(rows, headers=headers, tablefmt="grid", disable_numparse=True)


def _conf_note(analysis: Mapping[str, Any], which: str) -> str:
    conf = (analysis.get("configuration") or {}).get(which)
    if not conf:
        return ""
    return ", " + "/".join(str(conf[k]) for k in ("mode", "policy", "device") if conf.get(k) is not None)


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_report(analysis: Mapping[str, Any]) -> str:
    """Human-readable summary: rates, a fast_p / verified_fast_p table, integrity counts."""
    total = analysis["total_count"]
    has_verified = "verified_fast_p" in analysis
    lines = [
        "-" * 80,
        f"Eval summary for {analysis['run_name']} (level {analysis['level']}, "
        f"hardware {analysis['hardware']}, baseline {analysis['baseline']})",
        "-" * 80,
        f"Total test cases with eval results: {analysis['total_eval']} out of {total}"
        f" (upstream metrics from {analysis['fast_p_source']}{_conf_note(analysis, 'upstream')})",
        f"Successfully compiled: {analysis['compiled_count']}",
        f"Functionally correct: {analysis['correct_count']}",
        f"Compilation rate: {analysis['compilation_rate'] * 100:.1f}%",
        f"Correctness rate: {analysis['correctness_rate'] * 100:.1f}%",
        f"Problems aligned with the baseline (fast_p denominator): {analysis['aligned_count']}",
        f"Geometric mean of speedup for correct samples: {_fmt(analysis['geo_mean_speedup'])}",
    ]
    if has_verified:
        lines += [
            f"Verified metrics from {VERIFIED_RESULTS_NAME}{_conf_note(analysis, 'verified')}",
            f"Verified (integrity PASS with a trusted runtime): {analysis['verified_count']} out of {total}",
            f"Geometric mean of verified speedup: {_fmt(analysis['verified_geo_mean_speedup'])}",
        ]
    verified_fp = analysis.get("verified_fast_p", {})
    rows = [
        [key, _fmt(value), _fmt(verified_fp.get(key)) if has_verified else "n/a"]
        for key, value in analysis["fast_p"].items()
    ]
    lines += ["", "Fast_p results (per problem, sample 0, against the baseline file's times; the batch's "
              "'verified fast_1' counts samples against the reference timed beside each one):",
              _grid(["p", "fast_p", "verified_fast_p"], rows)]
    if has_verified and analysis.get("speedup_statistic") == "lcb":
        lines.append("(verified_fast_p counts each verified problem at its baseline speedup times the in-run "
                     "bound's lower_bound / point: speedup_statistic=lcb; speedup_statistic=mean counts the mean)")
    if not has_verified:
        lines.append("(no verified_eval_results.json: verified metrics unavailable)")
    else:
        status_rows = [[s, str(c)] for s, c in analysis["integrity_status_counts"].items()]
        lines += ["", "Integrity status counts:", _grid(["status", "problems"], status_rows)]
        codes = analysis["top_finding_codes"]
        if codes:
            code_rows = [[c["code"], str(c["count"])] for c in codes]
            lines += ["", "Top finding codes:", _grid(["code", "problems"], code_rows)]
        else:
            lines += ["", "Top finding codes: none"]
    rows_pp = analysis.get("per_problem") or []
    if rows_pp:
        headers = ["id", "problem", "n", "runtime ms", "spread ms", "baseline ms", "speedup"]
        if has_verified:
            headers += ["integrity", "verified ms", "verified speedup", "in-run speedup (lower bound)"]
        table = []
        for r in rows_pp:
            row = [r["problem_id"], r["name"], r["samples"], _fmt_opt(r["runtime"]), _fmt_opt(r["spread"]),
                   _fmt_opt(r["baseline"]), _fmt_opt(r["speedup"], "x")]
            if has_verified:
                row += [r.get("integrity_status", ""), _fmt_opt(r.get("verified_runtime")),
                        _fmt_opt(r.get("verified_speedup"), "x"), _fmt_inrun(r)]
            table.append([str(c) for c in row])
        lines += ["", "Per problem (sample 0; n = samples with a record; spread = std of the timed trials; "
                  "speedup = baseline / runtime, correct or verified samples only):", _grid(headers, table)]
    block = analysis.get("pass_at_k")
    if block:
        where = block.get("source") or PASS_AT_K_NAME
        conf = "/".join(str(block[k]) for k in ("mode", "policy", "device") if block.get(k) is not None)
        lines += ["", f"Pass@k from {PASS_AT_K_NAME} (records of {where}" + (f", {conf}" if conf else "") + "):"]
        if block.get("correct_means"):
            lines.append(f"  correct = {block['correct_means']}")
        for title, key in (("Pass@k evaluation metadata:", "metadata"), ("Average pass@k metrics:", "averages"),
                           ("Average verified pass@k (integrity PASS only):", "verified_averages")):
            items = block.get(key) or {}
            if isinstance(items, Mapping) and items:
                lines += ["", title, _grid(["metric", "value"], [[str(k), _fmt(v)] for k, v in items.items()])]
    return "\n".join(lines)


def _fmt_inrun(row: Mapping[str, Any]) -> str:
    """``1.02x (>= 0.97x)``: the in-run point estimate and its lower confidence bound."""
    point, lcb = row.get("inrun_speedup"), row.get("inrun_speedup_lcb")
    if point is None:
        return "-"
    return f"{point:.3g}x (>= {lcb:.3g}x)"


def _fmt_opt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.3g}{unit}"
