"""Finding and loading a run's files, then analysing them (parent process, or any tool reading results).

:func:`analyze_run_files` locates the results, baseline, baseline environment and
pass@k files of a run directory, chooses one configuration slot and hands the parsed
data to :func:`kernelbench.analysis_parts.metrics.analyze_run`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from kernelbench.analysis_parts.inputs import (
    BASELINE_ENVIRONMENT_NAME,
    EVAL_RESULTS_NAME,
    PASS_AT_K_NAME,
    VERIFIED_RESULTS_NAME,
    AnalysisError,
    Warn,
    load_json_file,
    load_problem_names,
    repo_root,
    resolve_repo_path,
    select_configuration,
)
from kernelbench.analysis_parts.metrics import analyze_run

def analyze_run_files(
    *,
    run_name: str,
    level: int,
    hardware: str,
    baseline: str,
    baseline_file: str | os.PathLike | None = None,
    verified_eval_file: str | os.PathLike | None = None,
    eval_results_dir: str | os.PathLike | None = None,
    dataset_path: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
    warn: Warn | None = None,
    mode: str | None = None,
    policy: str | None = None,
    device: str | None = None,
    speedup_statistic: str = "lcb",
) -> dict[str, Any]:
    """Locate and load a run's files, then :func:`analyze_run`.

    ``mode``, ``policy`` and ``device`` choose the configuration whose records are
    analysed (:func:`select_configuration`): the verified metrics come from that
    slot of the verified results, the upstream metrics from ``eval_results.json``
    (its records of ``device``) or, when that file is absent or ``mode`` names a
    hardened mode, from the upstream fields of the same verified records.

    Relative paths are resolved against ``root`` (default: the repo root), never the
    working directory.  Defaults: results in ``<root>/runs/<run_name>/``, baseline
    ``<root>/results/timing/<hardware>/<baseline>.json``, verified results
    ``<run dir>/verified_eval_results.json`` (an explicit ``verified_eval_file``
    must exist).  At least one of the two results files must exist.
    """
    root = Path(root) if root is not None else repo_root()
    runs_dir = resolve_repo_path(eval_results_dir, root) if eval_results_dir is not None else root / "runs"
    run_dir = runs_dir / str(run_name)
    baseline_path = (
        resolve_repo_path(baseline_file, root)
        if baseline_file is not None
        else root / "results" / "timing" / str(hardware) / f"{baseline}.json"
    )
    eval_path = run_dir / EVAL_RESULTS_NAME
    if verified_eval_file is not None:
        verified_path = resolve_repo_path(verified_eval_file, root)
        if not verified_path.is_file():
            raise AnalysisError(f"verified results file does not exist: {verified_path}")
    else:
        verified_path = run_dir / VERIFIED_RESULTS_NAME

    has_eval, has_verified = eval_path.is_file(), verified_path.is_file()
    if not has_eval and not has_verified:
        raise AnalysisError(f"no {EVAL_RESULTS_NAME} or {VERIFIED_RESULTS_NAME} in {run_dir}")
    eval_results = load_json_file(eval_path, "eval results") if has_eval else None
    verified_results = load_json_file(verified_path, "verified eval results") if has_verified else None
    if mode == "off":
        if eval_results is None:
            raise AnalysisError(f"reward_hardening_mode=off: no {EVAL_RESULTS_NAME} in {run_dir}")
        verified_results = None
    elif mode is not None and verified_results is None:
        raise AnalysisError(f"reward_hardening_mode={mode}: no {VERIFIED_RESULTS_NAME} in {run_dir}")
    verified_slot = off_slot = None
    if verified_results is not None:
        verified_results, verified_slot = select_configuration(verified_results, VERIFIED_RESULTS_NAME, mode,
                                                               policy, device)
    if eval_results is not None:
        off_device = device if device is not None else (verified_slot[2] if verified_slot else None)
        try:
            eval_results, off_slot = select_configuration(eval_results, EVAL_RESULTS_NAME, "off", None, off_device)
        except AnalysisError:
            if verified_results is None:
                raise
            eval_results = None  # no off-mode records on the verified records' device
    baseline_results = load_json_file(baseline_path, "baseline file")

    pass_at_k_path = run_dir / PASS_AT_K_NAME
    pass_at_k_results = None
    if pass_at_k_path.is_file():
        try:
            from kernelbench.passk import select_pass_at_k

            raw = load_json_file(pass_at_k_path, "pass@k results")
            pass_at_k_results = select_pass_at_k(raw, verified_slot or off_slot)
        except AnalysisError as exc:
            if warn:
                warn(f"{exc}; ignored")

    environment = None
    env_path = baseline_path.parent / BASELINE_ENVIRONMENT_NAME
    if env_path.is_file():
        try:
            environment = load_json_file(env_path, "baseline environment")
        except AnalysisError as exc:
            if warn:
                warn(f"{exc}; ignored")
    is_demo = dataset_path is not None and str(dataset_path).strip().lower() == "demo"
    if dataset_path is not None and str(dataset_path).strip().lower() not in ("", "demo"):
        dataset_path = resolve_repo_path(dataset_path, root)
    problem_names = load_problem_names(level, dataset_path)
    return analyze_run(
        run_name=run_name,
        level=level,
        hardware=hardware,
        baseline=baseline,
        problem_names=problem_names,
        baseline_results=baseline_results,
        eval_results=eval_results,
        verified_results=verified_results,
        pass_at_k_results=pass_at_k_results,
        baseline_environment=environment if isinstance(environment, Mapping) else None,
        dataset_is_demo=is_demo,
        warn=warn,
        configuration={"verified": _slot_dict(verified_slot), "upstream": _slot_dict(off_slot or verified_slot)},
        speedup_statistic=speedup_statistic,
    )


def _slot_dict(slot: tuple | None) -> dict | None:
    if slot is None:
        return None
    return {"mode": slot[0], "policy": slot[1], "device": slot[2]}
