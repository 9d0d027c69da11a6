"""Interleaved timing: reference blocks in the judge between the candidate's timed blocks.

The candidate's ``num_perf_trials`` timed samples (after its warm-up) are split into
``interleave_blocks`` blocks of nearly equal size.  The judge times
``interleave_reference_samples`` samples of the reference next to each block, with
the same timed-call protocol (flush, hold, CUDA events or host clock) on a fresh
input set generated in the same allocator pool the candidate's inputs are lent
from: before the candidate's block when its number is even, after it when odd
(R0 C0 C1 R1 R2 C2 ...), so a linear drift raises both sides alike.  Every sample of
both sides is labelled with its block; :mod:`kernelbench.reward_hardening.parent.speedup`
turns them into the speedup and its bounds.

Cost per candidate: ``interleave_blocks * interleave_reference_samples`` reference
calls (50 with the defaults).  These samples are also the reference's runtime in the
record (``verified_reference_runtime``): the judge no longer times a separate reference
run of ``num_warmup + num_perf_trials`` calls when interleaving is on (see
:func:`enabled`).  A short timing run gets fewer blocks (at least two candidate samples
each) and no more reference samples per block than candidate samples.

While a reference block runs, the candidate's cgroup is frozen where the harness can
freeze it (``hold``): no code of the candidate runs while its competitor is timed, so it
cannot slow the reference down from a thread or a child between its own calls.  Work it
queued on the device before returning is RH-37's (work after the current stream).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from typing import Any, Callable, ContextManager

from kernelbench.reward_hardening.config import usable_cpus

__all__ = ["Interleaver", "block_of", "enabled", "other_runnable"]


def _shape(cfg: Any) -> tuple[int, int]:
    """(blocks, reference samples per block) for ``cfg``; (0, 0) when interleaving is off.

    At least two candidate samples per block, and no more reference samples per block
    than candidate ones (a short timing run gets a proportionally short reference).
    """
    n = max(1, int(cfg.num_perf_trials))
    blocks = min(max(0, int(cfg.interleave_blocks)), max(1, n // 2))
    size = -(-n // blocks) if blocks else 0
    per_block = min(max(0, int(cfg.interleave_reference_samples)), size)
    return (blocks, per_block) if blocks > 0 and per_block > 0 else (0, 0)


def enabled(cfg: Any) -> bool:
    """Whether the reference is timed in blocks between the candidate's (and only there)."""
    return _shape(cfg)[0] > 0


def block_of(j: int, n: int, blocks: int) -> int:
    """Block of the ``j``-th timed sample (0-based, after warm-up) of ``n`` in ``blocks`` blocks."""
    return j * blocks // n


def _own_running() -> int:
    """Running threads of this process and of its workers (the forkserver, the judge, the candidate).

    Their intra-op threads spin for a while after parallel work, so they show as
    runnable: they are the evaluation itself, not load from other jobs.
    """
    from kernelbench.reward_hardening.containment.procfs import _children_map, _descendants

    try:  # the workers are the forkserver's children; other children of ours are not the evaluation
        from multiprocessing import forkserver

        server = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    except Exception:
        server = None
    own = [os.getpid()] + ([server] + _descendants(server, _children_map()) if server else [])
    running = 0
    for pid in own:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                    stat = fh.read()
                running += stat[stat.rindex(")") + 2] == "R"
            except (OSError, ValueError, IndexError):
                continue
    return running


def other_runnable() -> int | None:
    """Runnable threads on the machine besides the evaluation's own (``procs_running`` of /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if line.startswith("procs_running"):
                    total = int(line.split()[1])
                    break
            else:
                return None
    except (OSError, ValueError, IndexError):
        return None
    try:
        own = _own_running()
    except OSError:
        own = 1
    return max(total - max(own, 1), 0)


class Interleaver:
    """Decides where the reference blocks go and times them through ``time_reference``.

    ``time_reference(block)`` times one reference sample and returns it (a
    :class:`~kernelbench.reward_hardening.parent.evidence.TimingSample`); ``ev`` receives
    the samples, the block labels of the candidate's samples and the load readings.
    """

    def __init__(self, cfg: Any, ev: Any, time_reference: Callable[[int], Any],
                 hold: Callable[[], ContextManager[Any]] | None = None):
        self.cfg, self.ev, self.time_reference = cfg, ev, time_reference
        self.hold = hold or contextlib.nullcontext
        self.n = max(1, cfg.num_perf_trials)
        self.blocks, self.per_block = _shape(cfg)
        self.enabled = self.blocks > 0
        ev.usable_cpus = usable_cpus()

    def before(self, k: int) -> None:
        """Called before the candidate's timed call ``k`` (warm-up included); ``k == total`` after the last."""
        if not self.enabled:
            return
        j = k - self.cfg.num_warmup
        if j < 0:
            return
        n, blocks = self.n, self.blocks
        if j > 0:
            prev = block_of(j - 1, n, blocks)
            if (j == n or block_of(j, n, blocks) != prev) and prev % 2 == 1:
                self._reference_block(prev)
        if j < n:
            b = block_of(j, n, blocks)
            if (j == 0 or block_of(j - 1, n, blocks) != b) and b % 2 == 0:
                self._reference_block(b)
        else:
            self._label()

    def _reference_block(self, b: int) -> None:
        load = other_runnable()
        if load is not None:
            self.ev.host_load.append(load)
        with self.hold():
            for _ in range(self.per_block):
                s = self.time_reference(b)
                s.block = b
                self.ev.interleaved_reference_samples.append(s)

    def _label(self) -> None:
        w = self.cfg.num_warmup
        for s in self.ev.samples:
            s.block = block_of(s.index - w, self.n, self.blocks)


def reference_sample(session: Any, block: int, sample: Callable, malformed: Callable) -> Any:
    """One reference sample timed by the judge of ``session`` (same request pair as the session's run)."""
    session.request("ref_prepare", {"cmd": "ref_prepare", "seed": secrets.randbits(62)})
    send = time.monotonic_ns()
    reply, _ = session.request("ref_time", {"cmd": "ref_time"})
    recv = time.monotonic_ns()
    bad = malformed(reply)
    if bad:
        session.fail(f"judge timing reply malformed: {bad}")
    return sample(block, send, recv, reply)
