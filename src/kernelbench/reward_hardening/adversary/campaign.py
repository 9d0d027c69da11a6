"""The mutation campaign: every attack fixture through every transform, judged by the evaluator.

Two tiers of targets:

``static``   the precheck fixtures (``RH-NN_bad_*.py``) against their reference; a mutant
             is *caught* when the precheck alone would still refuse it (an error-severity
             finding under ``source_strict``: no verified runtime under ``enforce``);
``runtime``  the red-team attack fixtures of the manifest, evaluated end to end with
             ``evaluate_hardened`` under the fixture's own policy and mode; a mutant is
             *caught* when its record carries no verified runtime.

Benign runtime fixtures can be mutated too (``include_benign``): their mutants must
still PASS, which shows that a transform is not caught merely for looking odd.

Each mutant must compile; with ``check_behaviour`` its run under no hardening at all
(import, build the model, one forward on seeded inputs, in a throw-away subprocess) is
compared with the unmutated fixture's: same output (or same failure) or the mutant is
reported as ``broken`` and left out of the counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelbench.reward_hardening.adversary.mutate import TRANSFORMS, check_compiles, mutate

__all__ = ["ALL_TRANSFORMS", "Case", "MutantResult", "format_table", "run_campaign", "runtime_cases",
           "static_cases", "summarise"]

ALL_TRANSFORMS = tuple(TRANSFORMS) + ("stacked", "combine")
STACKED = "rename+getattr_strings+importlib+closure"
_STATIC_DIR = Path(__file__).resolve().parents[4] / "tests" / "reward_hardening" / "precheck_fixtures"
_NAME = re.compile(r"^(RH-\d\d)_bad_\w+\.py$")


@dataclass
class Case:
    id: str
    tier: str  # static | runtime
    source: str
    reference: str
    expect_code: str | None = None  # static: the rule the fixture is about
    policy: str = "source_strict"
    mode: str = "enforce"
    problem: str = ""
    benign: bool = False


@dataclass
class MutantResult:
    case: str
    tier: str
    transform: str
    outcome: str  # caught | escaped | n/a | broken | error  (benign: pass | refused)
    benign: bool = False
    codes: list[str] = field(default_factory=list)
    status: str | None = None
    verified_runtime: float | None = None
    same_code: bool | None = None
    behaviour: str = "unchecked"  # same | differs | unchecked
    detail: str = ""
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def static_cases(directory: Path | None = None) -> list[Case]:
    """The precheck's malicious fixtures (they live with the tests; none when absent)."""
    d = directory or _STATIC_DIR
    if not d.is_dir():
        return []
    ref = (d / "reference_matmul.py").read_text()
    out = []
    for p in sorted(d.glob("RH-*_bad_*.py")):
        m = _NAME.match(p.name)
        if m:
            out.append(Case(p.stem, "static", p.read_text(), ref, expect_code=m.group(1)))
    return out


def runtime_cases(include_benign: bool = False, ids: list[str] | None = None) -> list[Case]:
    """The CPU red-team fixtures of the manifest (attacks; benign ones on request)."""
    from kernelbench.reward_hardening.fixtures import fixture_source, problem_source, select

    out = []
    for f in select(device="cpu", ids=ids):
        if f.benign and not include_benign:
            continue
        out.append(Case(f.id, "runtime", fixture_source(f), problem_source(f), policy=f.policy, mode=f.mode,
                        problem=f.problem, benign=f.benign))
    if ids is not None:  # the caller's order (a budgeted run judges the first ones first)
        order = {i: n for n, i in enumerate(ids)}
        out.sort(key=lambda c: order.get(c.id, len(order)))
    return out


def _partner(case: Case, cases: list[Case]) -> Case | None:
    attacks = [c for c in cases if not c.benign and c.id != case.id and c.source != case.source]
    same = [c for c in attacks if c.problem == case.problem and c.tier == case.tier]
    pool = same or attacks
    if not pool:
        return None
    ids = sorted(c.id for c in pool)
    nxt = next((i for i in ids if i > case.id), ids[0])
    return next(c for c in pool if c.id == nxt)


# --------------------------------------------------------------------------- judging
def judge_static(case: Case, src: str) -> tuple[str, dict]:
    from kernelbench.reward_hardening.precheck import run_precheck

    r = run_precheck(src, case.reference, policy="source_strict", precision="fp32")
    rejected = any(f.severity == "error" for f in r.findings)
    return ("caught" if rejected else "escaped"), {"codes": sorted(r.codes),
                                                    "same_code": r.by_code(case.expect_code) is not None}


def judge_runtime(case: Case, src: str, timeout: float = 2.0, num_perf_trials: int = 10,
                  num_correct_trials: int = 3) -> tuple[str, dict]:
    from kernelbench.reward_hardening import HardeningConfig, evaluate_hardened
    from kernelbench.reward_hardening.config import default_build_dir

    cfg = HardeningConfig(mode=case.mode, policy=case.policy, device="cpu", timeout=float(timeout),
                          num_correct_trials=num_correct_trials, num_perf_trials=num_perf_trials,
                          build_dir=default_build_dir(src))
    record = evaluate_hardened(case.reference, src, cfg)
    rh = record.get("reward_hardening") or {}
    codes = []
    for f in rh.get("findings") or []:
        if f.get("code") not in codes:
            codes.append(f.get("code"))
    verified = rh.get("verified_runtime")
    info = {"codes": codes, "status": rh.get("integrity_status"), "verified_runtime": verified}
    if case.benign:
        return ("pass" if verified is not None else "refused"), info
    return ("caught" if verified is None else "escaped"), info


# --------------------------------------------------------------------------- behaviour (no hardening)
_DRIVER = r'''
import json, sys, types
out_path = sys.argv[1]
job = json.load(sys.stdin)
res = {}
try:
    import torch
    ref = types.ModuleType("kg_reference")
    exec(compile(job["reference"], "reference.py", "exec"), ref.__dict__)
    torch.manual_seed(job["seed"])
    init = ref.get_init_inputs()
    inputs = ref.get_inputs()
    cand = types.ModuleType("kg_candidate")
    exec(compile(job["candidate"], "candidate.py", "exec"), cand.__dict__)
    torch.manual_seed(job["seed"] + 1)
    model = cand.ModelNew(*init)
    with torch.no_grad():
        y = model(*inputs)
    ys = y if isinstance(y, (tuple, list)) else [y]
    summ = []
    for t in ys:
        t = torch.as_tensor(t).detach().to("cpu", torch.float64).reshape(-1)
        summ.append({"n": t.numel(), "sum": float(t.sum()), "abs": float(t.abs().sum()),
                     "head": [float(v) for v in t[:16]]})
    res = {"kind": "ok", "outputs": summ}
except SystemExit as e:
    res = {"kind": "exit", "code": str(e.code)}
except BaseException as e:
    res = {"kind": "error", "type": type(e).__name__}
with open(out_path, "w") as f:
    json.dump(res, f)
'''


def run_plain(reference: str, candidate: str, seed: int = 1234, timeout: float = 60.0) -> dict:
    """Run a candidate with no hardening in a throw-away subprocess; a summary of what happened."""
    with tempfile.TemporaryDirectory(prefix="kg_adv_") as d:
        out = os.path.join(d, "result.json")
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV", "LANG")}
        env["OMP_NUM_THREADS"] = "1"
        try:
            p = subprocess.run([sys.executable, "-c", _DRIVER, out], input=json.dumps(
                {"reference": reference, "candidate": candidate, "seed": seed}), text=True, cwd=d, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            return {"kind": "timeout"}
        try:
            with open(out) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"kind": "died", "code": p.returncode}


def same_behaviour(a: dict, b: dict, rtol: float = 1e-3) -> bool:
    if a.get("kind") != b.get("kind"):
        return False
    if a["kind"] != "ok":
        return a == b
    oa, ob = a["outputs"], b["outputs"]
    if len(oa) != len(ob):
        return False
    for x, y in zip(oa, ob):
        if x["n"] != y["n"]:
            return False
        for k in ("sum", "abs"):
            if abs(x[k] - y[k]) > rtol * max(1.0, abs(x[k]), abs(y[k])):
                return False
        if any(abs(p - q) > rtol * max(1.0, abs(p), abs(q)) for p, q in zip(x["head"], y["head"])):
            return False
    return True


# --------------------------------------------------------------------------- the campaign
def _work(cases: list[Case], transforms: list[str]) -> list[tuple[Case, str]]:
    """Case by case, every transform of a case together: a cut-off run judges whole fixtures."""
    return [(c, t) for c in cases for t in transforms]


def run_campaign(cases: list[Case], transforms: list[str] | None = None, *, budget_s: float | None = None,
                 check_behaviour: bool = False, timeout: float = 2.0, num_perf_trials: int = 10,
                 num_correct_trials: int = 3, progress=None) -> dict:
    """Mutate every case with every transform and judge the mutants; returns a JSON-able report."""
    transforms = list(transforms or ALL_TRANSFORMS)
    t0 = time.monotonic()
    results: list[MutantResult] = []
    plain_cache: dict[str, dict] = {}
    done_cases: set[str] = set()
    skipped = 0
    for case, tname in _work(cases, transforms):
        if budget_s is not None and time.monotonic() - t0 > budget_s:
            skipped += 1
            continue
        ts = time.monotonic()
        spec = STACKED if tname == "stacked" else tname
        other = _partner(case, cases)
        try:
            mutant = mutate(case.source, spec, case.reference, other.source if other else None)
        except Exception as exc:  # a transform bug is reported, not fatal
            results.append(MutantResult(case.id, case.tier, tname, "error", case.benign,
                                        detail=f"transform failed: {type(exc).__name__}: {exc}"))
            continue
        if mutant is None:
            results.append(MutantResult(case.id, case.tier, tname, "n/a", case.benign))
            continue
        err = check_compiles(mutant)
        if err:
            results.append(MutantResult(case.id, case.tier, tname, "broken", case.benign, detail=err))
            continue
        r = MutantResult(case.id, case.tier, tname, "", case.benign)
        if tname == "combine" and other is not None:
            r.detail = f"combined with {other.id}"
        if check_behaviour and case.tier == "runtime":
            if case.id not in plain_cache:
                plain_cache[case.id] = run_plain(case.reference, case.source)
            mine = run_plain(case.reference, mutant)
            if tname == "combine":
                r.behaviour = "same" if mine.get("kind") == plain_cache[case.id].get("kind") else "differs"
            else:
                r.behaviour = "same" if same_behaviour(plain_cache[case.id], mine) else "differs"
        try:
            if case.tier == "static":
                outcome, info = judge_static(case, mutant)
            else:
                outcome, info = judge_runtime(case, mutant, timeout, num_perf_trials, num_correct_trials)
        except Exception as exc:
            outcome, info = "error", {"codes": []}
            r.detail = f"evaluator raised {type(exc).__name__}: {exc}"
        r.outcome = outcome
        r.codes = list(info.get("codes") or [])
        r.status = info.get("status")
        r.verified_runtime = info.get("verified_runtime")
        r.same_code = info.get("same_code")
        if r.behaviour == "differs" and outcome in ("caught", "escaped"):
            r.detail = (r.detail + "; " if r.detail else "") + "behaviour differs from the unmutated fixture"
        r.wall_s = round(time.monotonic() - ts, 2)
        results.append(r)
        done_cases.add(case.id)
        if progress is not None:
            progress(r)
    wall = time.monotonic() - t0
    return {"schema": "kernelguard-adversary-mutation/1", "transforms": transforms, "stacked": STACKED,
            "cases": len(cases), "cases_judged": len(done_cases), "skipped_for_budget": skipped,
            "budget_s": budget_s, "wall_s": round(wall, 1), "summary": summarise(results),
            "escapes": [r.as_dict() for r in results if r.outcome in ("escaped", "refused")],
            "results": [r.as_dict() for r in results]}


def summarise(results: list[MutantResult]) -> dict[str, dict[str, dict[str, int]]]:
    """tier -> transform -> outcome counts."""
    out: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        tier = r.tier + ("-benign" if r.benign else "")
        out[tier][r.transform][r.outcome] += 1
        if r.outcome in ("caught", "escaped", "pass", "refused") and r.behaviour == "differs":
            out[tier][r.transform]["behaviour_differs"] += 1
        if r.outcome == "caught" and r.same_code is False:
            out[tier][r.transform]["own_rule_lost"] += 1
    return {t: {k: dict(v) for k, v in d.items()} for t, d in out.items()}


def format_table(report: dict) -> str:
    lines = []
    for tier, rows in report["summary"].items():
        benign = tier.endswith("-benign")
        cols = ("pass", "refused") if benign else ("caught", "escaped")
        lines.append(f"[{tier}]")
        lines.append(f"{'transform':18s} {cols[0]:>7s} {cols[1]:>8s} {'n/a':>5s} {'broken':>7s} {'error':>6s}"
                     f" {'behav!=':>8s} {'rule-lost':>9s}")
        order = [t for t in report["transforms"] if t in rows] + [t for t in rows if t not in report["transforms"]]
        tot = Counter()
        for t in order:
            c = rows[t]
            tot.update(c)
            lines.append(f"{t:18s} {c.get(cols[0], 0):7d} {c.get(cols[1], 0):8d} {c.get('n/a', 0):5d} "
                         f"{c.get('broken', 0):7d} {c.get('error', 0):6d} {c.get('behaviour_differs', 0):8d} "
                         f"{c.get('own_rule_lost', 0):9d}")
        lines.append(f"{'total':18s} {tot.get(cols[0], 0):7d} {tot.get(cols[1], 0):8d} {tot.get('n/a', 0):5d} "
                     f"{tot.get('broken', 0):7d} {tot.get('error', 0):6d} {tot.get('behaviour_differs', 0):8d} "
                     f"{tot.get('own_rule_lost', 0):9d}")
        lines.append("")
    return "\n".join(lines)
