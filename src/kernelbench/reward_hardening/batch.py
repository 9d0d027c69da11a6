"""Hardened evaluation of one batch sample (used by ``eval_from_generations``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.pipeline import evaluate_hardened
from kernelbench.reward_hardening.records import evaluator_error_record

__all__ = ["hardened_evaluator"]


def hardened_evaluator(cfg: Any) -> Callable:
    """An ``evaluate(item, device, build_dir) -> record`` for :func:`kernelbench.batch.run_batch`."""

    def evaluate(item, device: str, build_dir: str) -> dict:
        hcfg = HardeningConfig.from_script_config(cfg, device=device, build_dir=str(Path(build_dir) / "build"))
        hcfg.watch_dirs = (str(Path(item.kernel_path).parent),)
        try:
            source = Path(item.kernel_path).read_text()
            record = evaluate_hardened(item.ref_code, source, hcfg, workdir=None)
        except Exception as exc:  # evaluator fault: fail closed for this sample
            record = evaluator_error_record(hcfg, f"{type(exc).__name__}: {exc}")
        return {"sample_id": item.sample_id, **record}

    return evaluate
