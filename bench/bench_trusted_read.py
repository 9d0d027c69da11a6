"""What the trusted read of outputs costs: wall time per candidate, and time per GiB read.

    uv run python bench/bench_trusted_read.py walltime --baseline-src /path/to/old/src --rounds 3 \
        --out docs/validation/trusted_read_cpu.json
    uv run python bench/bench_trusted_read.py gib --mib 512

``walltime``: every bundled demo problem's honest solution is evaluated on the hardened
path (enforce, practical) by two source trees — this one and ``--baseline-src`` (for
example an export of the commit before the trusted read) — each in its own long-lived
process; the two take turns problem by problem (the order flips every time), so
drifting load on a shared machine hits both alike.  A first round warms both up and
is discarded; per problem the median over the rounds is kept, and the report gives
the per-problem ratio, its geometric mean and the ratio of the totals.

``gib``: a helper process holds ``--mib`` MiB of touched memory in its own cgroup leaf;
the parent freezes the leaf, reads the block with
:func:`kernelbench.reward_hardening.containment.trusted_read.read_outputs` into a ``memfd`` (as it
reads a candidate's outputs into the judge's staging buffer) and thaws it; the time per
GiB is compared with a plain copy between two shared buffers in one process, and the
parent's private resident memory is sampled before and after the read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _serve(src: str, trials: int) -> None:
    """In this process: evaluate, with the package found under ``src``, each problem named on stdin."""
    sys.path.insert(0, src)
    import kernelbench.procs as procs

    base_env = procs.scrubbed_env

    def env(extra=None, workspace=None):  # the forkserver starts scrubbed: hand it the same tree
        e = base_env(extra, workspace)
        e["PYTHONPATH"] = src
        return e

    procs.scrubbed_env = env
    from kernelbench.dataset import construct_kernelbench_dataset
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened

    solutions = Path(src) / "kernelbench/demo_tasks/solutions"
    problems = {}
    for level in (1, 2, 3):
        ds = construct_kernelbench_dataset(level, base_path="demo")
        for pid in ds.get_problem_ids():
            p = ds.get_problem_by_id(pid)
            problems[f"L{level}/{p.name}"] = (p.code, (solutions / f"level{level}" / p.name).read_text())
    print(json.dumps(sorted(problems)), flush=True)
    for line in sys.stdin:
        name = line.strip()
        code, sol = problems[name]
        cfg = HardeningConfig(mode="enforce", policy="practical", device="cpu", timeout=600, num_perf_trials=trials)
        t = time.perf_counter()
        rec = evaluate_hardened(code, sol, cfg)
        print(json.dumps({"s": time.perf_counter() - t, "status": rec["reward_hardening"]["integrity_status"],
                          "reads": (rec.get("metadata") or {}).get("output_reads")}), flush=True)


def walltime(args: argparse.Namespace) -> dict:
    """Both trees in long-lived processes; every problem alternates between them, round by round."""
    trees = {"baseline": os.path.abspath(args.baseline_src), "trusted_read": str(REPO / "src")}
    procs = {name: subprocess.Popen([sys.executable, __file__, "_serve", "--src", src, "--num-perf-trials",
                                     str(args.num_perf_trials)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True, cwd=str(REPO)) for name, src in trees.items()}
    try:
        names = {name: json.loads(p.stdout.readline()) for name, p in procs.items()}
        problems = [n for n in names["baseline"] if n in names["trusted_read"]]
        if args.levels:
            problems = [n for n in problems if n.split("/")[0][1:] in args.levels.split(",")]
        runs: dict[str, dict[str, list]] = {k: {n: [] for n in problems} for k in trees}
        for r in range(args.rounds + 1):  # round 0 warms both processes up and is discarded
            for i, problem in enumerate(problems):
                order = list(trees) if (r + i) % 2 == 0 else list(reversed(list(trees)))
                for name in order:
                    procs[name].stdin.write(problem + "\n")
                    procs[name].stdin.flush()
                    res = json.loads(procs[name].stdout.readline())
                    if r:
                        runs[name][problem].append(res)
            if r:
                print(f"round {r}: baseline {sum(runs['baseline'][n][-1]['s'] for n in problems):.1f} s, "
                      f"trusted_read {sum(runs['trusted_read'][n][-1]['s'] for n in problems):.1f} s", flush=True)
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait(timeout=120)
    rows = []
    for problem in problems:
        b = statistics.median(x["s"] for x in runs["baseline"][problem])
        t = statistics.median(x["s"] for x in runs["trusted_read"][problem])
        rows.append({"problem": problem, "baseline_s": round(b, 3), "trusted_read_s": round(t, 3),
                     "ratio": round(t / b, 3),
                     "statuses": sorted({x["status"] for k in runs for x in runs[k][problem]}),
                     "reads": runs["trusted_read"][problem][-1]["reads"]})
    gm = math.exp(statistics.mean(math.log(r["ratio"]) for r in rows))
    tot_b = sum(r["baseline_s"] for r in rows)
    tot_t = sum(r["trusted_read_s"] for r in rows)
    summary = {"geomean_ratio": round(gm, 3), "total_ratio": round(tot_t / tot_b, 3),
               "median_baseline_s": round(statistics.median(r["baseline_s"] for r in rows), 3),
               "median_trusted_read_s": round(statistics.median(r["trusted_read_s"] for r in rows), 3),
               "max_ratio": max(r["ratio"] for r in rows), "rounds": args.rounds,
               "num_perf_trials": args.num_perf_trials}
    for r in rows:
        print(f"{r['problem']:<44} {r['baseline_s']:6.2f} s -> {r['trusted_read_s']:6.2f} s  x{r['ratio']:.2f}")
    print(json.dumps(summary))
    return {"summary": summary, "rows": rows, "runs": runs}


def gib(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(REPO / "src"))
    import torch

    from kernelbench.procs import private_rss_bytes
    from kernelbench.reward_hardening import containment
    from kernelbench.reward_hardening.containment import trusted_read
    from kernelbench.reward_hardening.ipc.lending import SharedArena

    n = args.mib << 20
    child = subprocess.Popen([sys.executable, "-c",
                              "import ctypes, mmap, sys\n"
                              f"m = mmap.mmap(-1, {n})\n"
                              f"m.write(b'\\x5a' * {n})\n"
                              "print(ctypes.addressof(ctypes.c_char.from_buffer(m)), flush=True)\n"
                              "sys.stdin.read()\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    unit = containment.new_unit("bench")
    try:
        with open(os.path.join(unit.cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(child.pid))
        ptr = int(child.stdout.readline())
        arena = SharedArena(torch.device("cpu"))
        key, dst = arena.empty([n], torch.uint8)
        dst.fill_(0)  # pages present, as the judge's NaN fill leaves a staging buffer
        metas, fds = arena.export([key])
        facts = [{"ptr": ptr, "shape": [n], "stride": [1], "dtype": "uint8", "element_size": 1}]
        rss_before = private_rss_bytes(os.getpid())
        reads, freezes = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            freezes.append(trusted_read.freeze(unit.cgroup))
            try:
                trusted_read.read_outputs(child.pid, facts, metas, fds)
            finally:
                trusted_read.thaw(unit.cgroup)
            reads.append(time.perf_counter() - t)
        rss_after = private_rss_bytes(os.getpid())
        assert bool((dst == 0x5A).all()), "the bytes read differ from the helper's"
        _, src_copy = arena.empty([n], torch.uint8)
        src_copy.fill_(1)
        copies = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            dst.copy_(src_copy)
            copies.append(time.perf_counter() - t)
    finally:
        child.kill()
        child.wait()
        unit.sweep(None)
    per_gib = (1 << 30) / n
    out = {"mib": args.mib, "repeat": args.repeat, "chunk_bytes": trusted_read.CHUNK,
           "trusted_read_s_per_gib": round(statistics.median(reads) * per_gib, 4),
           "freeze_thaw_ms": round(statistics.median(freezes), 3),
           "plain_copy_s_per_gib": round(statistics.median(copies) * per_gib, 4),
           "parent_private_rss_growth_bytes": None if rss_before is None or rss_after is None
           else int(rss_after - rss_before)}
    print(json.dumps(out))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("walltime")
    w.add_argument("--baseline-src", required=True)
    w.add_argument("--rounds", type=int, default=3)
    w.add_argument("--levels", default="1,2,3")
    w.add_argument("--num-perf-trials", type=int, default=20)
    w.add_argument("--out")
    g = sub.add_parser("gib")
    g.add_argument("--mib", type=int, default=512)
    g.add_argument("--repeat", type=int, default=3)
    g.add_argument("--out")
    r = sub.add_parser("_serve")
    r.add_argument("--src", required=True)
    r.add_argument("--num-perf-trials", type=int, default=20)
    args = ap.parse_args()
    if args.what == "_serve":
        _serve(args.src, args.num_perf_trials)
        return 0
    out = walltime(args) if args.what == "walltime" else gib(args)
    if getattr(args, "out", None):
        path = Path(args.out)
        old = json.loads(path.read_text()) if path.exists() else {}
        old[args.what] = out
        path.write_text(json.dumps(old, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
