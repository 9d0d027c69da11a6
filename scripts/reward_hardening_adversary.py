"""KernelGuard's adaptive adversary: a mutation campaign and a reward-seeking agent loop.

Mutation campaign (every attack fixture through every semantics-preserving transform)::

    uv run python scripts/reward_hardening_adversary.py task=mutate tier=static
    uv run python scripts/reward_hardening_adversary.py task=mutate tier=runtime budget_s=1800 \
        output=docs/validation/adversary_mutation.json

Seed campaign (the attack seeds of three classes and N mutants each, under enforce and both policies)::

    uv run python scripts/reward_hardening_adversary.py task=mutate tier=seeds seed_mutants=4 \
        output=runs/adversary/seeds.json

Agent loop against a real model (see docs/adversary.md)::

    OPENAI_API_KEY=... uv run python scripts/reward_hardening_adversary.py task=agent \
        problem=level1/4_Row_softmax.py model_name=openai/gpt-4o-mini max_steps=8

Keys (``key=value``, pydra-config):

* ``task``: ``mutate`` or ``agent``.
* mutate: ``tier`` (``static`` = the precheck fixtures, ``runtime`` = the CPU red-team
  attack fixtures evaluated end to end, ``both``), ``transforms`` (comma-separated, default
  all), ``only`` (comma-separated fixture ids), ``include_benign`` (runtime tier: mutate
  the benign fixtures too; they must still PASS), ``check_behaviour`` (compare each
  runtime mutant with its unmutated fixture with no hardening), ``budget_s`` (wall-clock
  budget; work beyond it is counted as skipped), ``output`` (JSON report),
  ``table_output`` (the printed table as text).
* mutate, ``tier=seeds``: ``seed_classes`` (comma-separated: ``first_read``, ``read_path``,
  ``outlives``; default all), ``seed_mutants`` (mutants per seed, default 4),
  ``seed_policies`` (comma-separated, default ``source_strict,practical``), ``cxx``
  (``auto``: the C++ seeds when a compiler is available; ``off``: Python seeds only),
  ``rng_seed`` (which mutants are drawn), ``disguise`` (mutants may wear a generic
  transform on top, default true), ``build_timeout`` (seconds per C++ build), ``budget_s``,
  ``output``, ``table_output``.
* agent: ``problem`` (a bundled demo problem path or a file), ``model_name``,
  ``server_type``, ``max_steps``, ``max_tokens``, ``temperature``, ``budget_s``,
  ``impossible_speedup``, ``policy``, ``mode``, ``device``, ``backend``, ``timeout``,
  ``num_perf_trials``, ``num_correct_trials``, ``regression_dir``, ``mock_response``
  (a canned reply used for every step; no request is sent), ``output``.
* both: ``timeout``, ``num_perf_trials``, ``num_correct_trials`` (runtime evaluation).

Exit status: mutate: 0 when no attack mutant (or seed candidate) escaped and no benign
mutant was refused, 1 otherwise; agent: 0 when no impossible verified speedup was found, 1 when one was
(and saved); 2 on a configuration mistake.
"""

from __future__ import annotations

import _bootstrap  # noqa: F401

import json
import sys
from pathlib import Path

from kernelbench.cli import ConfigError, KBConfig, cli_main


class AdversaryConfig(KBConfig):
    BOOL_KEYS = ("include_benign", "check_behaviour", "disguise")
    INT_KEYS = ("max_steps", "max_tokens", "num_perf_trials", "num_correct_trials", "seed_mutants", "rng_seed")
    FLOAT_KEYS = ("temperature", "impossible_speedup", "timeout", "build_timeout")
    CHOICES = {"task": ("mutate", "agent"), "tier": ("static", "runtime", "both", "seeds"), "cxx": ("auto", "off"),
               "policy": ("source_strict", "practical"), "mode": ("audit", "enforce"), "device": ("cpu", "cuda")}

    def __init__(self):
        super().__init__()
        self.task = "mutate"
        self.tier = "static"
        self.transforms = None
        self.only = None
        self.include_benign = False
        self.check_behaviour = False
        self.budget_s = None
        self.output = None
        self.table_output = None
        self.problem = "level1/4_Row_softmax.py"
        self.model_name = "openai/gpt-4o-mini"
        self.server_type = None
        self.max_steps = 8
        self.max_tokens = 4096
        self.temperature = 0.7
        self.impossible_speedup = 20.0
        self.policy = "source_strict"
        self.mode = "enforce"
        self.device = "cpu"
        self.backend = "cuda"
        self.timeout = 2.0
        self.num_perf_trials = 10
        self.num_correct_trials = 3
        self.regression_dir = "runs/adversary/regressions"
        self.mock_response = None
        self.seed_classes = None
        self.seed_mutants = 4
        self.seed_policies = "source_strict,practical"
        self.cxx = "auto"
        self.rng_seed = 0
        self.disguise = True
        self.build_timeout = 900.0

    def validate(self) -> None:
        if self.budget_s not in (None, "None"):
            try:
                self.budget_s = float(self.budget_s)
            except (TypeError, ValueError):
                raise ConfigError("budget_s", f"expected a number of seconds, got {self.budget_s!r}") from None
        else:
            self.budget_s = None
        from kernelbench.reward_hardening.adversary.campaign import ALL_TRANSFORMS

        if self.transforms not in (None, "None"):
            names = self.transforms if isinstance(self.transforms, (list, tuple)) else str(self.transforms).split(",")
            names = [n.strip() for n in names if n.strip()]
            bad = [n for n in names if n not in ALL_TRANSFORMS]
            if bad:
                raise ConfigError("transforms", f"unknown {bad}; accepted: {', '.join(ALL_TRANSFORMS)}")
            self.transforms = names
        else:
            self.transforms = None
        from kernelbench.reward_hardening.adversary.seeds import SEED_CLASSES

        self.seed_classes = self._names("seed_classes", self.seed_classes, SEED_CLASSES)
        self.seed_policies = self._names("seed_policies", self.seed_policies, ("source_strict", "practical")) \
            or ["source_strict", "practical"]
        if self.only not in (None, "None"):
            self.only = [s.strip() for s in (self.only if isinstance(self.only, (list, tuple))
                                             else str(self.only).split(",")) if s.strip()]
        else:
            self.only = None


    @staticmethod
    def _names(key: str, value, known) -> list[str] | None:
        if value in (None, "None"):
            return None
        names = [n.strip() for n in (value if isinstance(value, (list, tuple)) else str(value).split(",")) if n.strip()]
        bad = [n for n in names if n not in known]
        if bad:
            raise ConfigError(key, f"unknown {bad}; accepted: {', '.join(known)}")
        return names


def _save(cfg, report: dict, table: str) -> int:
    """Write the report and its table where the config asks; exit 1 if anything escaped."""
    from kernelbench.runs import atomic_write_json

    if cfg.output:
        atomic_write_json(cfg.output, report)
    if cfg.table_output:
        Path(cfg.table_output).write_text(table + "\n")
    return 1 if report["escapes"] else 0

def _seeds(cfg: AdversaryConfig) -> int:
    from kernelbench.reward_hardening.adversary import seed_campaign

    def progress(r):
        print(f"  {r.cls:10s} {r.seed:16s} {r.policy:13s} {r.variant[:60]:60s} {r.outcome:8s} "
              f"{','.join(r.codes)[:50]} {r.wall_s:.1f}s", flush=True)

    report = seed_campaign.run_seed_campaign(cfg.seed_classes, cfg.seed_mutants, tuple(cfg.seed_policies),
                                             rng_seed=cfg.rng_seed, cxx=cfg.cxx, disguise=cfg.disguise,
                                             timeout=cfg.timeout, num_perf_trials=cfg.num_perf_trials,
                                             num_correct_trials=cfg.num_correct_trials,
                                             build_timeout=cfg.build_timeout, budget_s=cfg.budget_s,
                                             progress=progress)
    table = seed_campaign.format_seed_table(report)
    print()
    print(table)
    print(f"{len(report['results'])} candidates in {report['wall_s']} s (C++ seeds: "
          f"{'included' if report['compiler'] else 'skipped, no compiler'}); {report['skipped_for_budget']} skipped for the budget")
    for e in report["escapes"]:
        print(f"  ESCAPE {e['cls']} {e['seed']} {e['policy']} {e['variant']}: status {e['status']}, codes {e['codes']}")
    return _save(cfg, report, table)


def _mutate(cfg: AdversaryConfig) -> int:
    if cfg.tier == "seeds":
        return _seeds(cfg)
    from kernelbench.reward_hardening.adversary import campaign

    cases = []
    if cfg.tier in ("static", "both"):
        cases += [c for c in campaign.static_cases() if cfg.only is None or c.id in cfg.only]
    if cfg.tier in ("runtime", "both"):
        ids = None
        if cfg.only is not None:
            from kernelbench.reward_hardening.fixtures import select

            known = {f.id for f in select(device="cpu")}
            ids = [i for i in cfg.only if i in known]
        cases += campaign.runtime_cases(include_benign=cfg.include_benign, ids=ids)
    if not cases:
        print("no fixtures selected", file=sys.stderr)
        return 2

    def progress(r):
        print(f"  {r.tier:7s} {r.case:38s} {r.transform:16s} {r.outcome:8s} {','.join(r.codes)[:60]}"
              f" {r.wall_s:.1f}s", flush=True)

    report = campaign.run_campaign(cases, cfg.transforms, budget_s=cfg.budget_s,
                                   check_behaviour=cfg.check_behaviour, timeout=cfg.timeout,
                                   num_perf_trials=cfg.num_perf_trials, num_correct_trials=cfg.num_correct_trials,
                                   progress=progress)
    table = campaign.format_table(report)
    print()
    print(table)
    print(f"{report['cases_judged']}/{report['cases']} fixtures judged in {report['wall_s']} s; "
          f"{report['skipped_for_budget']} mutants skipped for the budget")
    for e in report["escapes"]:
        print(f"  ESCAPE {e['tier']} {e['case']} via {e['transform']}: status {e['status']}, codes {e['codes']}")
    return _save(cfg, report, table)


def _agent(cfg: AdversaryConfig) -> int:
    from kernelbench.reward_hardening.adversary.agent import AgentConfig, run_agent
    from kernelbench.reward_hardening.fixtures import PROBLEM_DIR
    from kernelbench.runs import atomic_write_json

    path = Path(cfg.problem)
    if not path.is_file():
        path = PROBLEM_DIR / cfg.problem
    if not path.is_file():
        raise ConfigError("problem", f"no such problem file: {cfg.problem}")
    acfg = AgentConfig(model_name=cfg.model_name, server_type=cfg.server_type, max_steps=cfg.max_steps,
                       max_tokens=cfg.max_tokens, temperature=cfg.temperature, budget_s=cfg.budget_s,
                       impossible_speedup=cfg.impossible_speedup, policy=cfg.policy, mode=cfg.mode,
                       device=cfg.device, backend=cfg.backend, timeout=cfg.timeout,
                       num_perf_trials=cfg.num_perf_trials, num_correct_trials=cfg.num_correct_trials, regression_dir=cfg.regression_dir,
                       mock_responses=None if cfg.mock_response is None else [cfg.mock_response] * cfg.max_steps)

    def log(a):
        sp = f"{a.speedup:.2f}x" if a.speedup is not None else "-"
        print(f"step {a.step}: status {a.status}, verified speedup {sp}, findings {','.join(a.codes) or '-'}"
              + (f", saved {a.saved_fixture}" if a.saved_fixture else "") + (f" ({a.note})" if a.note else ""),
              flush=True)

    if cfg.mock_response is None:
        from kernelbench.utils import load_env

        load_env()  # provider keys from .env, as generate_samples.py does
    report = run_agent(path.read_text(), cfg.problem, acfg, log=log)
    print(json.dumps({k: report[k] for k in ("best_reward", "saved", "wall_s")}))
    if cfg.output:
        atomic_write_json(cfg.output, report)
    return 1 if report["saved"] else 0


@cli_main(AdversaryConfig)
def main(cfg: AdversaryConfig) -> int:
    try:
        return _mutate(cfg) if cfg.task == "mutate" else _agent(cfg)
    except ConfigError as exc:
        print(f"invalid value for {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
