"""One batch under executor=local and executor=ray: verdict equality and a throughput table.

Fills a run directory per executor with the demo solutions of the chosen levels (one
sample per problem; ``--wrong`` replaces some with a wrong answer so the comparison
also covers FAIL verdicts), evaluates each with ``scripts/eval_from_generations.py``
under the same keys, and compares per sample: the integrity status, the error-severity
finding codes and the containment capabilities that are AVAILABLE.  Throughput is
samples per second of the whole command (Ray's cluster start and the actors' warm-up
included unless ``--ray-address`` names a running cluster, so use a batch large enough
for the start to be amortised).

    # the demo set on one 8-GPU host
    uv run --extra ray python bench/ray_vs_local.py --levels 1 2 3 --device cuda \\
        --num-gpus 8 --json docs/validation/ray_vs_local.json
    # a quick CPU check
    uv run --extra ray python bench/ray_vs_local.py --levels 1 --problems 1 2 3 --device cpu --num-gpus 2

Exit status 0 when every verdict matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, *a):\n        return torch.zeros_like(a[0])\n"


def _fill(runs_dir: Path, name: str, level: int, problems: list[int] | None, wrong: int) -> list[int]:
    sys.path.insert(0, str(REPO / "src"))
    from kernelbench.demo_run import build_demo_run

    run_dir, written, _ = build_demo_run(runs_dir, name, level)
    ids = sorted(int(p.name.split("_")[3]) for p in written)
    if problems:
        ids = [i for i in ids if i in problems]
    for pid in ids[:wrong]:
        (run_dir / f"level_{level}_problem_{pid}_sample_0_kernel.py").write_text(WRONG)
    return ids


def _run(runs_dir: Path, name: str, level: int, ids: list[int], executor: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), f"run_name={name}",
           "dataset_src=local", "dataset_path=demo", f"level={level}", f"problem_ids={ids}",
           f"device={args.device}", f"reward_hardening_mode={args.mode}", f"reward_hardening_policy={args.policy}",
           f"num_correct_trials={args.correct_trials}", f"num_perf_trials={args.perf_trials}",
           f"timeout={args.timeout}", f"runs_dir={runs_dir}", f"kernel_eval_build_dir={runs_dir / 'cache'}",
           f"executor={executor}", f"num_gpu_devices={args.num_gpus}"]
    if executor == "ray" and args.ray_address:
        cmd.append(f"ray_address={args.ray_address}")
    if executor == "ray" and args.device == "cpu":
        cmd.append(f"ray_actors={args.num_gpus}")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
    data = json.loads((runs_dir / name / "verified_eval_results.json").read_text())
    return {"wall_s": wall, "rc": proc.returncode, "records": data}


def _summary(rec: dict) -> dict:
    rh = rec.get("reward_hardening") or {}
    return {"status": rh.get("integrity_status"),
            "errors": sorted({f.get("code") for f in rh.get("findings", []) if f.get("severity") == "error"}),
            "available": sorted(k for k, c in (rh.get("capabilities") or {}).items()
                                if isinstance(c, dict) and c.get("status") == "AVAILABLE")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", type=int, nargs="+", default=[1])
    p.add_argument("--problems", type=int, nargs="*", help="problem ids (default: every demo problem)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--num-gpus", type=int, default=1, help="local mode's num_gpu_devices (CPU slots for cpu)")
    p.add_argument("--ray-address", default=None, help="a running cluster (default: start a local one)")
    p.add_argument("--mode", default="enforce", choices=("audit", "enforce"))
    p.add_argument("--policy", default="practical", choices=("practical", "source_strict"))
    p.add_argument("--correct-trials", type=int, default=5)
    p.add_argument("--perf-trials", type=int, default=100)
    p.add_argument("--timeout", type=float, default=180)
    p.add_argument("--wrong", type=int, default=1, help="problems per level given a wrong answer")
    p.add_argument("--json", type=Path, help="write the comparison here")
    args = p.parse_args()

    rows, mismatches = [], []
    with tempfile.TemporaryDirectory(prefix="ray_vs_local_") as tmp:
        for level in args.levels:
            out = {}
            for executor in ("local", "ray"):
                runs_dir = Path(tmp) / executor
                ids = _fill(runs_dir, f"l{level}", level, args.problems, args.wrong)
                out[executor] = _run(runs_dir, f"l{level}", level, ids, executor, args)
            for pid in sorted(out["local"]["records"], key=int):
                a = _summary(out["local"]["records"][pid][0])
                b = _summary((out["ray"]["records"].get(pid) or [{}])[0])
                same = a["status"] == b["status"] and a["errors"] == b["errors"]
                if not same or a["available"] != b["available"]:
                    mismatches.append({"level": level, "problem": int(pid), "local": a, "ray": b})
            for executor in ("local", "ray"):
                n = len(out[executor]["records"])
                rows.append({"level": level, "executor": executor, "samples": n, "rc": out[executor]["rc"],
                             "wall_s": round(out[executor]["wall_s"], 1),
                             "samples_per_s": round(n / out[executor]["wall_s"], 3) if out[executor]["wall_s"] else None})

    print(f"{'level':>5} {'executor':>8} {'samples':>7} {'wall s':>8} {'samples/s':>9}")
    for r in rows:
        print(f"{r['level']:>5} {r['executor']:>8} {r['samples']:>7} {r['wall_s']:>8} {r['samples_per_s']:>9}")
    print("verdicts: " + ("all equal" if not mismatches else f"{len(mismatches)} differ"))
    for m in mismatches:
        print(f"  level {m['level']} problem {m['problem']}: local {m['local']} ray {m['ray']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": {k: (str(v) if isinstance(v, Path) else v)
                                                  for k, v in vars(args).items()},
                                         "throughput": rows, "mismatches": mismatches}, indent=2) + "\n")
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
