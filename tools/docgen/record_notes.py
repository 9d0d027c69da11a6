"""What the schema reference says about values the schema cannot describe field by field:
the metadata keys, the capabilities, the capability and integrity statuses, the modes
and the policies (data only).

The generator refuses to run when these and the code (``records.py``, ``pipeline.py``,
``verdict.py``, ``config.py`` and the schema's enums) disagree.  Runs in the generator
(``python -m tools.docgen``), outside the installed package.
"""

from __future__ import annotations

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
                      "plus forward), all in ms; `block` (the interleaved block of each sample, see the speedup); "
                      "`charged` (indices of samples whose host time was far above their event time, counted "
                      "at the slowest agreeing sample's time; absent when none).",
    "profiler": "The hidden profiler pass: `marker_seen` (CUDA: the marker kernel was in the device trace), "
                "`notes` (front ends that failed or recorded no device trace before the one used), `gpu_kernels` "
                "(device records seen) and `top_kernels` (the longest ones by name).",
    "reference_timing": "Where the reference's runtime (`verified_reference_runtime`, upstream's `ref_runtime`) "
                        "comes from: `interleaved` (the default: the samples in `interleaved_reference_samples`, "
                        "timed between the candidate's blocks with the candidate frozen) or `session` (interleaving "
                        "switched off: a run of `num_warmup + num_perf_trials` calls at the start of the session, "
                        "reused by the problem's later samples).",
    "reference_timer": "`interleaved` timing only: which process timed the reference's samples: `twin` (the "
                       "default: a worker of the candidate's own kind running the reference, so both sides are "
                       "timed along one path; CUDA by default) or `judge` (`reference_twin` off or not on this "
                       "device, no room for the twin in the "
                       "memory plan, or it failed to start or load).",
    "protocol_overhead_ms": "Where the judge timed the reference (`reference_timer: judge`): the round trip minus "
                            "the reported time (ms) of a few timed calls of the harness's trusted stand-in in the "
                            "candidate's worker, made before the candidate's code was imported; RH-26 compares the "
                            "candidate's own overhead with these (the judge's path is shorter).",
    "reference_timer_note": "Why the judge and not the twin timed the reference (`reference_timer: judge`).",
    "reference_timing_samples": "`session` timing only: the samples of the reference's run at the start of the "
                                "session (`host_ms`, `event_ms`, `rtt_ms`).",
    "interleaved_reference_samples": "The reference's samples timed in blocks between the candidate's (`host_ms`, "
                                     "`event_ms`, `block`; on CUDA `window_ms`): the reference side of `reward_hardening.speedup` and, "
                                     "by default, the reference's runtime (`reference_timing`).",
    "gpu_memory": "CUDA only: peak allocated and reserved bytes, the memory fraction in force, the configured "
                  "cap, the device's total memory and `PYTORCH_CUDA_ALLOC_CONF`.",
    "correctness_trials": "`(matched / hidden calls)` as a string, in upstream's format.",
    "correctness_probes": "The correctness probes whose outputs the judge compared with the reference: "
                          "`judged` (count per probe kind: hidden inputs, perturbations, ...), `calls` (every "
                          "correctness call made) and `skipped` (the kinds of the first ten probes left out; why is in "
                          "`skipped_probes`).",
    "reward_hardening_wall_s": "Wall time of the whole hardened evaluation (s).",
    "request_ms": "Where that wall time went: every request the parent made, summed by `role:cmd` (`reference` is "
                  "the judge, `candidate` the candidate's worker; for example `reference:timed_input`, the fresh input "
                  "set of each timed call): `n` requests and `ms` from send to reply, largest first. Entries "
                  "`reference:<cmd>.<part>` are the judge's own timing of parts of a command (`generate`, `check` (the "
                  "input check's copy), `stage`, `export` of `timed_input`; `check`, `release`, `spot` (and "
                  "`compare` inside it) of `check_inputs`; `inputs`, `forward`, `private` (the reference's "
                  "inputs, forward and private outputs), `lend` and `export` of `probe`; `inputs` and `variants` of "
                  "`variants` (RH-38's reduced-precision forwards, asked for only where the first answer's error is "
                  "above fp32 rounding); `digest` and `compare` of a probe's `judge`; `compare` of `check_spots`; `release` wherever the judge "
                  "gives a lent set back), counted once per request that had the part; they are "
                  "inside their command's entry, not added to it.",
    "reward_hardening_unsupported": "Why the record is UNSUPPORTED (for example `CUDA unavailable`).",
    "reward_hardening_error": "The evaluator error behind an RH-32 record (truncated to 2000 characters).",
    "output_reads": "How the candidate's outputs reached the judge (`docs/security-audit.md#reading-the-outputs`): "
                    "`path` (`trusted`: the parent froze the candidate and read them with `process_vm_readv`; "
                    "`in_process`: the candidate's harness copied them) and `detail`; `trusted_reads`, `bytes`, "
                    "`read_ms` and `freeze_ms` of the parent's reads, `map_ms` (CUDA: the judge mapping and "
                    "unmapping the candidate's allocations, not counted in `read_ms`); `failures` (RH-60); "
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
