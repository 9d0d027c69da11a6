"""The judge's data: hidden input sets from seeds, reference outputs, the lent arena.

Runs in the judge (trusted).  :class:`JudgeData` is the half of
:class:`kernelbench.reward_hardening.judge.worker.Judge` that makes and holds data:
it generates ``get_inputs()`` under a hidden seed on the evaluation device, runs the
reference on it and keeps the outputs private, lends inputs and NaN-filled staging
buffers to the candidate through the :class:`~kernelbench.reward_hardening.ipc.lending.SharedArena`
(from an allocator pool of their own on CUDA), reads staged outputs back, and gives the
lent memory back after each request.  The command loop and the comparisons live in
:mod:`.worker`, which sets the attributes used here (``device``, ``dtype``, ``arena``,
``pool``, ``model``, ``module``, ``structure``, ``lean``, ``deterministic_inputs``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import math
import secrets
import time
from typing import Any

import torch

from kernelbench.reward_hardening.ipc.framing import value_to_json
from kernelbench.reward_hardening.ipc.lending import fingerprint
from kernelbench.reward_hardening.judge.values import flat_outputs, perturb
from kernelbench.reward_hardening.worker_runtime import seed_generators

__all__ = ["JudgeData"]

_FINITE_CHUNK = 1 << 26  # elements per finiteness check (a 64 MiB mask at most)


class JudgeData:
    """Hidden inputs, reference outputs, lending and staging (a base of ``Judge``)."""

    device: torch.device
    dtype: torch.dtype
    arena: Any
    pool: Any
    stage_pool: Any
    model: Any
    module: Any
    structure: dict
    lean: bool
    deterministic_inputs: bool | None
    forward_key: bytes

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def part(self, name: str):
        """Time one part of a command, its device work included (the reply carries ``split_ms``).

        Where a command's time goes inside the judge (a timed call's input check: the
        digests, the release of the lent set) shows in the record's ``request_ms`` as
        ``reference:<cmd>.<part>``.
        """
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.sync()
            self.parts_ms[name] = self.parts_ms.get(name, 0.0) + (time.perf_counter() - t0) * 1e3

    def take_parts(self) -> dict:
        """The parts timed since the last reply, for the next one (then cleared)."""
        parts, self.parts_ms = self.parts_ms, {}
        return {k: round(v, 3) for k, v in parts.items()}

    def shared_alloc(self):
        """Allocations that may be exported come from their own pool (CUDA)."""
        if self.pool is not None:
            return torch.cuda.use_mem_pool(self.pool, self.device)
        return contextlib.nullcontext()

    # ---------------------------------------------------------------- inputs
    def _generate(self, seed: int, shared: bool = True) -> list:
        """``get_inputs()`` under a hidden seed, created on the device, in the problem's dtype.

        ``shared``: in the lent pool (the inputs may be exported to the candidate).
        """
        seed_generators(seed)
        with (self.shared_alloc() if shared else contextlib.nullcontext()), torch.device(self.device):
            raw = list(self.module.get_inputs())
            out = []
            for v in raw:
                if isinstance(v, torch.Tensor):
                    v = v.to(self.device, dtype=self.dtype) if v.is_floating_point() else v.to(self.device)
                out.append(v)
        return out

    def _lend(self, values: list, on_device: bool = True) -> tuple[list, list[int]]:
        """Register tensors for export; plain values travel as JSON."""
        items, keys = [], []
        for v in values:
            if isinstance(v, torch.Tensor):
                if self.device.type == "cuda" and on_device and v.is_contiguous() and v.device == self.device:
                    key = self.arena.adopt(v)  # already in the export pool: no copy
                else:
                    with self.shared_alloc():
                        key, _ = self.arena.share(v.contiguous())
                keys.append(key)
                items.append({"kind": "tensor", "key": key})
            else:
                items.append({"kind": "value", "value": value_to_json(v)})
        return items, keys

    @staticmethod
    def _items(items: list, metas: list[dict]) -> list:
        by_key = {m["id"]: m for m in metas}
        return [{"kind": "tensor", "shared": by_key[it["key"]]} if it["kind"] == "tensor" else it for it in items]

    def _fill_unwritten(self, t: torch.Tensor) -> None:
        """Staging content before the candidate writes: NaN, or hidden random values.

        Never derived from the reference (the candidate can read its staging buffers).
        """
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.numel():
            g = torch.Generator(device=t.device).manual_seed(secrets.randbits(62))
            if t.dtype == torch.bool:
                t.copy_(torch.rand(t.shape, generator=g, device=t.device) < 0.5)
            else:
                t.copy_(torch.randint(0, 1 << 7 if t.dtype in (torch.int8, torch.uint8) else 1 << 15, t.shape,
                                      generator=g, device=t.device).to(t.dtype))

    def _staging(self, specs: list[tuple[list[int], torch.dtype]]) -> list[int]:
        keys = []
        for shape, dtype in specs:
            with self.shared_alloc():
                key, t = self.arena.empty(shape, dtype)
            self._fill_unwritten(t)
            keys.append(key)
        return keys

    def _output_specs(self) -> list[tuple[list[int], torch.dtype]]:
        return [(o["shape"], getattr(torch, o["dtype"])) for o in self.structure["outputs"] if "shape" in o]

    def _staging_like_reference(self) -> list[int]:
        return self._staging(self._output_specs())

    def _private_staging(self, spots: int, hold_bytes: int) -> list[int]:
        """A timed call's staging that is never lent (the trusted read on CUDA fills it).

        Lent staging comes from the lent pool, fresh for every call, and starts as NaN so
        that an output the candidate never wrote cannot match.  Where the judge itself
        copies the frozen candidate's outputs into staging (the trusted read), staging is
        never exported: it comes from a pool of its own that lives for the sample
        (``stage_pool``), and is not filled, since a staging buffer is compared only after
        a read that wrote every byte the comparison reads.  On level 1 at 100 timed trials
        the fill and the allocation were ``stage`` (15 s) and about half of ``release``
        (47 s) of 712 (run 47, H100).

        The pool is warmed, the first time, with as many sets as the timing loop can hold
        for spot checks compared after the loop (at most ``spots``, at most
        ``hold_bytes`` of them) plus the current one, so every later set is served from
        the pool: the time between two calls does not tell the candidate whether the
        earlier call's outputs were kept for a check.
        """
        specs = self._output_specs()
        if self.stage_pool is None:
            self.stage_pool = torch.cuda.MemPool() if self.device.type == "cuda" else None
            set_bytes = sum(math.prod(shape) * dtype.itemsize for shape, dtype in specs)
            held = min(max(int(spots), 0), int(hold_bytes) // set_bytes if set_bytes else 0)
            with self._stage_alloc():
                warm = [torch.empty(shape, dtype=dtype, device=self.device)
                        for _ in range(held + 1) for shape, dtype in specs]
            del warm
        keys = []
        with self._stage_alloc():
            for shape, dtype in specs:
                keys.append(self.arena.empty(shape, dtype)[0])
        return keys

    def _stage_alloc(self):
        if self.stage_pool is not None:
            return torch.cuda.use_mem_pool(self.stage_pool, self.device)
        return contextlib.nullcontext()

    @staticmethod
    def _private(outs: list, inputs: list) -> list:
        """Reference outputs that share memory with a lent input are copied (kept private)."""
        spans = [(v.untyped_storage().data_ptr(), v.untyped_storage().nbytes()) for v in inputs
                 if isinstance(v, torch.Tensor)]

        def lent(o: torch.Tensor) -> bool:
            p, n = o.untyped_storage().data_ptr(), o.untyped_storage().nbytes()
            return any(p < q + m and q < p + n for q, m in spans if m and n)

        return [o.clone() if isinstance(o, torch.Tensor) and lent(o) else o for o in outs]

    def _staged(self, keys: list[int], layouts: list | None) -> list[torch.Tensor]:
        """The staged outputs; a strided layout the parent copied as its raw span is read back through it."""
        out = []
        for i, k in enumerate(keys):
            t = self.arena.tensor(k)
            lay = layouts[i] if layouts and i < len(layouts) and isinstance(layouts[i], dict) else None
            if lay and not lay.get("contiguous", True):
                t = torch.as_strided(t, t.shape, [int(x) for x in lay["stride"]], 0).contiguous()
            out.append(t)
        return out

    def _copy_rate(self, nbytes: int) -> float:
        """Bytes per second of a plain copy between two shared buffers of about ``nbytes`` (best of 9).

        The best of several copies: on a loaded host single copies are often preempted, and
        a slow measurement would widen RH-61's allowance.
        """
        import time

        n = max(1 << 20, min(int(nbytes), 64 << 20))
        _, a = self.arena.empty([n], torch.uint8)
        _, b = self.arena.empty([n], torch.uint8)
        a.fill_(1)
        b.fill_(2)  # both touched: the timed copies fault in no page
        best = float("inf")
        for _ in range(9):
            t0 = time.perf_counter()
            if self.device.type == "cpu":  # one thread, no pool wake-ups: steady on a loaded host
                ctypes.memmove(b.data_ptr(), a.data_ptr(), n)
            else:
                b.copy_(a)
            self.sync()
            best = min(best, time.perf_counter() - t0)
        self.arena.release()
        return n / max(best, 1e-9)

    def _forward(self, inputs: list) -> Any:
        with torch.no_grad():
            out = self.model(*inputs)
        self.sync()
        return out

    # ---------------------------------------------------------------- reference outputs
    def _release(self) -> None:
        """Drop what was lent and give its device memory back (lent sets can be GiBs).

        A private allocator pool keeps its free blocks while it lives: reused for the
        next lent tensor of a fitting size, never returned by ``empty_cache``.  Measured
        on the H200, six input-sized segments piled up in one pool over a session (36 GiB
        for a 6 GiB problem).  So every lent set gets a pool of its own: the old pool is
        dropped here and ``empty_cache`` returns its segments once the candidate has
        closed its handles (``ipc_collect``).
        """
        with self.part("release"):
            self.arena.release()
            if self.device.type == "cuda":
                torch.cuda.ipc_collect()
                if self.pool is not None:
                    self.pool = torch.cuda.MemPool()
                torch.cuda.empty_cache()

    def _perturbed(self, seed: int, kind: str) -> tuple[list, list[str]]:
        inputs = self._generate(seed)
        rng = torch.Generator(device=self.device).manual_seed(seed ^ 0x5EED)
        with self.shared_alloc():
            return perturb(inputs, kind, rng)

    def forward_seed(self, seed: int) -> int:
        """The RNG seed set before ``forward`` on the input set of ``seed``, on both sides.

        A reference that draws random numbers inside ``forward`` (dropout in training mode,
        upstream's L2/66; a random initial state) gives the same output twice only from the
        same generator state.  So before every call on an input set the judge seeds its
        generators with this value before the reference's ``forward`` and the candidate's
        harness with the same value before the candidate's (the value travels with the
        inputs, on correctness and timed calls alike).  It is a keyed hash of the hidden
        seed under a key that never leaves this judge: it tells the candidate nothing about
        the hidden seed, and every input set gets its own.
        """
        digest = hashlib.blake2b(int(seed).to_bytes(8, "little"), key=self.forward_key, digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 2

    def _seeded_forward(self, seed: int, inputs: list) -> Any:
        seed_generators(self.forward_seed(seed))
        return self._forward(inputs)

    def _reference(self, seed: int, kind: str | None) -> tuple[list, list, Any, list[str]]:
        """Inputs (hidden seed, perturbed by ``kind``), the reference's flat outputs and raw result."""
        with self.part("inputs"):
            inputs, skipped = self._perturbed(seed, kind) if kind else (self._generate(seed), [])
        with self.part("forward"):
            out = self._seeded_forward(seed, inputs)
        with self.part("private"):
            return inputs, self._private(flat_outputs(out), inputs), out, skipped

    def _kept_outputs(self, desc: dict) -> list:
        """A kept probe's reference outputs: held, or (lean plan) recomputed from its seed."""
        if desc.get("outs") is not None:
            return desc["outs"]
        if desc.get("inputs") is not None:
            return self._private(flat_outputs(self._seeded_forward(desc["seed"], desc["inputs"])), desc["inputs"])
        return self._reference(desc["seed"], desc.get("kind"))[1]

    def _describe(self, seed: int, kind: str | None, inputs: list, outs: list) -> dict:
        """What the judge keeps of a probe to compare against later (lean: the seed only)."""
        private = None
        if not self._check_deterministic():  # get_inputs is not reproducible: keep the values
            private = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        return {"seed": seed, "kind": kind, "inputs": private, "outs": None if self.lean else outs}

    @staticmethod
    def _finite(outs: list) -> bool:
        """Every floating output finite (chunked: a bounded temporary, not a mask of the output's size)."""
        for o in outs:
            if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()):
                flat = o.detach().reshape(-1)
                for start in range(0, flat.numel(), _FINITE_CHUNK):
                    if not bool(torch.isfinite(flat[start: start + _FINITE_CHUNK]).all()):
                        return False
        return True

    def _inputs_unchanged(self, keys: list[int], fps: list) -> bool:
        """The lent inputs' fingerprints again (the correctness probes'; timed calls: ``InputCheck``)."""
        self.sync()
        with self.part("digest"):
            return all(fingerprint(self.arena.tensor(k)) == fp for k, fp in zip(keys, fps))

    def _check_deterministic(self) -> bool:
        """Whether ``get_inputs`` gives the same values twice under one seed (checked once)."""
        if self.deterministic_inputs is None:
            seed = secrets.randbits(62)
            a = [fingerprint(v) for v in self._generate(seed, shared=False) if isinstance(v, torch.Tensor)]
            b = [fingerprint(v) for v in self._generate(seed, shared=False) if isinstance(v, torch.Tensor)]
            self.deterministic_inputs = a == b
        return self.deterministic_inputs
