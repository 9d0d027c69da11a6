"""The memory plan of one problem on one device: what the judge keeps, what the candidate may use.

Judge and candidate share one GPU.  Before the candidate starts, the trusted parent
turns the problem's sizes into a plan:

* ``input_bytes``, ``output_bytes``: one input set and the reference's outputs, from
  ``get_inputs()`` and the reference's forward on the meta device (nothing allocated),
  or measured by the judge's first probe where an operator has no meta kernel;
* ``param_bytes``: the reference model's parameters and buffers on the device;
* ``workspace_bytes``: what the reference's forward allocated beyond its inputs,
  parameters and outputs (measured once by the judge's first probe, when known).

The judge's steady state during a correctness probe is one input set, the reference
outputs, two staging sets the candidate writes into (right after return, and after a
sync and a pause), the forward's workspace, and optionally the first probe's outputs
(the repeated-input canary compares against them) and the previous probe's outputs
(the replay check).  When both cannot be kept, the plan is *lean*: the judge
recomputes those outputs from their hidden seeds when it needs them (one more
reference forward per probe, slower, same verdicts).  The candidate gets the rest of
the device, never less than what the reference itself needed plus its own outputs
(``min_candidate_bytes``); when even the lean plan leaves it less, the problem does
not fit this device and the record is UNSUPPORTED (RH-44) before any candidate code
runs.  The candidate's budget is ``CANDIDATE_FACTOR`` times that minimum (at least
``CANDIDATE_FLOOR_BYTES``), and never more than the judge leaves: room for an honest
kernel with a different algorithm than the reference's, not the whole card.

The reference's interleaved timed calls run in a third process, the reference's
*twin* (:mod:`.twin`), which holds what an honest candidate holds at least
(``min_candidate_bytes``).  It gets that much (``twin_bytes``) when the device has it
beside the judge and a candidate budget of at least its minimum (the candidate's
budget shrinks to make room, never below that minimum); otherwise ``twin_bytes`` is 0
and the judge times the reference itself (the record says which).

A candidate that runs out of memory is at fault only when it asked for more than the
plan gave it (``candidate_bytes``, stated in the record); an allocation that failed
below that budget is the evaluator's limit (RH-47, UNSUPPORTED), never a wrong answer.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from kernelbench.reward_hardening.config import SAMPLE_FRACTION, SAMPLE_MIN_BYTES

__all__ = ["MemoryPlan", "plan_memory"]

GiB = 1 << 30
# what a CUDA context, cuBLAS/cuDNN handles and the allocator's rounding take per process
PROCESS_OVERHEAD_BYTES = 2 * GiB
# temporaries of the judge's chunked comparison and fingerprints (bounded, size-independent)
JUDGE_TEMP_BYTES = 1 * GiB
# headroom left on the device for other tenants and fragmentation
DEVICE_RESERVE_FRACTION = 0.03
# headroom on the judge's estimated peak before the candidate's budget is carved out
JUDGE_MARGIN = 1.15
# the judge's cap is at least this share of the device when the candidate's minimum allows
JUDGE_FLOOR_FRACTION = 0.6
# the candidate's budget: this many times what the reference needed, at least the floor
CANDIDATE_FACTOR = 3.0
CANDIDATE_FLOOR_BYTES = 16 * GiB


@dataclass
class MemoryPlan:
    total_bytes: int
    input_bytes: int
    output_bytes: int
    param_bytes: int
    workspace_bytes: int
    lean: bool  # the judge recomputes the canary's and the previous probe's outputs
    judge_bytes: int  # the judge's allocator cap (what the candidate is not promised)
    candidate_bytes: int  # the candidate's allocator cap (its budget)
    min_candidate_bytes: int  # what an honest candidate needs at least (the reference's own footprint)
    fits: bool
    source: str  # where the sizes came from: "meta", "measured" or "meta+measured"
    judge_need_bytes: int = 0  # the judge's estimated peak (judge_need)
    twin_bytes: int = 0  # the reference twin's allocator cap; 0: no room, the judge times the reference

    @property
    def twin_fraction(self) -> float:
        return min(1.0, self.twin_bytes / self.total_bytes)

    @property
    def judge_fraction(self) -> float:
        return min(1.0, self.judge_bytes / self.total_bytes)

    @property
    def candidate_fraction(self) -> float:
        return min(1.0, self.candidate_bytes / self.total_bytes)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["judge_fraction"] = round(self.judge_fraction, 4)
        out["candidate_fraction"] = round(self.candidate_fraction, 4)
        out["twin_fraction"] = round(self.twin_fraction, 4)
        return out

    def why_not(self) -> str:
        return (f"judge {self.judge_need_bytes / GiB:.1f} GiB (lean) + candidate at least "
                f"{self.min_candidate_bytes / GiB:.1f} GiB exceed the device's {self.total_bytes / GiB:.1f} GiB "
                f"(input {self.input_bytes / GiB:.2f} GiB, output {self.output_bytes / GiB:.2f} GiB, "
                f"parameters {self.param_bytes / GiB:.2f} GiB, workspace {self.workspace_bytes / GiB:.2f} GiB)")


def judge_need(input_bytes: int, output_bytes: int, param_bytes: int, workspace_bytes: int, lean: bool) -> int:
    """The judge's peak, as its two allocator pools hold it.

    Lent memory (its own pool, whose cached blocks are reused but not returned while
    the judge lives): an input set and its perturbed copy, and two staging sets.
    Private memory: the reference outputs of the current probe (plus the first and
    the previous probe's unless ``lean``), and the largest of what the first probe's
    reduced-precision variants hold beside them (after the probes, where RH-38's error
    profile asks for them; the current probe's outputs are gone by then and the input
    set is made again in lent memory), one variant at a time: the TF32
    forward's outputs and workspace, or a half-width copy of the model (a full copy for
    a moment, before it is halved) and of the inputs with the half-width outputs and
    workspace (the comparison widens them a chunk at a time).
    Before, a variant's outputs were widened whole and the previous variant was still
    held while the next ran (about 8 GiB more for L1/38 and L1/39, 8 GiB in and out,
    which measured 66 GiB on the whole device on the H200, and the plan kept them off
    an 80 GB card).  Beside them, the timed calls' input check (``input_checks``: its
    whole copies at most ``SAMPLE_MIN_BYTES``, then a ``SAMPLE_FRACTION`` of the rest).
    """
    lent = 2 * input_bytes + 2 * output_bytes
    kept = output_bytes * (1 if lean else 3)
    transient = max(output_bytes + workspace_bytes, param_bytes,  # TF32; the model's copy before it is halved
                    (input_bytes + output_bytes + workspace_bytes + param_bytes) // 2)
    # the timed calls' input check: whole copies up to SAMPLE_MIN_BYTES, a sample of the rest
    check = min(input_bytes, SAMPLE_MIN_BYTES + math.ceil(input_bytes * SAMPLE_FRACTION))
    return param_bytes + lent + kept + transient + check + JUDGE_TEMP_BYTES + PROCESS_OVERHEAD_BYTES


def plan_memory(total_bytes: int, input_bytes: int, output_bytes: int, param_bytes: int = 0,
                workspace_bytes: int | None = None, source: str = "meta") -> MemoryPlan:
    """The plan for one problem on a device of ``total_bytes`` (see the module docstring)."""
    workspace = max(int(workspace_bytes if workspace_bytes is not None else max(input_bytes, output_bytes)), 0)
    usable = int(total_bytes * (1 - DEVICE_RESERVE_FRACTION))
    # an honest candidate holds the reference's parameters, its outputs and the reference's workspace
    min_candidate = param_bytes + 2 * output_bytes + workspace + PROCESS_OVERHEAD_BYTES
    for lean in (False, True):
        judge = judge_need(input_bytes, output_bytes, param_bytes, workspace, lean)
        if judge + min_candidate <= usable:
            break
    fits = judge + min_candidate <= usable
    # the judge's cap: its estimate with a margin, never below JUDGE_FLOOR_FRACTION of the
    # device (the share measured to hold the 6-8 GiB upstream problems on the H200; the
    # estimate alone fell short there), and never so much that the candidate's minimum is lost
    judge_cap = max(int(JUDGE_MARGIN * judge), int(JUDGE_FLOOR_FRACTION * total_bytes))
    judge_cap = max(min(judge_cap, usable - min_candidate), judge)
    room = max(usable - judge_cap, 0)
    twin = min_candidate if fits and room - min_candidate >= min_candidate else 0
    candidate = int(min(room - twin, max(CANDIDATE_FACTOR * min_candidate, CANDIDATE_FLOOR_BYTES)))
    return MemoryPlan(int(total_bytes), int(input_bytes), int(output_bytes), int(param_bytes), workspace, lean,
                      judge_cap, candidate, min_candidate, fits, source, judge_need_bytes=judge, twin_bytes=int(twin))
