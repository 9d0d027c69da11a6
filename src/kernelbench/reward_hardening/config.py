"""Configuration of one hardened evaluation."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["AUDIT", "ENFORCE", "HardeningConfig", "MODES", "POLICIES", "PRACTICAL", "SAMPLE_FRACTION",
           "SAMPLE_MIN_BYTES", "SOURCE_STRICT", "cpu_threads_per_evaluation", "default_build_dir", "usable_cpus"]

# the one definition of the hardened path's modes and policies (the CLI, the code table
# and the policy module import them)
AUDIT, ENFORCE = MODES = ("audit", "enforce")
SOURCE_STRICT, PRACTICAL = POLICIES = ("source_strict", "practical")

# the timed calls' input check (ipc.lending.input_checks; the judge's memory plan counts it):
# an input set's tensors are copied whole up to this many bytes in all, the rest checked on a
# secret sample of SAMPLE_FRACTION of their rows
SAMPLE_MIN_BYTES = 256 << 20
SAMPLE_FRACTION = 1 / 16
# RH-38's error profile looks at the reduced-precision variants only for a right answer whose
# norm-relative error on the first hidden input is above this (fp32 rounding stays below it)
PRECISION_PROFILE_MIN_ERROR = 1e-5


def default_build_dir(candidate_src: str, root: str | None = None) -> str:
    """Persistent build directory for a candidate, keyed by its source hash.

    Extension builds (``load_inline`` takes about a minute on a GPU host) are reused
    when the same source is evaluated again.  The directory is private to that exact
    source, so a candidate can only ever find its own earlier build artefacts there.
    """
    import hashlib
    from pathlib import Path

    if root:
        base = Path(root)
    else:  # a per-user cache directory, never inside the installed package
        import platformdirs

        base = Path(platformdirs.user_cache_dir("kernelguard", appauthor=False)) / "kernelguard_builds"
    return str(base / hashlib.sha256(candidate_src.encode()).hexdigest()[:16])


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; the machine's count where unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def cpu_threads_per_evaluation(concurrent: int) -> int | None:
    """Intra-op threads for each worker when ``concurrent`` CPU evaluations share this machine.

    ``None`` (torch's default: one thread per usable core) for a single evaluation.
    With several, each gets its share of the cores: a judge and a candidate answer
    each other in turn, so one evaluation keeps about one process busy, and torch's
    default pools in every worker would oversubscribe the cores.  Measured on a 2-core
    machine, 21 red-team fixtures two at a time: 50 s with the default pools, 26 s
    with one thread each.
    """
    if concurrent <= 1:
        return None
    return max(1, usable_cpus() // concurrent)


def _total_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16 << 30


@dataclass
class HardeningConfig:
    """Settings of the hardened path.

    The scripts map their keys onto these fields: ``reward_hardening_mode`` -> ``mode``,
    ``reward_hardening_policy`` -> ``policy``, and ``device``, ``precision``, ``backend``,
    ``num_correct_trials``, ``num_perf_trials``, ``timeout``, ``allow_tf32`` by name;
    the other fields are library-level settings with documented defaults.

    ``timeout`` is the wall-clock limit, in seconds, of each request to a worker
    (loading and building included), so a hanging candidate is cut off after at most
    that long at any stage; the load request of a candidate that compiles an
    extension gets ``build_timeout`` instead (the build runs under a lock of its build
    directory, so a build killed earlier never blocks it).
    """

    mode: str = ENFORCE
    policy: str = SOURCE_STRICT
    device: str = "cuda"
    precision: str = "fp32"
    backend: str = "cuda"
    num_correct_trials: int = 5
    num_perf_trials: int = 100
    num_warmup: int = 3
    timeout: float = 180.0
    # the load request of a candidate that compiles (load_inline, Triton) has this limit
    # instead: a CUDA extension takes a minute or more to build, and the build is not
    # the candidate's run time
    build_timeout: float = 900.0
    build_dir: str | None = None
    allow_tf32: bool = False
    num_threads: int | None = None
    # evidence gathering
    perturbations: tuple[str, ...] = ("scale_up", "negate", "heavy_tail")
    precision_variants: tuple[str, ...] = ("bf16", "fp16", "tf32")
    spot_check_fraction: float = 0.2
    settle_s: float = 0.05
    # correctness probes whose second read waits ``settle_s``: the first hidden probe and
    # ones drawn at random from the rest (every probe is still read twice, after a sync)
    settle_pauses: int = 2
    log_limit_bytes: int = 1 << 20
    response_limit_bytes: int = 1 << 30
    keep_alive_bytes: int = 1 << 30  # lent inputs the candidate keeps mapped after their call
    # GPU cycles the current stream spins after the L2 flush, before the start event, so
    # that the host's launch of forward (Triton's Python launcher is the slowest seen,
    # ~0.1 ms) is hidden as in do_bench's back-to-back launches; ~0.15 ms at 2 GHz
    launch_hold_cycles: int = 300_000
    # Both workers share one GPU: the judge holds the hidden inputs, reference outputs
    # and staging buffers, the candidate its own outputs and temporaries.
    # None: from the problem's memory plan (kernelbench.reward_hardening.parent.memplan): the
    # candidate gets what the judge does not need; a number overrides the plan
    gpu_memory_fraction: float | None = None  # the candidate worker's cap of PyTorch's CUDA allocator
    judge_gpu_memory_fraction: float | None = None  # the judge's cap
    # Host memory (private resident memory, watched by the parent while it waits for a
    # reply; over the limit the worker is killed and the sample gets RH-43):
    # the candidate may use host_memory_base_bytes, plus host_memory_param_factor times
    # the reference's parameter bytes, plus host_memory_data_factor times the problem's
    # input and output bytes when it runs on the CPU, and at least
    # host_memory_reference_factor times the judge's own measured peak;
    # host_memory_limit_bytes, when set, replaces that rule.
    host_memory_base_bytes: int = 4 << 30
    host_memory_data_factor: float = 4.0
    host_memory_param_factor: float = 2.0  # times the reference's parameter bytes (ModelNew is built on the host)
    host_memory_reference_factor: float = 2.0  # floor: times the judge's measured peak with the reference loaded
    host_memory_limit_bytes: int | None = None
    judge_host_memory_bytes: int | None = None  # None: 60% of the machine's memory
    watch_dirs: tuple[str, ...] = ()
    # judgement
    rel_tol_floor: float = 1e-3
    timing_overhead_factor: float = 4.0
    timing_overhead_slack_ms: float = 5.0
    event_host_ratio: float = 1.5  # RH-36: host > ratio * event + slack rejects a sample
    event_host_slack_ms: float = 0.15  # H200 calibration: honest host - event <= 0.124 ms
    # RH-36: up to this share of the candidate's samples may disagree (host stalls); they
    # are charged at its slowest agreeing time (or their own, if larger), and RH-36 fires
    # only above it
    event_host_tolerated_fraction: float = 0.25
    flush_hold_max_ms: float = 1.0  # most of a sample's pre-start flush the host comparison accepts
    other_streams_slack_ms: float = 0.1  # RH-37: device busy after the current stream finished
    precision_explained_ratio: float = 0.3  # RH-38: candidate error >= ratio * reduced-precision error
    max_fallback_share: float = 0.5
    max_plausible_speedup: float = 50.0
    # Interleaved timing and the speedup's bound (kernelbench.reward_hardening.parent.speedup):
    # the candidate's timed samples are split into interleave_blocks blocks, and next to
    # each the judge times interleave_reference_samples samples of the reference (before
    # even blocks, after odd ones); 0 in either switches interleaving off
    interleave_blocks: int = 10
    interleave_reference_samples: int = 5
    # the reference's interleaved samples are timed in its twin, a worker of the candidate's
    # own kind (parent.twin), so both sides are timed along one path: "cuda" (on CUDA
    # devices), "all" (the CPU too), "off"; without room for it in the memory plan the
    # judge times them
    reference_twin: str = "cuda"
    speedup_confidence: float = 0.99  # level of each one-sided bound
    speedup_resamples: int = 2000  # bootstrap resamples
    # both bounds move outwards by this share: what the timing path itself may differ by
    # between two sides running identical code (H200 A/A with the twin: at most 0.24 %)
    speedup_systematic_floor: float = 0.005
    # RH-54 (info): the timing was too noisy for the bound to mean much when either side's
    # coefficient of variation exceeds noise_cv_limit, or when other runnable processes
    # (median over the reference blocks) reach noise_load_fraction of the usable CPUs
    noise_cv_limit: float = 0.1
    noise_load_fraction: float = 0.5
    profile_backend: bool = True
    # CPU: after every correctness and timed call the parent freezes the candidate's cgroup
    # and reads its outputs itself (process_vm_readv) into the judge's staging buffers;
    # False (or a host without cgroup freezing / process_vm_readv) falls back to the
    # candidate harness's in-process copy, and the record says which path was used
    trusted_read: bool = True
    # RH-61: a request that reads or stages output bytes may take at most
    # read_slow_factor x (bytes / the judge's measured copy rate) + read_slow_slack_ms
    read_slow_factor: float = 20.0
    read_slow_slack_ms: float = 100.0
    # spot-checked timed outputs are compared after the timing loop (so the reference's
    # work cannot be timed by the candidate between calls); above this many held bytes
    # the judge compares at once instead
    spot_hold_bytes: int = 1 << 30
    disabled_detectors: frozenset = field(default_factory=frozenset)  # codes switched off (tests only)
    # containment mechanisms left off for the candidate (tests only: a fixture that shows the
    # sweep catches what Landlock would otherwise have refused, as on CUDA where it is off)
    sandbox_skip: frozenset = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"reward_hardening_mode must be one of {MODES}, got {self.mode!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"reward_hardening_policy must be one of {POLICIES}, got {self.policy!r}")
        self.disabled_detectors = frozenset(self.disabled_detectors)
        self.sandbox_skip = frozenset(self.sandbox_skip)
        if self.judge_host_memory_bytes is None:
            self.judge_host_memory_bytes = int(0.6 * _total_memory_bytes())

    @classmethod
    def from_script_config(cls, cfg: Any, device: str | None = None, build_dir: str | None = None) -> "HardeningConfig":
        names = {f.name for f in fields(cls)}
        kwargs = {k: getattr(cfg, k) for k in ("precision", "backend", "num_correct_trials", "num_perf_trials",
                                               "timeout", "allow_tf32") if hasattr(cfg, k) and k in names}
        device = device or getattr(cfg, "device", "cuda")
        if not str(device).startswith("cuda"):  # a CPU batch runs num_gpu_devices samples at a time
            kwargs["num_threads"] = cpu_threads_per_evaluation(int(getattr(cfg, "num_gpu_devices", 1) or 1))
        return cls(mode=cfg.reward_hardening_mode, policy=cfg.reward_hardening_policy,
                   device=device, build_dir=build_dir, **kwargs)

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = sorted(v) if isinstance(v, frozenset) else (list(v) if isinstance(v, tuple) else v)
        return out
