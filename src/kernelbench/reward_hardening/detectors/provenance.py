"""Backend provenance at run time: did the declared custom kernel do the work?"""

from __future__ import annotations

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe
from kernelbench.reward_hardening.operators import NON_COMPUTE_ATEN as NON_COMPUTE_OPS  # the one role table


def _declared(ev):
    facts = getattr(ev.precheck, "facts", None)
    return list(getattr(facts, "declared_kernels", []) or []), bool(getattr(facts, "custom_backend_declared", False))


def cpu_fallback_share(profile: dict) -> tuple[float, list]:
    """Share of the profiled forward's time spent in ATen compute operators, and the heaviest of them.

    The denominator is the forward thread's CPU time (``cpu_ms``) where the reply has it,
    else its wall time: on a loaded host a preemption stretches the wall time of a tiny
    forward tenfold and would hide the operators that did the work.
    """
    cpu_ms = profile.get("cpu_ms")
    window_ms = float(cpu_ms) if isinstance(cpu_ms, (int, float)) and cpu_ms > 0 else float(profile.get("wall_ms") or 0.0)
    wall_us = max(window_ms * 1000.0, 1e-9)
    heavy = [op for op in profile.get("ops", [])
             if op["name"].startswith("aten::") and op["name"] not in NON_COMPUTE_OPS]
    compute_us = sum(op["self_cpu_us"] for op in heavy)
    heavy.sort(key=lambda op: -op["self_cpu_us"])
    return min(compute_us / wall_us, 1.0), [op["name"] for op in heavy[:8]]


def gpu_kernel_split(profile: dict, declared: list) -> tuple[float, float, list]:
    names = [k["name"] for k in declared if k.get("name")]
    custom = library = 0.0
    lib_names = []
    for k in profile.get("kernels") or []:
        t = float(k.get("device_us") or 0.0)
        if any(n in k["name"] for n in names):
            custom += t
        else:
            library += t
            lib_names.append(k["name"][:80])
    return custom, library, sorted(set(lib_names))[:8]


@detector("RH-31")
def backend_not_executed(ev):
    """The declared custom kernel must do the work (A19, A20, A21).

    What it catches
        An untimed forward runs under ``torch.profiler``.  On CUDA the GPU kernels it
        launched on any stream are split into the declared kernels (load_inline
        ``__global__`` functions, Triton ``@jit`` functions) and everything else
        (cuBLAS/cuDNN/ATen); on the CPU the self time of compute ATen operators is
        compared with the call's wall time.

    Why it matters
        Under ``source_strict`` a candidate whose declared kernel never ran, or whose
        work is mostly done by library operators, is the baseline in disguise and is
        not trusted.

    Example
        A compiled load_inline kernel that is never launched while forward returns
        ``torch.add(a, b)``.

    Known limits
        Under ``practical`` the split is recorded as information only.  The CPU split
        uses time shares, so a tiny declared kernel beside heavy library work is told
        apart only by its share.
    """
    if not ev.profile:
        return []
    declared, has_custom = _declared(ev)
    cfg = ev.config
    kernels = ev.profile.get("kernels") or []
    if cfg.device.startswith("cuda") and (kernels or ev.profile.get("marker_seen")):
        names = [k["name"] for k in declared if k.get("name")]
        custom, library, libs = gpu_kernel_split(ev.profile, declared)
        if has_custom and not any(n in k["name"] for k in kernels for n in names):
            return [observe("RH-31", {"declared": names, "library_kernels": libs,
                                      "gpu_kernels_seen": len(kernels)},
                            summary="Declared custom kernels never executed on the GPU")]
        total = custom + library
        share = library / total if total > 0 else 0.0
        if share > (cfg.max_fallback_share if has_custom else 0.05):
            return [observe("RH-31", {"library_share": round(share, 3), "library_kernels": libs,
                                      "custom_us": round(custom, 3), "library_us": round(library, 3),
                                      "custom_kernel_declared": has_custom})]
        return []
    share, heavy = cpu_fallback_share(ev.profile)
    limit = cfg.max_fallback_share if has_custom else 0.05
    if share > limit and heavy:
        return [observe("RH-31", {"aten_compute_share": round(share, 3), "operators": heavy,
                                  "custom_kernel_declared": has_custom})]
    return []
