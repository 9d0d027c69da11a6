"""Render KernelGuard's generated reference pages from the code.

    python -m kernelbench.reward_hardening.docgen            # rewrite the pages
    python -m kernelbench.reward_hardening.docgen --check    # exit 1 if they are stale

Two Markdown files under ``docs/`` are generated, never edited by hand:

``attack-catalog.md``
    one section per catalogued attack (A01-A50): a short description, the finding
    codes that the code table maps to it, the red-team fixtures that exercise it, and
    a stated reason where no code or no fixture exists; then the table of every
    finding code and one reference section per code built from the static rule's
    module docstring or the runtime detector's docstring.
``schema-reference.md``
    every field of a schema-1.1 record and of its ``reward_hardening`` block (type
    read from ``verified_record.schema.json``, meaning and unit from this module),
    the metadata keys, every capability name ``records.py`` emits, the statuses, the
    verdict rule and every finding code.

Sources: :mod:`~kernelbench.reward_hardening.codes` (the code table), the fixture
manifest (``fixtures.manifest``, both devices; ``fixtures.gpu_manifest`` if present), the runtime
detector registry, the precheck rule registry, the JSON Schema, ``records.py`` and
``verdict.py``.  Generation fails (exit status 2) rather than guess when the sources
and the descriptions kept here disagree: a schema field, capability, metadata key or
status without a description, a description of something that no longer exists, a
fixture naming an unknown attack or code, or an uncovered attack without a reason.

``--check`` compares a fresh rendering with the files on disk and exits 1 (listing
the stale files and a short diff) when they differ, in the manner of ruff's
``generate_docs`` / ``check_docs_formatted``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

__all__ = ["ATTACKS", "DocError", "GENERATED", "check", "main", "render_all", "write"]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parents[2]
DOCS_DIR = REPO_ROOT / "docs"
GENERATED = ("attack-catalog.md", "schema-reference.md")
GENERATOR = "python -m kernelbench.reward_hardening.docgen"


class DocError(Exception):
    """The sources and the descriptions kept in this module disagree."""


# =========================================================================== attack catalogue
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
_NON_DETECTOR_ORIGIN = {
    "RH-14": "the pipeline, before any worker starts, when `device=cuda` is requested and CUDA is unavailable",
    "RH-32": "the pipeline, the record builder and `detectors.run_all` when the evaluator itself fails",
    "RH-33": "the pipeline when the reference worker fails to load, generate inputs or time",
    "RH-34": "reserved for a missing required capability",
}

_FIXTURE_ID_RE = re.compile(r"`((?:rt|pre|benign|gpu)_[a-z0-9_]+)`")


# =========================================================================== schema descriptions
# (meaning, unit) per field of each $defs entry of verified_record.schema.json.

FIELD_DOCS: dict[str, dict[str, tuple[str, str]]] = {
    "record": {
        "sample_id": ("Sample index within the problem. Written by batch runs (`verified_eval_results.json`); "
                      "absent from `run_and_check` output.", "-"),
        "compiled": ("The candidate imported, built and constructed in its worker. False when it was rejected "
                     "before import or failed to load.", "-"),
        "correctness": ("Observed correctness: every hidden-input call returned outputs matching the reference. "
                        "This is evidence, not the verdict; an attack can be observed correct and still FAIL.",
                        "-"),
        "metadata": ("Free-form diagnostics (see [Metadata keys](#metadata-keys)). Not used by the verdict.", "-"),
        "runtime": ("Upstream field: mean time of the candidate's timed samples when it was observed correct, "
                    "else `-1.0`. Not a trusted number; use `reward_hardening.verified_runtime`.", "ms"),
        "runtime_stats": ("Upstream field: [stats](#def-stats) of the candidate's timed samples when observed "
                          "correct, else `{}`.", "ms"),
        "ref_runtime": ("Mean time of the reference, timed with the same protocol in its own worker; `-1.0` when "
                        "it was not timed.", "ms"),
        "ref_runtime_stats": ("[stats](#def-stats) of the reference's timed samples, or `{}`.", "ms"),
        "reward_hardening": ("The integrity block (below).", "-"),
    },
    "reward_hardening": {
        "schema_version": ("Record schema version.", "-"),
        "mode": ("Hardening mode of the run. `off` produces upstream records without this block.", "-"),
        "policy": ("Policy the severities were taken from.", "-"),
        "integrity_status": ("The verdict (see [Verdict rule](#verdict-rule)).", "-"),
        "verified": ("True exactly when `integrity_status` is PASS and correctness and timing evidence exist.",
                     "-"),
        "verified_correctness": ("Same value as `verified`: correctness is only vouched for together with the "
                                 "rest of the evidence.", "-"),
        "verified_runtime": ("Trusted candidate time: the mean of the timed samples (CUDA-event time on a GPU, "
                             "host time on the CPU). `null` unless PASS.", "ms"),
        "verified_runtime_stats": ("[stats](#def-stats) behind `verified_runtime`; `{}` unless PASS.", "ms"),
        "observed_runtime_stats": ("[stats](#def-stats) of the candidate's timed samples whatever the verdict; "
                                   "`{}` when no sample was taken.", "ms"),
        "verified_reference_runtime": ("Mean time of the reference measured in its own worker. Set when the "
                                       "candidate passed, and also when it failed but the reference completed "
                                       "(the reference's time does not depend on the candidate); otherwise "
                                       "`null`.", "ms"),
        "verified_reference_runtime_stats": ("[stats](#def-stats) behind `verified_reference_runtime`, or `{}`.",
                                             "ms"),
        "observed_reference_runtime_stats": ("[stats](#def-stats) of the reference's timed samples, or `{}`.",
                                             "ms"),
        "speedup": ("The [speedup](#def-speedup) of the candidate over the reference timed beside it in "
                    "alternating blocks, with one-sided confidence bounds and both sides' spread. Absent when the "
                    "candidate was not timed to the end (or interleaving is off).", "-"),
        "findings": ("One [finding](#def-finding) per code that fired (the first occurrence, which carries the "
                     "evidence), static findings first.", "-"),
        "capabilities": ("Capability name to [capability](#def-capability) (see [Capabilities](#capabilities)).",
                         "-"),
        "limitations": ("Plain-language statements of what this evaluation could not establish.", "-"),
    },
    "finding": {
        "code": ("Stable finding code from the code table.", "-"),
        "detector": ("Detector name belonging to the code.", "-"),
        "severity": ("Severity under the record's policy: `error` makes the verdict FAIL, `warning` "
                     "SUSPICIOUS, `info` is recorded only.", "-"),
        "summary": ("One-line statement of what was seen (the code table's summary unless the detector gives a "
                    "more specific one).", "-"),
        "evidence": ("Detector-specific facts (line numbers and matched constructs for static rules; probes, "
                     "samples, errors and measurements for runtime detectors).", "varies"),
        "policy_rule": ("`precheck.<rule>` for static findings, `reward_hardening` otherwise.", "-"),
        "remediation": ("What an honest candidate should do instead.", "-"),
        "more_info": ("Link to the code's section of the attack catalogue (`docs/attack-catalog.md#rh-NN`, "
                      "relative to the repository root); `uv run kernelguard explain RH-NN` prints it.", "-"),
    },
    "capability": {
        "status": ("Whether the check could be performed.", "-"),
        "required": ("Whether a status other than AVAILABLE withholds a PASS.", "-"),
        "detail": ("What the capability covers or why it is missing.", "-"),
    },
    "speedup": {
        "statistic": ("What `point` estimates: `median(reference) / median(candidate)` over the interleaved "
                      "samples (CUDA-event times on a GPU, host times on the CPU).", "-"),
        "point": ("The point estimate; above 1 the candidate is faster.", "ratio"),
        "lower_bound": ("One-sided lower confidence bound at `level`: with probability `level` the true ratio is "
                        "above it. A speedup is claimed only when it exceeds 1.", "ratio"),
        "upper_bound": ("One-sided upper confidence bound at `level`; below 1 the candidate is slower.", "ratio"),
        "level": ("Confidence level of each one-sided bound (`speedup_confidence`, default 0.99).", "-"),
        "method": ("`two-stage block bootstrap` (blocks, then samples within them, resampled; widened by "
                   "sqrt(k/(k-1)) for k blocks) or, with a single block, a plain sample bootstrap that does not "
                   "cover drift.", "-"),
        "blocks": ("Interleaved blocks holding samples of both sides.", "count"),
        "resamples": ("Bootstrap resamples.", "count"),
        "claims_faster": ("`lower_bound > 1`.", "-"),
        "claims_slower": ("`upper_bound < 1`.", "-"),
        "verified": ("The record's `verified`: only then may the bound be used as a reward.", "-"),
        "reference": ("[spread](#def-spread) of the reference's interleaved samples.", "-"),
        "candidate": ("[spread](#def-spread) of the candidate's timed samples.", "-"),
        "host_load": ("`other_runnable_median` (other runnable threads on the machine, median over the "
                      "reference blocks) and `usable_cpus` (CPUs the evaluator may run on).", "-"),
    },
    "spread": {
        "n": ("Number of samples.", "count"),
        "median_ms": ("Median, four significant figures.", "ms"),
        "cv": ("Coefficient of variation: sample standard deviation over mean.", "-"),
        "iqr_over_median": ("Interquartile range over the median.", "-"),
        "outliers": ("Samples beyond 1.5 interquartile ranges from the quartiles (Tukey's fences).", "count"),
    },
    "stats": {
        "mean": ("Arithmetic mean of the samples, three significant figures.", "ms"),
        "std": ("Population standard deviation.", "ms"),
        "min": ("Fastest sample.", "ms"),
        "max": ("Slowest sample.", "ms"),
        "num_trials": ("Number of timed samples (warm-up calls excluded).", "count"),
    },
}

# Keys a stats object carries beyond the schema's named properties (additionalProperties is open).
STATS_EXTRA_DOCS = {
    "median": ("Median of the samples, three significant figures.", "ms"),
    "device": ("Device the samples were taken on.", "-"),
}

RESULTS_FILE_DOC = ("A results file (`verified_eval_results.json`) maps each problem id, written as a decimal "
                    "string, to the list of its sample records: one record per sample and configuration (mode, "
                    "policy and device, from `metadata.eval_config`), so runs of one `run_name` under several "
                    "configurations keep each other's records.")

METADATA_DOCS: dict[str, str] = {
    "device": "Device the evaluation ran on (`cpu`, `cuda:0`, ...).",
    "hardware": "Device name (GPU model, or the CPU's processor string).",
    "reward_hardening_phases": "One entry per phase (`reference`, `start`, `load`, `correctness`, `timing`, "
                               "`profile`): seconds since the start (`t_s`), worker PID and, where taken, the "
                               "backend-state snapshot; `reference` also says whether the judge (loaded reference "
                               "and its timing) was `reused` from an earlier sample of the same problem.",
    "skipped_probes": "Correctness probes left out, each with its reason: a perturbation whose reference output "
                      "is not finite, or inputs a perturbation leaves alone to keep the problem's input contract "
                      "(probability rows).",
    "host_memory": "`candidate_peak_private_bytes`: the largest private resident memory (RssAnon) the parent saw "
                   "in the candidate worker while waiting for its replies; `candidate_limit_bytes`: its limit "
                   "(RH-43).",
    "declared_kernels": "Custom kernels the precheck found declared in the source.",
    "compilation_error": "Import, build or construction error of the candidate (truncated to 2000 characters).",
    "load_ms": "Time the candidate worker spent importing and constructing `ModelNew` (ms).",
    "memory_plan": "CUDA: the problem's memory plan on this device (`kernelbench.reward_hardening.parent.memplan`): "
                   "input, output, parameter and workspace bytes, whether the judge recomputes kept outputs "
                   "(`lean`), the judge's allocator cap and the candidate's budget (`candidate_bytes`: an "
                   "out-of-memory over it is RH-39, under it RH-47). Upstream's `correctness_issue` / "
                   "`runtime_error` (and `*_name`) keys are filled from RH-18's evidence: the failure class and "
                   "numbers, or the exception's type and source line (never its message).",
    "timing_samples": "Per-sample raw candidate timings: `host_ms`, `event_ms` (CUDA events, `null` on the CPU), "
                      "`other_streams_ms` (device busy after the current stream finished), `rtt_ms` (the "
                      "parent's round trip) and, on CUDA, `window_ms` (events around the pre-start flush and hold "
                      "plus forward), all in ms; `block` (the interleaved block of each sample, see the speedup).",
    "profiler": "The hidden profiler pass: `marker_seen` (CUDA: the marker kernel was in the device trace), "
                "`notes` (front ends that failed or recorded no device trace before the one used), `gpu_kernels` "
                "(device records seen) and `top_kernels` (the longest ones by name).",
    "reference_timing_samples": "The same for the reference's run at the start of the session (`host_ms`, "
                                "`event_ms`, `rtt_ms`): the upstream `ref_runtime` comes from these.",
    "interleaved_reference_samples": "The reference's samples timed in blocks between the candidate's (`host_ms`, "
                                     "`event_ms`, `block`): the reference side of `reward_hardening.speedup`.",
    "gpu_memory": "CUDA only: peak allocated and reserved bytes, the memory fraction in force, the configured "
                  "cap, the device's total memory and `PYTORCH_CUDA_ALLOC_CONF`.",
    "correctness_trials": "`(matched / hidden calls)` as a string, in upstream's format.",
    "reward_hardening_wall_s": "Wall time of the whole hardened evaluation (s).",
    "reward_hardening_unsupported": "Why the record is UNSUPPORTED (for example `CUDA unavailable`).",
    "reward_hardening_error": "The evaluator error behind an RH-32 record (truncated to 2000 characters).",
    "output_reads": "How the candidate's outputs reached the judge (`docs/security-audit.md#reading-the-outputs`): "
                    "`path` (`trusted`: the parent froze the candidate and read them with `process_vm_readv`; "
                    "`in_process`: the candidate's harness copied them) and `detail`; `trusted_reads`, `bytes`, "
                    "`read_ms` and `freeze_ms` of the parent's reads; `failures` (RH-60); "
                    "`in_process_staging_requests` (the requests that staged output bytes, with `ms`, the "
                    "`work_ms` subtracted and `bytes`, RH-61); `judge_copy_gib_per_s` (the judge's plain copy "
                    "rate on the device) and `requests_timed` (every request the parent timed).",
    "containment": "OS containment (`docs/security-audit.md`): `machine` maps each mechanism this machine "
                   "offers (`cgroup_kill`, `subreaper`, `process_containment`, `seccomp`, `landlock`, "
                   "`capability_drop`, `trusted_not_dumpable`, `ipc_namespace`, `file_attribution`, "
                   "`memory_accounting`, `yama_ptrace_scope`) to `{active, detail}`; "
                   "`workers` maps each role to its sweep report: `method` (cgroup or subreaper), `survivors` "
                   "(pid, ppid, name, cmdline, sid, seccomp of every process that outlived the worker, killed), "
                   "`left_running`, `sigsys`, `exitcode`, `applied` and, for the candidate, `verified` "
                   "(Seccomp, NoNewPrivs, CapEff, CapBnd, cgroup membership, own IPC namespace and group ids read "
                   "from `/proc/<pid>`), `objects` (every System V object, POSIX message queue, file carrying the "
                   "candidate's group in the shared temporary directories or the evaluator's home, and new mount "
                   "it left, each with `kind` and `removed`; RH-53), `checked` (what the object sweep searched and "
                   "how) and `memory` (`method`: `cgroup` or `proc`, and `peak_bytes`).",
}

CAPABILITY_DOCS: dict[str, str] = {
    "cuda_runtime": "A usable CUDA device. On `device=cuda` it is AVAILABLE and required; if CUDA is missing the "
                    "record is the fail-closed UNSUPPORTED record with RH-14. On `device=cpu` it is SKIPPED and "
                    "not required.",
    "static_precheck": "The AST precheck of the candidate source ran. Always present, AVAILABLE and required.",
    "process_isolation": "Reference and candidate ran in separate disposable workers with scrubbed environments. "
                         "AVAILABLE when the reference worker completed, ERROR otherwise; required. Absent when "
                         "the candidate was rejected before import.",
    "hidden_inputs": "Inputs came from hidden seeds generated outside the candidate process. AVAILABLE when the "
                     "reference completed and hidden probes were sent (or the candidate never loaded), ERROR "
                     "otherwise; required. Absent when rejected before import.",
    "thread_introspection": "OS-level thread and child-process counts from `/proc`. AVAILABLE or UNSUPPORTED; "
                            "never required (RH-25 then relies on Python-level thread lists). Absent when "
                            "rejected before import.",
    "backend_profiler": "The hidden profiler pass (RH-31, RH-37, RH-38 evidence). Required only under "
                        "`source_strict`. AVAILABLE when it ran; UNSUPPORTED when it failed on a candidate that "
                        "otherwise completed; SKIPPED when disabled by configuration (still required under "
                        "`source_strict`, so the verdict becomes UNSUPPORTED) or when the candidate did not "
                        "reach it (then not required). Absent when rejected before import.",
    "containment_process": "Every worker ran in a containment unit killed as a whole after it ended (a "
                           "cgroup-v2 leaf with `cgroup.kill`, the candidate in its own cgroup namespace; "
                           "else the evaluator as child subreaper sweeping orphans). Required under `enforce`. "
                           "UNSUPPORTED when the machine has neither; SKIPPED when no candidate worker ran.",
    "containment_seccomp": "The candidate ran under the seccomp-BPF filter (verified as `Seccomp: 2` in "
                           "`/proc/<pid>/status`): ptrace and cross-process memory calls kill it (RH-52). "
                           "Required under `enforce`; UNSUPPORTED without kernel seccomp filters.",
    "containment_landlock": "The candidate ran under Landlock: no reads of temporary roots or other "
                            "evaluations, writes only in its workspace, build and spill directories, no TCP "
                            "(ABI >= 4), signals scoped (ABI >= 6), no ptrace outside its domain. Recorded, "
                            "not required (kernels before 5.13 lack it).",
    "containment_capability_drop": "The candidate dropped every capability (CapEff and CapBnd verified empty). "
                                   "Recorded, not required.",
    "containment_trusted_not_dumpable": "The evaluator, the forkserver and the trusted workers are "
                                        "non-dumpable (`PR_SET_DUMPABLE` 0). Recorded, not required.",
    "containment_ipc_namespace": "The candidate ran in an IPC namespace of its own (verified from "
                                 "`/proc/<pid>/ns/ipc`): its System V objects and POSIX message queues were "
                                 "invisible to other processes and ended with it. Without a namespace the entry "
                                 "says that seccomp refused System V IPC and message queues instead. Recorded, not "
                                 "required.",
    "containment_memory_accounting": "How the candidate's host memory was measured against its limit (RH-43): the "
                                     "cgroup memory controller's anon + shmem of its leaf, or RssAnon + RssShmem of "
                                     "every process in its unit plus detached System V segments and `/dev/shm` "
                                     "files of its group; the detail gives the peak. Recorded, not required.",
    "containment_object_sweep": "After the candidate ended, the sweep searched for every kind of object it could "
                                "leave (processes, System V objects, POSIX message queues and shared memory, files "
                                "in shared directories, mounts), removed what it found and reported it (RH-53). "
                                "ERROR when the sweep did not complete. Required under `enforce`.",
    "trusted_output_read": "The parent read every correctness and timed output itself, with the candidate's "
                           "cgroup frozen (`process_vm_readv` into the judge's staging buffer). AVAILABLE on the "
                           "CPU where the cgroup freezer and `process_vm_readv` work; UNSUPPORTED with the reason "
                           "where they do not, and on CUDA (the candidate's harness then copies its outputs); "
                           "SKIPPED when `trusted_read=False` or the candidate did not load. Not required.",
    "async_timing_check": "CUDA only: CUDA-event times were recorded for the timed samples so RH-36 could "
                          "compare them with host time. AVAILABLE or ERROR; required.",
}

CAPABILITY_STATUS_DOCS = {
    "AVAILABLE": "The check ran.",
    "UNSUPPORTED": "The check is not possible in this environment.",
    "ERROR": "The check should have been possible but failed.",
    "SKIPPED": "The check was not run (not applicable, or disabled).",
}

STATUS_DOCS = {
    "PASS": "No error or warning finding, every required capability AVAILABLE, and correctness and timing "
            "evidence exist. The only status with a `verified_runtime`.",
    "FAIL": "At least one error finding other than a capability code ({capability_codes}).",
    "SUSPICIOUS": "No error, but at least one warning finding (codes that can be warnings: {warning_codes}). "
                  "No trusted runtime.",
    "UNSUPPORTED": "No error, but a required capability is not AVAILABLE, or a capability code "
                   "({capability_codes}) was raised. No trusted runtime.",
}

MODE_DOCS = {
    "audit": "Every static rule and runtime detector runs; static error findings do not stop the candidate from "
             "being imported. The verdict and scoring are the same as in `enforce`.",
    "enforce": "Static error findings reject the candidate before import (no worker runs its code); otherwise "
               "as `audit`.",
}

POLICY_DOCS = {
    "source_strict": "The candidate must really run its declared custom kernel: compiler-generated code, "
                     "high-level fallbacks and kernels that never ran are errors, and the profiler capability "
                     "is required.",
    "practical": "The source-provenance codes are relaxed (listed below) and the profiler capability is "
                 "optional; integrity problems are still recorded and every other code keeps its severity.",
}


# =========================================================================== sources
@dataclass(frozen=True)
class FixtureRow:
    id: str
    attack: str
    device: str
    mode: str
    policy: str
    expected: str
    must_raise: tuple[str, ...]
    problem: str
    description: str
    config: tuple = ()  # HardeningConfig settings the suite evaluates it with


def _fixture_rows() -> list[FixtureRow]:
    from kernelbench.reward_hardening.fixtures import FIXTURES

    rows = [FixtureRow(f.id, f.attack, f.device, f.mode, f.policy, f.expected_status, tuple(f.must_raise),
                       f.problem, f.description, tuple(f.config)) for f in FIXTURES]
    try:
        from kernelbench.reward_hardening.fixtures.gpu_manifest import GPU_FIXTURES
    except ImportError:
        GPU_FIXTURES = ()
    seen = {r.id for r in rows}
    if len(seen) != len(rows):
        raise DocError("a fixture id appears twice in fixtures.FIXTURES")
    for g in GPU_FIXTURES:  # the manifest may or may not already be merged into FIXTURES
        def get(key: str, default: Any = "", _g: Any = g) -> Any:
            return _g.get(key, default) if isinstance(_g, dict) else getattr(_g, key, default)

        row = FixtureRow(get("id"), get("attack"), get("device", "cuda"), get("mode"), get("policy"),
                         get("expected_status"), tuple(get("must_raise", ()) or ()), get("problem"),
                         get("description"))
        if row.id in seen:
            known = next(r for r in rows if r.id == row.id)
            if (known.attack, known.expected, known.must_raise) != (row.attack, row.expected, row.must_raise):
                raise DocError(f"fixture {row.id} differs between FIXTURES and gpu_manifest.GPU_FIXTURES")
            continue
        seen.add(row.id)
        rows.append(row)
    return rows


def _precheck_rules() -> dict[str, Any]:
    from kernelbench.reward_hardening.precheck import RULES

    return {r.code: r for r in RULES}


def _runtime_detectors() -> dict[str, Any]:
    from kernelbench.reward_hardening.detectors import REGISTRY

    return dict(REGISTRY)


def _literal_emitters() -> dict[str, list[str]]:
    """Code -> package modules that build a finding for it with a literal code."""
    out: dict[str, list[str]] = {}
    pattern = re.compile(r'finding\(\s*"(RH-\d\d)"')
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if rel.startswith("fixtures/") or rel in ("docgen.py", "codes.py"):
            continue
        for code in sorted(set(pattern.findall(path.read_text()))):
            out.setdefault(code, []).append(rel)
    return out


def _emitted_capabilities() -> list[str]:
    text = (PACKAGE_DIR / "parent" / "records.py").read_text()
    names: list[str] = []
    for m in re.finditer(r'caps\["([a-z_]+)"\]|"capabilities":\s*\{"([a-z_]+)"', text):
        name = m.group(1) or m.group(2)
        if name not in names:
            names.append(name)
    return names


def _metadata_keys() -> list[str]:
    """Metadata keys that records.py and pipeline.py write into a record."""
    keys: set[str] = set()

    def const_keys(d: ast.Dict) -> set[str]:
        return {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}

    def is_metadata(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id == "metadata"
        return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value == "metadata")

    for name in ("parent/records.py", "parent/pipeline.py"):
        tree = ast.parse((PACKAGE_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == "metadata" and isinstance(node.value, ast.Dict):
                        keys |= const_keys(node.value)
                    if (isinstance(t, ast.Subscript) and is_metadata(t.value) and isinstance(t.slice, ast.Constant)
                            and isinstance(t.slice.value, str)):
                        keys.add(t.slice.value)
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value == "metadata" and isinstance(v, ast.Dict):
                        keys |= const_keys(v)
    return sorted(keys)


# =========================================================================== text helpers
_ROLE_RE = re.compile(r":(?:func|mod|class|data|meth|attr|obj):`(~?)([^`]+)`")
_LITERAL_RE = re.compile(r"``(.+?)``")


def _inline(text: str) -> str:
    """RST inline markup of the docstrings -> Markdown."""
    text = _ROLE_RE.sub(lambda m: f"`{m.group(2).split('.')[-1] if m.group(1) else m.group(2)}`", text)
    return _LITERAL_RE.sub(r"`\1`", text)


def docstring_markdown(doc: str) -> str:
    """A docstring (plain paragraphs, or titled sections with indented bodies) as Markdown."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line and not line[0].isspace() and nxt.startswith("    "):
            out.append(f"**{line.strip().rstrip(':')}.**")
            out.append("")
            body: list[str] = []
            i += 1
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                if not lines[i].strip() and (i + 1 >= len(lines) or not lines[i + 1].startswith("    ")):
                    break
                body.append(lines[i][4:] if lines[i].startswith("    ") else "")
                i += 1
            for b in body:
                out.append("- " + b[2:] if b.startswith("* ") else b)
            continue
        out.append("- " + line[2:] if line.startswith("* ") else line)
        i += 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return _inline(text)


def _text(text: str) -> str:
    """Plain prose (summaries, descriptions) as Markdown: code spans kept, dunders and ``*`` made inert."""
    parts = re.split(r"(`[^`]*`)", _inline(str(text)))
    for i in range(0, len(parts), 2):
        part = re.sub(r"(?<![\w`])(__\w+?__)(?![\w`])", r"`\1`", parts[i])
        parts[i] = part.replace("*", "\\*")
    return "".join(parts)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _codes(codes: Iterable[str]) -> str:
    return ", ".join(f"[{c}](#{c.lower()})" for c in codes) or "-"


def _fixture_list(ids: Iterable[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids) or "-"


def _header(title: str) -> list[str]:
    return [f"# {title}", "",
            f"<!-- Generated by `{GENERATOR}`; do not edit by hand. `{GENERATOR} --check` verifies it. -->", ""]


# =========================================================================== attack catalogue
def _attack_fixtures(rows: list[FixtureRow]) -> dict[str, list[FixtureRow]]:
    out: dict[str, list[FixtureRow]] = {}
    for r in rows:
        out.setdefault(r.attack, []).append(r)
    return out


def _validate_catalogue(codes: dict, rows: list[FixtureRow]) -> None:
    ids = [a.id for a in ATTACKS]
    if ids != [f"A{i:02d}" for i in range(1, 51)]:
        raise DocError("ATTACKS must list A01..A50 in order")
    known = set(ids)
    for info in codes.values():
        for a in info.attacks:
            if a not in known:
                raise DocError(f"{info.code} names unknown attack {a}")
    all_ids = {r.id for r in rows}
    for r in rows:
        if r.attack not in known and r.attack not in ("benign", "DOS"):
            raise DocError(f"fixture {r.id} names unknown attack {r.attack!r}")
        for c in r.must_raise:
            if c not in codes:
                raise DocError(f"fixture {r.id} requires unknown code {c}")
    by_attack = _attack_fixtures(rows)
    for a in ATTACKS:
        mapped = [c for c in codes.values() if a.id in c.attacks]
        has_fixture = bool(by_attack.get(a.id))
        if not mapped and not (isinstance(a.remark, tuple) and a.remark[0] in (BY_DESIGN, NOT_COVERED, OUT_OF_SCOPE)):
            raise DocError(f"{a.id} has no finding code: give ATTACKS a (kind, reason) remark")
        if mapped and not has_fixture and not (isinstance(a.remark, str) and a.remark):
            raise DocError(f"{a.id} has finding codes but no fixture: give ATTACKS a remark saying why")
        text = a.remark[1] if isinstance(a.remark, tuple) else (a.remark or "")
        for fid in _FIXTURE_ID_RE.findall(text):
            if fid not in all_ids:
                raise DocError(f"{a.id}'s remark names fixture {fid}, which does not exist")


def _fixture_line(r: FixtureRow) -> str:
    expect = f"expects {r.expected}" + (f", requires {', '.join(r.must_raise)}" if r.must_raise else "")
    if r.config:
        expect += ", run with " + ", ".join(f"`{k}={v!r}`" for k, v in r.config)
    return f"- `{r.id}` ({r.device}, {r.mode}/{r.policy}; {expect}): {_text(r.description)}"


def render_attack_catalog() -> str:
    from kernelbench.reward_hardening.codes import CODES

    rows = _fixture_rows()
    _validate_catalogue(CODES, rows)
    by_attack = _attack_fixtures(rows)
    rules, dets, emitters = _precheck_rules(), _runtime_detectors(), _literal_emitters()
    n_cpu = sum(1 for r in rows if r.device == "cpu")
    out = _header("Attack catalogue")
    out += [
        "This page lists the reward hacks KernelGuard is designed against (the catalogue ids A01-A50), the "
        "finding codes that catch each one and the red-team fixtures that prove it, followed by the table of "
        "every finding code and a reference section per code. It is rendered from the code table "
        "(`src/kernelbench/reward_hardening/codes.py`), the fixture registries "
        "(`fixtures/manifest.py`) and the docstrings of the static rules and "
        "runtime detectors.",
        "",
        f"The registries hold {len(rows)} fixtures: {n_cpu} run on the CPU "
        "(`scripts/reward_hardening_redteam.py`), "
        f"{len(rows) - n_cpu} need a CUDA device (`--device cuda`). A fixture's expected status and required "
        "codes are what the suite checks; see [reward-hardening.md](reward-hardening.md) for the evaluation "
        "pipeline and [security-audit.md](security-audit.md) for the limits.",
        "",
        "Coverage labels: **covered** (finding codes and at least one fixture), **detected, no fixture** "
        "(finding codes but no fixture yet, with the reason), **covered by design** (the architecture removes "
        "the attack, no finding code), **not covered** and **out of scope** (with the reason).",
        "",
        "## Contents",
        "",
        "- [Attacks](#attacks)",
        "- [Fixtures outside the catalogue](#fixtures-outside-the-catalogue)",
        "- [Defence families](#defence-families)",
        "- [Finding codes](#finding-codes)",
        "- [Code reference](#code-reference)",
        "",
        "## Attacks",
        "",
        "| Id | Attack | Coverage | Codes | Fixtures |",
        "|---|---|---|---|---|",
    ]
    coverage: dict[str, str] = {}
    for a in ATTACKS:
        mapped = [c.code for c in CODES.values() if a.id in c.attacks]
        fx = by_attack.get(a.id, [])
        if mapped and fx:
            coverage[a.id] = "covered"
        elif mapped:
            coverage[a.id] = "detected, no fixture"
        else:
            coverage[a.id] = a.remark[0]
        out.append(f"| [{a.id}](#{a.id.lower()}) | {_cell(_text(a.name))} | {coverage[a.id]} | "
                   f"{', '.join(c.replace('RH-', '') for c in mapped) or '-'} | {len(fx)} |")
    out.append("")
    for a in ATTACKS:
        mapped = [c for c in CODES.values() if a.id in c.attacks]
        fx = by_attack.get(a.id, [])
        out += [f'<a id="{a.id.lower()}"></a>', "", f"### {a.id} {_text(a.name)}", "", _text(a.summary), "",
                f"**Coverage:** {coverage[a.id]}.", ""]
        if mapped:
            out.append("**Caught by:**")
            out.append("")
            for c in mapped:
                out.append(f"- [{c.code}](#{c.code.lower()}) `{c.detector}` ({c.stage}): {_text(c.summary)}")
            out.append("")
        extra = sorted({code for r in fx for code in r.must_raise} - {c.code for c in mapped})
        if fx:
            out.append("**Fixtures:**")
            out.append("")
            out += [_fixture_line(r) for r in fx]
            out.append("")
            if extra:
                out += [f"Its fixtures also require {_codes(extra)}, which the code table does not map to "
                        f"{a.id}.", ""]
        benign = [r.id for r in by_attack.get("benign", []) if re.search(rf"\b{a.id}\b", r.description)]
        if benign:
            out += [f"**Benign counterpart:** {_fixture_list(benign)} (must PASS).", ""]
        if isinstance(a.remark, tuple):
            out += [f"**Why {a.remark[0]}:** {_text(a.remark[1])}", ""]
        elif a.remark and not fx:
            out += [f"**No fixture yet.** {_text(a.remark)}", ""]
    out += ["## Fixtures outside the catalogue", "",
            "Benign candidates must PASS with none of the error or warning codes of their policy; they guard "
            "against false positives. `DOS` fixtures attack the evaluator's availability rather than the "
            "score.", ""]
    for label, key in (("Denial of service", "DOS"), ("Benign", "benign")):
        out += [f"### {label}", ""]
        out += [_fixture_line(r) for r in by_attack.get(key, [])] or ["- none"]
        out.append("")
    out += ["## Defence families", "",
            "The defence families of the reference catalogue and what KernelGuard does for each.", "",
            "| Id | Family | KernelGuard |", "|---|---|---|"]
    out += [f"| {d} | {_cell(_text(n))} | {_cell(_text(t))} |" for d, n, t in DEFENCES]
    out += ["", "## Finding codes", "",
            "Severity is given per policy as `source_strict` / `practical`: `error` makes the verdict FAIL, "
            "`warning` SUSPICIOUS, `info` is recorded only. The fixtures column lists the fixtures that require "
            "the code.", "",
            "| Code | Detector | Stage | Severity (strict / practical) | Summary | Remediation | Attacks | "
            "Fixtures |",
            "|---|---|---|---|---|---|---|---|"]
    required: dict[str, list[str]] = {}
    for r in rows:
        for c in r.must_raise:
            required.setdefault(c, []).append(r.id)
    for c in CODES.values():
        sev = f"{c.severity['source_strict']} / {c.severity['practical']}"
        status = "" if c.status == "stable" else f" ({c.status})"
        out.append(f"| [{c.code}](#{c.code.lower()}){status} | `{c.detector}` | {c.stage} | {sev} | "
                   f"{_cell(_text(c.summary))} | {_cell(_text(c.remediation))} | "
                   f"{', '.join(c.attacks) or '-'} | {_cell(_fixture_list(required.get(c.code, [])))} |")
    out += ["", "## Code reference", "",
            "For each code: where it is implemented and, from the implementation's docstring, what it catches "
            "and its known limits.", ""]
    for c in CODES.values():
        attacks = ", ".join(f"[{a}](#{a.lower()})" for a in c.attacks) or "none (evaluator robustness)"
        needed = _fixture_list(required[c.code]) if required.get(c.code) else "none"
        out += [f'<a id="{c.code.lower()}"></a>', "", f"### {c.code} `{c.detector}`", "",
                f"- Stage: {c.stage}; severity: {c.severity['source_strict']} under `source_strict`, "
                f"{c.severity['practical']} under `practical`; status: {c.status}.",
                f"- Summary: {_text(c.summary)}",
                f"- Remediation: {_text(c.remediation)}",
                f"- Attacks: {attacks}.",
                f"- Required by fixtures: {needed}."]
        impl = []
        if c.code in rules:
            r = rules[c.code]
            mod = r.check.__module__.rsplit(".", 1)[-1]
            impl.append(f"static rule `{r.name}` (`precheck/{mod}.py`)")
        if c.code in dets:
            d = dets[c.code]
            mod = d.func.__module__.rsplit(".", 1)[-1]
            impl.append(f"runtime detector `{d.func.__name__}` (`detectors/{mod}.py`)")
        others = [m for m in emitters.get(c.code, [])
                  if not (c.code in dets and m == f"detectors/{dets[c.code].func.__module__.rsplit('.', 1)[-1]}.py")]
        if others:
            impl.append("also built in " + ", ".join(f"`{m}`" for m in others))
        if others and len(impl) == 1:
            impl[0] = impl[0].replace("also built in", "built in")
        if not impl:
            impl.append("not emitted by any module in this version")
        out.append(f"- Implemented by: {'; '.join(impl)}.")
        if c.code in _NON_DETECTOR_ORIGIN and c.code not in rules and c.code not in dets:
            out.append(f"- Origin: {_NON_DETECTOR_ORIGIN[c.code]}.")
        out.append("")
        if c.code in rules:
            out += [docstring_markdown(rules[c.code].doc), ""]
        if c.code in dets:
            out += [docstring_markdown(dets[c.code].func.__doc__ or ""), ""]
    return "\n".join(out).rstrip() + "\n"


# =========================================================================== schema reference
def _type(s: dict) -> str:
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#def-{name})"
    if "const" in s:
        return f"`{json.dumps(s['const'])}`"
    if "enum" in s:
        return "one of " + ", ".join(f"`{v}`" for v in s["enum"])
    t = s.get("type")
    text = " or ".join(t) if isinstance(t, list) else (t or "any")
    if t == "array" and isinstance(s.get("items"), dict):
        text = f"array of {_type(s['items'])}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        text = f"object: name to {_type(s['additionalProperties'])}"
    notes = []
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("minLength", "length >=")):
        if key in s:
            notes.append(f"{word} {s[key]}")
    if "pattern" in s:
        notes.append(f"pattern `{s['pattern']}`")
    return text + (f" ({', '.join(notes)})" if notes else "")


def _validate_schema(schema: dict) -> None:
    defs = schema.get("$defs", {})
    for name, d in defs.items():
        if name == "results_file":
            continue
        if name not in FIELD_DOCS:
            raise DocError(f"schema definition {name!r} is not described in docgen.FIELD_DOCS")
        props = set(d.get("properties", {}))
        documented = set(FIELD_DOCS[name])
        if props - documented:
            raise DocError(f"schema {name} fields without a description: {sorted(props - documented)}")
        if documented - props:
            raise DocError(f"described {name} fields missing from the schema: {sorted(documented - props)}")
    for name in FIELD_DOCS:
        if name not in defs:
            raise DocError(f"docgen describes schema definition {name!r}, which the schema no longer has")
    if "results_file" in defs and set(defs["results_file"]) - {"type", "patternProperties", "additionalProperties"}:
        raise DocError("schema results_file changed shape; update docgen")


def render_schema_reference() -> str:
    from kernelbench.reward_hardening.parent import verdict
    from kernelbench.reward_hardening.codes import CODES
    from kernelbench.reward_hardening.config import MODES, POLICIES
    from kernelbench.reward_hardening.parent.records import SCHEMA_VERSION, load_schema

    schema = load_schema()
    _validate_schema(schema)
    defs = schema["$defs"]
    rh = defs["reward_hardening"]["properties"]
    if list(rh["integrity_status"]["enum"]) != list(verdict.STATUSES):
        raise DocError("schema integrity_status enum differs from verdict.STATUSES")
    if set(STATUS_DOCS) != set(verdict.STATUSES):
        raise DocError("STATUS_DOCS must describe exactly verdict.STATUSES")
    if list(rh["mode"]["enum"]) != list(MODES) or set(MODE_DOCS) != set(MODES):
        raise DocError("schema mode enum, config.MODES and MODE_DOCS disagree")
    if list(rh["policy"]["enum"]) != list(POLICIES) or set(POLICY_DOCS) != set(POLICIES):
        raise DocError("schema policy enum, config.POLICIES and POLICY_DOCS disagree")
    if rh["schema_version"].get("const") != SCHEMA_VERSION:
        raise DocError("schema_version const differs from records.SCHEMA_VERSION")
    cap_status = defs["capability"]["properties"]["status"]["enum"]
    if set(cap_status) != set(CAPABILITY_STATUS_DOCS):
        raise DocError("capability status enum and CAPABILITY_STATUS_DOCS disagree")
    caps = _emitted_capabilities()
    if set(caps) != set(CAPABILITY_DOCS):
        raise DocError(f"capabilities emitted by records.py {caps} differ from CAPABILITY_DOCS "
                       f"{sorted(CAPABILITY_DOCS)}")
    meta = _metadata_keys()
    if set(meta) != set(METADATA_DOCS):
        raise DocError(f"metadata keys written by records.py/pipeline.py {meta} differ from METADATA_DOCS "
                       f"{sorted(METADATA_DOCS)}")

    out = _header("Schema reference (record schema 1.1)")
    out += [
        "Every record KernelGuard writes on the hardened path (`run_and_check` with "
        "`reward_hardening_mode=audit|enforce`, and each sample of `verified_eval_results.json`) has the shape "
        "described here. The machine-readable definition is "
        "[`verified_record.schema.json`](../src/kernelbench/reward_hardening/verified_record.schema.json); "
        "types below are read from it, and generation fails if the schema gains a field this page does not "
        "describe. Times inside `reward_hardening` are milliseconds; the upstream fields keep KernelBench's "
        "meaning.",
        "",
        "## Contents",
        "",
        "- [Record](#def-record)",
        "- [reward_hardening block](#def-reward_hardening)",
        "- [finding](#def-finding), [capability](#def-capability), [stats](#def-stats), [speedup](#def-speedup), "
        "[spread](#def-spread)",
        "- [Results file](#results-file)",
        "- [Metadata keys](#metadata-keys)",
        "- [Modes and policies](#modes-and-policies)",
        "- [Integrity statuses](#integrity-statuses)",
        "- [Capabilities](#capabilities)",
        "- [Verdict rule](#verdict-rule)",
        "- [Finding codes](#finding-codes)",
        "",
    ]
    titles = {"record": "Record", "reward_hardening": "reward_hardening block", "finding": "finding",
              "capability": "capability", "stats": "stats", "speedup": "speedup", "spread": "spread"}
    intros = {
        "record": "Top level of a record. Fields marked required must be present.",
        "reward_hardening": "The integrity block. No other keys are allowed. The schema also enforces: a status "
                            "other than PASS has `verified = false` and `verified_runtime = null`; "
                            "`verified = true` implies PASS and a numeric `verified_runtime`.",
        "finding": "One entry of `findings`. No other keys are allowed.",
        "capability": "One value of `capabilities`. No other keys are allowed.",
        "speedup": "The speedup with its confidence bounds (`reward_hardening.speedup`). No other keys are allowed. "
                   "Method and calibration: docs/reward-hardening.md, section Speedup and its bound.",
        "spread": "The spread of one side's samples. No other keys are allowed.",
        "stats": "Timing statistics of a list of samples; `{}` when there are none. Other keys are allowed; "
                 "KernelGuard adds `median` and `device`.",
    }
    for name in ("record", "reward_hardening", "finding", "capability", "stats", "speedup", "spread"):
        d = defs[name]
        required = set(d.get("required", []))
        out += [f'<a id="def-{name}"></a>', "", f"## {titles[name]}", "", intros[name], "",
                "| Field | Type | Required | Unit | Meaning |", "|---|---|---|---|---|"]
        for field, spec in d["properties"].items():
            meaning, unit = FIELD_DOCS[name][field]
            out.append(f"| `{field}` | {_cell(_type(spec))} | {'yes' if field in required else 'no'} | {unit} | "
                       f"{_cell(meaning)} |")
        if name == "stats":
            for field, (meaning, unit) in STATS_EXTRA_DOCS.items():
                out.append(f"| `{field}` | {'number' if unit == 'ms' else 'string'} | no | {unit} | "
                           f"{_cell(meaning)} |")
        out.append("")
    rf = defs.get("results_file")
    if rf:
        pattern = next(iter(rf.get("patternProperties", {})), "")
        out += ['<a id="results-file"></a>', "", "## Results file", "",
                f"{RESULTS_FILE_DOC} Schema definition `results_file`: keys match `{pattern}`, values are arrays of "
                "[records](#def-record); no other keys.", ""]
    out += ["## Metadata keys", "",
            "Keys the hardened path writes into `metadata` (read from `records.py` and `pipeline.py`). They are "
            "diagnostics only; a key is present only when it applies.", "",
            "| Key | Meaning |", "|---|---|"]
    out += [f"| `{k}` | {_cell(METADATA_DOCS[k])} |" for k in meta]
    out += ["", "## Modes and policies", "", "| Value | Meaning |", "|---|---|"]
    out += [f"| `mode={m}` | {_cell(MODE_DOCS[m])} |" for m in MODES]
    out += [f"| `policy={p}` | {_cell(POLICY_DOCS[p])} |" for p in POLICIES]
    differing = [c for c in CODES.values() if c.severity["source_strict"] != c.severity["practical"]]
    out += ["", "Codes whose severity differs between the policies: " + ", ".join(
        f"[{c.code}](#{c.code.lower()}) ({c.severity['source_strict']} / {c.severity['practical']})"
        for c in differing) + ".", ""]
    out += ["## Integrity statuses", "", "| Status | Meaning |", "|---|---|"]
    fill = {"capability_codes": ", ".join(sorted(getattr(verdict, "_CAPABILITY_CODES", ()))) or "none",
            "warning_codes": ", ".join(c.code for c in CODES.values() if "warning" in c.severity.values())}
    out += [f"| `{s}` | {_cell(_text(STATUS_DOCS[s].format(**fill)))} |" for s in verdict.STATUSES]
    out += ["", "## Capabilities", "",
            "Names `records.py` can emit in `capabilities`, and the capability statuses.", "",
            "| Capability | When present, status and whether required |", "|---|---|"]
    out += [f"| `{c}` | {_cell(CAPABILITY_DOCS[c])} |" for c in caps]
    out += ["", "| Capability status | Meaning |", "|---|---|"]
    out += [f"| `{s}` | {_cell(CAPABILITY_STATUS_DOCS[s])} |" for s in cap_status]
    rule_lines = _verdict_rule_lines(verdict.__doc__ or "")
    out += ["", "## Verdict rule", "",
            "`verdict.decide(findings, capabilities)` is a pure function; in order:", ""]
    out += rule_lines
    out += ["",
            "The record builder then fails closed: a PASS without at least one hidden-input call that matched "
            "the reference and at least one timing sample is turned into FAIL with RH-32. Findings are "
            "de-duplicated per code (the first, which carries the evidence, is kept). Only a PASS carries "
            "`verified_runtime`, and only PASS records count towards `verified_fast_p`.", "",
            "## Finding codes", "",
            "Every code of the code table; details and the attacks each one covers are in "
            "[attack-catalog.md](attack-catalog.md#finding-codes).", "",
            "| Code | Detector | Stage | Severity (strict / practical) | Summary |", "|---|---|---|---|---|"]
    for c in CODES.values():
        out.append(f'| <a id="{c.code.lower()}"></a>[{c.code}](attack-catalog.md#{c.code.lower()}) | '
                   f"`{c.detector}` | {c.stage} | {c.severity['source_strict']} / {c.severity['practical']} | "
                   f"{_cell(_text(c.summary))} |")
    return "\n".join(out).rstrip() + "\n"


def _verdict_rule_lines(doc: str) -> list[str]:
    """The numbered rule of verdict.py's docstring, one Markdown list item per rule."""
    items: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        m = re.match(r"^(\d+)\.\s+(.*)$", line.strip())
        if m:
            items.append(f"{m.group(1)}. {m.group(2)}")
        elif items and line.startswith("   ") and line.strip():
            items[-1] += " " + line.strip()
    if not items:
        raise DocError("verdict.py's docstring no longer states the numbered verdict rule")
    return [_inline(i.replace("->", "→")) for i in items]


# =========================================================================== driver
def render_all() -> dict[str, str]:
    return {"attack-catalog.md": render_attack_catalog(), "schema-reference.md": render_schema_reference()}


def write(docs_dir: Path = DOCS_DIR) -> list[Path]:
    docs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all().items():
        path = docs_dir / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def check(docs_dir: Path = DOCS_DIR) -> list[str]:
    """Names of generated files that are missing or differ from a fresh rendering, with a diff excerpt."""
    problems = []
    for name, text in render_all().items():
        path = docs_dir / name
        if not path.exists():
            problems.append(f"{name}: missing")
            continue
        current = path.read_text()
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), f"{name} (on disk)",
                                             f"{name} (fresh)", lineterm="", n=1))
            excerpt = "\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else "")
            problems.append(f"{name}: stale\n{excerpt}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelbench.reward_hardening.docgen",
                                description="Render docs/attack-catalog.md and docs/schema-reference.md.")
    p.add_argument("--check", action="store_true",
                   help="do not write; exit 1 if the files on disk differ from a fresh rendering")
    p.add_argument("--docs-dir", type=Path, default=DOCS_DIR, help=f"output directory (default {DOCS_DIR})")
    args = p.parse_args(argv)
    try:
        if args.check:
            problems = check(args.docs_dir)
            if problems:
                for msg in problems:
                    print(msg, file=sys.stderr)
                print(f"generated docs are stale; run `{GENERATOR}`", file=sys.stderr)
                return 1
            print("generated docs are up to date")
            return 0
        for path in write(args.docs_dir):
            print(f"wrote {path}")
        return 0
    except DocError as exc:
        print(f"docgen: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
