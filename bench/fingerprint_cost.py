"""What the judge's input fingerprint costs, against the digests it replaced.

    PYTHONPATH=src python3 bench/fingerprint_cost.py --sizes-mib 4,64,1024,8192 --out docs/validation/h200

The judge fingerprints every input set it lends twice (when it is made and after the
candidate's call), so on a large problem the digest runs about 300 times per sample at
100 timed trials.  Three ways to digest the same bits are timed here, in one process,
on each size and device:

* ``current``: :func:`kernelbench.reward_hardening.ipc.lending.fingerprint` (row and
  column sums in the bits' own width, one read per reduction);
* ``widened``: the digest it replaced (row and column sums in int64, which makes an
  int64 copy of each block of 32 Mi elements before reducing it), kept here only as the
  baseline;
* ``sha256`` (host only): ``hashlib.sha256`` of the bytes, what host tensors up to 1 MiB
  still get.

Prints a table (median ms over ``--repeats``, GiB/s, and each baseline over ``current``)
and writes ``fingerprint_cost.json`` under ``--out``.  CUDA sizes that do not fit the
free device memory three times over are skipped and say so.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from kernelbench.reward_hardening.ipc.lending import _INT_VIEW, _ROW, fingerprint  # noqa: E402
from kernelbench.runs import atomic_write_json  # noqa: E402  (the one atomic writer)

_WIDENED_BLOCK_ROWS = 8192


def widened(t: torch.Tensor) -> tuple[int, int, int]:
    """The replaced digest: int64 row and column sums of blocks of ``_WIDENED_BLOCK_ROWS`` rows."""
    bits = t.reshape(-1).view(_INT_VIEW[t.element_size()])
    n_rows = bits.numel() // _ROW
    m, i64, dev = n_rows * _ROW, torch.int64, bits.device
    acc = torch.zeros(3, dtype=i64, device=dev)
    main = bits[:m].view(-1, _ROW)
    cols = torch.zeros(_ROW, dtype=i64, device=dev)
    for start in range(0, n_rows, _WIDENED_BLOCK_ROWS):
        block = main[start: start + _WIDENED_BLOCK_ROWS]
        rows = block.sum(dim=1, dtype=i64)
        cols += block.sum(dim=0, dtype=i64)
        acc[0] += rows.sum()
        acc[1] += (rows * torch.arange(start + 1, start + rows.numel() + 1, device=dev, dtype=i64)).sum()
    acc[2] += (cols * torch.arange(1, _ROW + 1, device=dev, dtype=i64)).sum()
    return tuple(acc.tolist())


def sha256(t: torch.Tensor) -> bytes:
    return hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy()).digest()


def timed(fn, t: torch.Tensor, repeats: int) -> float:
    fn(t)  # first use: kernels loaded, pages touched
    times = []
    for _ in range(repeats):
        if t.is_cuda:
            torch.cuda.synchronize(t.device)
        start = time.perf_counter()
        fn(t)  # (every digest ends with a read to the host: it is synchronised)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    from tabulate import tabulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", default="4,64,1024,8192", help="comma-separated tensor sizes (float32)")
    ap.add_argument("--devices", default=None, help="cpu,cuda (default: cpu, and cuda when there is one)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch's host threads (default: torch's own)")
    ap.add_argument("--out", default=None, help="folder for fingerprint_cost.json")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = args.devices.split(",") if args.devices else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    rows, skipped = [], []
    for dev in devices:
        for mib in sizes:
            nbytes = mib << 20
            if dev == "cuda" and torch.cuda.mem_get_info()[0] < 3 * nbytes:
                skipped.append(f"{dev} {mib} MiB (does not fit three times in the free device memory)")
                continue
            if dev == "cpu" and mib > 1024:
                skipped.append(f"{dev} {mib} MiB (host sizes stop at 1 GiB)")
                continue
            t = torch.rand(nbytes // 4, device=dev)
            if fingerprint(t) != fingerprint(t.clone()):
                raise SystemExit(f"fingerprint of {mib} MiB on {dev} is not reproducible")
            row = {"device": dev, "mib": mib, "current_ms": timed(fingerprint, t, args.repeats),
                   "widened_ms": timed(widened, t, args.repeats)}
            row["sha256_ms"] = timed(sha256, t, args.repeats) if dev == "cpu" else None
            rows.append(row)
            del t
            if dev == "cuda":
                torch.cuda.empty_cache()
    table = [[r["device"], r["mib"], f"{r['current_ms']:.3f}", f"{r['mib'] / 1024 / (r['current_ms'] / 1e3):.1f}",
              f"{r['widened_ms']:.3f}", f"{r['widened_ms'] / r['current_ms']:.2f}",
              "-" if r["sha256_ms"] is None else f"{r['sha256_ms'] / r['current_ms']:.2f}"] for r in rows]
    print(tabulate(table, headers=["device", "MiB", "current ms", "GiB/s", "widened ms", "widened/current",
                                   "sha256/current"]))
    for s in skipped:
        print("skipped:", s)
    env = {"torch": torch.__version__, "threads": torch.get_num_threads(),
           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    if args.out:
        out = Path(args.out) / "fingerprint_cost.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out, {"env": env, "rows": rows, "skipped": skipped}, indent=1)
        print(f"wrote {out}")
    worst = max((r["current_ms"] / r["widened_ms"] for r in rows), default=None)
    print(f"{len(rows)} sizes timed; the current digest took at most {worst:.2f} of the widened one's time"
          if worst is not None else "nothing timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
