"""Hardened evaluation of batch samples (used by ``eval_from_generations``).

The evaluator keeps one :class:`~kernelbench.reward_hardening.parent.pipeline.ReferenceSession`
per batch thread: consecutive samples of the same problem reuse the judge (the loaded
reference and its measured timing) instead of starting and timing the reference again.
A new problem, another configuration or a judge that failed starts a fresh session.
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import Any, Callable

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.pipeline import ReferenceSession, evaluate_hardened
from kernelbench.reward_hardening.parent.records import evaluator_error_record, load_failed_record

__all__ = ["hardened_evaluator"]


def hardened_evaluator(cfg: Any, prebuild_failures: dict | None = None) -> Callable:
    """An ``evaluate(item, device, build_dir) -> record`` for :func:`kernelbench.batch.run_batch`.

    ``prebuild_failures`` maps ``(problem, sample)`` to the error of an ahead-of-time
    build (:func:`kernelbench.reward_hardening.parent.prebuild.prebuild_items`): such a sample
    gets its load-failure record without being evaluated.  ``evaluate.close()`` ends
    the sessions it still holds (also run at interpreter exit).
    """
    failures = dict(prebuild_failures or {})
    local = threading.local()
    opened: list[ReferenceSession] = []
    lock = threading.Lock()

    def session_for(ref_code: str, hcfg: HardeningConfig, device: str) -> ReferenceSession | None:
        if device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                return None  # evaluate_hardened answers UNSUPPORTED without a session
            device = "cuda:0" if device == "cuda" else device
        key = ReferenceSession.key_for(ref_code, hcfg, device)
        current: ReferenceSession | None = getattr(local, "session", None)
        if current is not None and (current.key != key or not current.alive):
            current.close()
            current = None
        if current is None:
            current = ReferenceSession(ref_code, hcfg, device)
            with lock:
                opened.append(current)
            local.session = current
        return current

    def evaluate(item, device: str, build_dir: str) -> dict:
        hcfg = HardeningConfig.from_script_config(cfg, device=device, build_dir=str(Path(build_dir) / "build"))
        hcfg.watch_dirs = (str(Path(item.kernel_path).parent),)
        if (item.problem_id, item.sample_id) in failures:
            return {"sample_id": item.sample_id,
                    **load_failed_record(hcfg, failures[(item.problem_id, item.sample_id)], device)}
        try:
            source = Path(item.kernel_path).read_text()
            session = session_for(item.ref_code, hcfg, device)
            record = evaluate_hardened(item.ref_code, source, hcfg, workdir=None, session=session)
        except Exception as exc:  # evaluator fault: fail closed for this sample
            record = evaluator_error_record(hcfg, f"{type(exc).__name__}: {exc}")
        return {"sample_id": item.sample_id, **record}

    def close() -> None:
        with lock:
            for s in opened:
                s.close()
            opened.clear()

    evaluate.close = close  # type: ignore[attr-defined]
    atexit.register(close)
    return evaluate
