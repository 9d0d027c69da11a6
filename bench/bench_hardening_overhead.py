"""Wall time per candidate: off vs audit vs enforce, plus worker start latency.

    uv run python bench/bench_hardening_overhead.py --device cpu --out docs/validation/bench_cpu.json

For every bundled demo problem the honest solution is evaluated three ways in this one
run: the off-mode evaluator in a disposable worker (as ``eval_from_generations`` does),
and the hardened path in audit and enforce modes (policy ``practical``, since the
demo solutions are plain PyTorch).  Ratios to ``off`` are reported per problem and as
a geometric mean.  Worker start latency compares a forkserver worker (torch preloaded)
with a fresh ``python -c 'import torch'`` interpreter.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def worker_start_latency(n: int) -> dict:
    from kernelbench.procs import run_oneshot

    run_oneshot("os:getpid", {}, timeout=120, workspace=tempfile.mkdtemp())  # start the forkserver
    fork = []
    for _ in range(n):
        t = time.perf_counter()
        out = run_oneshot("os:getpid", {}, timeout=60, workspace=tempfile.mkdtemp())
        assert out["ok"], out
        fork.append(time.perf_counter() - t)
    fresh = []
    for _ in range(max(2, n // 5)):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        fresh.append(time.perf_counter() - t)
    return {"forkserver_worker_s": statistics.median(fork), "fresh_interpreter_s": statistics.median(fresh),
            "speedup": statistics.median(fresh) / statistics.median(fork), "n": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--num-perf-trials", type=int, default=20)
    ap.add_argument("--no-profile", action="store_true", help="also skip the profiler pass (hardened modes)")
    args = ap.parse_args()

    from kernelbench.batch import WorkItem, off_mode_evaluator
    from kernelbench.dataset import construct_kernelbench_dataset
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened

    class OffCfg:
        num_correct_trials = 5
        num_perf_trials = args.num_perf_trials
        measure_performance = True
        timing_method = "cuda_event" if args.device.startswith("cuda") else "host_time"
        backend = "cuda"
        precision = "fp32"
        verbose = False
        timeout = 600

    off_eval = off_mode_evaluator(OffCfg)
    startup = worker_start_latency(10)
    rows = []
    for level in [int(x) for x in args.levels.split(",")]:
        ds = construct_kernelbench_dataset(level, base_path="demo")
        for pid in ds.get_problem_ids():
            p = ds.get_problem_by_id(pid)
            sol = (REPO / "src/kernelbench/demo_tasks/solutions" / f"level{level}" / p.name).read_text()
            row = {"problem": f"L{level}/{p.name}"}
            with tempfile.TemporaryDirectory() as d:
                path = Path(d) / "k.py"
                path.write_text(sol)
                t = time.perf_counter()
                rec = off_eval(WorkItem(pid, 0, str(path), p.path, p.code, p.name), args.device, d)
                row["off_s"] = time.perf_counter() - t
                row["off_correct"] = rec["correctness"]
            for mode in ("audit", "enforce"):
                cfg = HardeningConfig(mode=mode, policy="practical", device=args.device, timeout=600,
                                      num_perf_trials=args.num_perf_trials, profile_backend=not args.no_profile)
                t = time.perf_counter()
                r = evaluate_hardened(p.code, sol, cfg)
                row[f"{mode}_s"] = time.perf_counter() - t
                row[f"{mode}_status"] = r["reward_hardening"]["integrity_status"]
            rows.append(row)
            print(f"{row['problem']:<42} off {row['off_s']:6.2f}s  audit {row['audit_s']:6.2f}s "
                  f"({row['audit_status']})  enforce {row['enforce_s']:6.2f}s ({row['enforce_status']})", flush=True)

    def gm(key):
        return math.exp(statistics.mean(math.log(r[key] / r["off_s"]) for r in rows))

    summary = {"audit_over_off_geomean": gm("audit_s"), "enforce_over_off_geomean": gm("enforce_s"),
               "median_off_s": statistics.median(r["off_s"] for r in rows),
               "median_audit_s": statistics.median(r["audit_s"] for r in rows),
               "median_enforce_s": statistics.median(r["enforce_s"] for r in rows)}
    print()
    print("| metric | value |\n|---|---|")
    for k, v in {**summary, **startup}.items():
        print(f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |")
    out = {"device": args.device, "num_perf_trials": args.num_perf_trials, "profile": not args.no_profile,
           "rows": rows, "summary": summary, "worker_start": startup}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
