"""A/A calibration of the speedup's confidence bound (how often it claims a speedup that is not there).

    python3 bench/aa_calibration.py --dataset-path KernelBench --level 1 --ids 1-20,47,97 \
        --device cuda --runs 5 --out docs/validation/h200

For every selected problem three arms are evaluated ``--runs`` times each on the
hardened path (``evaluate_hardened``, one judge per problem and arm, as a batch does):

* ``aa``: the candidate is the reference itself (``Model`` renamed to ``ModelNew``).
  The bound must claim a speedup (lower bound above 1) in at most a ``1 - level``
  share of the runs, and the point estimate should stay within 3% of 1;
* ``slow_candidate``: the same candidate plus a fixed amount of extra work
  (``--extra``, default 10% of the reference's time): its upper bound must be below 1
  in every run;
* ``slow_reference``: the reference carries that extra work and the candidate is the
  plain renamed reference: the bound must claim a speedup in at least 95% of the runs.

The extra work is a loop of in-place multiplications by one on a buffer the model
owns, after forward; the number of iterations is calibrated in this process from the
reference's median time and one multiplication's, measured on the same device.  The
records' point estimates show the slowdown actually realised.

Prints a table (tabulate) per problem and arm, and the three checks; ``--out`` also
writes ``<name>.json`` (every run's speedup block) and ``<name>.md``.  The exit status
is 1 when a check fails.  ``--demo`` takes problems from the bundled demo set (the
CPU continuous-integration test runs two of them on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from upstream_sweep import rename_model  # noqa: E402

ARMS = ("aa", "slow_candidate", "slow_reference")

_EXTRA = '''

class _ExtraWork:
    """A fixed amount of extra work after forward (A/A calibration)."""

    @staticmethod
    def _extra(self, out):
        import torch

        if not hasattr(self, "_pad"):
            self._pad = torch.ones({numel}, device=torch.device("{device}"))
        for _ in range({iters}):
            self._pad.mul_(1.0)
        return out


_PlainForward = {cls}.forward


def _forward_with_extra(self, *args, **kwargs):
    return _ExtraWork._extra(self, _PlainForward(self, *args, **kwargs))


{cls}.forward = _forward_with_extra
'''

# The slowed reference gets its buffer with the model: memory that appears in the judge
# after its memory plan looks retained at the sample's end and retires the judge after
# every sample.  (The slowed candidate keeps the lazy buffer: its worker ends with each
# sample, and assigning ``__init__`` on the candidate's class is a static finding, RH-09.)
_EXTRA_INIT = '''

_PlainInit = {cls}.__init__


def _init_with_pad(self, *args, **kwargs):
    import torch

    _PlainInit(self, *args, **kwargs)
    self._pad = torch.ones({numel}, device=torch.device("{device}"))


{cls}.__init__ = _init_with_pad
'''

PAD_NUMEL = 1 << 16


def with_extra_work(source: str, cls: str, iters: int, device: str, numel: int = PAD_NUMEL) -> str:
    """``source`` whose class ``cls`` does ``iters`` multiplications of a ``numel`` buffer after forward."""
    extra = _EXTRA + (_EXTRA_INIT if cls == "Model" else "")
    return source + extra.format(iters=int(iters), numel=int(numel), device=device, cls=cls)


def _median_ms(fn, device, reps: int = 15, queued: bool = False) -> float:
    """Median milliseconds of ``fn`` (CUDA events on a GPU, the host clock on the CPU).

    ``queued`` (CUDA): the device time of ``fn``'s kernels when the host queued them
    behind a spin kernel.  In an evaluation the extra work is launched while the forward
    still runs, so its kernels run back to back; timed alone, small kernels would be
    timed at the host's launch rate instead (run 40: "10 %" of extra work came out as
    2 % on the H200).
    """
    import torch

    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            if queued:
                torch.cuda._sleep(2_000_000)  # about a millisecond in which the host queues fn's launches
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _queued_ms(fn) -> float:
    return _median_ms(fn, "cuda", queued=True)


def cuda_pad_numel(target_ms: float, device: str, max_numel: int = 1 << 30) -> tuple[int, float]:
    """The buffer size whose one multiplication takes ``target_ms`` of device time (and that time)."""
    import torch

    dev = torch.device(device)
    best, n = (1 << 12, float("inf")), 1 << 12
    while n <= max_numel:
        pad = torch.ones(n, device=dev)
        ms = _queued_ms(lambda: pad.mul_(1.0))
        del pad
        if ms >= target_ms:
            lo_n, lo_ms = best if best[1] != float("inf") else (n, ms)
            if lo_ms < ms:  # interpolate between the two sizes around the target
                n = int(lo_n + (n - lo_n) * (target_ms - lo_ms) / (ms - lo_ms))
                pad = torch.ones(n, device=dev)
                ms = _queued_ms(lambda: pad.mul_(1.0))
                del pad
            torch.cuda.empty_cache()
            return n, ms
        best = (n, ms)
        n *= 2
    torch.cuda.empty_cache()
    return best


def calibrate(reference_src: str, device: str, extra: float) -> tuple[int, float, float, int]:
    """The extra work worth ``extra`` of the reference's time: (iterations, reference ms, ms of one, buffer size).

    CUDA: one multiplication of a buffer sized to the target device time.  CPU: a loop
    of multiplications of a small buffer.
    """
    import torch

    ns: dict = {}
    exec(compile(reference_src, "<reference>", "exec"), ns)  # the trusted reference, in this process
    dev = torch.device(device)
    torch.manual_seed(0)
    with torch.device(dev):
        model = ns["Model"](*ns["get_init_inputs"]()).to(dev)
        inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ns["get_inputs"]()]
    with torch.no_grad():
        ref_ms = _queued_ms(lambda: model(*inputs)) if device.startswith("cuda") else \
            _median_ms(lambda: model(*inputs), device)
    if device.startswith("cuda"):  # buffers up to 1 GiB: more than one multiplication beyond that
        del model, inputs
        torch.cuda.empty_cache()
        numel, op_ms = cuda_pad_numel(extra * ref_ms, device, max_numel=1 << 28)
        return max(1, round(extra * ref_ms / max(op_ms, 1e-6))), ref_ms, op_ms, numel
    pad = torch.ones(PAD_NUMEL, device=dev)
    chunk = 50
    op_ms = _median_ms(lambda: [pad.mul_(1.0) for _ in range(chunk)], device) / chunk
    del model, inputs, pad
    return max(1, round(extra * ref_ms / max(op_ms, 1e-6))), ref_ms, op_ms, PAD_NUMEL


def imports_and_classes(source: str) -> str:
    """Only the imports and class definitions of ``source`` (the module-level constants dropped)."""
    import ast

    tree = ast.parse(source)
    tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.ClassDef))]
    return ast.unparse(tree) + "\n"


def _parse_ids(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return sorted(set(out))


def run_arm(reference_src: str, candidate_src: str, cfg, runs: int) -> list[dict]:
    from kernelbench.reward_hardening.parent.pipeline import ReferenceSession, evaluate_hardened

    session = ReferenceSession(reference_src, cfg, cfg.device if cfg.device != "cuda" else "cuda:0")
    out = []
    try:
        for _ in range(runs):
            rec = evaluate_hardened(reference_src, candidate_src, cfg, session=session)
            rh = rec.get("reward_hardening") or {}
            out.append({"status": rh.get("integrity_status"), "speedup": rh.get("speedup"),
                        "noise": any(f.get("code") == "RH-54" for f in rh.get("findings", [])),
                        "codes": sorted({f.get("code") for f in rh.get("findings", [])}),
                        "wall_s": (rec.get("metadata") or {}).get("reward_hardening_wall_s"),
                        # what a run that did not pass was told (its findings' messages and evidence, cut short)
                        "why": None if rh.get("integrity_status") == "PASS" else [
                            {"code": f.get("code"), "summary": str(f.get("summary"))[:300],
                             "evidence": json.dumps(f.get("evidence"), default=str)[:1200]}
                            for f in rh.get("findings", []) if f.get("code") != "RH-13"],
                        "reference_timer": (rec.get("metadata") or {}).get("reference_timer"),
                        "reference_timer_note": (rec.get("metadata") or {}).get("reference_timer_note"),
                        # every sample of both sides, in block order (where a gap between the sides comes from)
                        "samples": {"candidate": (rec.get("metadata") or {}).get("timing_samples"),
                                    "reference": (rec.get("metadata") or {}).get("interleaved_reference_samples")}})
            out[-1]["judge_retired"] = any(p.get("phase") == "judge_release" and p.get("retired")
                                           for p in (rec.get("metadata") or {}).get("reward_hardening_phases") or [])
            if not session.alive:  # a failed or retired judge: closed (its workers with it), then a fresh one
                session.close()
                session = ReferenceSession(reference_src, cfg, session.device)
    finally:
        session.close()
    return out


def checks(results: dict, level: float) -> list[tuple[str, bool, str]]:
    """The three calibration checks over every problem's runs."""
    def runs(arm):
        return [r for per in results.values() for r in per.get(arm, [])]

    out = []
    aa = runs("aa")
    if aa:
        bounded = [r for r in aa if r["speedup"]]
        claims = sum(1 for r in bounded if r["speedup"]["claims_faster"])
        worst = max((abs(r["speedup"]["point"] - 1.0) for r in bounded), default=float("nan"))
        ok = len(bounded) == len(aa) and claims <= (1.0 - level) * len(aa) + 1e-9
        out.append(("A/A: false speedup claims <= (1 - level) of runs", ok,
                    f"{claims} of {len(aa)} runs claim a speedup (allowed {(1 - level) * len(aa):.2f}); "
                    f"largest |point - 1| = {worst:.4f}; runs without a bound: {len(aa) - len(bounded)}"))
    slow = runs("slow_candidate")
    if slow:
        found = sum(1 for r in slow if r["speedup"] and r["speedup"]["claims_slower"])
        out.append(("slow candidate: upper bound < 1 in every run", found == len(slow),
                    f"{found} of {len(slow)} runs"))
    fast = runs("slow_reference")
    if fast:
        found = sum(1 for r in fast if r["speedup"] and r["speedup"]["claims_faster"])
        out.append(("slow reference: speedup claimed in >= 95% of runs", found >= 0.95 * len(fast),
                    f"{found} of {len(fast)} runs"))
    return out


def table(results: dict) -> str:
    from tabulate import tabulate

    rows = []
    for name, per in results.items():
        for arm in ARMS:
            rs = per.get(arm)
            if not rs:
                continue
            b = [r["speedup"] for r in rs if r["speedup"]]
            pts = [x["point"] for x in b]
            rows.append([name, arm, len(rs),
                         f"{min(pts):.3f}-{max(pts):.3f}" if pts else "-",
                         f"{min(x['lower_bound'] for x in b):.3f}" if b else "-",
                         f"{max(x['upper_bound'] for x in b):.3f}" if b else "-",
                         sum(1 for x in b if x["claims_faster"]), sum(1 for x in b if x["claims_slower"]),
                         f"{max(x['candidate']['cv'] for x in b):.3f}/{max(x['reference']['cv'] for x in b):.3f}"
                         if b else "-",
                         sum(1 for r in rs if r["noise"]),
                         ",".join(sorted({str(r["status"]) for r in rs}))])
    return tabulate(rows, headers=["problem", "arm", "runs", "point", "min LCB", "max UCB", "claims faster",
                                   "claims slower", "max CV cand/ref", "RH-54", "status"], tablefmt="github")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset-path", default="KernelBench", help="relative paths: from the repository root")
    ap.add_argument("--demo", action="store_true", help="use the bundled demo problems")
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--ids", default="1-2", help="problem ids, e.g. 1-20,47,97")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=5, help="evaluations per problem and arm")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--extra", type=float, default=0.10, help="extra work of the slowed side, share of its time")
    ap.add_argument("--num-perf-trials", type=int, default=50)
    ap.add_argument("--num-correct-trials", type=int, default=2)
    ap.add_argument("--policy", default="practical")
    ap.add_argument("--out", default=None, help="folder for <name>.json and <name>.md")
    ap.add_argument("--name", default=None)
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no new problem after this many seconds (the results so far are written)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="no runs: the table and checks over these earlier outputs together")
    args = ap.parse_args(argv)
    if args.merge:
        return report(merged(args.merge), args, [])

    from kernelbench.dataset import construct_kernelbench_dataset
    from kernelbench.reward_hardening.config import HardeningConfig

    dataset = construct_kernelbench_dataset(args.level, source="local",
                                            base_path="demo" if args.demo else REPO / args.dataset_path)
    ids = [i for i in _parse_ids(args.ids) if i in set(dataset.get_problem_ids())]
    arms = [a for a in args.arms.split(",") if a]
    device = "cuda:0" if args.device == "cuda" else args.device
    cfg = HardeningConfig(mode="enforce", policy=args.policy, device=device, num_perf_trials=args.num_perf_trials,
                          num_correct_trials=args.num_correct_trials, perturbations=(), profile_backend=False)
    results: dict[str, dict] = {}
    skipped: list[int] = []
    t0 = time.monotonic()
    for pid in ids:
        if args.deadline_s is not None and time.monotonic() - t0 > args.deadline_s:
            skipped.append(pid)
            continue
        problem = dataset.get_problem_by_id(pid)
        name = f"L{args.level}/{pid} {problem.name[:40]}"
        ref = problem.code
        cand = rename_model(ref)
        if args.demo:  # the demo set reads its scale from the environment, which a candidate may not (RH-07)
            cand = imports_and_classes(cand)
        per: dict = {}
        if any(a != "aa" for a in arms):
            iters, ref_ms, op_ms, numel = calibrate(ref, device, args.extra)
            per["calibration"] = {"iters": iters, "reference_ms": ref_ms, "op_ms": op_ms, "numel": numel}
        for arm in arms:
            if arm == "aa":
                per[arm] = run_arm(ref, cand, cfg, args.runs)
            elif arm == "slow_candidate":
                per[arm] = run_arm(ref, with_extra_work(cand, "ModelNew", per["calibration"]["iters"], device, numel),
                                   cfg, args.runs)
            elif arm == "slow_reference":
                per[arm] = run_arm(with_extra_work(ref, "Model", per["calibration"]["iters"], device, numel), cand,
                                   cfg, args.runs)
            print(f"[aa] {name} {arm}: " + ", ".join(
                f"{r['speedup']['point']:.3f} [{r['speedup']['lower_bound']:.3f}, {r['speedup']['upper_bound']:.3f}]"
                if r["speedup"] else f"{r['status']} (no bound)" for r in per[arm]), flush=True)
        from kernelbench.devices import gpu_memory_report

        per["device_after"] = gpu_memory_report(device) if device.startswith("cuda") else None
        results[name] = per
        write(results, args, skipped, time.monotonic() - t0)  # after every problem: a killed call keeps its runs
    if skipped:
        print(f"[aa] deadline: not started {','.join(map(str, skipped))}", flush=True)
    return report(results, args, skipped, time.monotonic() - t0, level=cfg.speedup_confidence,
                  blocks=(cfg.interleave_blocks, cfg.interleave_reference_samples))


def write(results: dict, args, skipped: list[int], elapsed: float) -> None:
    if not args.out:
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = args.name or f"aa_calibration_level{args.level}_{args.device.split(':')[0]}"
    (out / f"{stem}.json").write_text(json.dumps({"args": vars(args), "results": results, "not_started": skipped,
                                                  "elapsed_s": elapsed}, indent=1))


def merged(paths: list[str]) -> dict:
    """Every problem's arms from earlier outputs (one problem's arms may come from several files)."""
    results: dict[str, dict] = {}
    for p in paths:
        for name, per in json.loads(Path(p).read_text())["results"].items():
            into = results.setdefault(name, {})
            for arm, runs in per.items():
                into[arm] = into.get(arm, []) + runs if arm in ARMS else runs
    return results


def report(results: dict, args, skipped: list[int], elapsed: float | None = None, level: float | None = None,
           blocks: tuple[int, int] | None = None) -> int:
    if level is None:
        from kernelbench.reward_hardening.config import HardeningConfig

        level = HardeningConfig().speedup_confidence
    lines = [table(results), ""]
    failed = False
    for what, ok, detail in checks(results, level):
        lines.append(f"{'PASS' if ok else 'FAIL'}  {what}: {detail}")
        failed |= not ok
    if args.merge:
        lines.append(f"(bound: one-sided, level {level}; merged from {', '.join(Path(p).name for p in args.merge)})")
    else:
        lines.append(f"(bound: one-sided, level {level}; {args.runs} runs per arm; {args.num_perf_trials} timed "
                     f"candidate samples in {blocks[0]} blocks, {blocks[1]} reference samples per block; "
                     f"{elapsed:.0f} s)" + (f"; not started (deadline): {','.join(map(str, skipped))}" if skipped else ""))
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = args.name or f"aa_calibration_level{args.level}_{args.device.split(':')[0]}"
        if not args.merge:
            write(results, args, skipped, elapsed)
        else:
            (out / f"{stem}.json").write_text(json.dumps({"merged_from": args.merge, "results": results}, indent=1))
        (out / f"{stem}.md").write_text(f"# A/A calibration\n\n```\n{' '.join(sys.argv)}\n```\n\n{text}\n")
    return 1 if failed else 0

if __name__ == "__main__":
    os.environ.setdefault("KERNELBENCH_DEMO_SCALE", "1")
    sys.exit(main())
