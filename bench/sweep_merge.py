"""Merge the JSON outputs of several ``upstream_sweep.py`` runs of one level into one table.

A full sweep of a level does not fit one command on a lent GPU (10 minutes a call), so it
is run in pieces (``--ids``), each writing its own ``<name>.json``.  This script puts the
pieces together: one row per problem id (the last run given wins when an id appears
twice, so list the runs oldest first), the run each row came from, a summary against
the honest-verdict goals (every problem PASS; no FAIL row; parent RSS < 2 GiB), the
level's enforce wall time (the records' and the batches') and where it went (the
records' ``request_ms`` summed, and the parts the judge timed inside its requests).
Runs made with ``--modes off,enforce`` also give the enforce/off wall-time ratio over all
of them: per problem as each run measured it (both modes in one call), the median and
the largest over the problems both modes passed, each run's first sample of a batch left
out as the run itself leaves it out, and a table of the problems above 1.5 with their
cause: ``kernels`` where the kernels themselves ran longer under enforce (strict fp32
against off's cuDNN TF32), ``protocol`` where they ran alike.

    python bench/sweep_merge.py --level 1 --out docs/validation/h200 --name level1_merged \\
        run_a.json run_b.json run_c.json

Prints the table and writes ``<name>.json`` and ``<name>.md`` to ``--out``.

``--compare`` instead sets two runs of the same problems side by side (for example the
same batch with ``--extra executor=ray`` and without): per problem the status and the
error-severity codes of each, and the total enforce wall time of each with their ratio;
the exit status is 1 when any verdict differs.

    python bench/sweep_merge.py --level 1 --compare local.json ray.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kernelbench.runs import atomic_write_text  # noqa: E402  (the one atomic writer)
# this folder: the sweep's own helpers
from upstream_sweep import above_lines, ratio_goal_met, ratio_stats, request_summary  # noqa: E402

LEVEL_SIZES = {1: 100, 2: 100, 3: 50}
GiB = 1 << 30


def _gib(n) -> str:
    return "" if not n else f"{n / GiB:.3g} GiB"


def merge(paths: list[Path], level: int) -> dict:
    rows: dict[int, dict] = {}
    runs = []
    replaced = 0  # rows of an earlier run that a later one replaced
    first: set[tuple[int, str]] = set()  # (id, run): that run left it out of its ratio (a batch's first sample)
    for p in paths:
        d = json.loads(p.read_text())
        first |= {(int(i), p.name) for i in (d.get("summary") or {}).get("ratio_excluded_first") or []}
        if int(d.get("config", {}).get("level", level)) != level:
            raise SystemExit(f"{p}: level {d['config'].get('level')}, expected {level}")
        batches = (d.get("batches") or {}).get("enforce") or []
        runs.append({"file": p.name, "command": d.get("command"), "config": d.get("config"), "env": d.get("env"),
                     "batch_wall_s": round(sum(float(b.get("wall_s") or 0.0) for b in batches), 1)})
        for r in d.get("rows", []):
            rec = r.get("enforce") or {}
            if rec.get("status") in (None, "NO RECORD"):
                continue  # not reached by that run (its batch timeout): another run may have it
            replaced += int(r["id"]) in rows
            rows[int(r["id"])] = {**r, "run": p.name}
    merged = [rows[i] for i in sorted(rows)]
    statuses = [r["enforce"]["status"] for r in merged]
    expected = LEVEL_SIZES.get(level)
    missing = sorted(set(range(1, expected + 1)) - set(rows)) if expected else []
    rss = [r["enforce"].get("parent_peak_rss_bytes") or 0 for r in merged]
    summary = {
        "level": level, "problems_with_record": len(merged), "problems_in_level": expected,
        "missing_ids": missing,
        "pass": statuses.count("PASS"),
        "fail": statuses.count("FAIL"),
        "not_pass": [{"id": r["id"], "status": r["enforce"]["status"], "main_finding": r["enforce"].get("main_finding"),
                      "explanation": (r["enforce"].get("explanation") or "")[:300]}
                     for r in merged if r["enforce"]["status"] != "PASS"],
        "max_parent_rss_bytes": max(rss, default=0),
        # PASS rows whose record lists the correctness probes judged (runs before the sweep kept
        # them show None) and their smallest count: judged plus skipped-with-a-reason
        "pass_probes_recorded": sum(1 for r in merged if r["enforce"]["status"] == "PASS"
                                   and r["enforce"].get("probes_judged") is not None),
        "pass_min_probes": min((r["enforce"]["probes_judged"] + len(r["enforce"].get("probes_skipped") or [])
                                for r in merged if r["enforce"]["status"] == "PASS"
                                and r["enforce"].get("probes_judged") is not None), default=None),
        "configs": sorted({json.dumps(run["config"], sort_keys=True) for run in runs}),
        # the level's enforce wall time: the records' own, and the batches' (each run's whole batch:
        # exact when no later run replaced a row of an earlier one)
        "records_wall_s": round(sum(float(r["enforce"].get("wall_s") or 0.0) for r in merged), 1),
        "batch_wall_s": round(sum(run["batch_wall_s"] for run in runs), 1),
        "rows_replaced": replaced,
    }
    summary["ratio"] = _ratio(merged, first)
    recs = [r["enforce"] for r in merged]
    requests = {"requests": request_summary(recs, top=12), "parts": request_summary(recs, top=16, parts=True)}
    return {"runs": runs, "rows": merged, "summary": summary, "where_the_time_went": requests}


def _ratio(rows: list[dict], first: set[tuple[int, str]]) -> dict | None:
    """The enforce/off wall-time ratio over the merged rows that have one (``None`` when no run measured off).

    Only problems both modes passed count, without the first sample of any run's batch
    (it also carries the start of that batch's worker pool), as ``upstream_sweep.py``
    counts them within one run, and with its statistics (``ratio_stats``).
    """
    rows = [r for r in rows if "ratio" in r]
    if not rows:
        return None
    both = [r for r in rows if r.get("ratio") is not None and (r.get("off") or {}).get("status") == "PASS"
            and r["enforce"].get("status") == "PASS" and (int(r["id"]), r["run"]) not in first]
    st = ratio_stats(both)
    return {**st, "left_out_first": sorted(int(r["id"]) for r in rows if (int(r["id"]), r["run"]) in first),
            "met": ratio_goal_met(st)}


def table(result: dict) -> str:
    off = result["summary"].get("ratio") is not None  # off mode measured beside enforce: its time and the ratio
    body = [[r["id"], r["name"][:42], _gib(r.get("input_bytes")), _gib(r.get("output_bytes")),
             r["enforce"].get("wall_s")] + ([(r.get("off") or {}).get("wall_s"), r.get("ratio")] if off else [])
            + [_gib(r["enforce"].get("parent_peak_rss_bytes")),
               _gib(r["enforce"].get("gpu_peak_bytes")), _probes(r["enforce"]), r["enforce"]["status"],
               r["enforce"].get("main_finding") or "", r["run"]] for r in result["rows"]]
    return tabulate(body, headers=["id", "name", "input", "output", "enforce s"] + (["off s", "ratio"] if off else [])
                    + ["parent RSS", "GPU peak", "probes", "status", "finding", "run"], tablefmt="github")


def _probes(rec: dict) -> str:
    n, skipped = rec.get("probes_judged"), rec.get("probes_skipped") or []
    return "" if n is None else f"{n}" + (f" (+{len(skipped)} skipped)" if skipped else "")


def summary_lines(result: dict) -> list[str]:
    s = result["summary"]
    lines = [f"level {s['level']}: {s['pass']} PASS of {s['problems_with_record']} problems with a record "
             f"({s['problems_in_level']} in the level); FAIL rows: {s['fail']}; "
             f"max parent RSS {_gib(s['max_parent_rss_bytes'])}"]
    if s.get("pass_probes_recorded"):
        lines.append(f"correctness probes listed by {s['pass_probes_recorded']} of {s['pass']} PASS records; "
                     f"fewest judged or skipped with a reason: {s['pass_min_probes']}")
    if s["missing_ids"]:
        lines.append(f"not yet run: {', '.join(map(str, s['missing_ids']))}")
    lines += [f"not PASS: L{s['level']}/{x['id']} {x['status']} {x['main_finding']}: {x['explanation']}"
              for x in s["not_pass"]]
    lines.append(f"enforce wall time: {s['records_wall_s']} s in the records, {s['batch_wall_s']} s in the runs' "
                 f"batches" + (f" ({s['rows_replaced']} rows of earlier runs replaced: the batches' sum counts "
                               "them twice)" if s["rows_replaced"] else ""))
    if s.get("ratio"):
        q = s["ratio"]
        lines.append(f"enforce/off wall time per sample (both modes in one call): median {q['median_ratio']}, max "
                     f"{q['max_ratio']} "
                     f"over {q['problems']} problems both modes passed (batches' first samples left out: "
                     f"{', '.join(map(str, q['left_out_first'])) or 'none'}); above 1.5: "
                     f"{', '.join(map(str, q['ratios_over_1_5'])) or 'none'}; goal median <= 1.0, none above 1.5: "
                     f"{'met' if q['met'] else 'not met'}")
        k = q["kernel_parity"]
        lines.append(f"  where the kernels ran alike in both modes (enforce/off runtime <= {k['limit']}; slower in "
                     f"enforce: {', '.join(map(str, k['slower_kernels'])) or 'none'}): median {k['median_ratio']}, max "
                     f"{k['max_ratio']} over {k['problems']}; above 1.5: "
                     f"{', '.join(map(str, k['ratios_over_1_5'])) or 'none'}")
    if len(s["configs"]) > 1:
        lines.append("WARNING: the runs used different settings: " + " | ".join(s["configs"]))
    return lines


def _verdict(row: dict) -> tuple:
    rec = row.get("enforce") or {}
    return rec.get("status"), tuple(sorted({f["code"] for f in rec.get("findings") or []
                                            if f.get("severity") == "error"}))


def compare(a: Path, b: Path) -> dict:
    """Two runs of the same problems: per-id verdicts and the wall-time totals of the ids both have."""
    ra = {int(r["id"]): r for r in json.loads(a.read_text()).get("rows", [])}
    rb = {int(r["id"]): r for r in json.loads(b.read_text()).get("rows", [])}
    both = sorted(i for i in set(ra) & set(rb) if _verdict(ra[i])[0] not in (None, "NO RECORD")
                  and _verdict(rb[i])[0] not in (None, "NO RECORD"))
    rows = [{"id": i, "a": _verdict(ra[i]), "b": _verdict(rb[i]), "same": _verdict(ra[i]) == _verdict(rb[i]),
             "a_wall_s": (ra[i].get("enforce") or {}).get("wall_s"),
             "b_wall_s": (rb[i].get("enforce") or {}).get("wall_s")} for i in both]
    wa = sum(r["a_wall_s"] or 0.0 for r in rows)
    wb = sum(r["b_wall_s"] or 0.0 for r in rows)
    # each run's first sample also carries its start (worker pool; for Ray the cluster and
    # the actors): the steady totals leave both runs' first samples out
    firsts = {next(iter(ra), None), next(iter(rb), None)}
    sa = sum(r["a_wall_s"] or 0.0 for r in rows if r["id"] not in firsts)
    sb = sum(r["b_wall_s"] or 0.0 for r in rows if r["id"] not in firsts)
    return {"a": a.name, "b": b.name, "rows": rows, "compared": len(rows),
            "only_one": sorted(set(ra) ^ set(rb)), "differ": [r["id"] for r in rows if not r["same"]],
            "a_wall_s": round(wa, 2), "b_wall_s": round(wb, 2), "b_over_a": round(wb / wa, 3) if wa else None,
            "first_ids": sorted(i for i in firsts if i is not None), "a_steady_wall_s": round(sa, 2),
            "b_steady_wall_s": round(sb, 2), "steady_b_over_a": round(sb / sa, 3) if sa else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", type=Path, help="upstream_sweep.py JSON outputs, oldest first")
    ap.add_argument("--level", type=int, required=True)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="two runs of the same problems")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--name", default=None, help="file stem (default upstream_sweep_level<L>_merged)")
    args = ap.parse_args(argv)
    if args.compare:
        c = compare(*args.compare)
        text = tabulate([[r["id"], r["a"][0], ",".join(r["a"][1]), r["b"][0], ",".join(r["b"][1]), r["a_wall_s"],
                          r["b_wall_s"], "same" if r["same"] else "DIFFERS"] for r in c["rows"]],
                        headers=["id", f"status {c['a']}", "errors", f"status {c['b']}", "errors", "wall s A",
                                 "wall s B", "verdict"], tablefmt="github")
        print(text)
        lines = [f"{c['compared']} problems in both; verdicts differ on {len(c['differ'])}: {c['differ']}",
                 f"total enforce wall {c['a_wall_s']} s vs {c['b_wall_s']} s (B/A {c['b_over_a']})",
                 f"without each run's first sample (id {', '.join(map(str, c['first_ids']))}: pool and cluster "
                 f"start) {c['a_steady_wall_s']} s vs {c['b_steady_wall_s']} s (B/A {c['steady_b_over_a']})"]
        print("\n" + "\n".join(lines))
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            stem = args.name or "sweep_compare"
            (args.out / f"{stem}.json").write_text(json.dumps(c, indent=1))
            (args.out / f"{stem}.md").write_text(f"# {c['a']} against {c['b']}\n\n{text}\n\n"
                                                 + "".join(f"- {x}\n" for x in lines))
        return 1 if c["differ"] else 0
    if not args.runs:
        ap.error("give the runs to merge, or --compare A B")
    result = merge(args.runs, args.level)
    text = table(result)
    lines = summary_lines(result)
    print(text)
    print()
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        name = args.name or f"upstream_sweep_level{args.level}_merged"
        md = [f"# Upstream KernelBench level {args.level}, merged from {len(result['runs'])} runs", "",
              "Runs (oldest first; a later run's row wins for an id in both):", ""]
        md += [f"- `{r['file']}`: `{r['command']}` (commit {(r.get('env') or {}).get('git_commit', '?')}, "
               f"src digest {(r.get('env') or {}).get('src_digest', 'not recorded')})" for r in result["runs"]]
        md += ["", "## Summary", ""] + [f"- {x}" for x in lines]
        md += above_lines((result["summary"].get("ratio") or {}).get("above_1_5") or [])
        where = result["where_the_time_went"]
        for title, key in (("Where the time went (the records' requests, largest first)", "requests"),
                           ("Inside the judge's requests (already counted above)", "parts")):
            if where[key]:
                md += ["", f"## {title}", "", tabulate([[x["request"], x["s"], x["n"], x["per_ms"]] for x in where[key]],
                                                        headers=["request", "s", "calls", "ms per call"],
                                                        tablefmt="github")]
        md += ["", "## Per problem", "", text, ""]
        for ext, content in ((".json", json.dumps(result, indent=1)), (".md", "\n".join(md))):
            atomic_write_text(args.out / f"{name}{ext}", content)
        print(f"[merge] wrote {args.out / (name + '.json')} and {args.out / (name + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
