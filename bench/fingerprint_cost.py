"""What the judge's input fingerprint costs, against the old way to the same digest.

    PYTHONPATH=src python3 bench/fingerprint_cost.py --sizes-mib 4,64,1024,8192 --out docs/validation/h200

The judge fingerprints every input set it lends twice (when it is made and after the
candidate's call), so on a large problem the digest runs about 300 times per sample at
100 timed trials.  Its exact int64 row and column sums need an int64 copy of the data
(torch widens before it reduces), taken a block at a time.  Timed here, in one process,
on each size and device:

* ``current``: the sums as :func:`kernelbench.reward_hardening.ipc.lending.fingerprint`
  takes them (each block widened once, then reduced along rows and along columns);
* ``two_copies``: the same sums as they were taken before (each of the two reductions
  widened the block again), kept here only as the baseline; the digests are equal;
* ``sha256`` (host only): ``hashlib.sha256`` of the bytes, what host tensors up to 1 MiB,
  and larger ones where torch reduces on at most four threads, get instead;
* ``sampled``: the timed calls' input check before and after one call,
  :class:`~kernelbench.reward_hardening.ipc.lending.InputCheck` (a private copy of a
  secret sample of ``SAMPLE_FRACTION`` of the rows above ``SAMPLE_MIN_BYTES``, of the
  whole tensor below, compared after the call); the digests above are taken twice
  per call, so ``current/sampled`` compares half a call's digests with a whole call's check.

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

from kernelbench.reward_hardening.ipc.lending import InputCheck, _exact_sums  # noqa: E402
from kernelbench.runs import atomic_write_json  # noqa: E402  (the one atomic writer)


def two_copies(t: torch.Tensor) -> tuple[int, int, int]:
    """The replaced way to the same sums: each reduction of a block widened it again."""
    return _exact_sums(t.reshape(-1), copies=2)


def current(t: torch.Tensor) -> tuple[int, int, int]:
    """The sums as the judge takes them now."""
    return _exact_sums(t.reshape(-1))


def sampled(t: torch.Tensor) -> bool:
    """The timed calls' input check, taken and compared (a fixed key: the rows it samples do not change its cost)."""
    return InputCheck(t, 0x5A3D).unchanged(t)


def sha256(t: torch.Tensor) -> bytes:
    return hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy()).digest()


def write_rows(out: str | None, name: str, rows: list[dict], skipped: list[str]) -> None:
    """Print what was skipped and write ``{"env", "rows", "skipped"}`` as ``out/name`` (atomically) when ``out``."""
    for s in skipped:
        print("skipped:", s)
    env = {"torch": torch.__version__, "threads": torch.get_num_threads(),
           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    if out:
        path = Path(out) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"env": env, "rows": rows, "skipped": skipped}, indent=1)
        print(f"wrote {path}")


def timed(fn, device: str | torch.device, repeats: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` calls after a first one, the device synchronised around each."""
    def sync() -> None:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()

    fn()  # first use: kernels loaded, pages touched
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
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
            if current(t) != two_copies(t):
                raise SystemExit(f"the two ways to the sums disagree on {mib} MiB on {dev}")
            row = {"device": dev, "mib": mib, **{f"{fn.__name__}_ms": timed(lambda fn=fn: fn(t), dev, args.repeats)
                                                   for fn in (current, two_copies, sampled)}}
            row["sha256_ms"] = timed(lambda: sha256(t), dev, args.repeats) if dev == "cpu" else None
            rows.append(row)
            del t
            if dev == "cuda":
                torch.cuda.empty_cache()
    table = [[r["device"], r["mib"], f"{r['current_ms']:.3f}", f"{r['mib'] / 1024 / (r['current_ms'] / 1e3):.1f}",
              f"{r['two_copies_ms']:.3f}", f"{r['two_copies_ms'] / r['current_ms']:.2f}",
              "-" if r["sha256_ms"] is None else f"{r['sha256_ms'] / r['current_ms']:.2f}",
              f"{r['sampled_ms']:.3f}", f"{r['current_ms'] / r['sampled_ms']:.1f}"] for r in rows]
    print(tabulate(table, headers=["device", "MiB", "current ms", "GiB/s", "two copies ms", "two copies/current",
                                   "sha256/current", "sampled ms", "current/sampled"]))
    write_rows(args.out, "fingerprint_cost.json", rows, skipped)
    worst = max((r["current_ms"] / r["two_copies_ms"] for r in rows), default=None)
    print(f"{len(rows)} sizes timed; the current sums took at most {worst:.2f} of the old way's time"
          if worst is not None else "nothing timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
