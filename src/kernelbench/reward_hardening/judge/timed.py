"""The judge's side of the timed calls: a fresh hidden input set per call, its check after.

Every timed call of the candidate (and of the reference's twin) gets an input set the
judge generated for it in memory no earlier set used, copied before the call and
compared after it (on a secret sample of rows above ``SAMPLE_MIN_BYTES``, see
:class:`~kernelbench.reward_hardening.ipc.lending.InputCheck`); a spot-checked call's
staged outputs are compared with the reference after the timing loop.  The judge's
own timed reference calls (``ref_prepare``, ``ref_time``) are here too.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any

import torch

from kernelbench.reward_hardening.ipc.lending import input_checks
from kernelbench.reward_hardening.judge.compare import compare
from kernelbench.reward_hardening.judge.values import flat_outputs
from kernelbench.reward_hardening.worker_runtime import timed_call

__all__ = ["TimedInputs"]


class TimedInputs:
    """Mixed into :class:`~kernelbench.reward_hardening.judge.worker.Judge` (its data: ``JudgeData``)."""

    def cmd_timed_input(self, header: dict) -> None:
        """A fresh hidden input set for one timed candidate call, and staging for its outputs.

        Every timed call gets newly generated values, never a view, shift or
        permutation of an earlier input.  The reference outputs of a spot-checked call
        are computed after the call, from the same seed (or a private copy when the
        problem's ``get_inputs`` is not reproducible), so nothing the candidate could
        observe before its call depends on whether it will be checked.
        """
        self._release()
        seed = int(header["seed"])
        deterministic = self._check_deterministic()
        with self.part("generate"):
            inputs = self._generate(seed)
            private = None if deterministic else [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
            items, keys = self._lend(inputs)
        del inputs
        sample_key = secrets.randbits(63)  # the rows the input check samples (InputCheck); stays here
        with self.part("check"):
            checks = input_checks([self.arena.tensor(k) for k in keys], sample_key)
            if self.flush_buf is not None:
                self.flush_buf.fill_(7)  # the sampled rows' lines leave L2: no cache timing tells which rows
        hidden = bool(header.get("private_stage"))  # never lent: the judge's trusted read fills it
        with self.part("stage"):
            stage = [] if not header.get("stage") else (
                self._private_staging(int(header.get("spots", 0)), int(header.get("hold_bytes", 0))) if hidden
                else self._staging_like_reference())
        self.timed = {"seed": seed, "keys": keys, "checks": checks, "stage": stage, "private": private,
                      "private_stage": hidden}
        export_stage = self._export_staging and not hidden
        with self.part("export"):
            metas, fds = self.arena.export(keys + (stage if export_stage else []))
        by = {m["id"]: m for m in metas + ([] if export_stage else self.arena.describe(stage))}
        self.reply({"inputs": self._items(items, metas), "staging": [by[k] for k in stage],
                    "rng": self.forward_seed(seed)}, fds)

    def cmd_check_inputs(self, header: dict) -> None:
        """After a timed call: inputs unchanged? and, for a spot check, staged outputs right?"""
        cur = self.timed
        if cur is None:
            raise RuntimeError("no timed input to check")
        self.sync()
        with self.part("check"):
            unchanged = all(c.unchanged(self.arena.tensor(k)) for k, c in zip(cur["keys"], cur["checks"]))
        cur["checks"] = None  # the copies go before a spot's reference forward
        result: dict[str, Any] = {"inputs_unchanged": unchanged}
        if header.get("spot"):
            if cur.get("private_stage") and not cur.get("read"):
                # unfilled staging holds whatever the pool held before: compared only once the judge's read wrote it
                raise RuntimeError("a timed call's own staging is compared only after the judge's read filled it")
            spot = {"seed": cur["seed"], "private": cur["private"], "stage": cur["stage"],
                    "layouts": header.get("layouts")}
            size = sum(self.arena.tensor(k).nbytes for k in cur["stage"])
            if header.get("defer") and self.held_bytes + size <= int(header.get("hold_bytes", 0)):
                # compared after the timing loop: between two timed calls the judge does the
                # same work whether or not the call is checked, so the candidate cannot tell
                self.arena.pinned.update(cur["stage"])
                self.held_bytes += size
                self.spots.append(spot)
                result["deferred"] = True
            else:
                with self.part("spot"):
                    result["comparison"] = self._spot_comparison(spot)
        self.timed = None
        self._release()
        self.reply(result)

    def _spot_comparison(self, spot: dict) -> dict:
        inputs = spot["private"] if spot["private"] is not None else self._generate(spot["seed"])
        refs = [o for o in flat_outputs(self._seeded_forward(spot["seed"], inputs)) if isinstance(o, torch.Tensor)]
        with self.part("compare"):  # (inside "spot" for a comparison made at once)
            return compare(self._staged(spot["stage"], spot["layouts"]), refs, self.spec["precision"]).as_dict()

    def _drop_spots(self) -> None:
        for spot in self.spots:
            self.arena.pinned.difference_update(spot["stage"])
            self.arena.release(spot["stage"])
        self.spots, self.held_bytes = [], 0

    def cmd_check_spots(self, header: dict) -> None:
        """Compare the held spot-checked timed outputs with the reference, in call order."""
        try:
            comparisons = [self._spot_comparison(spot) for spot in self.spots]
        finally:
            self._drop_spots()
        self.reply({"comparisons": comparisons})

    def cmd_ref_prepare(self, header: dict) -> None:
        self.ref_inputs = None  # the previous set is freed before the next is made
        self._release()
        # placed as the candidate's timed inputs are (the lent pool, a pool of its own per
        # set): the same allocation path for both sides of the speedup; never exported
        self.ref_inputs = self._generate(int(header["seed"]), shared=True)
        self.reply({})

    def cmd_ref_time(self, header: dict) -> None:
        """One timed reference call, its allocations from a pool kept warm across the sample's calls.

        Every reference input set is made after the previous one was released, and that
        release empties the allocator's cache: the reference's forward would allocate its
        outputs with ``cudaMalloc`` on every timed call (measured on the H200: ~50 us
        kernels timed at up to 0.13 ms), while the candidate's allocator is warm.  Its
        allocations come from a private pool instead, which ``empty_cache`` leaves alone
        while it lives; an untimed forward fills it before the first timed one.  The pool
        holds one forward's outputs and workspace, less than a correctness probe holds,
        and goes at the sample's release.
        """
        inputs = self.ref_inputs or []
        with self._ref_alloc(inputs):
            _, stamps = timed_call(lambda: self.model(*inputs), self.device, self.flush_buf,
                                   int(self.spec.get("launch_hold_cycles", 0)))
        self.ref_inputs = None
        self.reply({**stamps, "threads_delta": 0})

    @contextlib.contextmanager
    def _ref_alloc(self, inputs: list):
        if self.device.type != "cuda" or not hasattr(torch.cuda, "MemPool"):
            yield
            return
        warm = self.ref_pool is not None
        if not warm:
            self.ref_pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(self.ref_pool, self.device):
            if not warm:
                self._forward(inputs)  # (its outputs are freed into the pool at once)
            yield
