"""Kill the batch evaluator anywhere, restart it, and check that nothing is lost.

One *round*: a fresh run directory with 12 honest demo candidates (level 1, problems
1-6, two samples each) is evaluated by ``scripts/eval_from_generations.py`` on the
CPU; the harness SIGKILLs the evaluator (the parent process only, as a preempted or
OOM-killed job would be) at a random moment, restarts the same command, and repeats
until one run exits by itself.  Kills land at random times after the last record was
written (mid-sample) and, through the writer's test hook
``KERNELGUARD_TEST_WRITE_PAUSE_S``, in the middle of writing the results file.

After every kill it checks that the results file is complete JSON, that every record
in it is complete and schema-valid, that no record written before the kill changed,
and that every worker and forkserver process the killed evaluator had started is gone
within a few seconds.  After the round it checks that every sample has exactly one
record and that no temporary file is left in the run directory.

    uv run python bench/bench_kill_resume.py --rounds 20 --modes off enforce \\
        --json docs/validation/kill_resume.json --markdown docs/validation/kill_resume.md

``tests/test_crash_safe.py`` runs a short version of the same harness in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "kernelbench" / "demo_tasks"
SCHEMA = REPO / "src" / "kernelbench" / "reward_hardening" / "verified_record.schema.json"
OFF_KEYS = {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}


# --------------------------------------------------------------------------- processes
def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Tracker(threading.Thread):
    """Records every descendant of ``root`` (pid and start time) while it runs."""

    def __init__(self, root: int, interval: float = 0.01):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.seen: dict[int, tuple[int, str]] = {}  # pid -> (start time, cmdline)
        self.halt = threading.Event()

    def scan(self) -> None:
        children: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = _stat(int(name))
                if st is not None:
                    children.setdefault(st[0], []).append(int(name))
        todo = [self.root]
        while todo:
            pid = todo.pop()
            for child in children.get(pid, []):
                if child not in self.seen:
                    st = _stat(child)
                    if st is not None:
                        role = "child" if pid == self.root else f"grandchild (parent {pid})"
                        self.seen[child] = (st[2], f"[{role}] {_cmdline(child)[:160]}")
                todo.append(child)

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.scan()
            except OSError:
                pass
            self.halt.wait(self.interval)

    def survivors(self, grace: float = 10.0) -> list[str]:
        """Tracked processes still alive (not zombies) after ``grace`` seconds."""
        deadline = time.monotonic() + grace
        while True:
            alive = []
            for pid, (start, cmd) in self.seen.items():
                st = _stat(pid)
                if st is not None and st[2] == start and st[1] not in ("Z", "X"):
                    alive.append(f"{pid} state {st[1]} ppid {st[0]} {cmd}")
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)

    def kill_survivors(self) -> None:
        for pid, (start, _) in self.seen.items():
            st = _stat(pid)
            if st is not None and st[2] == start:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


# --------------------------------------------------------------------------- checks
def make_run(run_dir: Path, problems: range = range(1, 7), samples: int = 2) -> list[tuple[str, int]]:
    run_dir.mkdir(parents=True)
    keys = []
    for pid in problems:
        (sol,) = (DEMO / "solutions" / "level1").glob(f"{pid}_*.py")
        for sid in range(samples):
            (run_dir / f"level_1_problem_{pid}_sample_{sid}_kernel.py").write_text(sol.read_text())
            keys.append((str(pid), sid))
    return keys


def _validator():
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema)


def check_records(results_path: Path, hardened: bool, validator) -> tuple[dict, list[str]]:
    """Records by (problem, sample) and the problems found in the file."""
    problems: list[str] = []
    if not results_path.exists():
        return {}, problems
    try:
        data = json.loads(results_path.read_text())
    except ValueError as exc:
        return {}, [f"results file is not complete JSON: {exc}"]
    records: dict = {}
    for pid, samples in data.items():
        for rec in samples:
            key = (pid, rec.get("sample_id"))
            if key in records:
                problems.append(f"duplicate record {key}")
            records[key] = rec
            if hardened:
                errs = [e.message for e in validator.iter_errors(rec)]
                if errs:
                    problems.append(f"{key} not schema-valid: {errs[0]}")
            elif set(rec) != OFF_KEYS or not isinstance(rec.get("metadata"), dict):
                problems.append(f"{key} incomplete off-mode record: keys {sorted(rec)}")
            if not isinstance((rec.get("metadata") or {}).get("eval_config"), dict):
                problems.append(f"{key} has no metadata.eval_config")
    return records, problems


@dataclass
class Round:
    mode: str
    samples: int
    kills: int = 0
    kills_mid_write: int = 0
    restarts: int = 0
    records: int = 0
    duplicates: int = 0
    invalid_records: int = 0
    changed_records: int = 0
    leftover_processes: int = 0
    leftover_temp_files: int = 0
    final_rc: int | None = None
    seconds: float = 0.0
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (not self.problems and self.final_rc == 0 and self.records == self.samples)


def _command(runs_dir: Path, mode: str, policy: str) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "eval_from_generations.py"), "run_name=k", "dataset_src=local",
            "dataset_path=demo", "level=1", "device=cpu", "subset=(1,6)", "num_samples_per_problem=2",
            "num_correct_trials=1", "num_perf_trials=2", "timeout=60", f"runs_dir={runs_dir}",
            f"kernel_eval_build_dir={runs_dir.parent / 'build'}", f"reward_hardening_mode={mode}",
            f"reward_hardening_policy={policy}", "pass_at_k_values=[1,2]"]


def one_round(workdir: Path, mode: str, rng: random.Random, policy: str = "practical", max_kills: int = 4,
              min_kills: int = 1, write_pause: float = 0.05, log=print) -> Round:
    """Kill-and-restart one batch until it completes; see the module docstring."""
    t0 = time.monotonic()
    runs_dir = workdir / "runs"
    run_dir = runs_dir / "k"
    keys = make_run(run_dir)
    hardened = mode != "off"
    results_path = run_dir / ("verified_eval_results.json" if hardened else "eval_results.json")
    validator = _validator() if hardened else None
    env = dict(os.environ, KERNELGUARD_TEST_WRITE_PAUSE_S=str(write_pause), PYTHONUNBUFFERED="1")
    r = Round(mode=mode, samples=len(keys))
    kills_planned = rng.randint(min_kills, max_kills)
    seen: dict = {}
    tmp_glob = f".{results_path.name}.*.tmp"
    while True:
        log_path = workdir / f"log_{r.restarts}.txt"
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(_command(runs_dir, mode, policy), cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
        tracker = Tracker(proc.pid)
        tracker.start()
        killed = False
        if r.kills < kills_planned:
            # wait for a random number of new records (0-2), then kill at a random moment:
            # mid-write (a temporary file exists) or after a random delay (mid-sample)
            target = len(seen) + rng.randint(0, 2)
            mid_write = rng.random() < 0.5
            delay = rng.uniform(0.0, 3.0)
            armed_at = None
            while proc.poll() is None:
                n = _count(results_path)
                if n >= min(target, len(keys) - 1):
                    if mid_write:
                        if n >= len(keys) - 1 and armed_at is None:
                            armed_at = time.monotonic()
                        if list(run_dir.glob(tmp_glob)):
                            break
                        if armed_at is not None and time.monotonic() - armed_at > 30:
                            break
                    else:
                        if armed_at is None:
                            armed_at = time.monotonic()
                        if time.monotonic() - armed_at >= delay:
                            break
                time.sleep(0.003)
            if proc.poll() is None:
                if list(run_dir.glob(tmp_glob)):
                    r.kills_mid_write += 1
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                r.kills += 1
        proc.wait()
        tracker.halt.set()
        tracker.join()
        left = tracker.survivors(grace=10.0)
        if left:
            r.leftover_processes += len(left)
            r.problems.append(f"processes left after restart {r.restarts}: {left[:3]}")
            tracker.kill_survivors()
        records, problems = check_records(results_path, hardened, validator)
        for p in problems:
            r.problems.append(p)
            if "duplicate" in p:
                r.duplicates += 1
            elif "not schema-valid" in p or "incomplete" in p or "not complete JSON" in p:
                r.invalid_records += 1
        for key, rec in seen.items():
            if records.get(key) != rec:
                r.changed_records += 1
                r.problems.append(f"record {key} changed or vanished after restart {r.restarts}")
        seen = records
        if not killed:
            r.final_rc = proc.returncode
            if proc.returncode != 0:
                r.problems.append(f"final run exited {proc.returncode}: {log_path.read_text()[-500:]}")
            break
        r.restarts += 1
        if r.restarts > 40:
            r.problems.append("no completion after 40 restarts")
            break
    r.records = sum(1 for k in keys if k in seen)
    extra = set(seen) - set(keys)
    if extra:
        r.problems.append(f"unexpected records {sorted(extra)}")
    temps = [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    r.leftover_temp_files = len(temps)
    if temps:
        r.problems.append(f"temporary files left: {temps}")
    r.seconds = round(time.monotonic() - t0, 1)
    log(f"[{mode}] kills={r.kills} (mid-write {r.kills_mid_write}) records={r.records}/{r.samples} "
        f"rc={r.final_rc} {r.seconds}s {'OK' if r.ok else 'FAIL: ' + '; '.join(r.problems)[:300]}")
    return r


def _count(path: Path) -> int:
    try:
        return sum(len(v) for v in json.loads(path.read_text()).values())
    except (OSError, ValueError):
        return 0


# --------------------------------------------------------------------------- report
def table(rounds: list[Round]) -> str:
    lines = ["| mode | rounds | passed | kills | of which mid-write | records checked | duplicates | invalid | "
             "changed | processes left | temp files left | median s/round |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mode in sorted({r.mode for r in rounds}, key=lambda m: (m != "off", m)):
        rs = [r for r in rounds if r.mode == mode]
        secs = sorted(r.seconds for r in rs)
        lines.append(f"| {mode} | {len(rs)} | {sum(r.ok for r in rs)} | {sum(r.kills for r in rs)} | "
                     f"{sum(r.kills_mid_write for r in rs)} | {sum(r.records for r in rs)} | "
                     f"{sum(r.duplicates for r in rs)} | {sum(r.invalid_records for r in rs)} | "
                     f"{sum(r.changed_records for r in rs)} | {sum(r.leftover_processes for r in rs)} | "
                     f"{sum(r.leftover_temp_files for r in rs)} | {secs[len(secs) // 2]:.0f} |")
    return "\n".join(lines)


def _write(args, rounds: list[Round]) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps({
            "seed": args.seed, "policy": args.policy, "rounds_per_mode": args.rounds, "cpu_count": os.cpu_count(),
            "python": sys.version.split()[0], "max_kills": args.max_kills,
            "rounds": [dict(asdict(r), ok=r.ok) for r in rounds]}, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(table(rounds) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--modes", nargs="+", default=["off", "enforce"], choices=["off", "audit", "enforce"])
    ap.add_argument("--policy", default="practical", choices=["source_strict", "practical"],
                    help="policy of the hardened modes (practical runs the full worker pipeline)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--max-kills", type=int, default=3)
    ap.add_argument("--json", help="write the rounds and the summary here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    rounds: list[Round] = []
    for mode in args.modes:
        for i in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="kg_kill_") as tmp:
                r = one_round(Path(tmp), mode, rng, policy=args.policy, max_kills=args.max_kills,
                              log=lambda s, i=i: print(f"round {i + 1:2d} {s}", flush=True))
            rounds.append(r)
            _write(args, rounds)  # after every round, so a stopped bench keeps what it measured
    print(table(rounds))
    return 0 if all(r.ok for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
