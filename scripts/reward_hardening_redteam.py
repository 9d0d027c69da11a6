"""Run KernelGuard's red-team regression suite: fixed reward-hacking candidates.

    uv run python scripts/reward_hardening_redteam.py \
        --output runs/reward_hardening_demo/reward_hardening_redteam.json \
        --summary-output runs/reward_hardening_demo/reward_hardening_summary.json

Every fixture of the manifest (:mod:`kernelbench.reward_hardening.fixtures.manifest`)
is evaluated on the hardened path (``evaluate_hardened``) against its bundled demo
problem, under its own policy and mode, and its record is compared with what the
fixture expects: the ``integrity_status`` and the EXACT multiset of finding codes
(the machine-load note RH-54 left out; a fixture's few ``unstable`` codes, seen to come
and go between runs of the same code, may appear once more).  Benign candidates must PASS; every attack must
be refused with exactly the listed findings.

The exit status is 0 exactly when every observation matches its expectation, 1 when
at least one does not, 2 on a usage error.  ``--disable-detector RH-NN`` switches a
finding code off (static rule and runtime detector alike) to show that the fixtures
relying on it then fail: every detector is load-bearing.

Options: ``--output`` (full JSON: per fixture the expectation, the observed status,
codes and code multiset, the match and its reasons, the wall time and the full record),
``--summary-output`` (counts, mismatches, per-code coverage), ``--timeout`` (seconds
per worker request, default 2.0), ``--device cpu|cuda`` (runs the fixtures of that
device), ``--only``/``--exclude`` (comma-separated fixture ids),
``--disable-detector`` (repeatable), ``--num-perf-trials`` (10),
``--num-correct-trials`` (3), ``--jobs`` (fixtures evaluated concurrently, default 1),
``--fresh-judges`` (a judge per fixture; by default fixtures of one problem without
settings of their own share one, as a batch's samples of a problem do, the four most
recent kept) and ``--list`` (print the fixture table and exit).
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import argparse
import concurrent.futures as cf
import os
import sys
import time
from collections import Counter
from typing import Any

SCHEMA = "kernelguard-redteam/1"


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reward_hardening_redteam.py",
        description="Run the KernelGuard red-team fixtures and check that every observation matches.")
    p.add_argument("--output", help="path of the full JSON result (written atomically)")
    p.add_argument("--summary-output", help="path of the summary JSON (counts, mismatches, per-code coverage)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per worker request, passed to HardeningConfig.timeout (default 2.0 on the CPU, "
                        "60 on CUDA); extension builds run first, in parallel, under their own limit")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="run the fixtures of this device (default cpu)")
    p.add_argument("--only", type=_csv, default=None, help="comma-separated fixture ids to run")
    p.add_argument("--exclude", type=_csv, default=None, help="comma-separated fixture ids to skip")
    p.add_argument("--disable-detector", action="append", default=[], metavar="RH-NN",
                   help="switch a finding code off (repeatable); fixtures that rely on it should then mismatch")
    p.add_argument("--num-perf-trials", type=int, default=10, help="timed samples per candidate (default 10)")
    p.add_argument("--num-correct-trials", type=int, default=3, help="hidden correctness inputs (default 3)")
    p.add_argument("--jobs", type=int, default=1, help="fixtures evaluated concurrently (default 1)")
    p.add_argument("--num-threads", type=int, default=None,
                   help="intra-op threads per worker (default: torch's on CUDA and for one job; on the CPU with "
                        "several jobs, the usable cores divided by --jobs)")
    p.add_argument("--fresh-judges", action="store_true",
                   help="start a judge for every fixture (default: fixtures of one problem share a judge, as a "
                        "batch's samples do, one set of judges per concurrent job)")
    p.add_argument("--list", action="store_true", help="print the selected fixtures and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    from kernelbench.reward_hardening.codes import CODES

    if args.timeout is None:
        args.timeout = 60.0 if args.device == "cuda" else 2.0
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.num_perf_trials < 1 or args.num_correct_trials < 1:
        parser.error("--num-perf-trials and --num-correct-trials must be >= 1")
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    if args.num_threads is None and args.device == "cpu":
        from kernelbench.reward_hardening.config import cpu_threads_per_evaluation

        args.num_threads = cpu_threads_per_evaluation(args.jobs)
    if args.num_threads is not None and args.num_threads < 1:
        parser.error("--num-threads must be >= 1")
    bad = [c for c in args.disable_detector if c not in CODES]
    if bad:
        parser.error(f"unknown finding code(s) for --disable-detector: {', '.join(bad)}")


# --------------------------------------------------------------------------- running
def run_fixture(fixture: Any, args: argparse.Namespace, judges: Any = None) -> dict:
    """Evaluate one fixture; never raises (an evaluator exception is a mismatch).

    ``judges`` (a :class:`~kernelbench.reward_hardening.parent.batch.SessionCache`): the
    fixture's problem reuses a judge started for an earlier fixture, as a batch's samples
    of one problem do; a fixture with settings of its own always gets a fresh judge.
    """
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.fixtures import (
        fixture_source,
        observed_codes,
        observed_matches,
        observed_multiset,
        observed_status,
        problem_source,
    )

    t0 = time.monotonic()
    record: dict | None = None
    error = None
    try:
        from kernelbench.reward_hardening.config import default_build_dir

        settings = dict(fixture.config)
        # a fixture's own switched-off codes add to the command line's
        disabled = frozenset(args.disable_detector) | frozenset(settings.pop("disabled_detectors", ()))
        cfg = HardeningConfig(mode=fixture.mode, policy=fixture.policy, device=args.device,
                              timeout=float(args.timeout), num_correct_trials=args.num_correct_trials,
                              num_perf_trials=args.num_perf_trials, disabled_detectors=disabled,
                              num_threads=settings.pop("num_threads", args.num_threads),
                              # persistent per-source build dir: CUDA extensions build once
                              build_dir=default_build_dir(fixture_source(fixture)),
                              **settings)
        reference = problem_source(fixture)
        session = judges.get(reference, cfg, cfg.device) if judges is not None and not fixture.config else None
        record = evaluate_hardened(reference, fixture_source(fixture), cfg, session=session)
    except Exception as exc:  # the suite reports evaluator exceptions instead of dying
        import traceback

        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
    wall = time.monotonic() - t0
    if record is None:
        match, reasons = False, [f"evaluator raised: {error.splitlines()[0] if error else '?'}"]
        status, codes, multiset = None, [], []
    else:
        match, reasons = observed_matches(fixture, record)
        status, codes, multiset = observed_status(record), observed_codes(record), observed_multiset(record)
    rh = (record or {}).get("reward_hardening") or {}
    return {
        "id": fixture.id,
        "attack": fixture.attack,
        "problem": fixture.problem,
        "policy": fixture.policy,
        "mode": fixture.mode,
        "device": args.device,
        "description": fixture.description,
        "source_file": fixture.source_file,
        "config": dict(fixture.config),
        "expected": {"status": fixture.expected_status, "codes": list(fixture.codes),
                     "unstable": list(fixture.unstable)},
        "observed": {"status": status, "codes": codes, "multiset": multiset,
                     "severities": {f.get("code"): f.get("severity") for f in rh.get("findings") or []},
                     "verified": rh.get("verified")},
        "match": match,
        "reasons": reasons,
        "wall_s": round(wall, 3),
        "error": error,
        "record": record,
    }


def coverage(results: list[dict]) -> dict[str, dict]:
    """Per code: which fixtures declare it, observed it, and observed it without declaring it."""
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.fixtures import AMBIENT_CODES

    cov: dict[str, dict] = {}
    for code in CODES:
        req = [r["id"] for r in results if code in r["expected"]["codes"]]
        seen = [r["id"] for r in results if code in r["observed"]["codes"]]
        cov[code] = {
            "detector": CODES[code].detector,
            "required_by": req,
            "required_and_observed": [i for i in req if i in seen],
            "observed_in": seen,
            "unexpected_in": [] if code in AMBIENT_CODES else [
                r["id"] for r in results if code in r["observed"]["codes"] and r["id"] not in req
                and code not in r["expected"].get("unstable", ())],
        }
    return cov


def summarise(results: list[dict], args: argparse.Namespace, wall_s: float) -> dict:
    mism = [{"id": r["id"], "expected": r["expected"]["status"], "observed": r["observed"]["status"],
             "codes": r["observed"]["codes"], "reasons": r["reasons"]} for r in results if not r["match"]]
    cov = coverage(results)
    return {
        "schema": SCHEMA,
        "device": args.device,
        "ok": not mism,
        "counts": {
            "fixtures": len(results),
            "matched": sum(1 for r in results if r["match"]),
            "mismatched": len(mism),
            "benign": sum(1 for r in results if r["attack"] == "benign"),
            "attacks": sum(1 for r in results if r["attack"] != "benign"),
            "expected_status": dict(Counter(r["expected"]["status"] for r in results)),
            "observed_status": dict(Counter(str(r["observed"]["status"]) for r in results)),
        },
        "mismatches": mism,
        "disabled_detectors": sorted(args.disable_detector),
        "codes_required": sorted(c for c, v in cov.items() if v["required_by"]),
        "codes_never_required": sorted(c for c, v in cov.items() if not v["required_by"]),
        "coverage": cov,
        "attacks_covered": sorted({r["attack"] for r in results if r["attack"] != "benign"}),
        "wall_s": round(wall_s, 2),
    }


# --------------------------------------------------------------------------- printing
_COLS = (("fixture", 38), ("attack", 7), ("expected", 10), ("observed", 10), ("codes", 48), ("time", 6))


def _row(values: list[str]) -> str:
    return "  ".join(str(v)[:w].ljust(w) for v, (_, w) in zip(values, _COLS)).rstrip()


def header() -> str:
    return _row([c for c, _ in _COLS]) + "\n" + _row(["-" * w for _, w in _COLS])


def table_row(r: dict) -> str:
    codes = ",".join(r["observed"]["codes"]) or "-"  # spelled out (RH-13,RH-31): what explain accepts
    mark = "" if r["match"] else "  <-- MISMATCH: " + "; ".join(r["reasons"])
    return _row([r["id"], r["attack"], r["expected"]["status"], str(r["observed"]["status"]), codes,
                 f"{r['wall_s']:.1f}s"]) + mark


def list_table(fixtures: list) -> str:
    """The ``--list`` table (all rows known up front; the run's rows stream as fixtures finish, see _row)."""
    from tabulate import tabulate

    rows = [[f.id, f.attack, f.problem, f"{f.mode}/{f.policy}", f.expected_status, ",".join(f.codes) or "-"]
            for f in fixtures]
    return tabulate(rows, headers=["fixture", "attack", "problem", "mode/policy", "expected", "codes"],
                    tablefmt="simple", disable_numparse=True)


def prebuild_fixtures(fixtures: list, args: argparse.Namespace) -> dict:
    """Build every fixture that compiles (load_inline, Triton) before any is evaluated.

    Builds run in parallel, contained like candidates, each under its build directory's
    lock and its own limit, into the directory the evaluation then uses; a request's
    ``--timeout`` never has to cover a build.  Failed builds are rebuilt (and fail) at
    load, where the record says why.
    """
    from kernelbench.reward_hardening.config import default_build_dir
    from kernelbench.reward_hardening.fixtures import fixture_source, problem_source
    from kernelbench.reward_hardening.parent.prebuild import compiles, prebuild

    jobs = [(fixture_source(f), problem_source(f), default_build_dir(fixture_source(f)))
            for f in fixtures if compiles(fixture_source(f))]
    if not jobs:
        return {}
    # a CPU fixture's build is one compiler process: at least two at a time, or a 2-core
    # machine builds its six one after another (about 100 s instead of 50)
    return prebuild(jobs, args.device if args.device != "cuda" else "cuda:0",
                    parallel=min(len(jobs), max(2, (os.cpu_count() or 2) // 2), 12))


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(args, parser)
    if args.device == "cuda" and "KERNELBENCH_DEMO_SCALE" not in os.environ:
        # GPU-sized problems: at CPU sizes a side stream's escaped work is too short for
        # the calibrated RH-36/RH-37 thresholds (docs/validation/H200.md)
        os.environ["KERNELBENCH_DEMO_SCALE"] = "16"

    from kernelbench.reward_hardening.fixtures import select
    from kernelbench.runs import atomic_write_json

    try:
        fixtures = select(device=args.device, ids=args.only, exclude=args.exclude)
    except KeyError as exc:
        parser.error(str(exc.args[0] if exc.args else exc))
    if args.list:
        print(list_table(fixtures))
        return 0
    if not fixtures:
        print(f"no red-team fixtures selected for device={args.device}", file=sys.stderr)
    else:
        from kernelbench.procs import start_forkserver

        start_forkserver()  # its torch import overlaps the builds and ours

    from tqdm import tqdm

    t0 = time.monotonic()
    built = prebuild_fixtures(fixtures, args)
    if built:
        print(f"[red-team] built {len(built)} extension fixture(s) in parallel in {time.monotonic() - t0:.0f} s "
              f"({sum(1 for r in built.values() if r.get('ok'))} ok)", flush=True)
    results: dict[str, dict] = {}
    judges = None
    if not args.fresh_judges:  # judges kept across fixtures of one problem, per thread
        from kernelbench.reward_hardening.parent.batch import SessionCache

        judges = SessionCache(4)

    def run(f: Any) -> dict:
        return run_fixture(f, args, judges)

    print(header(), flush=True)
    bar = tqdm(total=len(fixtures), desc="red-team", unit="fixture", disable=args.no_progress or not fixtures,
               file=sys.stderr, dynamic_ncols=True)
    try:
        if args.jobs == 1:
            for f in fixtures:
                bar.set_postfix_str(f.id)
                r = run(f)
                results[f.id] = r
                tqdm.write(table_row(r), file=sys.stdout)
                bar.update(1)
        else:
            with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
                futs = {pool.submit(run, f): f for f in fixtures}
                for fut in cf.as_completed(futs):
                    r = fut.result()
                    results[r["id"]] = r
                    tqdm.write(table_row(r), file=sys.stdout)
                    bar.update(1)
    finally:
        bar.close()
        if judges is not None:
            judges.close()
    ordered = [results[f.id] for f in fixtures if f.id in results]
    wall = time.monotonic() - t0
    summary = summarise(ordered, args, wall)

    counts = summary["counts"]
    print(f"\n{counts['matched']}/{counts['fixtures']} observations match "
          f"({counts['attacks']} attacks, {counts['benign']} benign) in {wall:.1f} s", flush=True)
    for m in summary["mismatches"]:
        print(f"  MISMATCH {m['id']}: " + "; ".join(m["reasons"]), flush=True)
    if args.disable_detector:
        print(f"  (detectors disabled: {', '.join(sorted(args.disable_detector))})")

    config = {"timeout": args.timeout, "device": args.device, "num_perf_trials": args.num_perf_trials,
              "num_correct_trials": args.num_correct_trials, "disabled_detectors": sorted(args.disable_detector),
              "only": args.only, "exclude": args.exclude, "jobs": args.jobs, "num_threads": args.num_threads}
    if args.output:
        atomic_write_json(args.output, {"schema": SCHEMA, "config": config, "summary": {
            k: v for k, v in summary.items() if k != "coverage"}, "fixtures": {r["id"]: r for r in ordered}})
    if args.summary_output:
        atomic_write_json(args.summary_output, dict(summary, config=config))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
