"""Verified runtimes of the honest GPU red-team fixtures: this checkout against an older one, one machine, one call.

    git archive <old commit> src bench | tar -x -C .base      # an ignored folder
    PYTHONPATH=src python3 bench/runtime_compare.py --baseline-tree .base --runs 3 --out $OUT

Each run evaluates every honest CUDA fixture (``bench/gpu_validation.py --stages calibrate
--only-fixtures``, enforce, the fixture's own policy) once with each tree, in a fresh
process per tree and run; the order alternates run by run (old, new; new, old; ...) so a
drift of the GPU's clocks over the call weighs on both sides alike.  Per fixture the
script takes the median of the runs' verified runtimes on each side and prints the ratio
new / old; fixtures are matched across the renaming of the red-team corpus
(``bench/redteam_compare.py``'s ``RENAMES``).  It exits 1 when a fixture verified on the
old side lacks a verified runtime on the new one or when any ratio leaves
``1 +- --tolerance`` (default 5 %).  The JSON (``<out>/runtime_compare.json``) keeps every
run's rows.

Both trees need the pure-Python dependencies on ``PYTHONPATH`` (inherited) and a CUDA
device.  Extension builds are shared: both trees use the per-source build cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from redteam_compare import RENAMES  # noqa: E402


def fixture_key(label: str) -> str:
    """The fixture id of a calibrate label under the current naming (``fixture:gpu_honest_x`` -> ``benign_x``)."""
    name = label.split(":", 1)[1] if label.startswith("fixture:") else label
    return RENAMES.get(name, name)


def calibrate(tree: Path, out: Path, scale: int, trials: int, timeout: float,
              only: list[str] | None = None) -> dict:
    """One ``calibrate`` stage of ``tree``'s own gpu_validation.py in a fresh process; fixture -> row.

    ``only``: fixture ids to evaluate (the ones the other tree has), so neither side
    spends the call's time on fixtures nothing is compared with.
    """
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, str(tree / "bench" / "gpu_validation.py"), "--out", str(out), "--stages", "calibrate",
           "--only-fixtures", "--scales", str(scale), "--trials", str(trials)]
    if only:
        cmd += ["--candidates", ",".join(only)]
    t = time.time()
    with open(out / "calibrate.log", "w") as log:
        rc = subprocess.run(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
    data = json.loads((out / "validation.json").read_text()) if (out / "validation.json").exists() else {}
    rows = (data.get("calibrate") or {}).get("rows") or data.get("calibrate_partial") or []
    print(f"[compare] {tree.name or tree}: {len(rows)} fixtures in {time.time() - t:.0f} s (rc {rc})", flush=True)
    return {fixture_key(r["candidate"]): {"status": r["status"], "verified_ms": r["verified_ms"],
                                         "median_ms": r.get("median_ms"), "wall_s": r.get("wall_s")} for r in rows}


def spread(values: list[float]) -> float | None:
    """(max - min) / median of one side's runs (``None`` with fewer than two)."""
    if len(values) < 2:
        return None
    return round((max(values) - min(values)) / statistics.median(values), 4)


def compare(old_runs: list[dict], new_runs: list[dict], tolerance: float) -> tuple[list[dict], bool]:
    """Median verified runtime per fixture on each side, the ratio new/old, and whether all are inside tolerance."""
    rows, ok = [], True
    for key in sorted(set().union(*old_runs)):
        old = [r[key]["verified_ms"] for r in old_runs if r.get(key, {}).get("verified_ms")]
        new = [r[key]["verified_ms"] for r in new_runs if r.get(key, {}).get("verified_ms")]
        if not old:
            continue  # not verified before either: nothing to hold the new side to
        row = {"fixture": key, "old_ms": old, "new_ms": new, "old_median_ms": statistics.median(old),
               "new_median_ms": statistics.median(new) if new else None,
               # run-to-run spread of each side, (max - min) / median: a side whose own spread
               # is above the tolerance cannot resolve it with this many runs
               "old_spread": spread(old), "new_spread": spread(new)}
        row["ratio"] = round(row["new_median_ms"] / row["old_median_ms"], 4) if new else None
        # the same over each run's median sample (informational): a run whose mean moved with
        # a few slow samples moves this one little
        old_med = [r[key]["median_ms"] for r in old_runs if r.get(key, {}).get("median_ms")]
        new_med = [r[key]["median_ms"] for r in new_runs if r.get(key, {}).get("median_ms")]
        row["sample_median_ratio"] = (round(statistics.median(new_med) / statistics.median(old_med), 4)
                                      if old_med and new_med else None)
        row["within"] = row["ratio"] is not None and abs(row["ratio"] - 1) <= tolerance
        ok &= row["within"]
        rows.append(row)
    return rows, ok and bool(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-tree", required=True, help="folder holding the old commit's src/ and bench/")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=int, default=16, help="KERNELBENCH_DEMO_SCALE of the fixtures' problems")
    ap.add_argument("--trials", type=int, default=100, help="timed trials per evaluation")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=400, help="seconds per calibrate process")
    ap.add_argument("--fixtures", default=None,
                    help="comma-separated fixture names (substrings) to evaluate on both sides; default: all")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    picked = [f for f in (args.fixtures or "").split(",") if f]
    from tabulate import tabulate

    base, out = Path(args.baseline_tree).resolve(), Path(args.out)
    sides = {"old": base, "new": REPO}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for i in range(args.runs):
        for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
            # the new tree evaluates only the fixtures the old one had (known after its first run)
            only = sorted(runs["old"][0]) if side == "new" and runs["old"] else (picked or None)
            runs[side].append(calibrate(sides[side], out / f"{side}_{i}", args.scale, args.trials, args.timeout,
                                        only))
    rows, ok = compare(runs["old"], runs["new"], args.tolerance)
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    print(tabulate([[r["fixture"], f"{r['old_median_ms']:.4f}",
                     "-" if r["new_median_ms"] is None else f"{r['new_median_ms']:.4f}",
                     "-" if r["ratio"] is None else f"{r['ratio']:.3f}", "yes" if r["within"] else "NO",
                     pct(r["old_spread"]), pct(r["new_spread"]),
                     "-" if r["sample_median_ratio"] is None else f"{r['sample_median_ratio']:.3f}"]
                    for r in rows], headers=["fixture", "old ms (median)", "new ms (median)", "new/old",
                                             f"within {args.tolerance:.0%}", "old spread", "new spread",
                                             "new/old of median samples"]))
    (out / "runtime_compare.json").write_text(json.dumps(
        {"baseline_tree": str(base), "runs": args.runs, "scale": args.scale, "trials": args.trials,
         "tolerance": args.tolerance, "rows": rows, "all_within": ok, "raw": runs}, indent=2) + "\n")
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    print(f"\n{len(rows)} fixtures; ratio median {statistics.median(ratios):.3f}, range "
          f"{min(ratios):.3f}-{max(ratios):.3f}; " if ratios else f"\n{len(rows)} fixtures; ",
          "all within tolerance" if ok else "NOT all within tolerance", sep="")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
