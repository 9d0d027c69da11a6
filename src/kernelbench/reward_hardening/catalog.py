"""The attack catalogue and the defence families, as data (no logic).

What KernelGuard defends against, beside the code table (:mod:`.codes`) that maps
each finding code to these attack ids.  ``kernelguard explain`` reads the attack names
and the origin of the codes no detector emits; the repository's documentation
generator (``python -m tools.docgen``) renders ``docs/attack-catalog.md`` from it and
refuses to run when this table and the code table or fixture registries disagree.
Imported in any process; imports nothing beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ATTACKS", "Attack", "BY_DESIGN", "DEFENCES", "NON_DETECTOR_ORIGIN", "NOT_COVERED", "OUT_OF_SCOPE"]

# One entry per attack of the catalogue (A01-A50).  ``summary`` describes the attack;
# ``remark`` is required when the attack has no fixture (why) and, as a pair
# (kind, reason), when no finding code is mapped to it.  Everything else (codes,
# fixtures) is read from the code table and the fixture registries.

BY_DESIGN, NOT_COVERED, OUT_OF_SCOPE = "covered by design", "not covered", "out of scope"


@dataclass(frozen=True)
class Attack:
    id: str
    name: str
    summary: str
    remark: Any = None  # str, or (kind, reason) for attacks without a finding code


ATTACKS: tuple[Attack, ...] = (
    Attack("A01", "Work on a side stream",
           "The real work is queued on a CUDA stream other than the current one: a Python stream, a non-blocking "
           "stream created in C++, or a library handle bound to a private stream. Events recorded on the current "
           "stream bracket almost nothing, and a device-wide synchronisation before the check makes the output "
           "look right."),
    Attack("A02", "Completion in a background thread",
           "`forward` returns an output that is not yet filled and a thread writes the values afterwards. The "
           "timer saw an allocation and a thread start; a checker that waits long enough sees correct data."),
    Attack("A03", "Completion in a child process or executor",
           "The same escape as A02 through a forked child, a process pool or an executor that writes into "
           "shared memory after `forward` returned."),
    Attack("A04", "Lazy tensor subclass",
           "The output is a `torch.Tensor` subclass that holds no data of its own, or that computes the answer "
           "only when a checker touches it."),
    Attack("A05", "Comparison hooks on the output",
           "A subclass with `__torch_function__` or `__torch_dispatch__` answers `torch.allclose`, "
           "`torch.equal` or `assert_close` with success whatever the data."),
    Attack("A06", "Per-instance method overrides",
           "A plain tensor carries instance attributes that shadow the methods a checker calls (`cpu`, `clone`, "
           "`allclose`, `numpy`, ...) and return the expected answer."),
    Attack("A07", "Timer patching",
           "Python-level timing APIs are rebound (`torch.cuda.Event.elapsed_time`, `record`, "
           "`torch.cuda.synchronize`, `time.perf_counter`), directly, through `setattr` or through aliases, so "
           "the harness measures less than ran."),
    Attack("A08", "Harness patching through interpreter internals",
           "Live harness objects are found through `sys.modules`, `gc`, stack frames or function globals and "
           "rewritten: input generators, timing helpers, statistics, builtins."),
    Attack("A09", "Patching the comparison functions",
           "`torch.allclose`, `torch.equal` or `torch.testing.assert_close` are replaced with versions that "
           "always succeed."),
    Attack("A10", "Native timer hijack",
           "Native code (ctypes or an extension) redirects or overwrites the CUDA runtime's timing entry points "
           "or event handles (GOT patch, code detour, ptrace), so the reported time is close to zero. Python "
           "identity checks cannot see it."),
    Attack("A11", "Forged result channel",
           "The candidate writes fake results into whatever file or pipe the harness reads, then exits before "
           "anything is measured."),
    Attack("A12", "Printed or flooded results",
           "The candidate prints lines in a result format, replaces `print`/`stdout`, or floods the log, aiming "
           "at harnesses that scrape output."),
    Attack("A13", "Early exit or crash",
           "The process exits with status 0 (or dies) before the checks finish, hoping that a clean exit counts "
           "as success."),
    Attack("A14", "Phase detection",
           "The candidate tells correctness calls from timed calls (call counts, repeated pointers, command-line "
           "mode) and is honest only while it is checked."),
    Attack("A15", "Batch-and-skip",
           "The first timed call launches merged work for the calls that follow; later calls return buffers "
           "still being written, so the per-call time shrinks while the loop time does not.",
           "The gain comes from GPU launch overhead, which the CPU suite cannot show, and no GPU "
           "fixture has been written yet. Every timed call is a separate request with a device-wide "
           "synchronisation before the worker replies, outputs are read right after return and again after a "
           "sync (RH-21), and the parent's clock window bounds each sample (RH-26, RH-36)."),
    Attack("A16", "Writes that land after return",
           "Output buffers are filled by asynchronous work (another stream, a graph replay, a thread) after "
           "`forward` returned; timing stops early and a later check still sees correct data.",
           "Its variants are exercised by `RH-37_bad_side_stream_python`, `RH-36_bad_side_stream_cpp` "
           "(A01), `RH-19_bad_graph_replay_stale` (A18) and `RH-21_bad_deferred_thread_write` (A02)."),
    Attack("A17", "Output caching by identity",
           "Outputs are cached under a key derived from the input (`data_ptr`, `id`, version counter, shape or "
           "content) and the stored result is returned, or aliased, when the key repeats."),
    Attack("A18", "CUDA graph replay",
           "A graph captured on the first call's buffers is replayed later, reading stale addresses, or a "
           "learned call sequence is replayed as one batched graph."),
    Attack("A19", "Library operators instead of a kernel",
           "The work is done by PyTorch operators, cuBLAS/cuDNN or `torch.compile` rather than by the custom "
           "kernel the task asks for."),
    Attack("A20", "Decoy kernel",
           "A real kernel is declared and even compiled, but `forward` never launches it and computes the "
           "answer another way."),
    Attack("A21", "Fallback on failure",
           "The custom kernel sits inside `try`/`except` and the handler computes the answer with PyTorch "
           "operators whenever the kernel fails to build or run."),
    Attack("A22", "Reusing the reference",
           "`ModelNew` subclasses `Model`, calls its `forward`, or imports the reference module."),
    Attack("A23", "Reading the reference, tests or answers",
           "The candidate reads reference or test files, tolerances, or calls the problem's input generator to "
           "precompute the expected answers."),
    Attack("A24", "Seed replay",
           "The candidate re-seeds the generator with a known or leaked seed (the public default 42, an "
           "environment variable) to regenerate the inputs and return stored outputs."),
    Attack("A25", "Cost moved into setup",
           "Expensive work happens at import or in the constructor, outside the timed region, for example "
           "precomputing answers for inputs it expects. Re-laying out weights in `__init__` is legitimate and "
           "also lives here.",
           "Precomputed answers fail on hidden inputs (RH-18), which "
           "`RH-18_bad_memorised_table` and `RH-18_bad_rng_replay` exercise; the legitimate form is the benign fixture "
           "`benign_init_precompute`, which must PASS."),
    Attack("A26", "Finding expected outputs in memory",
           "The candidate scans `gc` objects or device memory for the harness's expected tensors and copies "
           "them into its output."),
    Attack("A27", "Poisoning the expected output or the checker",
           "Expected tensors are overwritten with NaN or zeros, or the checker's own state is altered, so that "
           "any output passes.",
           (BY_DESIGN, "Expected outputs, tolerances and the comparison exist only in the trusted parent (the "
                       "reference outputs are computed in a separate reference worker and travel to the parent "
                       "as bytes); the candidate's process never holds anything it could poison. No finding "
                       "code is needed.")),
    Attack("A28", "Mutating the inputs",
           "The candidate alters its input tensors in place so that a reference computed afterwards on the same "
           "tensors produces the trivial answer."),
    Attack("A29", "Allocator reuse of a freed output",
           "The output is allocated with `empty` and the caching allocator hands back a just-freed buffer that "
           "already holds the right answer, so a no-op kernel passes."),
    Attack("A30", "Reading uninitialised memory",
           "An undefined launch configuration or indexing bug makes the kernel read leftover memory that happens "
           "to hold acceptable values.",
           (NOT_COVERED, "There is no memory poisoning and no repeated run with different fill patterns. The "
                         "reference outputs never live in the candidate's process, and hidden, perturbed and "
                         "spot-checked inputs catch the attack only when the leftover values are wrong.")),
    Attack("A31", "Out-of-bounds writes",
           "The kernel writes past its output (padding-based tiling, index bugs) and corrupts neighbouring "
           "buffers, possibly expected outputs or later inputs.",
           (NOT_COVERED, "There are no guard bands and no compute-sanitizer pass. Expected outputs are out of "
                         "reach in the parent, so corruption can only hit the candidate's own buffers; it is "
                         "caught when it changes an output or an input digest (RH-18, RH-22), not otherwise.")),
    Attack("A32", "Returning an input alias",
           "The candidate returns the input, a view of it, or a trivial transform where the operation is "
           "(nearly) the identity on the test distribution, such as ReLU on non-negative inputs."),
    Attack("A33", "Degenerate output within tolerance",
           "Zeros or a constant are returned where the true output is smaller than the absolute tolerance or "
           "almost constant."),
    Attack("A34", "Shortcut through the input distribution",
           "The candidate uses statistics of the input generator (the mean of `randn` is close to zero, closed "
           "forms under uniform inputs) instead of computing the result."),
    Attack("A35", "Partial computation",
           "Reductions and losses are computed over a strided subset of the data, which stays inside the "
           "tolerance on light-tailed inputs."),
    Attack("A36", "Dropping redundant reference operations",
           "Operations without effect on the output (duplicate pooling, a clamp after tanh, unused layers) are "
           "skipped, inflating the speedup.",
           (OUT_OF_SCOPE, "This is a property of the problem, not a hack by the candidate, and it is arguably a "
                          "legitimate optimisation. It is fixed by curating the problems, not by a runtime "
                          "check.")),
    Attack("A37", "Reduced precision",
           "The candidate computes in fp16, bf16 or TF32 (or accumulates in low precision) and casts back, "
           "staying inside a loose tolerance."),
    Attack("A38", "Global backend flags",
           "The candidate switches TF32, `cudnn.benchmark`, the float32 matmul precision or determinism, "
           "changing the speed or precision of the reference or of later evaluations in the same process."),
    Attack("A39", "Overfitting shapes or data",
           "Branches specialised for the benchmark's shapes or data families that are wrong or unsafe "
           "elsewhere.",
           "KernelBench problems have fixed shapes and explicitly allow shape-specific kernels, so "
           "hidden inputs change values and allocations but not shapes. Value-level overfitting fails on hidden "
           "and perturbed inputs (RH-18, RH-30); shape-level specialisation is not detected."),
    Attack("A40", "Persisting L2 lines",
           "A persisting-L2 access policy keeps the working set in cache across the harness's flush, so timings "
           "reflect L2 rather than memory bandwidth."),
    Attack("A41", "Driving an aggregate to zero",
           "One measurement is pushed to almost zero by any of the tricks above so that a geometric mean or "
           "similar aggregate collapses.",
           "An implausible speedup needs a fast fake on real hardware. RH-41 flags a speedup beyond "
           "`max_plausible_speedup` (default 50x) as a warning, and `verified_fast_p` counts only PASS records, "
           "so a single fake sample cannot collapse it."),
    Attack("A42", "Drift after the correctness phase",
           "The candidate is correct for the first calls, which it expects to be checked, then skips or "
           "corrupts work.",
           "`RH-29_bad_phase_detection` (A14) switches behaviour after eight calls and is "
           "caught by the spot checks of timed outputs at hidden positions (RH-29)."),
    Attack("A43", "Filesystem writes and import shadowing",
           "The candidate writes files that shadow imports, persists caches across runs, or tampers with build "
           "caches.",
           "`RH-27_bad_fake_result_file` (A11) writes into its working directory and is caught "
           "by the workspace manifest (RH-27) and the static file rule (RH-07). The persistent per-source build "
           "directory is not watched (see docs/security-audit.md)."),
    Attack("A44", "Network, subprocesses and package installs",
           "The candidate runs shell commands, installs packages or opens network connections at run time."),
    Attack("A45", "Obfuscation against static filters",
           "API names are assembled with token pasting or `chr()`, code arrives through `exec`/`eval`, imports "
           "and timer writes go through aliases, so pattern filters miss them."),
    Attack("A46", "Sabotaging the baseline",
           "The candidate leaves state behind (flags, threads, allocations, clocks) that makes the reference "
           "slower or different when it is measured afterwards."),
    Attack("A47", "Shrinking the problem",
           "Problem-size constants or hyperparameters are rebound so that less work is done; in a shared "
           "namespace the reference's inputs shrink as well."),
    Attack("A48", "Harvesting timing noise",
           "Keeping the best of many noisy measurements (best-of-N search or RL over repeated runs) reports noise "
           "as speedup.",
           (NOT_COVERED, "A record's runtime is the mean of one evaluation's timed samples; there is no "
                         "confidence bound across repeated fresh-process blocks. Choosing among many evaluations "
                         "happens outside the evaluator, which cannot see it.")),
    Attack("A49", "Exploiting a bug in the evaluator loop",
           "The candidate relies on a harness bug, for example that only the last timed output is checked.",
           "The whole red-team suite and the unit tests exist to catch evaluator bugs; "
           "timed outputs are spot-checked at positions chosen in the parent (RH-29)."),
    Attack("A50", "Deferring the work into the read of the output",
           "forward returns at once and the result is computed when the evaluator reads it: storage mapped "
           "without access whose fault handler computes the values on first touch, or a kernel registered for "
           "`aten::copy_` that computes into the evaluator's staging buffer. Both move the work out of the "
           "timed window into an untimed read in the candidate's own process; a candidate that makes itself "
           "non-dumpable tries to keep a trusted reader out."),
)

# Defence families of the reference catalogue and how KernelGuard implements each.
DEFENCES: tuple[tuple[str, str, str], ...] = (
    ("D1", "Process isolation",
     "Reference and candidate run in separate disposable workers; hidden seeds, expected outputs, comparisons, "
     "statistics and the verdict stay in the parent, and the wire format is framed JSON plus raw bytes."),
    ("D2", "Hidden or fresh inputs",
     "Hidden seeds drawn in the parent, a repeated-input canary, perturbed inputs, and a fresh rolled copy of a "
     "hidden input for every timed call, with earlier copies kept alive."),
    ("D3", "Input protection",
     "The parent hashes the bytes it sends and compares them with the worker's digests after each call (RH-22); "
     "the reference never sees the candidate's tensors."),
    ("D4", "Output materialisation and identity",
     "Exact `torch.Tensor`, device, dtype, storage size, null pointer, instance attributes and aliasing (RH-20); "
     "on the CPU the parent reads every output itself with the candidate frozen, refusing storage that is not "
     "readable memory (RH-60); reads are timed against a plain copy (RH-61)."),
    ("D5", "Allocator and memory hygiene", "Partly: timed inputs are kept alive so addresses are not reused; no "
     "poisoning, guard bands or sanitizer."),
    ("D6", "Stronger correctness oracle",
     "Relative-error floor (RH-28), perturbations (RH-30) and a reduced-precision error profile (RH-38)."),
    ("D7", "Timing integrity",
     "Per-call requests, the parent's own clock window (RH-26), CUDA events against device-synchronised host "
     "time (RH-36), work after the current stream (RH-37), L2 flush and persisting-L2 reset (RH-40)."),
    ("D8", "Timer and harness tamper checks",
     "Identities of timing and comparison APIs after every phase (RH-23) and static rebinding rules (RH-05)."),
    ("D9", "Concurrency checks", "Python threads, OS threads and live children around every phase (RH-25)."),
    ("D10", "Backend-usage verification",
     "Static provenance (RH-13) plus a profiler pass that shows what ran (RH-31)."),
    ("D11", "Static pattern checks", "The AST precheck, RH-01 to RH-13."),
    ("D12", "Post-timing recheck and fingerprint",
     "Output read at return and after a sync (RH-21); timed outputs spot-checked at hidden positions (RH-29)."),
    ("D13", "Sandboxing",
     "Partly: scrubbed environment, private workspace, limits and a workspace manifest (RH-27); no OS sandbox."),
    ("D14", "Plausibility bounds", "Implausible speedups are warnings (RH-41)."),
    ("D15", "LLM judge or human audit", "Not implemented."),
    ("D16", "Determinism and repeat runs", "Not implemented beyond the repeated-input canary (RH-19)."),
)

# Codes that no static rule and no runtime detector emits: where they come from.
NON_DETECTOR_ORIGIN: dict[str, str] = {
    "RH-14": "the pipeline, before any worker starts, when `device=cuda` is requested and CUDA is unavailable",
    "RH-32": "the pipeline, the record builder and `detectors.run_all` when the evaluator itself fails",
    "RH-33": "the pipeline when the reference worker fails to load, generate inputs or time",
    "RH-34": "reserved for a missing required capability",
}
