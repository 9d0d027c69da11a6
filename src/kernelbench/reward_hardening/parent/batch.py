"""Hardened evaluation of batch samples (used by ``eval_from_generations``).

The evaluator keeps one :class:`~kernelbench.reward_hardening.parent.pipeline.ReferenceSession`
per batch thread (a :class:`SessionCache` of size one): consecutive samples of the same problem
reuse the judge (the loaded reference, its memory plan and copy rate) instead of
starting it again.
A new problem, another configuration or a judge that failed starts a fresh session.
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.parent.pipeline import ReferenceSession, evaluate_hardened
from kernelbench.reward_hardening.parent.records import evaluator_error_record, load_failed_record

__all__ = ["SessionCache", "hardened_evaluator"]


class SessionCache:
    """Judges kept for reuse, keyed by reference, judge configuration and device.

    Each thread has its own (a judge serves one evaluation at a time) holding its ``size``
    most recent judges: a batch thread keeps one (consecutive samples of a problem), the
    red-team suite a few across its fixtures.  A judge that failed is replaced; one pushed
    out is closed; :meth:`close` ends every thread's judges.
    """

    def __init__(self, size: int = 1):
        self.size = max(1, int(size))
        self._local = threading.local()
        self._all: list[OrderedDict[tuple, ReferenceSession]] = []
        self._lock = threading.Lock()

    @property
    def sessions(self) -> OrderedDict[tuple, ReferenceSession]:
        """This thread's judges, oldest first."""
        mine = getattr(self._local, "sessions", None)
        if mine is None:
            mine = self._local.sessions = OrderedDict()
            with self._lock:
                self._all.append(mine)
        return mine

    def get(self, ref_code: str, hcfg: HardeningConfig, device: str) -> ReferenceSession | None:
        """The session to evaluate with, or ``None`` (CUDA unavailable: the pipeline answers UNSUPPORTED)."""
        if device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                return None
            device = "cuda:0" if device == "cuda" else device
        key = ReferenceSession.key_for(ref_code, hcfg, device)
        sessions = self.sessions
        current = sessions.pop(key, None)
        if current is not None and not current.alive:
            current.close()
            current = None
        if current is None:
            current = ReferenceSession(ref_code, hcfg, device)
        sessions[key] = current
        while len(sessions) > self.size:
            sessions.popitem(last=False)[1].close()
        return current

    def close(self) -> None:
        with self._lock:
            for sessions in self._all:
                for s in sessions.values():
                    s.close()
                sessions.clear()


def hardened_evaluator(cfg: Any, prebuild_failures: dict | None = None) -> Callable:
    """An ``evaluate(item, device, build_dir) -> record`` for :func:`kernelbench.batch.run_batch`.

    ``prebuild_failures`` maps ``(problem, sample)`` to the error of an ahead-of-time
    build (:func:`kernelbench.reward_hardening.parent.prebuild.prebuild_items`): such a sample
    gets its load-failure record without being evaluated.  ``evaluate.close()`` ends
    the sessions it still holds (also run at interpreter exit).
    """
    failures = dict(prebuild_failures or {})
    judges = SessionCache(1)

    def evaluate(item, device: str, build_dir: str) -> dict:
        hcfg = HardeningConfig.from_script_config(cfg, device=device, build_dir=str(Path(build_dir) / "build"))
        hcfg.watch_dirs = (str(Path(item.kernel_path).parent),)
        if (item.problem_id, item.sample_id) in failures:
            return {"sample_id": item.sample_id,
                    **load_failed_record(hcfg, failures[(item.problem_id, item.sample_id)], device)}
        try:
            source = Path(item.kernel_path).read_text()
            session = judges.get(item.ref_code, hcfg, device)
            record = evaluate_hardened(item.ref_code, source, hcfg, workdir=None, session=session)
        except Exception as exc:  # evaluator fault: fail closed for this sample
            record = evaluator_error_record(hcfg, f"{type(exc).__name__}: {exc}")
        return {"sample_id": item.sample_id, **record}

    evaluate.close = judges.close  # type: ignore[attr-defined]
    atexit.register(judges.close)
    return evaluate
