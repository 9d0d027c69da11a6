"""Why the judge and the candidate's worker time the same kernel differently (A/A gap).

    python3 bench/timing_paths.py --dataset-path KernelBench --level 1 --ids 47,97,12,19 \
        --trials 50 --out docs/validation/h200

Run 39 (H200) found identical code timed 13 % slower as the reference in the judge than
as the candidate in its worker on L1/47, 5.6 % on L1/97, in every run.  One asymmetry of
the protocol: the judge empties its allocator's cache before every reference sample
(each reference input set is made after releasing the previous one), so the
reference's forward allocates from a cold allocator, while the candidate's allocator
stays warm.  This script times the reference's ``forward`` in one process with the
protocol's own timed call (L2 flush, hold kernel, events; ``worker_runtime.timed_call``)
under the conditions that differ between the two paths, each on a fresh input set per
call made in a fresh allocator pool, as both paths make them:

* ``cold``: ``forward`` allocates from the process's default pool, emptied before every
  call (the judge today: each reference input set is made after ``empty_cache``);
* ``warm``: ``forward`` allocates from a pool of its own that lives across the calls
  (``empty_cache`` keeps a live private pool's free blocks): warm as the candidate's
  allocator is, and a fix that keeps the judge's releases.

* ``warm_rest``: as ``warm``, with the device synchronised and 5 ms of rest between
  making the inputs and timing (in the judge the reference is timed right after its
  input set is generated; the candidate's call comes a few milliseconds of fingerprints,
  staging and messages later: a power-limited GPU may clock differently);
* ``warm_read``: as ``warm``, with every input read once between making it and timing
  (the judge fingerprints the candidate's timed inputs; the reference's are not read);
* ``no_hold``: as ``warm`` without the hold kernel before the call;
* ``ipc``: the inputs go to a second process through PyTorch's CUDA IPC (the mechanism
  the judge lends the candidate's inputs with) and that process, with its own warm
  allocator and flush buffer, times the same ``forward`` (the candidate's side);
* ``reuse``: as ``warm``, but every call's fresh values are copied into one input set
  allocated once (the same device memory on every call);
* ``persist``: as ``warm``, with every call's input set made in one pool that lives across
  the calls (the allocator hands the freed set's blocks to the next one);
* ``ipc_reuse``: ``reuse``'s input set, timed by the second process.

All empty the cache before every call, which is also what returns the dropped input
pools' memory.  Prints a table (median event ms per condition, each over ``warm``) and writes
``timing_paths.json`` under ``--out``.  CUDA only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from upstream_sweep import load_problems, parse_ids  # noqa: E402

CONDITIONS = ("warm", "cold", "warm_rest", "warm_read", "no_hold", "ipc", "reuse", "persist", "ipc_reuse")


def _build(source: str):
    import torch

    from kernelbench.loading import load_original_model_and_inputs
    from kernelbench.reward_hardening.worker_runtime import init_cuda_device, seed_generators

    device = torch.device("cuda", 0)
    flush = init_cuda_device(device, None)
    model_cls, get_init_inputs, get_inputs = load_original_model_and_inputs(source)
    seed_generators(42)
    model = model_cls(*get_init_inputs())
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    return device, flush, model, get_inputs


def _ipc_side(source: str, hold_cycles: int, requests, replies) -> None:
    """The second process of the ``ipc`` condition: times ``forward`` on the inputs it is sent."""
    import torch

    from kernelbench.reward_hardening.worker_runtime import timed_call

    device, flush, model, _ = _build(source)
    replies.put("ready")
    while True:
        inputs = requests.get()
        if inputs is None:
            return
        out, stamps = timed_call(lambda: model(*inputs), device, flush, hold_cycles)
        del out, inputs
        torch.cuda.synchronize(device)
        replies.put(float(stamps["event_ms"]))


def measure(source: str, trials: int, hold_cycles: int, conditions: tuple = CONDITIONS, block: int = 1) -> dict:
    """Median event milliseconds of the reference's forward under each condition.

    The conditions take turns in runs of ``block`` consecutive calls (1: by call), so a
    state one call leaves for the next (which process ran last, which memory) shows as a
    difference between the first call of a run and the later ones (``by_position``).
    """
    import torch
    import torch.multiprocessing as tmp

    from kernelbench.reward_hardening.worker_runtime import seed_generators, timed_call

    device, flush, model, get_inputs = _build(source)
    ctx_mp = tmp.get_context("spawn")
    requests, replies = ctx_mp.Queue(), ctx_mp.Queue()
    side = ctx_mp.Process(target=_ipc_side, args=(source, hold_cycles, requests, replies), daemon=True)
    side.start()
    replies.get(timeout=300)
    own_pool, persist_pool, kept = torch.cuda.MemPool(), torch.cuda.MemPool(), None
    times: dict[str, list[float]] = {c: [] for c in conditions}
    positions: dict[str, list[list[float]]] = {c: [[] for _ in range(block)] for c in conditions}
    rounds = -(-trials // block)
    for i in range(rounds + 1):  # the first round warms up and is dropped
        for cond, pos in ((c, p) for c in conditions for p in range(block)):
            pool = persist_pool if cond == "persist" else torch.cuda.MemPool()
            seed_generators(1000 + i * block + pos)
            with torch.cuda.use_mem_pool(pool, device), torch.device(device):
                inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in get_inputs()]
            if cond in ("reuse", "ipc_reuse"):
                if kept is None:
                    kept = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
                for k, v in zip(kept, inputs):
                    if isinstance(v, torch.Tensor):
                        k.copy_(v)
                inputs = list(kept)
            torch.cuda.empty_cache()
            if cond == "warm_rest":
                torch.cuda.synchronize(device)
                time.sleep(0.005)
            if cond == "warm_read":
                for v in inputs:
                    if isinstance(v, torch.Tensor) and v.numel():
                        v.sum()
            if cond in ("ipc", "ipc_reuse"):
                torch.cuda.synchronize(device)
                requests.put(inputs)
                ms = replies.get(timeout=300)
            else:
                ctx = torch.cuda.use_mem_pool(own_pool, device) if cond != "cold" else contextlib.nullcontext()
                with ctx:
                    out, stamps = timed_call(lambda: model(*inputs), device, flush,
                                             0 if cond == "no_hold" else hold_cycles)
                ms = float(stamps["event_ms"])
                del out
            del inputs, pool
            if i >= 1:
                times[cond].append(ms)
                positions[cond][pos].append(ms)
    del kept
    requests.put(None)
    side.join(timeout=60)
    torch.cuda.empty_cache()
    med = {c: statistics.median(v) for c, v in times.items()}
    base = med.get("warm", next(iter(med.values())))
    return {"median_ms": {c: round(m, 5) for c, m in med.items()},
            "ratio_to_warm": {c: round(med[c] / base, 4) for c in conditions},
            "by_position": {c: [round(statistics.median(v), 5) for v in positions[c] if v] for c in conditions},
            "samples": {c: [round(x, 5) for x in v] for c, v in times.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset-path", default="KernelBench")
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--ids", default="47,97")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--hold-cycles", type=int, default=300_000, help="the hold kernel's cycles (the default config's)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS), help="comma-separated, from: " + ", ".join(CONDITIONS))
    ap.add_argument("--block", type=int, default=1, help="consecutive calls per condition before the next one's turn")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    conditions = tuple(c for c in args.conditions.split(",") if c)
    unknown = sorted(set(conditions) - set(CONDITIONS))
    if unknown:
        ap.error(f"unknown conditions: {unknown}")
    import torch

    if not torch.cuda.is_available():
        print("timing_paths: CUDA only", file=sys.stderr)
        return 2
    dataset = Path(args.dataset_path)
    rows, t0 = {}, time.monotonic()
    for problem in load_problems(str(dataset if dataset.is_absolute() else REPO / dataset), args.level,
                                 parse_ids(args.ids)):
        rows[problem.name] = r = measure(problem.code, args.trials, args.hold_cycles, conditions, args.block)
        print(f"[timing_paths] L{args.level}/{problem.name}: " + ", ".join(
            f"{c} {r['median_ms'][c]:.4f} ms ({r['ratio_to_warm'][c]:.3f}; by position {r['by_position'][c]})"
            for c in conditions), flush=True)
    from tabulate import tabulate

    print(tabulate([[name, *(r["median_ms"][c] for c in conditions), *(r["ratio_to_warm"][c] for c in conditions[1:])]
                    for name, r in rows.items()],
                   headers=["problem", *(f"{c} ms" for c in conditions), *(f"{c}/{conditions[0]}" for c in conditions[1:])]))
    print(f"{len(rows)} problems, {args.trials} calls per condition, {time.monotonic() - t0:.0f} s")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "timing_paths.json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
