"""CUDA validation of KernelGuard on a real GPU (used for docs/validation/H200.md).

    PYTHONPATH=src python3 bench/gpu_validation.py --out $OUT --stages env,prebuild,redteam,calibrate

Stages (each writes its part of ``<out>/validation.json`` as soon as it finishes):

``env``        GPU, driver, torch/triton/CUDA versions, default TF32 flags
``prebuild``   compile every CUDA fixture's extensions in parallel workers
``off``        run_and_check in off mode with the shipped CUDA example (cuda_event)
``enforce``    run_and_check in enforce/source_strict mode with the same example
``redteam``    the red-team suite with ``--device cuda``
``calibrate``  honest candidates (demo solutions, honest CUDA/Triton fixtures) at several
               sizes: per-sample CUDA-event vs host times and post-stream device time,
               the data behind the RH-36/RH-37 thresholds
``dobench``    verified runtime vs an independent ``triton.testing.do_bench`` of the same kernel
               (verified runtimes from this run's ``calibrate`` stage or ``--rows-from``)
``profprobe``  what the profiler records here (device events, times, streams), in this
               process and in a scrubbed worker
``overhead``   wall time per candidate: off vs enforce, with and without the profiler pass
``baselines``  generate_baseline_time for the demo set (eager + torch.compile)
``pytest``     the GPU-marked tests
``packbuilds`` pack the extension build cache into ``<out>/builds.tgz`` (see the stage)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"


def _save(out: Path, key: str, value) -> None:
    path = out / "validation.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[key] = value
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def _run(cmd: list[str], log: Path, timeout: float, env: dict | None = None) -> dict:
    t = time.time()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout,
                              env={**os.environ, **(env or {})})
    tail = log.read_text()[-3000:]
    return {"cmd": " ".join(cmd), "rc": proc.returncode, "seconds": round(time.time() - t, 1), "tail": tail}


def stage_env(out: Path, args) -> dict:
    import torch

    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
            "default_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "default_cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception as exc:
        info["triton"] = f"unavailable: {exc}"
    p = torch.cuda.get_device_properties(0)
    info.update({"gpu": p.name, "sm": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
                 "memory_gib": round(p.total_memory / 2**30, 1), "l2_mib": round(p.L2_cache_size / 2**20, 1)})
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu",
                          "--format=csv,noheader"], capture_output=True, text=True)
    info["nvidia_smi"] = smi.stdout.strip()
    return info


def _cuda_fixtures():
    from kernelbench.reward_hardening.fixtures import fixture_source, select

    return [(f, fixture_source(f)) for f in select(device="cuda")]


def stage_prebuild(out: Path, args) -> dict:
    from kernelbench.reward_hardening.config import default_build_dir
    from kernelbench.reward_hardening.parent.prebuild import prebuild

    jobs, names = [], []
    for f, src in _cuda_fixtures():
        if "load_inline" not in src:
            continue
        jobs.append((src, (DEMO / f.problem).read_text(), default_build_dir(src)))
        names.append(f.id)
    ex = (REPO / "src/kernelbench/prompts/model_new_ex_add.py").read_text()
    jobs.append((ex, (REPO / "src/kernelbench/prompts/model_ex_add.py").read_text(), default_build_dir(ex)))
    names.append("prompts/model_new_ex_add.py")
    t = time.time()
    res = prebuild(jobs, "cuda:0", parallel=args.parallel)
    return {"seconds": round(time.time() - t, 1),
            "builds": {n: res[j[2]] for n, j in zip(names, jobs)}}


def stage_off(out: Path, args) -> dict:
    return _run([sys.executable, "scripts/run_and_check.py", "ref_origin=local",
                 "ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py",
                 "kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py", "eval_mode=local",
                 "timing_method=cuda_event", "gpu_arch=['Hopper']", "reward_hardening_mode=off"],
                out / "off_run_and_check.log", 900)


def stage_enforce(out: Path, args) -> dict:
    return _run([sys.executable, "scripts/run_and_check.py", "ref_origin=local",
                 "ref_arch_src_path=src/kernelbench/prompts/model_ex_add.py",
                 "kernel_src_path=src/kernelbench/prompts/model_new_ex_add.py", "eval_mode=local",
                 "reward_hardening_mode=enforce", "reward_hardening_policy=source_strict",
                 f"output_file={out / 'enforce_record.json'}"], out / "enforce_run_and_check.log", 900)


def stage_redteam(out: Path, args) -> dict:
    r = _run([sys.executable, "scripts/reward_hardening_redteam.py", "--device", "cuda", "--timeout", "300",
              "--num-perf-trials", str(args.redteam_trials), "--no-progress", "--jobs", str(args.redteam_jobs),
              *(["--only", args.redteam_only] if args.redteam_only else []),
              "--output", str(out / "redteam_cuda.json"), "--summary-output", str(out / "redteam_cuda_summary.json")],
             out / "redteam_cuda.log", args.stage_timeout, env={"KERNELBENCH_DEMO_SCALE": str(args.scale)})
    return r


def _honest_candidates():
    """(label, problem path, source, policy) for every honest candidate."""
    out = []
    for level in (1, 2, 3):
        for sol in sorted((DEMO / "solutions" / f"level{level}").glob("*.py")):
            out.append((f"torch:L{level}/{sol.name}", DEMO / f"level{level}" / sol.name, sol.read_text(), "practical"))
    for f, src in _cuda_fixtures():
        if f.expected_status == "PASS":
            out.append((f"fixture:{f.id}", DEMO / f.problem, src, f.policy))
    return out


def _policies(policy: str, args) -> list[str]:
    """The candidate's own policy, then ``practical`` for ``source_strict`` ones with --both-policies."""
    return [policy, "practical"] if args.both_policies and policy == "source_strict" else [policy]


def _phase_seconds(rec: dict) -> dict:
    """Seconds spent in each phase of a hardened evaluation (from the record's phase log)."""
    out, last = {}, 0.0
    for ph in rec["metadata"].get("reward_hardening_phases") or []:
        out[ph["phase"]] = round(ph["t_s"] - last, 2)
        last = ph["t_s"]
    return out


def stage_calibrate(out: Path, args) -> dict:
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.config import default_build_dir

    jobs = [(scale, label, problem, src, policy)
            for scale in [int(s) for s in args.scales.split(",")]
            for label, problem, src, own_policy in _honest_candidates()
            if (label.startswith("fixture:") or not args.only_fixtures)
            and (not args.candidates or any(c in label for c in args.candidates.split(",")))
            for policy in _policies(own_policy, args)]
    rows = []
    for scale, label, problem, src, policy in jobs:
        os.environ["KERNELBENCH_DEMO_SCALE"] = str(scale)
        cfg = HardeningConfig(mode="enforce", policy=policy, device="cuda", timeout=300,
                              num_perf_trials=args.trials, build_dir=default_build_dir(src))
        t = time.time()
        rec = evaluate_hardened(problem.read_text(), src, cfg)
        rh = rec["reward_hardening"]
        ts = rec["metadata"].get("timing_samples") or {}
        rows.append({"scale": scale, "candidate": label, "policy": policy, "status": rh["integrity_status"],
                     "codes": [f["code"] for f in rh["findings"] if f["severity"] != "info"],
                     "missing_capabilities": {k: v["detail"] for k, v in rh["capabilities"].items()
                                              if v["required"] and v["status"] != "AVAILABLE"},
                     "error_evidence": [f["evidence"] for f in rh["findings"] if f["severity"] == "error"][:2],
                     "warning_evidence": {f["code"]: f["evidence"] for f in rh["findings"]
                                          if f["severity"] == "warning"},
                     "verified_ms": rh["verified_runtime"], "reference_ms": rh["verified_reference_runtime"],
                     "event_ms": ts.get("event_ms"), "host_ms": ts.get("host_ms"),
                     "other_streams_ms": ts.get("other_streams_ms"), "window_ms": ts.get("window_ms"),
                     "median_ms": (rec.get("runtime_stats") or {}).get("median"),
                     "phase_s": _phase_seconds(rec), "profiler": rec["metadata"].get("profiler"),
                     "wall_s": round(time.time() - t, 2)})
        print(f"[calibrate] scale {scale} {label} {policy}: {rh['integrity_status']} {rows[-1]['codes']} "
              f"{rh['verified_runtime']} ms", flush=True)
        _save(out, "calibrate_partial", rows)
    # the quantities the thresholds bound, judged with the detectors' own limits
    from types import SimpleNamespace

    from kernelbench.reward_hardening.detectors.gpu import deferred_limit_ms
    from kernelbench.reward_hardening.detectors.timing import async_limit_ms, device_window_ms

    dflt = HardeningConfig()
    samples = [SimpleNamespace(event_ms=e, host_ms=h, other_ms=o, window_ms=w)
               for r in rows
               for e, h, o, w in zip(r["event_ms"] or [], r["host_ms"] or [], r["other_streams_ms"] or [],
                                     r["window_ms"] or [None] * len(r["event_ms"] or []))
               if e is not None]
    window = [device_window_ms(x, dflt) for x in samples]
    summary = {"samples": len(samples),
               "max_host_minus_window_ms": max((x.host_ms - w for x, w in zip(samples, window)), default=None),
               "max_host_over_window": max((x.host_ms / w for x, w in zip(samples, window) if w > 0), default=None),
               "max_other_streams_ms": max((x.other_ms for x in samples), default=None),
               # negative: every honest sample stayed under the threshold by at least this much
               "rh36_worst_margin_ms": max((x.host_ms - async_limit_ms(x, dflt) for x in samples), default=None),
               "rh37_worst_margin_ms": max((x.other_ms - deferred_limit_ms(x, dflt) for x in samples), default=None),
               "statuses": {s: sum(1 for r in rows if r["status"] == s) for s in ("PASS", "FAIL", "SUSPICIOUS",
                                                                                "UNSUPPORTED")}}
    return {"rows": rows, "summary": summary}


def stage_dobench(out: Path, args) -> dict:
    from kernelbench.procs import run_oneshot

    src_json = Path(args.rows_from) if args.rows_from else out / "validation.json"
    data = json.loads(src_json.read_text())
    rows = (data.get("calibrate") or {}).get("rows") or data.get("calibrate_partial") or []
    res = []
    for label, problem, src, policy in _honest_candidates():
        if not label.startswith("fixture:"):
            continue
        match = [r for r in rows if r["candidate"] == label and r["scale"] == args.scale and r["verified_ms"]
                 and r.get("policy", policy) == policy]
        if not match:
            continue
        os.environ["KERNELBENCH_DEMO_SCALE"] = str(args.scale)
        from kernelbench.reward_hardening.config import default_build_dir

        r = run_oneshot("_validation_worker:do_bench_candidate",
                        {"candidate_src": src, "reference_src": problem.read_text(),
                         "build_dir": default_build_dir(src)}, timeout=600, workspace=tempfile.mkdtemp())
        if r["ok"]:
            db = r["result"]["median_ms"]
            med = match[-1].get("median_ms")
            res.append({"candidate": label, "verified_ms": match[-1]["verified_ms"], "verified_median_ms": med,
                        "do_bench_ms": db, "ratio": match[-1]["verified_ms"] / db,
                        "median_ratio": med / db if med else None})
        else:
            res.append({"candidate": label, "error": r.get("error")})
    ratios = [abs(x["ratio"] - 1) for x in res if "ratio" in x]
    med_ratios = [abs(x["median_ratio"] - 1) for x in res if x.get("median_ratio")]
    return {"rows": res, "median_abs_deviation": statistics.median(ratios) if ratios else None,
            "median_abs_deviation_of_medians": statistics.median(med_ratios) if med_ratios else None}


def stage_profprobe(out: Path, args) -> dict:
    from kernelbench.procs import run_oneshot
    from _validation_worker import profiler_probe

    res = {}
    try:
        res["parent"] = profiler_probe()
    except Exception as exc:
        res["parent"] = {"error": f"{type(exc).__name__}: {exc}"}
    log = out / "profprobe_worker.log"
    r = run_oneshot("_validation_worker:profiler_probe", {}, timeout=300,
                    workspace=tempfile.mkdtemp(), log_path=str(log))
    res["worker"] = r["result"] if r["ok"] else r
    res["worker_log_tail"] = log.read_text()[-3000:] if log.exists() else ""
    return res


def stage_overhead(out: Path, args) -> dict:
    from kernelbench.batch import WorkItem, off_mode_evaluator
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.config import default_build_dir

    class OffCfg:
        num_correct_trials, num_perf_trials, measure_performance = 5, args.trials, True
        timing_method, backend, precision, verbose, timeout = "cuda_event", "cuda", "fp32", False, 900

    os.environ["KERNELBENCH_DEMO_SCALE"] = str(args.scale)
    off = off_mode_evaluator(OffCfg)
    rows = []
    picked = [c for c in _honest_candidates() if c[0].startswith("fixture:")][: args.overhead_n]
    for label, problem, src, policy in picked:
        row = {"candidate": label}
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "k.py"
            path.write_text(src)
            bd = default_build_dir(src)
            t = time.time()
            rec = off(WorkItem(0, 0, str(path), str(problem), problem.read_text(), problem.name), "cuda:0", bd)
            row["off_s"], row["off_correct"] = round(time.time() - t, 2), rec["correctness"]
        for prof in (True, False):
            cfg = HardeningConfig(mode="enforce", policy=policy, device="cuda", timeout=300,
                                  num_perf_trials=args.trials, build_dir=default_build_dir(src), profile_backend=prof)
            t = time.time()
            r = evaluate_hardened(problem.read_text(), src, cfg)
            key = "enforce_profile_s" if prof else "enforce_noprofile_s"
            row[key] = round(time.time() - t, 2)
            row[key.replace("_s", "_status")] = r["reward_hardening"]["integrity_status"]
        rows.append(row)
        print(f"[overhead] {row}", flush=True)
        _save(out, "overhead_partial", rows)
    return {"rows": rows, "trials": args.trials, "scale": args.scale}


def stage_baselines(out: Path, args) -> dict:
    r = _run([sys.executable, "scripts/generate_baseline_time.py", "hardware=H200", "dataset_path=demo",
              f"output_dir={out / 'timing'}", f"compile_modes={args.compile_modes}",
              f"num_trials={args.baseline_trials}"], out / "baselines.log",
             args.stage_timeout, env={"KERNELBENCH_DEMO_SCALE": str(args.baseline_scale)})
    return r


def stage_packbuilds(out: Path, args) -> dict:
    """Pack the extension build cache into ``<out>/builds.tgz`` for the next machine.

    Object files are stored empty with their timestamps: ninja only compares times,
    so the shared objects are reused without rebuilding (about a minute each), while
    the archive stays small enough to come back.  Unpack it into the checkout
    (``tar xzf builds.tgz``) and carry ``cache/kernelguard_builds``.
    """
    import tarfile

    root = REPO / "cache" / "kernelguard_builds"
    dest = out / "builds.tgz"
    if not root.is_dir():
        return {"error": f"no build cache at {root}"}

    with tarfile.open(dest, "w:gz") as tar:
        for path in sorted(root.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(REPO)))
            if path.is_file() and path.suffix == ".o":
                info.size = 0
                tar.addfile(info)
            elif path.is_file():
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            elif path.is_dir():
                tar.addfile(info)
    return {"bytes": dest.stat().st_size, "repo": str(REPO)}


def stage_pytest(out: Path, args) -> dict:
    return _run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                 *(["-k", args.pytest_k] if args.pytest_k else []), "tests"],
                out / "pytest_gpu.log", args.stage_timeout)


STAGES = {"env": stage_env, "prebuild": stage_prebuild, "off": stage_off, "enforce": stage_enforce,
          "redteam": stage_redteam, "calibrate": stage_calibrate, "dobench": stage_dobench,
          "overhead": stage_overhead, "profprobe": stage_profprobe, "baselines": stage_baselines, "pytest": stage_pytest,
          "packbuilds": stage_packbuilds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--stages", default="env,prebuild,off,enforce,redteam,calibrate")
    ap.add_argument("--scale", type=int, default=16, help="KERNELBENCH_DEMO_SCALE for red team, do_bench, overhead")
    ap.add_argument("--scales", default="4,16,64", help="scales for calibration")
    ap.add_argument("--baseline-scale", type=int, default=64)
    ap.add_argument("--baseline-trials", type=int, default=100)
    ap.add_argument("--compile-modes", default="['default']")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--parallel", type=int, default=10)
    ap.add_argument("--stage-timeout", type=float, default=480)
    ap.add_argument("--overhead-n", type=int, default=4)
    ap.add_argument("--only-fixtures", action="store_true", help="calibrate only the honest GPU fixtures")
    ap.add_argument("--candidates", default="", help="comma-separated substrings of candidate labels to calibrate")
    ap.add_argument("--both-policies", action="store_true",
                    help="calibrate source_strict fixtures under practical too")
    ap.add_argument("--redteam-trials", type=int, default=10)
    ap.add_argument("--redteam-jobs", type=int, default=1, help="fixtures evaluated concurrently")
    ap.add_argument("--redteam-only", default="", help="comma-separated fixture ids")
    ap.add_argument("--pytest-k", default="", help="pytest -k expression for the pytest stage")
    ap.add_argument("--rows-from", default="", help="validation.json whose calibrate rows dobench compares with")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.stages.split(","):
        t = time.time()
        print(f"=== stage {name}", flush=True)
        try:
            result = STAGES[name](out, args)
        except Exception as exc:  # keep going: later stages still report
            import traceback

            result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
        _save(out, name, result)
        print(f"=== stage {name} done in {time.time() - t:.1f}s: "
              f"{json.dumps(result, default=str)[:1500]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
