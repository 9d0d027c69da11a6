"""What the judge's per-call work costs on one device: comparison, allocation, fills.

    PYTHONPATH=src python3 bench/judge_costs.py --sizes-mib 256,1024,4096,8192 --out docs/validation/h200

Around every timed call the judge makes a fresh input set (allocated in a pool of its
own, filled by ``get_inputs``), staging for the outputs (filled with NaN), and after the
call frees the set and compares a spot-checked call's outputs with the reference.  At
100 timed trials that is about 150 times per sample, so on the 4-8 GiB problems these
operations set the level's wall time.  Timed here, in one process, per float32 size:

* ``compare_ms``: :func:`kernelbench.reward_hardening.judge.compare.compare_tensor` on an
  output within tolerance of its reference (the honest case);
* ``exact_ms``: the same comparison with every chunk summed in float64 and read back
  chunk by chunk (:func:`~kernelbench.reward_hardening.judge.compare._exact_chunk` over
  the whole tensor: the comparison as it was before its first pass);
* ``alloc_ms`` / ``free_ms`` (CUDA): an allocation in a fresh ``MemPool``, then its release
  as the judge releases a lent set (the pool dropped, ``empty_cache``);
* ``cached_ms`` (CUDA): the same allocation served from a warm private pool;
* ``randn_ms``, ``fill_ms``, ``copy_ms``: ``torch.randn`` into the buffer, a NaN fill, a copy.

Prints a table (median ms over ``--repeats``) and writes ``judge_costs.json`` under
``--out``.  CUDA sizes that do not fit the free device memory three times over are skipped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from fingerprint_cost import timed, write_rows  # noqa: E402  (this folder: the same timer and JSON)
from kernelbench.reward_hardening.judge import compare as cmp  # noqa: E402


def exact(out: torch.Tensor, ref: torch.Tensor) -> list:
    """Every chunk summed in float64 and read back on its own (the comparison before its first pass)."""
    o, r, step = out.reshape(-1), ref.reshape(-1), cmp._CHUNK
    return [cmp._exact_chunk(o[a: a + step], r[a: a + step], cmp.tolerance("fp32")) for a in range(0, r.numel(), step)]


def alloc_free(numel: int, repeats: int) -> tuple[float, float]:
    """(ms to allocate in a fresh pool, ms to release it as the judge does), medians."""
    allocs, frees = [], []
    for _ in range(repeats + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            t = torch.empty(numel, device="cuda")
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        del t, pool
        torch.cuda.ipc_collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        allocs.append(t1 - t0)
        frees.append(t2 - t1)
    return statistics.median(allocs[1:]) * 1e3, statistics.median(frees[1:]) * 1e3


def cached(numel: int, repeats: int) -> float:
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        del_me = torch.empty(numel, device="cuda")
        del del_me

        def once() -> None:
            torch.empty(numel, device="cuda")

        ms = timed(once, "cuda", repeats)
    del pool
    torch.cuda.empty_cache()
    return ms


def main(argv: list[str] | None = None) -> int:
    from tabulate import tabulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", default="256,1024,4096,8192", help="comma-separated tensor sizes (float32)")
    ap.add_argument("--devices", default=None, help="cpu,cuda (default: cuda when there is one, else cpu)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="folder for judge_costs.json")
    args = ap.parse_args(argv)
    devices = args.devices.split(",") if args.devices else ["cuda" if torch.cuda.is_available() else "cpu"]
    rows, skipped = [], []
    for dev in devices:
        for mib in [int(s) for s in args.sizes_mib.split(",")]:
            numel = (mib << 20) // 4
            if dev == "cuda" and torch.cuda.mem_get_info()[0] < 3 * (mib << 20):
                skipped.append(f"{dev} {mib} MiB (does not fit three times in the free device memory)")
                continue
            ref = torch.randn(numel, device=dev)
            out = ref + 1e-6 * torch.randn(numel, device=dev)
            new, old = cmp.compare_tensor(out, ref, 1e-4), exact(out, ref)
            if not new[0] or any(c[3]["mismatched"] for c in old):
                raise SystemExit(f"the comparisons disagree on {mib} MiB on {dev}")
            row = {"device": dev, "mib": mib,
                   "compare_ms": timed(lambda: cmp.compare_tensor(out, ref, 1e-4), dev, args.repeats),
                   "exact_ms": timed(lambda: exact(out, ref), dev, args.repeats),
                   "randn_ms": timed(lambda: torch.randn(numel, device=dev, out=out), dev, args.repeats),
                   "fill_ms": timed(lambda: out.fill_(float("nan")), dev, args.repeats),
                   "copy_ms": timed(lambda: out.copy_(ref), dev, args.repeats),
                   "alloc_ms": None, "free_ms": None, "cached_ms": None}
            del ref, out
            if dev == "cuda":
                torch.cuda.empty_cache()
                row["alloc_ms"], row["free_ms"] = alloc_free(numel, args.repeats)
                row["cached_ms"] = cached(numel, args.repeats)
            rows.append(row)

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    table = [[r["device"], r["mib"], f(r["compare_ms"]), f(r["exact_ms"]), f"{r['exact_ms'] / r['compare_ms']:.2f}",
              f(r["alloc_ms"]), f(r["free_ms"]), f(r["cached_ms"]), f(r["randn_ms"]), f(r["fill_ms"]),
              f(r["copy_ms"])] for r in rows]
    print(tabulate(table, headers=["device", "MiB", "compare ms", "exact ms", "exact/compare", "alloc ms",
                                   "free ms", "cached ms", "randn ms", "NaN fill ms", "copy ms"]))
    write_rows(args.out, "judge_costs.json", rows, skipped)
    best = min((r["exact_ms"] / r["compare_ms"] for r in rows), default=None)
    print(f"{len(rows)} sizes timed; the comparison is at least {best:.2f}x faster than summing every chunk in float64"
          if best is not None else "nothing timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
