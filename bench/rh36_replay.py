"""Replay RH-36's rule on the timing samples saved by ``aa_calibration.py`` runs.

RH-36 compares each CUDA sample's host interval with its event time.  This script takes
the candidate samples every run of an A/A or power-arm JSON recorded (event, host and
GPU-window times) and applies the shipped rule to them, next to the rule as it was
before host stalls were charged (a finding at two rejected samples and more than 5 %):
per problem, the runs each rule would fail, the most samples a run had rejected, and how
far charging the candidate's rejected samples moved the run's point estimate (median
reference / median candidate).
Every run replayed is the reference against itself or a slowed copy of it, so every
finding counted here is a false one.

    python bench/rh36_replay.py docs/validation/h200/run43_h100_aa_power_a.json ... \\
        --out docs/validation/h200 --name run43_rh36_replay

Prints the table and writes ``<name>.json`` and ``<name>.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kernelbench.reward_hardening.config import HardeningConfig  # noqa: E402
from kernelbench.reward_hardening.detectors import REGISTRY  # noqa: E402
from kernelbench.reward_hardening.detectors.timing import rejected_async_samples, sample_times  # noqa: E402
from kernelbench.reward_hardening.parent.evidence import Evidence, TimingSample  # noqa: E402
from kernelbench.runs import atomic_write_text  # noqa: E402


def _samples(side: dict | None) -> list[TimingSample]:
    if not side or not side.get("event_ms"):
        return []
    n = len(side["event_ms"])
    windows = side.get("window_ms") or [None] * n
    out = []
    for i in range(n):
        host_ns = int(side["host_ms"][i] * 1e6)
        out.append(TimingSample(i, 0, host_ns, 0, host_ns, host_ns, side["event_ms"][i], window_ms=windows[i],
                                block=(side.get("block") or [None] * n)[i]))
    return out


def replay(paths: list[str]) -> list[dict]:
    """One row per problem and arm: the runs, the old and new rule's findings, charging's effect."""
    cfg = HardeningConfig(mode="enforce", device="cuda")
    rows: dict[tuple, dict] = {}
    for path in paths:
        for problem, arms in json.loads(Path(path).read_text())["results"].items():
            for arm, runs in arms.items():
                if not isinstance(runs, list):
                    continue
                for run in runs:
                    cand = _samples((run.get("samples") or {}).get("candidate"))
                    ref = _samples((run.get("samples") or {}).get("reference"))
                    if not cand or any(s.event_ms is None for s in cand):
                        continue
                    ev = Evidence(config=cfg, samples=cand)
                    rejected = len(rejected_async_samples(ev))
                    old = rejected >= max(2, int(0.05 * len(cand)) + 1)
                    new = bool(REGISTRY["RH-36"].func(ev))
                    row = rows.setdefault((problem, arm), {"problem": problem, "arm": arm, "runs": 0, "old_rule_fails": 0,
                                                           "new_rule_fails": 0, "max_rejected": 0,
                                                           "max_point_shift": 0.0})
                    row["runs"] += 1
                    row["old_rule_fails"] += old
                    row["new_rule_fails"] += new
                    row["max_rejected"] = max(row["max_rejected"], rejected)
                    if ref:  # the reference's samples count as measured
                        ref_med = statistics.median(s.event_ms for s in ref)
                        raw = ref_med / statistics.median(s.event_ms for s in cand)
                        charged = ref_med / statistics.median(sample_times(ev))
                        row["max_point_shift"] = max(row["max_point_shift"], round(abs(charged / raw - 1), 4))
    return list(rows.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", metavar="JSON", help="aa_calibration.py outputs")
    ap.add_argument("--out", default=None, help="folder for <name>.json and <name>.md")
    ap.add_argument("--name", default="rh36_replay")
    args = ap.parse_args(argv)
    rows = replay(args.paths)
    table = tabulate([[r["problem"][:40], r["arm"], r["runs"], r["max_rejected"], r["old_rule_fails"],
                       r["new_rule_fails"], f"{100 * r['max_point_shift']:.2f} %"] for r in rows],
                     headers=["problem", "arm", "runs", "most rejected samples", "RH-36 before", "RH-36 now",
                              "largest point shift"], tablefmt="github")
    runs = sum(r["runs"] for r in rows)
    summary = (f"{runs} runs of honest code replayed: RH-36 fired in {sum(r['old_rule_fails'] for r in rows)} "
               f"under the earlier rule and {sum(r['new_rule_fails'] for r in rows)} under the shipped one; "
               f"charging moved a point estimate by at most "
               f"{100 * max((r['max_point_shift'] for r in rows), default=0):.2f} %")
    print(table)
    print()
    print(summary)
    if args.out:
        out = Path(args.out)
        atomic_write_text(out / f"{args.name}.json", json.dumps({"inputs": args.paths, "rows": rows,
                                                                 "summary": summary}, indent=1))
        atomic_write_text(out / f"{args.name}.md", "# RH-36 replayed on saved samples\n\n```\npython bench/rh36_replay.py "
                          + " ".join(Path(p).name for p in args.paths) + "\n```\n\n" + table + "\n\n" + summary + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
