"""Upstream KernelBench sweep: honest candidates under off and enforce, one batch per mode.

    python3 bench/upstream_sweep.py --dataset-path KernelBench --level 1 --device cuda \
        --out docs/validation/h200

For every selected problem the honest candidate is the reference itself with every
reference to ``Model`` renamed to ``ModelNew`` (an ``ast`` rewrite; ``get_inputs`` and
``get_init_inputs`` stay as they are).  All candidates are written as one runs
directory and evaluated by ``scripts/eval_from_generations.py`` in a subprocess, once
per mode (``off``, then ``enforce`` with ``practical``), exactly as a user would run it.
From outside that process the script measures, per problem:

* wall time: the interval between one record appearing in the results file and the
  next (the batch runs on one device, so samples run one after another in id order;
  the first interval starts when the batch prints its work list, so it also carries
  the start of the worker pool).  Hardened records also carry their own
  ``reward_hardening_wall_s``, kept in the JSON;
* the batch parent's peak resident memory during that interval (``VmRSS`` sampled from
  ``/proc/<pid>/status`` by a watcher thread, and ``VmHWM`` whenever it rises; the
  parent only, its worker children excluded);
* GPU peak memory: the device's ``memory.used`` from ``nvidia-smi`` sampled during the
  interval, else the record's ``gpu_memory`` (candidate worker only), else blank;
* the record's integrity status and findings, its judged correctness probes, the cost
  of its trusted output reads, the seconds of each phase and ``request_ms`` (the judge's
  and the candidate's requests summed by command; the summary adds them up over the
  problems: where the hardened wall time went).

Input and output sizes are computed without allocating: ``get_inputs()`` and the
reference's forward run on the meta device.

The work directory (default ``runs/upstream_sweep``) keeps the runs directories, the
records and the measurements, so a sweep stopped by ``--batch-timeout`` (or killed)
resumes where it stopped when the same command is run again; every run rewrites the
table from all measurements so far.  If a batch parent dies (an out-of-memory kill,
for example), the problem in flight is marked with the death and the batch is started
again for the remaining problems (``--max-restarts``); the summary counts the deaths.

``--scale-check`` runs a handful of the cheapest problems (FLOPs plus bytes, from the
meta device) on the CPU with few trials,
to exercise the script on a machine without a GPU; ``--sizes-only`` prints the size
table without evaluating anything.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

GIB = 2**30
MODES = ("off", "audit", "enforce")
RESULT_FILE = {"off": "eval_results.json", "audit": "verified_eval_results.json",
               "enforce": "verified_eval_results.json"}


# --------------------------------------------------------------------------- the honest candidate
def _char_col(line: str, byte_col: int) -> int:
    """``ast`` column offsets count UTF-8 bytes; string slicing counts characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def model_references(source: str, name: str = "Model") -> list[tuple[int, str]]:
    """``(line, kind)`` of every place in ``source`` that binds or refers to ``name``.

    Names (loads, stores, deletes), class and function definitions, import aliases,
    ``global``/``nonlocal`` and parameter names count; attribute names (``x.Model``),
    keyword-argument names and text inside strings do not refer to the variable.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == name:
            out.append((node.lineno, "name"))
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            out.append((node.lineno, "definition"))
        elif isinstance(node, ast.alias) and name in (node.asname or node.name.split(".")[0],):
            out.append((getattr(node, "lineno", 0), "import"))
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            out.append((node.lineno, "global"))
        elif isinstance(node, ast.arg) and node.arg == name:
            out.append((node.lineno, "parameter"))
    return out


class _Renamer(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def _fix(self, value: str) -> str:
        return self.new if value == self.old else value

    def visit_Name(self, node):
        node.id = self._fix(node.id)
        return node

    def _visit_def(self, node):
        node.name = self._fix(node.name)
        self.generic_visit(node)
        return node

    visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _visit_def

    def visit_alias(self, node):
        if node.asname:
            node.asname = self._fix(node.asname)
        elif node.name == self.old:
            node.asname = self.new
        return node

    def visit_Global(self, node):
        node.names = [self._fix(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_arg(self, node):
        node.arg = self._fix(node.arg)
        self.generic_visit(node)
        return node


def rename_model(source: str, old: str = "Model", new: str = "ModelNew") -> str:
    """``source`` with every reference to ``old`` renamed to ``new``.

    The edit is made in the original text at the positions ``ast`` reports, so
    comments, formatting and line numbers survive; a construct that text edit does not
    cover (an import alias, ``global``) falls back to rewriting the whole tree with
    ``ast.unparse``.  Raises ``ValueError`` if ``new`` is already used, if ``old``
    does not appear, or if a reference survives.
    """
    tree = ast.parse(source)
    if model_references(source, new):
        raise ValueError(f"the source already uses {new!r}")
    if not model_references(source, old):
        raise ValueError(f"the source has no {old!r}")
    lines = source.splitlines(keepends=True)
    spots: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and node.id == old) or (isinstance(node, ast.arg) and node.arg == old):
            spots.add((node.lineno, _char_col(lines[node.lineno - 1], node.col_offset)))
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == old:
            line = lines[node.lineno - 1]
            m = re.compile(r"(?:async\s+)?(?:class|def)\s+(" + re.escape(old) + r")\b").search(
                line, _char_col(line, node.col_offset))
            if m:
                spots.add((node.lineno, m.start(1)))
    for lineno, col in sorted(spots, reverse=True):  # right to left keeps earlier columns valid
        line = lines[lineno - 1]
        assert line[col:col + len(old)] == old, (lineno, col, line)
        lines[lineno - 1] = line[:col] + new + line[col + len(old):]
    out = "".join(lines)
    if model_references(out, old):
        out = ast.unparse(ast.fix_missing_locations(_Renamer(old, new).visit(ast.parse(source))))
    left = model_references(out, old)
    if left:
        raise ValueError(f"{old!r} is still referenced at {left}")
    if not any(isinstance(n, ast.ClassDef) and n.name == new for n in ast.walk(ast.parse(out))):
        raise ValueError(f"the renamed source defines no class {new!r}")
    return out


# --------------------------------------------------------------------------- sizes on the meta device
def _nbytes(obj: Any) -> int:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(o) for o in obj.values())
    return 0


def meta_sizes(source: str, filename: str = "<problem>", outputs: bool = True) -> dict:
    """Input (and output) bytes of a problem, computed on the meta device.

    ``{"input_bytes", "output_bytes", "flops", "error"}``: the inputs are built by
    ``get_inputs()`` under ``torch.device("meta")``, so nothing is allocated; the
    output comes from the reference's forward on those meta tensors (``None`` where an
    operator has no meta implementation), and ``flops`` is PyTorch's FLOP counter over
    that forward (matrix products, convolutions and attention only; element-wise work
    counts zero).
    """
    import torch

    out: dict[str, Any] = {"input_bytes": None, "output_bytes": None, "flops": None, "error": None}
    ns: dict[str, Any] = {"__name__": "kernelbench_meta_problem", "__file__": filename}
    try:
        exec(compile(source, filename, "exec"), ns)
        with torch.device("meta"):
            inputs = ns["get_inputs"]()
        out["input_bytes"] = _nbytes(inputs)
    except Exception as exc:
        out["error"] = f"inputs: {type(exc).__name__}: {exc}"[:300]
        return out
    if not outputs:
        return out
    try:
        from torch.utils.flop_counter import FlopCounterMode

        with torch.device("meta"), torch.no_grad():
            init = ns["get_init_inputs"]() if "get_init_inputs" in ns else []
            model = ns["Model"](*init)
            counter = FlopCounterMode(display=False)
            with counter:
                result = model(*inputs)
        out["output_bytes"] = _nbytes(result)
        out["flops"] = int(counter.get_total_flops())
    except Exception as exc:
        out["error"] = f"output: {type(exc).__name__}: {exc}"[:300]
    return out


def _cost(z: dict) -> float:
    """A rough work estimate for picking the cheapest problems: FLOPs plus bytes moved."""
    return (z.get("flops") or 0) + (z.get("input_bytes") or 0) + (z.get("output_bytes") or 0)


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return ""
    for unit, scale in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}" if n / scale < 1000 else f"{n / scale:.0f} {unit}"
    return f"{int(n)} B"


# --------------------------------------------------------------------------- problems
def parse_ids(text: str | None) -> set[int] | None:
    """``"1,3,10-20"`` -> ``{1, 3, 10, ..., 20}``; empty -> ``None`` (all)."""
    if not text:
        return None
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.update(range(int(lo), int(hi) + 1))
        else:
            ids.add(int(part))
    return ids


def load_problems(dataset_path: str, level: int, ids: set[int] | None) -> list:
    from kernelbench.dataset import construct_kernelbench_dataset

    ds = construct_kernelbench_dataset(level, source="local", base_path=dataset_path)
    return [ds.get_problem_by_id(pid) for pid in ds.get_problem_ids() if ids is None or pid in ids]


# --------------------------------------------------------------------------- watching a batch
def _proc_status(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) in bytes of one process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    vals = {}
    for line in text.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, rest = line.split(":", 1)
            vals[key] = int(rest.split()[0]) * 1024
    if "VmRSS" not in vals:
        return None
    return vals["VmRSS"], vals.get("VmHWM", vals["VmRSS"])


class GpuPoller:
    """``nvidia-smi`` streaming ``memory.used`` (MiB) of one GPU every ``interval_ms``."""

    def __init__(self, index: int, interval_ms: int = 100):
        self.samples: list[tuple[float, int]] = []
        self.proc = None
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return
        self.proc = subprocess.Popen([exe, "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                      "-i", str(index), "-lms", str(interval_ms)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.samples.append((time.monotonic(), int(line.strip()) * 2**20))
            except ValueError:
                pass

    def peak(self, t0: float, t1: float) -> int | None:
        vals = [v for t, v in self.samples if t0 <= t <= t1]
        return max(vals) if vals else None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()


def _result_keys(path: Path) -> dict[int, dict]:
    """``{problem_id: record of sample 0}`` of a results file (atomically replaced by the batch)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for pid, samples in data.items():
        for rec in samples:
            if rec.get("sample_id") == 0 and str(pid).isdigit():
                out[int(pid)] = rec
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    """End the batch and every worker it started (its own session, see Popen below)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def run_batch(cmd: list[str], results: Path, pending: list[int], log: Path, poll_s: float,
              gpu: GpuPoller | None, batch_timeout: float | None, rss_limit: float | None = None,
              on_measure=None) -> dict:
    """Run one ``eval_from_generations`` batch and measure every sample it writes.

    Returns ``{"rc", "wall_s", "peak_rss_bytes", "measured": {pid: {...}}, "in_flight",
    "in_flight_rss_bytes", "timed_out", "rss_killed", "started"}``; ``on_measure(pid, m)`` is
    called as each sample's measurement is taken.  With ``rss_limit`` (bytes) the
    batch is killed as soon as its parent's resident memory exceeds it (this protects
    the machine; the problem in flight is then reported as the one that killed it).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    logf = open(log, "w")
    t_start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=logf, text=True, start_new_session=True)
    started = threading.Event()

    def read_stdout():
        for line in proc.stdout:
            logf.write(line)
            logf.flush()
            if line.startswith("[eval]") and "samples to evaluate" in line:
                started.set()

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    before = set(_result_keys(results))
    order = [p for p in pending if p not in before]
    measured: dict[int, dict] = {}
    interval_t0 = None
    cur_rss = last_hwm = peak = 0
    mtime = None
    timed_out = rss_killed = False
    try:
        while True:
            now = time.monotonic()
            if interval_t0 is None and started.is_set():
                interval_t0 = now
            st = _proc_status(proc.pid)
            if st is not None:
                rss, hwm = st
                cur_rss = max(cur_rss, rss)
                if hwm > last_hwm:
                    if last_hwm:  # the high-water mark rose since the last look: the peak is in this interval
                        cur_rss = max(cur_rss, hwm)
                    last_hwm = hwm
                peak = max(peak, rss, hwm)
            try:
                m = results.stat().st_mtime_ns
            except OSError:
                m = None
            if m is not None and m != mtime:
                mtime = m
                keys = _result_keys(results)
                for pid in [p for p in order if p in keys and p not in measured]:
                    t0 = interval_t0 if interval_t0 is not None else t_start
                    measured[pid] = {"wall_s": round(now - t0, 3), "parent_peak_rss_bytes": cur_rss or None,
                                     "gpu_peak_bytes_smi": gpu.peak(t0, now) if gpu else None}
                    if on_measure:
                        on_measure(pid, measured[pid])
                    interval_t0 = now
                    cur_rss = st[0] if st else 0
            if proc.poll() is not None:
                break
            if rss_limit and st is not None and st[0] > rss_limit:
                rss_killed = True
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            if batch_timeout and now - t_start > batch_timeout:
                timed_out = True
                _kill_group(proc)
                break
            time.sleep(poll_s)
    finally:  # an interrupted sweep leaves no batch behind
        _kill_group(proc)
        reader.join(5)
        logf.close()
    keys = _result_keys(results)
    for pid in [p for p in order if p in keys and p not in measured]:  # written just before exit
        measured[pid] = {"wall_s": round(time.monotonic() - (interval_t0 or t_start), 3),
                         "parent_peak_rss_bytes": cur_rss or None, "gpu_peak_bytes_smi": None}
        if on_measure:
            on_measure(pid, measured[pid])
    left = [p for p in order if p not in keys]
    return {"rc": proc.returncode, "wall_s": round(time.monotonic() - t_start, 1), "peak_rss_bytes": peak or None,
            "measured": measured, "in_flight": left[0] if left else None,
            "in_flight_rss_bytes": cur_rss or None, "timed_out": timed_out, "rss_killed": rss_killed,
            "started": started.is_set()}


# --------------------------------------------------------------------------- records
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def main_finding(rec: dict | None) -> dict | None:
    """The most severe finding of a hardened record (first of its rank)."""
    if not rec:
        return None
    findings = (rec.get("reward_hardening") or {}).get("findings") or []
    if not findings:
        return None
    return min(findings, key=lambda f: _SEVERITY_RANK.get(f.get("severity"), 3))


def record_status(rec: dict | None, mode: str) -> str:
    if rec is None:
        return "NO RECORD"
    if mode == "off":
        return "PASS" if rec.get("compiled") and rec.get("correctness") else "FAIL"
    return (rec.get("reward_hardening") or {}).get("integrity_status", "?")


def explain(rec: dict | None, mode: str) -> str:
    """One line that says why a record is not PASS."""
    if rec is None:
        return "no record was written"
    if mode == "off":
        meta = rec.get("metadata") or {}
        for key in ("error", "runtime_error", "compilation_error", "correctness_issue", "other_error", "cuda_error"):
            if meta.get(key):
                return f"{key}: {str(meta[key])[:200]}"
        return "; ".join(f"{k}: {str(v)[:80]}" for k, v in list(meta.items())[:3])
    rh = rec.get("reward_hardening") or {}
    parts = []
    for f in rh.get("findings") or []:
        if f.get("severity") in ("error", "warning"):
            ev = json.dumps(f.get("evidence") or {}, default=str)
            parts.append(f"{f['code']} ({f['severity']}): {f.get('summary', '')}; evidence {ev[:200]}")
    for name, cap in (rh.get("capabilities") or {}).items():
        if cap.get("required") and cap.get("status") != "AVAILABLE":
            parts.append(f"capability {name} {cap.get('status')}: {cap.get('detail', '')[:150]}")
    return " | ".join(parts) or "no error or warning finding"


# --------------------------------------------------------------------------- the sweep
def _eval_cmd(args, run_name: str, mode: str, work: Path, dataset_path: str) -> list[str]:
    cmd = [sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), f"run_name={run_name}",
           "dataset_src=local", f"dataset_path={dataset_path}", f"level={args.level}", f"device={args.device}",
           f"runs_dir={work / 'runs'}", f"kernel_eval_build_dir={work / 'cache'}", "num_gpu_devices=1",
           f"num_correct_trials={args.num_correct_trials}", f"num_perf_trials={args.num_perf_trials}",
           f"timeout={args.timeout}", f"reward_hardening_mode={mode}", "verbose=False"]
    if args.device == "cpu":
        cmd.append("timing_method=host_time")
    if mode != "off":
        cmd.append(f"reward_hardening_policy={args.policy}")
    return cmd + list(args.extra)


def _load_json(path: Path, default):
    return json.loads(path.read_text()) if path.exists() else default


def sweep_mode(args, mode: str, work: Path, dataset_path: str, ids: list[int], gpu: GpuPoller | None) -> dict:
    """Run (or resume) the batch of one mode; returns its measurement file's content."""
    run_name = f"level{args.level}_{mode}"
    results = work / "runs" / run_name / RESULT_FILE[mode]
    mpath = work / f"measure_{run_name}.json"
    meas = _load_json(mpath, {"problems": {}, "batches": []})
    for restart in range(args.max_restarts + 1):
        done = _result_keys(results)
        died = {int(k) for k, v in meas["problems"].items() if v.get("batch_died")}
        pending = [p for p in ids if p not in done and p not in died]
        if not pending:
            break
        for p in died:  # a problem that killed its batch is not offered again
            (work / "runs" / run_name / f"level_{args.level}_problem_{p}_sample_0_kernel.py").unlink(missing_ok=True)
        n = len(meas["batches"])
        print(f"[sweep] {mode}: batch {n} with {len(pending)} problems", flush=True)
        log = work / "logs" / f"{run_name}_batch{n}.log"

        def measured(pid, m, n=n):  # saved at once: a sweep killed from outside keeps what it measured
            meas["problems"][str(pid)] = {**m, "batch": n}
            mpath.write_text(json.dumps(meas, indent=2) + "\n")
            rec = _result_keys(results).get(pid)
            print(f"[sweep] {mode} L{args.level}/{pid}: {record_status(rec, mode)} {m['wall_s']:.1f} s, "
                  f"parent RSS {fmt_bytes(m['parent_peak_rss_bytes'])}", flush=True)

        res = run_batch(_eval_cmd(args, run_name, mode, work, dataset_path), results, pending, log,
                        args.poll_s, gpu, args.batch_timeout,
                        args.rss_limit_gib * GIB if args.rss_limit_gib else None, on_measure=measured)
        res.pop("measured")
        meas["batches"].append({k: v for k, v in res.items()} | {"problems": len(pending)})
        if res["timed_out"]:
            print(f"[sweep] {mode}: stopped by --batch-timeout; run the same command again to resume", flush=True)
            break
        if not res["started"]:  # it never reached its work list: a setup error, not a problem's fault
            mpath.write_text(json.dumps(meas, indent=2) + "\n")
            tail = log.read_text()[-2000:] if log.exists() else ""
            print(f"[sweep] {mode}: the batch exited (rc {res['rc']}) before evaluating anything:\n{tail}",
                  file=sys.stderr, flush=True)
            raise SystemExit(2)
        if res["in_flight"] is not None and res["rc"] == 0 and not res["rss_killed"]:
            print(f"[sweep] {mode}: the batch finished without records for {res['in_flight']} and later ids",
                  flush=True)
            break
        if res["in_flight"] is not None:
            pid = res["in_flight"]
            meas["problems"][str(pid)] = {"batch_died": True, "batch": n, "rc": res["rc"],
                                          "rss_killed": res["rss_killed"],
                                          "parent_peak_rss_bytes": res["in_flight_rss_bytes"]}
            how = (f"was killed at --rss-limit-gib {args.rss_limit_gib}" if res["rss_killed"]
                   else f"died (rc {res['rc']})")
            print(f"[sweep] {mode}: the batch {how} while evaluating problem {pid}", flush=True)
        mpath.write_text(json.dumps(meas, indent=2) + "\n")
        if res["in_flight"] is None:
            break
    mpath.write_text(json.dumps(meas, indent=2) + "\n")
    return meas


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _env(args) -> dict:
    import torch

    env = {"report_written_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
           "python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
           "platform": platform.platform()}
    try:
        env["host_memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB, 1)
    except (ValueError, OSError):
        pass
    if args.device.startswith("cuda") and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update({"gpu": p.name, "gpu_memory_gib": round(p.total_memory / GIB, 1), "cuda": torch.version.cuda})
    env["git_commit"] = _git_commit()
    # the code itself: a copy of the checkout without its own .git (a lent GPU machine) can
    # report a stale or no commit, while this digest always names what ran
    env["src_digest"] = _src_digest()
    return env


def _src_digest() -> str:
    """sha256 (first 12 hex digits) over the paths and bytes of every file under ``src/``."""
    import hashlib

    h = hashlib.sha256()
    root = REPO / "src"
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _death(m: dict) -> str:
    if m.get("rss_killed"):
        return (f"the batch parent's RSS passed the bench's --rss-limit-gib ({fmt_bytes(m.get('parent_peak_rss_bytes'))}"
                " when killed) while this problem was evaluated; no record")
    return f"the batch parent died (rc {m.get('rc')}) while this problem was evaluated; no record"


def phase_seconds(phases: list) -> dict:
    """``{phase: seconds}`` from a record's phase marks (each mark is the time its phase ended)."""
    out: dict[str, float] = {}
    last = 0.0
    for p in phases:
        t = p.get("t_s") if isinstance(p, dict) else None
        if isinstance(t, (int, float)):
            name = str(p.get("phase"))
            out[name] = round(out.get(name, 0.0) + max(0.0, t - last), 3)
            last = t
    return out


def build_rows(problems, sizes, skipped, modes, meas, results) -> list[dict]:
    rows = []
    for p in problems:
        row = {"id": p.problem_id, "name": p.name, **sizes[p.problem_id]}
        if p.problem_id in skipped:
            row["skipped"] = skipped[p.problem_id]
        for mode in modes:
            rec = results[mode].get(p.problem_id)
            m = meas[mode]["problems"].get(str(p.problem_id), {})
            gpu_rec = ((rec or {}).get("metadata") or {}).get("gpu_memory") or {}
            status = "SKIPPED" if p.problem_id in skipped else record_status(rec, mode)
            if m.get("batch_died"):
                status = "BATCH DIED"
            mf = main_finding(rec) if mode != "off" else None
            probes = ((rec or {}).get("metadata") or {}).get("correctness_probes") or {}
            reads = ((rec or {}).get("metadata") or {}).get("output_reads") or {}
            phases = ((rec or {}).get("metadata") or {}).get("reward_hardening_phases") or []
            row[mode] = {
                "status": status, "wall_s": m.get("wall_s"),
                "record_wall_s": ((rec or {}).get("metadata") or {}).get("reward_hardening_wall_s"),
                "parent_peak_rss_bytes": m.get("parent_peak_rss_bytes"),
                "gpu_peak_bytes": m.get("gpu_peak_bytes_smi") or gpu_rec.get("peak_reserved_bytes"),
                "gpu_peak_source": ("nvidia-smi" if m.get("gpu_peak_bytes_smi") else
                                    "record" if gpu_rec.get("peak_reserved_bytes") else None),
                "batch": m.get("batch"), "batch_died": bool(m.get("batch_died")),
                "main_finding": mf.get("code") if mf else None,
                "findings": [{"code": f.get("code"), "severity": f.get("severity"), "summary": f.get("summary")}
                             for f in ((rec or {}).get("reward_hardening") or {}).get("findings") or []],
                "explanation": (None if status in ("PASS", "SKIPPED") else
                                _death(m) if m.get("batch_died") else explain(rec, mode)),
                "runtime": (rec or {}).get("runtime"),
                # correctness probes the judge compared (hidden, the repeat, the perturbations) and
                # those skipped with the reason recorded (a reference output that is not finite)
                "probes_judged": sum(probes.get("judged", {}).values()) if probes else None,
                "probes_skipped": [str(x) for x in probes.get("skipped") or []],
                # the trusted read of every output from the frozen candidate (its cost per GiB)
                "read_path": reads.get("path"),
                "read_bytes": reads.get("bytes"), "read_ms": reads.get("read_ms"),
                "read_map_ms": reads.get("map_ms"), "read_freeze_ms": reads.get("freeze_ms"),
                # seconds each phase of the record took (where the sample's wall time goes)
                "phase_s": phase_seconds(phases),
                # the requests behind those seconds (judge and candidate commands, summed)
                "request_ms": ((rec or {}).get("metadata") or {}).get("request_ms"),
            }
        if "off" in modes and len(modes) > 1:
            hard = [md for md in modes if md != "off"][-1]
            a, b = row["off"]["wall_s"], row[hard]["wall_s"]
            row["ratio"] = round(b / a, 2) if a and b else None
        rows.append(row)
    return rows


def expected_probes(num_correct_trials: int) -> int:
    """Correctness probes of one hardened evaluation: the hidden inputs, the repeat, the perturbations."""
    from kernelbench.reward_hardening.config import HardeningConfig

    return max(1, num_correct_trials) + 1 + len(HardeningConfig().perturbations)


KERNEL_PARITY = 1.2  # enforce runtime / off runtime at most this: the kernels ran alike in both modes


def kernel_ratio(row: dict, mode: str = "enforce") -> float | None:
    """``mode``'s runtime over off's for one problem (``None`` without both runtimes)."""
    off, hard = (row.get("off") or {}).get("runtime"), (row.get(mode) or {}).get("runtime")
    if not off or not hard or off <= 0 or hard <= 0:
        return None
    return hard / off


def ratio_stats(both: list[dict], mode: str = "enforce") -> dict:
    """The enforce/off wall-time ratio over ``both`` (rows both modes passed, batch-first samples left out).

    The median, the largest and the ids above 1.5, and the same over the problems whose
    kernels ran alike in both modes (``kernel_parity``): enforce times both sides in strict
    fp32, upstream's off mode lets cuDNN use TF32, so on the cuDNN problems part of the
    wall-time ratio is the kernels', not the harness's.
    """
    def stats(rs: list[dict]) -> dict:
        ratios = [r["ratio"] for r in rs if r.get("ratio") is not None]
        return {"problems": len(rs), "median_ratio": _median(ratios), "max_ratio": max(ratios, default=None),
                "ratios_over_1_5": sorted(r["id"] for r in rs if (r.get("ratio") or 0) > 1.5)}

    kr = {r["id"]: kernel_ratio(r, mode) for r in both}
    same = [r for r in both if kr[r["id"]] is not None and kr[r["id"]] <= KERNEL_PARITY]
    # each problem above 1.5, with what made it so: its kernels (slower in the mode than in off)
    # or the hardened protocol around kernels that ran alike
    above = [{"id": r["id"], "ratio": r["ratio"], "off_s": r["off"].get("wall_s"), "mode_s": r[mode].get("wall_s"),
              "off_runtime": r["off"].get("runtime"), "mode_runtime": r[mode].get("runtime"),
              "kernel_ratio": None if kr[r["id"]] is None else round(kr[r["id"]], 2),
              "cause": "kernels" if (kr[r["id"]] or 0) > KERNEL_PARITY else "protocol"}
             for r in sorted(both, key=lambda r: r["id"]) if (r.get("ratio") or 0) > 1.5]
    return {**stats(both), "above_1_5": above, "kernel_parity": {**stats(same), "limit": KERNEL_PARITY,
            "slower_kernels": sorted(i for i, v in kr.items() if v is not None and v > KERNEL_PARITY)}}


def ratio_goal_met(st: dict) -> bool:
    """The honest-verdict issue's goal on the ratio: median at most 1.0 and none above 1.5."""
    return st.get("median_ratio") is not None and st["median_ratio"] <= 1.0 and (st.get("max_ratio") or 0) <= 1.5


def above_lines(above: list[dict], mode: str = "enforce") -> list[str]:
    """Markdown: the problems above 1.5 and their cause (``kernels``: the kernels ran more than
    ``KERNEL_PARITY`` times longer in the mode, as cuDNN does in strict fp32 against off's TF32;
    ``protocol``: they ran alike, so the hardened protocol around them made the difference)."""
    if not above:
        return []
    lines = ["", f"## {mode}/off above 1.5, and why", "",
             f"| id | off s | {mode} s | ratio | kernel ms, off | kernel ms, {mode} | kernel ratio | cause |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {a['id']} | {_cell(a['off_s'])} | {_cell(a['mode_s'])} | {_cell(a['ratio'])} | "
              f"{_cell(a['off_runtime'])} | {_cell(a['mode_runtime'])} | {_cell(a['kernel_ratio'])} | {a['cause']} |"
              for a in above]
    return lines


def first_of_batches(rows: list[dict], modes: list[str]) -> set[int]:
    """Ids that were the first sample of a batch in any mode (a batch runs its problems in id order)."""
    first: dict[tuple, int] = {}
    for r in rows:
        for m in modes:
            b = r.get(m, {}).get("batch")
            if b is not None and r[m].get("wall_s") is not None:
                first[(m, b)] = min(first.get((m, b), r["id"]), r["id"])
    return set(first.values())


def request_summary(recs: list[dict], top: int = 8, parts: bool = False) -> list[dict]:
    """The requests that took the hardened records' wall time, summed over the problems, largest first.

    Each record's ``request_ms`` sums its judge and candidate requests by ``role:cmd``;
    ``per_ms`` is the mean time of one request of that kind (its work, transfer and wait).
    ``parts``: instead, the parts the judge timed inside its requests (``role:cmd.part``),
    which are already inside their request's entry.
    """
    tot: dict[str, list] = {}
    for rec in recs:
        for k, v in (rec.get("request_ms") or {}).items():
            if ("." in k.partition(":")[2]) != parts:
                continue
            e = tot.setdefault(k, [0, 0.0])
            e[0] += int(v.get("n") or 0)
            e[1] += float(v.get("ms") or 0.0)
    return [{"request": k, "n": n, "s": round(ms / 1e3, 1), "per_ms": round(ms / n, 2) if n else None}
            for k, (n, ms) in sorted(tot.items(), key=lambda kv: -kv[1][1])[:top]]


def summarize(rows, modes, level, meas, num_correct_trials: int = 5) -> dict:
    hard = [m for m in modes if m != "off"]
    main = hard[-1] if hard else "off"
    run = [r for r in rows if "skipped" not in r]
    s: dict[str, Any] = {"problems": len(rows), "evaluated": len(run), "skipped": len(rows) - len(run),
                         "main_mode": main}
    for mode in modes:
        s[mode] = {
            "pass": sum(r[mode]["status"] == "PASS" for r in rows),
            "records": sum(r[mode]["status"] not in ("NO RECORD", "SKIPPED", "BATCH DIED") for r in run),
            "batch_deaths": sum(r[mode]["batch_died"] for r in rows),
            "median_wall_s": _median(r[mode]["wall_s"] for r in run),
            "max_parent_rss_bytes": max((r[mode]["parent_peak_rss_bytes"] or 0 for r in run), default=0) or None,
            "max_gpu_peak_bytes": max((r[mode]["gpu_peak_bytes"] or 0 for r in run), default=0) or None,
            "batches": len(meas[mode]["batches"]),
        }
    if "ratio" in (rows[0] if rows else {}):
        # the goal is judged on samples both modes verified: a sample that fails early (a reference
        # timeout, say) would pull the ratio down without saying anything about the hardened path's cost
        # the first sample of each batch also carries the start of that batch's worker pool
        first = first_of_batches(run, modes)
        both = [r for r in run if all(r[m]["status"] == "PASS" for m in modes) and r["id"] not in first]
        st = ratio_stats(both, main)
        s.update({k: st[k] for k in ("median_ratio", "max_ratio", "ratios_over_1_5")})
        s["median_ratio_problems"] = st["problems"]
        s["ratio_excluded_first"] = sorted(first)
        s["median_ratio_all"] = _median(r.get("ratio") for r in run)
        s["kernel_parity"] = st["kernel_parity"]
        s["above_1_5"] = st["above_1_5"]
    if main != "off":
        # every PASS with each planned probe judged, or skipped for a recorded reason
        passed = [r for r in run if r[main]["status"] == "PASS"]
        s["probes_expected"] = expected_probes(num_correct_trials)
        s["pass_all_probes_judged"] = sum(
            1 for r in passed if r[main].get("probes_judged") is not None
            and r[main]["probes_judged"] + len(r[main].get("probes_skipped") or []) >= s["probes_expected"])
        got = [r[main] for r in run if r[main].get("read_bytes")]
        gib = sum(r["read_bytes"] for r in got) / GIB
        if gib:
            # seconds of wall time per GiB of output read: the copy, and the freeze and mapping around it
            s["trusted_read"] = {
                "problems": len(got), "paths": sorted({str(r.get("read_path")) for r in got}),
                "gib": round(gib, 2),
                "copy_s_per_gib": round(sum(r.get("read_ms") or 0 for r in got) / 1e3 / gib, 4),
                "freeze_and_map_s_per_gib": round(sum((r.get("read_freeze_ms") or 0) + (r.get("read_map_ms") or 0)
                                                      for r in got) / 1e3 / gib, 4)}
    if main != "off":
        s["requests"] = request_summary([r[main] for r in run])
        s["request_parts"] = request_summary([r[main] for r in run], top=12, parts=True)
    need = math.ceil(0.95 * s["problems"])
    enough = s["problems"] >= 100 if level == 1 else s["evaluated"] >= 20
    s["goals"] = {
        "pass": ">= 95 of all 100 PASS" if level == 1 else ">= 95 % PASS of >= 20 problems",
        "pass_met": s[main]["pass"] >= need and enough,
        "median_ratio": "median <= 1.0, none above 1.5",
        "median_ratio_met": ratio_goal_met(s),
        "parent_rss": "< 2 GiB on every problem",
        "parent_rss_met": {m: all((r[m]["parent_peak_rss_bytes"] or 0) < 2 * GIB
                                  and r[m]["status"] not in ("NO RECORD", "BATCH DIED") for r in run)
                           for m in modes},
        "every_problem_a_record": all(r[m]["status"] not in ("NO RECORD", "BATCH DIED") for r in run for m in modes),
    }
    return s


def _cell(v, kind=None) -> str:
    if v is None:
        return ""
    if kind == "bytes":
        return fmt_bytes(v)
    if kind == "s":
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return str(v)


def markdown(report: dict) -> str:
    cfg, env, s, rows, modes = report["config"], report["env"], report["summary"], report["rows"], report["modes"]
    hard = [m for m in modes if m != "off"]
    main = hard[-1] if hard else "off"
    title = f"# Upstream KernelBench level {cfg['level']} sweep"
    if cfg.get("scale_check"):
        title += " — CPU scale check of the script (NOT the acceptance numbers)"
    lines = [title, ""]
    if cfg.get("scale_check"):
        lines += [("A smoke run of `bench/upstream_sweep.py --scale-check` on a machine without a GPU: the "
                   f"{len(rows)} cheapest problems of the level (FLOPs plus bytes), on the CPU, with few "
                   "trials. It shows that the script works end to end; it says nothing about the GPU "
                   "acceptance goals."), ""]
    lines += ["Commands that built this table (in order; later ones resume the same work dir):", "", "```",
              *report.get("commands", [report["command"]]), "```", "",
              "| item | value |", "|---|---|"]
    for k, v in env.items():
        lines.append(f"| {k} | {v} |")
    lines.append(f"| device / trials / timeout | {cfg['device']} / {cfg['num_correct_trials']} correctness, "
                 f"{cfg['num_perf_trials']} timed / {cfg['timeout']} s |")
    lines.append(f"| modes | {', '.join(modes)}" + (f" (policy `{cfg['policy']}`)" if hard else "") + " |")
    lines += ["", "## Summary", "", "| measure | value | goal | met |", "|---|---|---|---|"]
    g = s["goals"]
    lines.append(f"| {main} PASS | {s[main]['pass']} of {s['problems']} ({s['skipped']} skipped) | {g['pass']} | "
                 f"{'yes' if g['pass_met'] else 'no'} |")
    if s.get("probes_expected"):
        lines.append(f"| {main} PASS records with every correctness probe judged ({s['probes_expected']}: hidden, "
                     f"the repeat, perturbations; or skipped with its reason) | {s['pass_all_probes_judged']} of "
                     f"{s[main]['pass']} | all | {'yes' if s['pass_all_probes_judged'] == s[main]['pass'] else 'no'} |")
    if s.get("trusted_read"):
        t = s["trusted_read"]
        lines.append(f"| trusted read of every output ({', '.join(t['paths'])}), {t['gib']} GiB over {t['problems']} "
                     f"problems | copy {t['copy_s_per_gib']} s/GiB, freeze + map {t['freeze_and_map_s_per_gib']} s/GiB "
                     "| reported | |")
    if "median_ratio" in s:
        lines.append(f"| {main}/off wall time per sample, median and max, over the {s['median_ratio_problems']} "
                     f"problems PASS in both (first of each batch left out: "
                     f"{', '.join(map(str, s.get('ratio_excluded_first') or [])) or 'none'}; above 1.5: "
                     f"{', '.join(map(str, s.get('ratios_over_1_5') or [])) or 'none'}) | "
                     f"{_cell(s['median_ratio'])}, {_cell(s.get('max_ratio'))} | {g['median_ratio']} | "
                     f"{'yes' if g['median_ratio_met'] else 'no'} |")
        lines.append(f"| the same over every problem with both times | {_cell(s['median_ratio_all'])} | | |")
        kp = s.get("kernel_parity") or {}
        if kp.get("problems"):
            lines.append(f"| the same over the {kp['problems']} of them whose kernels ran alike in both modes (runtime "
                         f"ratio <= {kp['limit']}; slower in {main}: "
                         f"{', '.join(map(str, kp['slower_kernels'])) or 'none'}; above 1.5: "
                         f"{', '.join(map(str, kp['ratios_over_1_5'])) or 'none'}) | {_cell(kp['median_ratio'])}, "
                         f"{_cell(kp['max_ratio'])} | | |")
    for mode in modes:
        lines.append(f"| max parent peak RSS, {mode} | {fmt_bytes(s[mode]['max_parent_rss_bytes'])} | "
                     f"{g['parent_rss']} | {'yes' if g['parent_rss_met'][mode] else 'no'} |")
    for mode in modes:
        lines.append(f"| {mode}: records / batch deaths / batches | {s[mode]['records']} / {s[mode]['batch_deaths']} "
                     f"/ {s[mode]['batches']} | every problem a record, 0 deaths, 1 batch | "
                     f"{'yes' if s[mode]['records'] == s['evaluated'] and not s[mode]['batch_deaths'] else 'no'} |")
        lines.append(f"| {mode}: median wall time per sample | {_cell(s[mode]['median_wall_s'], 's')} s | | |")
    if s.get("requests"):
        lines.append("| where the hardened time went (requests summed over the problems, largest first) | "
                     + "; ".join(f"`{q['request']}` {q['s']} s ({q['n']} x {q['per_ms']} ms)" for q in s["requests"][:5])
                     + " | | |")
    if s.get("request_parts"):
        lines.append("| inside the judge's requests (parts it timed itself, largest first) | "
                     + "; ".join(f"`{q['request']}` {q['s']} s ({q['n']} x {q['per_ms']} ms)"
                                 for q in s["request_parts"][:8]) + " | | |")
    lines += above_lines(s.get("above_1_5") or [], main)
    lines += ["", "## Per problem", "",
              ("Sizes from the meta device. Wall time: seconds between consecutive records of the batch "
               "(the first sample also carries the worker pool's start). RSS: the batch parent process "
               "only. GPU peak: whole-device `memory.used` from nvidia-smi during the sample, else the "
               "record's candidate-worker peak."), ""]
    head = ["id", "name", "input", "output"]
    for mode in modes:
        head += [f"{mode} s"]
    if "off" in modes and hard:
        head.append("ratio")
    for mode in modes:
        head.append(f"parent RSS {mode}")
    head += [f"GPU peak {main}", "probes" if hard else None, "off status" if hard and "off" in modes else None,
             f"{main} status", "main finding"]
    head = [h for h in head if h]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r["id"]), r["name"].removesuffix(".py"), fmt_bytes(r["input_bytes"]), fmt_bytes(r["output_bytes"])]
        cells += [_cell(r[m]["wall_s"], "s") for m in modes]
        if "off" in modes and hard:
            cells.append(_cell(r.get("ratio")))
        cells += [fmt_bytes(r[m]["parent_peak_rss_bytes"]) for m in modes]
        cells.append(fmt_bytes(r[main]["gpu_peak_bytes"]))
        if hard:
            n, skipped = r[main].get("probes_judged"), r[main].get("probes_skipped") or []
            cells.append("" if n is None else f"{n}" + (f" (+{len(skipped)} skipped)" if skipped else ""))
        if hard and "off" in modes:
            cells.append(r["off"]["status"])
        cells += [r[main]["status"], r[main]["main_finding"] or ""]
        lines.append("| " + " | ".join(cells) + " |")
    bad = [(r, m) for r in rows for m in modes if r[m]["status"] != "PASS"]
    lines += ["", "## Not PASS", ""]
    if not bad:
        lines.append("Every evaluated record is PASS.")
    for r, m in bad:
        why = r.get("skipped") if r[m]["status"] == "SKIPPED" else r[m]["explanation"]
        lines.append(f"- L{cfg['level']}/{r['id']} `{r['name']}` ({m}): **{r[m]['status']}** — "
                     + str(why).replace("|", "\\|"))
    return "\n".join(lines) + "\n"


def print_table(rows, modes) -> None:
    hard = [m for m in modes if m != "off"]
    main = hard[-1] if hard else "off"
    print(f"\n{'id':>4} {'name':<40} {'input':>10} {'output':>10} " + " ".join(f"{m + ' s':>9}" for m in modes)
          + f" {'ratio':>6} {'RSS':>10} {'GPU':>10} {'status':<12} finding")
    for r in rows:
        print(f"{r['id']:>4} {r['name'][:40]:<40} {fmt_bytes(r['input_bytes']):>10} {fmt_bytes(r['output_bytes']):>10} "
              + " ".join(f"{_cell(r[m]['wall_s'], 's'):>9}" for m in modes)
              + f" {_cell(r.get('ratio')):>6} "
              f"{fmt_bytes(max((r[m]['parent_peak_rss_bytes'] or 0) for m in modes) or None):>10} "
              f"{fmt_bytes(r[main]['gpu_peak_bytes']):>10} {r[main]['status']:<12} {r[main]['main_finding'] or ''}")


def sizes_table(problems, sizes) -> dict:
    ins = [sizes[p.problem_id]["input_bytes"] for p in problems if sizes[p.problem_id]["input_bytes"] is not None]
    for p in problems:
        z = sizes[p.problem_id]
        print(f"{p.problem_id:>4} {p.name[:60]:<60} {fmt_bytes(z['input_bytes']):>10} "
              f"{fmt_bytes(z['output_bytes']):>10} {z['error'] or ''}")
    stats = {"problems": len(problems), "median_input_bytes": _median(ins),
             "inputs_ge_1gib": sum(i >= GIB for i in ins), "inputs_ge_4gib": sum(i >= 4 * GIB for i in ins),
             "max_input_bytes": max(ins, default=None)}
    print(f"\n{stats['problems']} problems: median input {fmt_bytes(stats['median_input_bytes'])}, "
          f"{stats['inputs_ge_1gib']} >= 1 GiB, {stats['inputs_ge_4gib']} >= 4 GiB, "
          f"largest {fmt_bytes(stats['max_input_bytes'])}")
    return stats


def _shown_path(path: str) -> str:
    """A path for the report: relative to the checkout when inside it, as given otherwise."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return path


def _on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through run_batch, which ends the batch it started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset-path", default=str(REPO / "KernelBench"),
                    help="folder with level1/ level2/ level3/ problem files ('demo' = bundled demo tasks)")
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--ids", default="", help="problem ids, e.g. 1,3,10-20 (default: all of the level)")
    ap.add_argument("--limit", type=int, default=None, help="at most N problems (the first N selected)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default cuda; cpu with --scale-check)")
    ap.add_argument("--modes", default="off,enforce", help="comma-separated, run in this order")
    ap.add_argument("--policy", default="practical", help="reward_hardening_policy of the hardened modes")
    ap.add_argument("--num-correct-trials", type=int, default=None, help="default 5 (2 with --scale-check)")
    ap.add_argument("--num-perf-trials", type=int, default=None, help="default 100 (5 with --scale-check)")
    ap.add_argument("--timeout", type=float, default=None, help="per-sample timeout, s (default 180)")
    ap.add_argument("--max-input-gib", type=float, default=None,
                    help="skip problems whose inputs exceed this size (reported as SKIPPED)")
    ap.add_argument("--scale-check", action="store_true",
                    help="run the cheapest problems (--limit, default 3; FLOPs + bytes) on the CPU with few trials")
    ap.add_argument("--sizes-only", action="store_true", help="print input/output sizes and stop")
    ap.add_argument("--work-dir", default=str(REPO / "runs" / "upstream_sweep"),
                    help="runs directories, records and measurements (kept, so a sweep resumes)")
    ap.add_argument("--fresh", action="store_true", help="delete this level's earlier work in --work-dir first")
    ap.add_argument("--out", default=None, help="folder for <name>.json and <name>.md")
    ap.add_argument("--name", default=None, help="file stem (default upstream_sweep_level<L>[_cpu_scale_check])")
    ap.add_argument("--batch-timeout", type=float, default=None,
                    help="stop a batch after this many seconds (resume by running the command again)")
    ap.add_argument("--max-restarts", type=int, default=3, help="batches started again after a batch parent died")
    ap.add_argument("--rss-limit-gib", type=float, default=None,
                    help="kill a batch whose parent passes this RSS (default none; 6 with --scale-check)")
    ap.add_argument("--poll-s", type=float, default=0.05, help="watcher sampling period")
    ap.add_argument("--gpu-index", type=int, default=0, help="nvidia-smi index of the GPU used")
    ap.add_argument("--extra", nargs="*", default=[], help="more key=value settings for eval_from_generations")
    args = ap.parse_args(argv)
    if threading.current_thread() is not threading.main_thread():
        return _sweep(args, argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _sweep(args, argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sweep(args, argv) -> int:

    sc = args.scale_check
    args.device = args.device or ("cpu" if sc else "cuda")
    args.num_correct_trials = args.num_correct_trials or (2 if sc else 5)
    args.num_perf_trials = args.num_perf_trials or (5 if sc else 100)
    args.timeout = args.timeout or (120 if sc else 180)
    limit = args.limit if args.limit is not None else (3 if sc else None)
    if args.rss_limit_gib is None and sc:
        args.rss_limit_gib = 6.0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in MODES for m in modes) or not modes:
        print(f"error: --modes: choose from {', '.join(MODES)}", file=sys.stderr)
        return 2

    from kernelbench.dataset import resolve_dataset_path

    dataset_dir = resolve_dataset_path(args.dataset_path)
    dataset_path = str(dataset_dir.resolve()) if args.dataset_path != "demo" else "demo"
    problems = load_problems(args.dataset_path, args.level, parse_ids(args.ids))
    if not problems:
        print(f"error: no level-{args.level} problems selected in {dataset_dir}", file=sys.stderr)
        return 2
    t = time.time()
    sizes = {p.problem_id: meta_sizes(p.code, p.path or p.name) for p in problems}
    print(f"[sweep] sizes of {len(problems)} problems on the meta device in {time.time() - t:.1f} s", flush=True)
    if args.sizes_only:
        stats = sizes_table(problems, sizes)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            stem = args.name or f"upstream_sizes_level{args.level}"
            (Path(args.out) / f"{stem}.json").write_text(json.dumps(
                {"level": args.level, "stats": stats, "sizes": {str(k): v for k, v in sizes.items()},
                 "names": {str(p.problem_id): p.name for p in problems}}, indent=2) + "\n")
        return 0
    if sc:
        known = [p for p in problems if sizes[p.problem_id]["input_bytes"] is not None]
        problems = sorted(known, key=lambda p: (_cost(sizes[p.problem_id]), p.problem_id))
        problems = sorted(problems[:limit], key=lambda p: p.problem_id)
    elif limit is not None:
        problems = problems[:limit]

    skipped = {}
    for p in problems:
        z = sizes[p.problem_id]["input_bytes"]
        if args.max_input_gib is not None and z is not None and z > args.max_input_gib * GIB:
            skipped[p.problem_id] = f"input {fmt_bytes(z)} exceeds --max-input-gib {args.max_input_gib}"
    ids = [p.problem_id for p in problems if p.problem_id not in skipped]

    work = Path(args.work_dir).resolve() / f"level{args.level}"
    config = {"dataset_path": dataset_path, "level": args.level, "device": args.device, "policy": args.policy,
              "num_correct_trials": args.num_correct_trials, "num_perf_trials": args.num_perf_trials,
              "timeout": args.timeout, "extra": args.extra, "scale_check": sc}
    if args.fresh and work.exists():
        shutil.rmtree(work)
    cfg_path = work / "sweep_config.json"
    if cfg_path.exists() and _load_json(cfg_path, {}) != config:
        print(f"error: {work} holds a sweep with other settings ({cfg_path}); pass --fresh or another --work-dir",
              file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(json.dumps(config, indent=2) + "\n")
    command = "python3 bench/upstream_sweep.py " + " ".join(
        a if re.fullmatch(r"[\w@%+=:,./-]+", a) else repr(a) for a in (argv if argv is not None else sys.argv[1:]))
    with open(work / "commands.txt", "a") as fh:  # every invocation that contributed to this work dir
        fh.write(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  "
                 f"(commit {_git_commit() or 'unknown'})  {command}\n")

    for mode in modes:  # the honest candidates, one runs directory per mode
        run_dir = work / "runs" / f"level{args.level}_{mode}"
        run_dir.mkdir(parents=True, exist_ok=True)
        for p in problems:
            if p.problem_id in skipped:
                continue
            path = run_dir / f"level_{args.level}_problem_{p.problem_id}_sample_0_kernel.py"
            if not path.exists():
                path.write_text(rename_model(p.code))

    gpu = GpuPoller(args.gpu_index) if args.device.startswith("cuda") else None
    meas, results = {}, {}
    try:
        for mode in modes:
            meas[mode] = sweep_mode(args, mode, work, dataset_path, ids, gpu)
            results[mode] = _result_keys(work / "runs" / f"level{args.level}_{mode}" / RESULT_FILE[mode])
    finally:
        if gpu:
            gpu.stop()

    rows = build_rows(problems, sizes, skipped, modes, meas, results)
    report = {"command": command, "commands": (work / "commands.txt").read_text().splitlines(),
              "config": {**config, "dataset_path": _shown_path(dataset_path)}, "modes": modes, "env": _env(args), "rows": rows,
              "summary": summarize(rows, modes, args.level, meas, args.num_correct_trials),
              "batches": {m: meas[m]["batches"] for m in modes}}
    print_table(rows, modes)
    s = report["summary"]
    main_mode = s["main_mode"]
    print(f"\n{main_mode} PASS {s[main_mode]['pass']} of {s['problems']} (goal {s['goals']['pass']}); "
          f"{main_mode}/off median ratio {_cell(s.get('median_ratio'))}, max {_cell(s.get('max_ratio'))} "
          f"(goal {s['goals']['median_ratio']}); max parent RSS "
          + ", ".join(f"{m} {fmt_bytes(s[m]['max_parent_rss_bytes'])}" for m in modes) + " (goal < 2 GiB)")
    if s.get("probes_expected"):
        print(f"{main_mode} PASS records with all {s['probes_expected']} correctness probes judged (or skipped with "
              f"a reason): {s['pass_all_probes_judged']} of {s[main_mode]['pass']}")
    if s.get("trusted_read"):
        t = s["trusted_read"]
        print(f"trusted read: {t['gib']} GiB over {t['problems']} problems, copy {t['copy_s_per_gib']} s/GiB, "
              f"freeze + map {t['freeze_and_map_s_per_gib']} s/GiB")
    if s.get("requests"):
        print("where the hardened time went: " + "; ".join(
            f"{q['request']} {q['s']} s ({q['n']} x {q['per_ms']} ms)" for q in s["requests"][:5]))
    if s.get("request_parts"):
        print("inside the judge's requests: " + "; ".join(
            f"{q['request']} {q['s']} s ({q['n']} x {q['per_ms']} ms)" for q in s["request_parts"][:8]))
    for r in rows:
        for m in modes:
            if r[m]["status"] != "PASS":
                print(f"  not PASS: L{args.level}/{r['id']} {m} {r[m]['status']}: "
                      f"{r.get('skipped') if r[m]['status'] == 'SKIPPED' else r[m]['explanation']}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = args.name or f"upstream_sweep_level{args.level}" + ("_cpu_scale_check" if sc else "")
        (out / f"{stem}.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        (out / f"{stem}.md").write_text(markdown(report))
        print(f"[sweep] wrote {out / (stem + '.json')} and {out / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
