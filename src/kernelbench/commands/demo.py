"""Fill a run directory with the bundled demo solutions (one sample per problem).

    uv run python scripts/make_demo_run.py run_name=my_run level=1

Writes ``runs/<run_name>/level_{L}_problem_{P}_sample_0_kernel.py`` for each demo
problem of ``level``, keeping kernel files already there unless ``overwrite=true``;
``runs_dir`` moves ``runs/``.  Then evaluate with ``scripts/eval_from_generations.py
run_name=<run_name> dataset_src=local dataset_path=demo level=<L> device=cpu ...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydra import REQUIRED

from kernelbench.cli import ConfigError, KBConfig, cli_main, project_root

REPO_ROOT = project_root()  # default runs/ and relative paths: the checkout, else the working directory


class DemoRunConfig(KBConfig):
    BOOL_KEYS = ("overwrite",)
    INT_KEYS = ("level",)

    def __init__(self):
        self.run_name = REQUIRED
        self.level = 1
        self.runs_dir = str(REPO_ROOT / "runs")
        self.overwrite = False

    def validate(self):
        if not str(self.run_name).strip():
            raise ConfigError("run_name", "must not be empty")


def main(cfg: DemoRunConfig) -> int:
    from kernelbench.demo_run import build_demo_run

    try:
        run_dir, written, kept = build_demo_run(cfg.runs_dir, str(cfg.run_name).strip(), cfg.level, cfg.overwrite)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"[demo run] {len(written)} kernel files written to {run_dir}"
          + (f"; {len(kept)} already there kept (overwrite=true replaces them)" if kept else ""))
    print(f"[demo run] next: uv run python scripts/eval_from_generations.py run_name={run_dir.name} "
          f"dataset_src=local dataset_path=demo level={cfg.level} device=cpu "
          "reward_hardening_mode=audit reward_hardening_policy=source_strict")
    return 0


entry = cli_main(DemoRunConfig)(main)

if __name__ == "__main__":
    sys.exit(entry() or 0)
