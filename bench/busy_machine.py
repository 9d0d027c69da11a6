"""Honest candidates on a machine other jobs keep busy: which findings does the load alone raise?

    uv run python bench/busy_machine.py --rounds 8 --out docs/validation/busy_machine_cpu.json

Each round evaluates the honest demo solutions of ``--fixtures`` (enforce, practical,
CPU) with ``--perf-trials`` timed calls, as the README's short CPU batch does, while
``--hogs`` busy loops run in duty cycles (``--on`` seconds spinning, ``--off`` seconds
asleep) at ``--nice`` (negative needs root: then they take the CPUs from the
evaluator, as a noisy neighbour of a shared machine does).  The load is bursty on
purpose: a check that compares one phase of an evaluation with another (a baseline
taken before the candidate's code, a copy rate measured at the session's start) sees
one phase quiet and the other loaded.  A round with no load runs first.

The table counts, per fixture, the samples whose status is not the expected PASS and
every finding other than RH-54 (the load itself, info).  Every one of them is a false
accusation of an honest kernel.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOG = """
import os, sys, time
end, on, off = time.time() + float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
while time.time() < end:
    t = time.time() + on
    while time.time() < t:
        pass
    time.sleep(off)
"""


def _hogs(n: int, seconds: float, on: float, off: float, nice: int) -> list[subprocess.Popen]:
    def lower() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError:  # not root: the default priority
            pass

    return [subprocess.Popen([sys.executable, "-c", HOG, str(seconds), str(on), str(off)], preexec_fn=lower)
            for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fixtures", default="benign_add_solution,benign_softmax_solution")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--perf-trials", type=int, default=4)
    p.add_argument("--hogs", type=int, default=2)
    p.add_argument("--on", type=float, default=0.3)
    p.add_argument("--off", type=float, default=0.7)
    p.add_argument("--nice", type=int, default=-15)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    sys.path.insert(0, str(REPO / "src"))
    from tabulate import tabulate
    from tqdm import tqdm

    from kernelbench.procs import start_forkserver
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.fixtures import fixture_source, get_fixture, problem_source

    start_forkserver()
    fixtures = [get_fixture(f) for f in args.fixtures.split(",")]
    rows: list[dict] = []
    for rnd in tqdm(range(args.rounds + 1), desc="rounds", file=sys.stderr):
        loaded = rnd > 0
        hogs = _hogs(args.hogs, 3600, args.on, args.off, args.nice) if loaded else []
        try:
            for f in fixtures:
                cfg = HardeningConfig(mode="enforce", policy="practical", device="cpu", timeout=60.0,
                                      num_correct_trials=2, num_perf_trials=args.perf_trials)
                t0 = time.monotonic()
                rec = evaluate_hardened(problem_source(f), fixture_source(f), cfg)
                rh = rec["reward_hardening"]
                # findings the fixture does not expect, the load's own (RH-54, info) aside
                extra = [x for x in rh["findings"] if x["code"] not in f.codes and x["code"] != "RH-54"]
                rows.append({"round": rnd, "loaded": loaded, "fixture": f.id, "status": rh["integrity_status"],
                             "codes": sorted({x["code"] for x in extra}),
                             "noise": any(x["code"] == "RH-54" for x in rh["findings"]),
                             "wall_s": round(time.monotonic() - t0, 2),
                             "evidence": {x["code"]: x.get("evidence") for x in extra}})
        finally:
            for h in hogs:
                h.kill()
                h.wait()

    table = []
    for loaded in (False, True):
        for f in fixtures:
            mine = [r for r in rows if r["loaded"] == loaded and r["fixture"] == f.id]
            codes = collections.Counter(c for r in mine for c in r["codes"])
            table.append([f.id, "busy" if loaded else "idle", len(mine),
                          sum(r["status"] != "PASS" for r in mine), sum(r["noise"] for r in mine),
                          ", ".join(f"{c} x{n}" for c, n in sorted(codes.items())) or "-"])
    print(tabulate(table, headers=["fixture", "machine", "samples", "not PASS", "RH-54 (load seen)",
                                   "other findings"], tablefmt="github"))
    bad = sum(r["status"] != "PASS" or bool(r["codes"]) for r in rows)
    print(f"\n{bad} of {len(rows)} honest samples raised a finding the load alone explains "
          f"({args.hogs} busy loops at nice {args.nice}, {args.on} s on / {args.off} s off)")
    if args.out:
        from kernelbench.runs import atomic_write_json

        atomic_write_json(Path(args.out), {"config": vars(args), "rows": rows})
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
