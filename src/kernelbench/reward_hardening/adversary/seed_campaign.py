"""The seed campaign: every attack seed and N of its mutants, judged under enforce (adversary process).

For each selected seed (``seeds.select_seeds``) and each policy, the seed itself and
``n`` mutants (``seeds.mutants``) are evaluated end to end on the CPU with
``evaluate_hardened`` under ``mode=enforce``.  Every candidate carries a working cheat by
construction, so the outcome is ``escaped`` when the record still carries a verified
runtime (PASS with a cheat inside) and ``caught`` otherwise, with the record's finding
codes.  Seeds that build C++ are prebuilt with the project's build path
(``parent.prebuild.prebuild`` into ``config.default_build_dir``), exactly as a batch
does, unless the static precheck already refuses them under the policy (then the
evaluation stops before import and nothing would be built); with no compiler they are
skipped and counted as such.  After every ``outlives`` candidate, whatever it could
have left in this process's namespaces is removed and listed (``left_behind``).

The report: per class, ``tried`` (judged), ``escaped``, ``caught`` and the codes that
caught them (``blocking``: the record's codes that are errors under the policy; every
code is kept in ``codes``), also per policy; every escape in full.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelbench.reward_hardening.adversary import seed_outlives
from kernelbench.reward_hardening.adversary.campaign import Case, judge_runtime
from kernelbench.reward_hardening.adversary.seeds import SEED_CLASSES, have_compiler, mutants, select_seeds
from kernelbench.reward_hardening.codes import CODES

__all__ = ["POLICIES", "SeedResult", "format_seed_table", "run_seed_campaign", "summarise_seeds"]

POLICIES = ("source_strict", "practical")


@dataclass
class SeedResult:
    cls: str
    seed: str
    policy: str
    variant: str  # "seed" or the mutant's label
    outcome: str  # caught | escaped | skipped (no compiler) | error
    codes: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)  # the codes that are errors under the policy
    status: str | None = None
    verified_runtime: float | None = None
    built: bool | None = None
    left_behind: list[str] = field(default_factory=list)
    detail: str = ""
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _refused_statically(src: str, reference: str, policy: str) -> bool:
    from kernelbench.reward_hardening.precheck import run_precheck

    r = run_precheck(src, reference, policy=policy, precision="fp32")
    return any(f.severity == "error" for f in r.findings)


def _build(src: str, reference: str, timeout: float) -> tuple[bool, str]:
    from kernelbench.reward_hardening.config import default_build_dir
    from kernelbench.reward_hardening.parent.prebuild import prebuild

    build_dir = default_build_dir(src)
    res = prebuild([(src, reference, build_dir)], "cpu", parallel=1, timeout=timeout).get(build_dir) or {}
    error = str(res.get("error") or "")
    first = next((line for line in error.splitlines() if "error:" in line), error.splitlines()[0] if error else "")
    return bool(res.get("ok")), re.sub(r"/[^\s:]*/", "", first)[:300]  # the compiler's message, no paths


def run_seed_campaign(classes: list[str] | None = None, n: int = 4, policies: tuple[str, ...] = POLICIES, *,
                      rng_seed: int = 0, cxx: str = "auto", disguise: bool = True, timeout: float = 2.0,
                      num_perf_trials: int = 10, num_correct_trials: int = 3, build_timeout: float = 900.0,
                      budget_s: float | None = None, progress=None) -> dict:
    """Evaluate every selected seed and ``n`` mutants of it under enforce, for each policy."""
    from kernelbench.reward_hardening.fixtures import PROBLEM_DIR

    compiler = have_compiler() if cxx == "auto" else cxx in ("on", "true", True)
    t0 = time.monotonic()
    results: list[SeedResult] = []
    skipped_budget = 0
    for seed in select_seeds(classes, cxx=True):
        reference = (PROBLEM_DIR / seed.problem).read_text()
        candidates = [("seed", seed.source())] + mutants(seed, n, rng_seed, disguise, reference)
        for policy in policies:
            for label, src in candidates:
                r = SeedResult(seed.cls, seed.id, policy, label, "")
                if seed.needs_cxx and not compiler:
                    r.outcome, r.detail = "skipped", "no C++ compiler (or ninja) available"
                    results.append(r)
                    continue
                if budget_s is not None and time.monotonic() - t0 > budget_s:
                    skipped_budget += 1
                    continue
                ts = time.monotonic()
                try:
                    if seed.needs_cxx and not _refused_statically(src, reference, policy):
                        r.built, why = _build(src, reference, build_timeout)
                        if not r.built:
                            r.detail = f"build failed: {why}"
                    case = Case(f"{seed.id}/{policy}", "seed", src, reference, policy=policy, mode="enforce",
                                problem=seed.problem)
                    r.outcome, info = judge_runtime(case, src, timeout, num_perf_trials, num_correct_trials)
                    r.codes, r.status = list(info.get("codes") or []), info.get("status")
                    r.blocking = [c for c in r.codes if c in CODES and CODES[c].severity.get(policy) == "error"]
                    r.verified_runtime = info.get("verified_runtime")
                except Exception as exc:  # an evaluator failure is reported, not fatal
                    r.outcome, r.detail = "error", f"{type(exc).__name__}: {exc}"
                if seed.cls == "outlives":
                    r.left_behind = seed_outlives.cleanup()
                r.wall_s = round(time.monotonic() - ts, 2)
                results.append(r)
                if progress is not None:
                    progress(r)
    return {"schema": "kernelguard-adversary-seeds/1", "classes": list(classes or SEED_CLASSES), "n": n,
            "policies": list(policies), "mode": "enforce", "rng_seed": rng_seed, "disguise": disguise,
            "compiler": compiler, "skipped_for_budget": skipped_budget, "budget_s": budget_s,
            "wall_s": round(time.monotonic() - t0, 1), "summary": summarise_seeds(results),
            "escapes": [r.as_dict() for r in results if r.outcome == "escaped"],
            "results": [r.as_dict() for r in results]}


def summarise_seeds(results: list[SeedResult]) -> dict[str, dict[str, Any]]:
    """class -> tried / escaped / caught / skipped / error, the codes that caught, and the same per policy."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        row = out.setdefault(r.cls, {"tried": 0, "escaped": 0, "caught": 0, "skipped": 0, "error": 0,
                                     "left_behind": 0, "codes": Counter(), "by_policy": {}})
        pol = row["by_policy"].setdefault(r.policy, {"tried": 0, "escaped": 0, "caught": 0, "codes": Counter()})
        row[r.outcome] = row.get(r.outcome, 0) + 1
        row["left_behind"] += bool(r.left_behind)
        if r.outcome in ("caught", "escaped"):
            row["tried"] += 1
            pol["tried"] += 1
            pol[r.outcome] += 1
        if r.outcome == "caught":
            row["codes"].update(r.blocking)
            pol["codes"].update(r.blocking)
    for row in out.values():
        row["codes"] = dict(row["codes"].most_common())
        for pol in row["by_policy"].values():
            pol["codes"] = dict(pol["codes"].most_common())
    return out


def format_seed_table(report: dict) -> str:
    lines = [f"{'class':11s} {'policy':14s} {'tried':>5s} {'escaped':>7s} {'caught':>6s} {'skipped':>7s}"
             f" {'error':>5s}  blocking codes (caught candidates carrying each)"]
    for cls, row in report["summary"].items():
        for policy, pol in row["by_policy"].items():
            codes = " ".join(f"{c}:{k}" for c, k in pol["codes"].items())
            lines.append(f"{cls:11s} {policy:14s} {pol['tried']:5d} {pol['escaped']:7d} {pol['caught']:6d}"
                         f" {'':>7s} {'':>5s}  {codes}")
        codes = " ".join(f"{c}:{k}" for c, k in row["codes"].items())
        lines.append(f"{cls:11s} {'(all)':14s} {row['tried']:5d} {row['escaped']:7d} {row['caught']:6d}"
                     f" {row['skipped']:7d} {row['error']:5d}  {codes}")
    return "\n".join(lines)
