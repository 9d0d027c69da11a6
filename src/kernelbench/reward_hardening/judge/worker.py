"""The judge: the trusted worker that owns the reference and every comparison.

It runs only the problem's reference program, never candidate code.  For each
evaluation it generates hidden input sets on the evaluation device from seeds the
parent draws, computes the reference outputs and keeps them in its own private memory,
lends the candidate the inputs and empty *staging* buffers through
:mod:`kernelbench.reward_hardening.ipc.lending`, and after each candidate call compares what
the candidate wrote into the staging buffers with the reference, checks that the
inputs were not changed, and reports verdict-sized facts (booleans, errors,
fingerprints) to the parent.  No tensor ever crosses to the parent.

Exported tensors come from an allocator pool of their own on CUDA (a CUDA IPC handle
opens a whole allocation segment, so nothing private may share a segment with them),
and from one ``memfd`` each on the CPU.  Staging buffers are pre-filled with NaN (or
hidden random integers) so a candidate that writes nothing can never "match" memory
the allocator reused.

The judge lives for all samples of one problem in a batch (see
:class:`kernelbench.reward_hardening.parent.pipeline.ReferenceSession`): the reference's model
and its timing are reused, while every sample gets new hidden seeds.

This module is the command loop and the comparisons; the data it works on (hidden
inputs, reference outputs, lending, staging) is :class:`.data.JudgeData`, its base.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import secrets
import sys
import traceback
from typing import Any

import torch

from kernelbench.reward_hardening.ipc.lending import SharedArena, fingerprint
from kernelbench.reward_hardening.ipc.wire import JUDGE_COMMANDS, recv_message, send_message
from kernelbench.reward_hardening.judge.compare import VALUES_DIFFER, compare
from kernelbench.reward_hardening.judge.data import JudgeData
from kernelbench.reward_hardening.judge.device_read import StagingAccess
from kernelbench.reward_hardening.judge.timed import TimedInputs
from kernelbench.reward_hardening.judge.values import flat_outputs, nbytes, perturb, structure_of
from kernelbench.reward_hardening.worker_runtime import (
    apply_precision_config,
    backend_state,
    init_cuda_device,
    memory_fraction,
)

__all__ = ["Judge", "judge_main", "perturb", "structure_of"]


class Judge(TimedInputs, StagingAccess, JudgeData):
    """The judge's command loop and every comparison (the data it works on: :class:`JudgeData`)."""

    def __init__(self, conn: Any, spec: dict):
        self.conn, self.spec = conn, spec
        self.device = torch.device(spec["device"])
        self.dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[spec["precision"]]
        self.arena = SharedArena(self.device)
        self.model: Any = None
        self.module: Any = None
        self.pool: Any = None
        self.pinned_pool: Any = None
        self.stage_pool: Any = None  # a sample's timed staging that is never lent (JudgeData._private_staging)
        self.flush_buf: Any = None
        self.first: dict | None = None  # hidden probe 0: seed, private inputs, reference outputs (canary)
        self.previous: list = []  # the last probe's description (replay check)
        self.lean = False  # memory plan: recompute kept reference outputs from their seeds instead of holding them
        self.earlier_fps: list = []  # fingerprints of the candidate's earlier staged outputs
        self.current: dict | None = None
        self.timed: dict | None = None
        self.ref_inputs: list | None = None
        self.ref_pool: Any = None  # the reference's timed forward allocates here: warm across its samples
        self.structure: dict = {"container": "tensor", "outputs": []}
        self.deterministic_inputs: bool | None = None
        self.spots: list[dict] = []  # spot-checked timed calls held for comparison after the loop
        self.held_bytes = 0
        self.parts_ms: dict[str, float] = {}  # parts of the current command timed by part() (reply: split_ms)
        # CUDA memory the session keeps whatever the samples: the model and init inputs (at load),
        # then what the reference's first forward keeps (at the fit check, before any candidate)
        self.base_bytes, self.base_settled = 0, False
        self.forward_key = secrets.token_bytes(32)  # keys forward_seed(); never leaves the judge

    # ---------------------------------------------------------------- plumbing
    def reply(self, header: dict, fds: list[int] | None = None) -> None:
        header.setdefault("ok", True)
        header["split_ms"] = self.take_parts()
        send_message(self.conn, header, fds, self.spec.get("spill_dir"))

    def serve(self) -> None:
        apply_precision_config(self.spec.get("allow_tf32", False), self.spec.get("num_threads"))
        if self.device.type == "cuda":
            self.flush_buf = init_cuda_device(self.device, self.spec.get("gpu_memory_fraction"))
            self.pool = torch.cuda.MemPool() if hasattr(torch.cuda, "MemPool") else None
        self.reply({"event": "ready", "pid": os.getpid(), "state": backend_state()})
        handlers = {name: getattr(self, f"cmd_{name}") for name in JUDGE_COMMANDS}
        while True:
            try:
                header, _ = recv_message(self.conn, None, self.spec.get("spill_dir"), allow_fds=False)
            except EOFError:
                return
            cmd = header.get("cmd")
            if cmd == "exit":
                return
            handler = handlers.get(cmd)
            if handler is None:
                self.reply({"ok": False, "error": f"unknown command {cmd!r}"})
                continue
            try:
                handler(header)
            except torch.OutOfMemoryError as exc:
                self.reply({"ok": False, "oom": True, "error": f"OutOfMemoryError: {str(exc)[:500]}"})
            except MemoryError as exc:
                self.reply({"ok": False, "oom": True, "error": f"MemoryError: {exc}"})
            except Exception as exc:
                self.reply({"ok": False, "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc()[-4000:]})

    # ---------------------------------------------------------------- loading
    def cmd_load(self, header: dict) -> None:
        path = self.spec["source_path"]
        spec = importlib.util.spec_from_file_location("kernelbench_reference_program", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kernelbench_reference_program"] = module
        spec.loader.exec_module(module)
        self.module = module
        torch.manual_seed(42)
        init = list(module.get_init_inputs())
        init = [v.to(self.dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in init]
        self.init_values = init
        with torch.no_grad():
            torch.manual_seed(42)
            if torch.cuda.is_available():
                torch.cuda.manual_seed(42)
            model = module.Model(*init)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device, dtype=self.dtype)
        self.model = model
        self.sync()
        items, keys = self._lend(init, on_device=False)
        if self.device.type == "cuda":  # what every later release returns to (model, pinned init inputs)
            self.base_bytes = int(torch.cuda.memory_allocated(self.device))
        self.arena.pinned.update(keys)  # lent to every candidate of the session
        if self.pool is not None:  # the pinned set keeps its pool; later lent sets get fresh ones
            self.pinned_pool, self.pool = self.pool, torch.cuda.MemPool()
        metas, fds = self.arena.export(keys)
        self.reply({"init_inputs": self._items(items, metas), "pid": os.getpid(), "state": backend_state(),
                    "sizes": self._sizes()}, fds)

    def _sizes(self) -> dict:
        """Parameter bytes, and input/output bytes from the meta device (nothing allocated)."""
        out: dict[str, Any] = {"param_bytes": 0, "input_bytes": None, "output_bytes": None, "meta_error": None}
        if isinstance(self.model, torch.nn.Module):
            out["param_bytes"] = sum(t.numel() * t.element_size()
                                     for t in list(self.model.parameters()) + list(self.model.buffers()))
        out["host_param_bytes"] = out["param_bytes"] if self.device.type != "cuda" else 0
        try:
            torch.manual_seed(0)
            with torch.device("meta"):
                inputs = [v.to(dtype=self.dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                          for v in self.module.get_inputs()]
            out["input_bytes"] = nbytes(inputs)
            with torch.no_grad(), torch.device("meta"):  # a second model on the meta device: nothing allocated
                torch.manual_seed(42)
                model = self.module.Model(*self.init_values)
                if isinstance(model, torch.nn.Module):
                    model = model.to(dtype=self.dtype)
                out["output_bytes"] = nbytes(model(*inputs))
        except Exception as exc:  # an operator without a meta kernel: the first probe measures instead
            out["meta_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return out

    def cmd_configure(self, header: dict) -> None:
        """Apply the parent's memory plan: the allocator cap and whether kept outputs are recomputed."""
        self.lean = bool(header.get("lean"))
        frac = header.get("gpu_memory_fraction")
        if self.device.type == "cuda" and frac:
            torch.cuda.set_per_process_memory_fraction(float(frac), self.device)
        self.reply({"lean": self.lean, "fraction": memory_fraction(self.device) if self.device.type == "cuda"
                    else None})

    # ---------------------------------------------------------------- correctness
    def cmd_probe(self, header: dict) -> None:
        """A hidden input set, its reference outputs (kept here) and two staging sets.

        ``heavy_tail`` first tries random signs on every non-zero value (sums cancel,
        so an error that grows with magnitude shows against a small result) and, where
        the reference's output is then not finite (a logarithm, a square root), keeps
        the inputs' signs.  Its outputs are judged by the norm-relative error
        (``rel_limit``), which reordered honest fp32 arithmetic meets on cancelling
        sums, where the element-wise tolerance would reject it.
        """
        seed = int(header.get("seed", 0))
        if header.get("dry"):
            self._release()
            self._check_deterministic()  # once per session, before any data is held
            return self._dry_probe(seed)
        self._release()
        skipped: list[str] = []
        kind = header.get("perturb")
        if header.get("repeat_first"):
            if self.first is None:
                raise RuntimeError("no first probe to repeat")
            seed = self.first["seed"]  # the same input set: the same forward seed
            inputs = self._first_inputs()
            outs = self._kept_outputs(self.first)
        elif kind == "heavy_tail":
            kind = "heavy_tail_signed"
            inputs, outs, out, skipped = self._reference(seed, kind)
            if not self._finite(outs):
                del inputs, outs, out
                kind = "heavy_tail"
                inputs, outs, out, skipped = self._reference(seed, kind)
            self.structure = structure_of(out)
        else:
            inputs, outs, out, skipped = self._reference(seed, kind)
            self.structure = structure_of(out)
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        finite = self._finite(tensors)
        if kind and not finite:
            self.reply({"skipped": "reference output is not finite on the perturbed inputs"})
            return
        if header.get("keep_first"):
            self.first = self._describe(seed, None, inputs, outs)
        with self.part("lend"):
            items, keys = self._lend(inputs)
            fps = [fingerprint(self.arena.tensor(k)) for k in keys]
            specs = [(list(t.shape), t.dtype) for t in tensors]
            stage_a, stage_b = self._staging(specs), self._staging(specs)
        relative = kind in ("heavy_tail", "heavy_tail_signed")
        self.current = {"keys": keys, "fps": fps, "outs": outs, "a": stage_a, "b": stage_b,
                        "repeat": bool(header.get("repeat_first")), "first": bool(header.get("keep_first")),
                        "desc": None if header.get("repeat_first") else self._describe(seed, kind, inputs, outs),
                        "rel_limit": float(header.get("rel_limit") or 1e-3) if relative else None}
        with self.part("export"):
            metas, fds = self.arena.export(keys + (stage_a + stage_b if self._export_staging else []))
            unexported = [] if self._export_staging else self.arena.describe(stage_a + stage_b)
        by = {m["id"]: m for m in metas + unexported}
        self.reply({"inputs": self._items(items, metas), "staging": [by[k] for k in stage_a],
                    "staging_after": [by[k] for k in stage_b], "reference": self.structure,
                    "input_bytes": sum(self.arena.tensor(k).numel() * self.arena.tensor(k).element_size()
                                       for k in keys),
                    "output_bytes": sum(t.numel() * t.element_size() for t in tensors),
                    "finite": finite, "perturb_skipped": skipped,
                    "perturbation": kind, "judged_by": "relative" if relative else "allclose",
                    "rng": self.forward_seed(seed)}, fds)

    def cmd_variants(self, header: dict) -> None:
        """The reduced-precision variants' errors on the first hidden input (RH-38's error profile).

        Asked for after every probe was judged, and only where the candidate's first
        answer was right with an error above fp32 rounding.  The input set is made again
        from the kept first probe (its seed, or the private copy where ``get_inputs`` is
        not reproducible) and the reference outputs are the kept ones (recomputed under
        the lean plan); the variants run one at a time, as the memory plan holds them.
        """
        if self.first is None:
            raise RuntimeError("no first probe to profile")
        seed = self.first["seed"]
        with self.part("inputs"):
            inputs = self._first_inputs()
        outs = self._kept_outputs({**self.first, "inputs": inputs})  # (lean: from the inputs just made)
        variants = {}
        with self.part("variants"):
            for name in header.get("variants") or []:
                v = self._reduced_precision_outputs(seed, inputs, name)
                if v is not None:
                    variants[name] = {"variant_rel_error": compare(v, outs, self.spec["precision"]).rel_error}
                del v  # before the next variant's forward (the plan holds one at a time)
        del inputs, outs
        self._release()
        self.reply({"variants": variants})

    def _first_inputs(self) -> list:
        """The first probe's input set again: same values, fresh allocation, regenerated from its
        seed (or the private copy kept where ``get_inputs`` is not reproducible)."""
        return self.first["inputs"] if self.first["inputs"] is not None else self._generate(self.first["seed"])

    def _dry_probe(self, seed: int) -> None:
        """The session's fit check: one input set and one forward; sizes and the forward's workspace."""
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
            base = torch.cuda.memory_allocated(self.device)
        inputs, outs, _, _ = self._reference(seed, None)
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        in_bytes, out_bytes = nbytes(inputs), nbytes(tensors)
        reply = {"input_bytes": in_bytes, "output_bytes": out_bytes, "finite": self._finite(tensors),
                 "copy_bytes_per_s": self._copy_rate(out_bytes)}
        if cuda:
            peak = torch.cuda.max_memory_allocated(self.device) - base
            reply["workspace_bytes"] = max(int(peak - in_bytes - out_bytes), 0)
            reply["device_total_bytes"] = int(torch.cuda.get_device_properties(self.device).total_memory)
        del inputs, outs, tensors
        self._release()
        if cuda and not self.base_settled:
            # what a forward keeps (cuBLAS workspaces, lazily built buffers) is the session's, not
            # retained lent memory (it retired the judge after every sample); once, before any candidate
            self.base_bytes, self.base_settled = int(torch.cuda.memory_allocated(self.device)), True
        self.reply(reply)

    def _reduced_precision_outputs(self, seed: int, inputs: list, name: str) -> list | None:
        try:
            torch.manual_seed(self.forward_seed(seed))  # the generator state of the fp32 reference's forward
            if name == "tf32":
                if self.device.type != "cuda":
                    return None
                old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
                try:
                    out = self._forward(inputs)
                finally:
                    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
            else:
                dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
                model = copy.deepcopy(self.model).to(dtype)
                cast = [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
                with torch.no_grad():
                    out = model(*cast)
                self.sync()
            # half-width outputs as they are: the comparison widens them a chunk at a time
            return list(flat_outputs(out))
        except Exception:
            return None

    def _judged(self, staged: list, refs: list, cur: dict):
        """The comparison of staged outputs with the reference, by the probe's criterion."""
        with self.part("compare"):
            cmp = compare(staged, refs, self.spec["precision"])
        limit = cur.get("rel_limit")
        if limit is not None and not cmp.match and cmp.reason == VALUES_DIFFER and math.isfinite(cmp.rel_error):
            # a relaxation of allclose (cancelling sums), never a tightening
            cmp.match = cmp.rel_error <= limit
            cmp.reason = "" if cmp.match else f"norm-relative error {cmp.rel_error:.3g} above {limit:g}"
        return cmp

    def cmd_judge(self, header: dict) -> None:
        """Compare both staged reads of the current probe with its reference outputs."""
        cur = self.current
        if cur is None:
            raise RuntimeError("no probe to judge")
        precision = self.spec["precision"]
        self.sync()
        a = self._staged(cur["a"], header.get("layouts_a"))
        b = self._staged(cur["b"], header.get("layouts_b"))
        refs = [o for o in cur["outs"] if isinstance(o, torch.Tensor)]
        fp_a = [fingerprint(t) for t in a]
        fp_b = [fingerprint(t) for t in b]
        written = bool(header.get("written", True))
        first = self._judged(a, refs, cur) if written else None
        # the second read is compared only when its bits differ from the first's
        after = first if fp_a == fp_b else (self._judged(b, refs, cur) if written else None)
        replay = False
        if first is not None and not first.match:
            earlier = []
            if self.first is not None and not cur["first"] and not cur["repeat"]:
                earlier.append(self.first)
            earlier.extend(self.previous)
            for desc in earlier:
                t = [o for o in self._kept_outputs(desc) if isinstance(o, torch.Tensor)]
                if [tuple(x.shape) for x in t] == [tuple(x.shape) for x in a] and compare(a, t, precision).match:
                    replay = True
                    break
            # bit-identical to an earlier call's written output (never the NaN fill of an unwritten one)
            if not replay and fp_a in self.earlier_fps:
                replay = True
        result = {
            "comparison": None if first is None else first.as_dict(),
            "after": None if after is None else after.as_dict(),
            "stable": fp_a == fp_b,
            "inputs_unchanged": self._inputs_unchanged(cur["keys"], cur["fps"]),
            "replay": replay,
        }
        if written and first is not None and first.match:  # a right answer a cache could replay later
            self.earlier_fps.append(fp_a)
        if cur["desc"] is not None:
            self.previous = [cur["desc"]]
        self.current = None
        self._release()
        self.reply(result)

    def cmd_release(self, header: dict) -> None:
        """Drop the evaluation's data; on CUDA, report what stays allocated beyond the session's base.

        Lent memory comes back only once the candidate let go of its handles: a candidate
        killed while it held them (or one that keeps them) leaves that memory allocated in
        the judge for good (PyTorch's IPC limbo), so the parent retires a judge that
        retains more than a little (``retained_bytes``) instead of reusing it.
        """
        self._drop_spots()
        self.current = self.timed = self.first = self.ref_pool = self.stage_pool = None
        self.previous, self.earlier_fps = [], []
        self._release()
        out: dict[str, Any] = {}
        if self.device.type == "cuda":
            out["retained_bytes"] = max(int(torch.cuda.memory_allocated(self.device)) - self.base_bytes, 0)
        self.reply(out)

    def cmd_snapshot(self, header: dict) -> None:
        snap: dict[str, Any] = {"pid": os.getpid(), "state": backend_state()}
        if self.device.type == "cuda":
            snap["gpu_memory"] = {"peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.device)),
                                  "fraction": memory_fraction(self.device),
                                  # the device's free memory as the trusted side sees it (confirms an OOM)
                                  "device_free_bytes": int(torch.cuda.mem_get_info(self.device)[0])}
        self.reply(snap)


def judge_main(conn: Any, spec: dict) -> None:
    judge = Judge(conn, spec)
    if spec.get("profile_dir"):  # diagnostics: KERNELGUARD_PROFILE_DIR in the parent's environment
        from kernelbench.reward_hardening.judge.diagnostics import serve_profiled

        return serve_profiled(judge, spec["profile_dir"])
    judge.serve()
