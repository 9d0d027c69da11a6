"""State of the candidate worker: API identities, backend flags, concurrency, files."""

from __future__ import annotations

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe


def _snapshots(ev):
    """(phase, snapshot) pairs after the candidate's code ran."""
    out = []
    if ev.load_snapshot:
        out.append(("load", ev.load_snapshot))
    for c in ev.calls:
        if c.ok:
            out.append((f"call:{c.probe.kind}", {"apis": c.apis, "state": c.state, "concurrency": c.concurrency}))
    if ev.final_snapshot and ev.final_snapshot.get("ok", True):
        out.append(("final", ev.final_snapshot))
    return out


@detector("RH-23")
def api_tamper(ev):
    """Timing and comparison APIs must keep their identity in the candidate worker (A07, A09).

    What it catches
        The worker records ``id()`` of time.*, torch.cuda.Event/synchronize,
        allclose/equal/assert_close, Tensor.cpu/clone/data_ptr, print/open and friends
        before the candidate is imported and after every phase; a changed identity is
        reported with the names.

    Why it matters
        The parent's own comparisons never use them, so a patch cannot change the
        verdict, but it is proof of intent and voids the worker's self-measured
        numbers.

    Example
        ``setattr(time, "perf_counter", slow_clock)`` or ``torch.allclose = lambda *a,
        **k: True``.

    Known limits
        Only the listed names are watched; a patch of an object the harness does not
        use changes nothing and is not reported.  A patch undone before the next phase
        boundary is not seen (static RH-05 still flags the source).
    """
    base = (ev.baseline or {}).get("apis") or {}
    changed = {}
    for phase, snap in _snapshots(ev):
        for name, ident in (snap.get("apis") or {}).items():
            if name in base and base[name] != ident and name not in changed:
                changed[name] = phase
    if not changed:
        return []
    return [observe("RH-23", {"replaced": changed})]


_STATE_KEYS = ("matmul_allow_tf32", "cudnn_allow_tf32", "float32_matmul_precision", "cudnn_benchmark",
               "cudnn_deterministic", "cudnn_enabled", "deterministic_algorithms", "default_dtype", "num_threads",
               "fp16_reduced_precision_reduction", "bf16_reduced_precision_reduction", "autocast_cpu",
               "grad_enabled")


@detector("RH-24")
def backend_state_changed(ev):
    """Global precision/backend configuration must stay as the evaluator set it (A38, A46).

    What it catches
        Both workers start under the same explicit configuration (TF32 off unless opted
        in, highest fp32 matmul precision, cuDNN benchmark off, default dtype fp32,
        fixed thread count); any change the candidate makes is reported with
        before/after.

    Why it matters
        TF32 or lower matmul precision buys speed with accuracy, and thread or dtype
        changes alter what is measured for both sides.

    Example
        ``torch.backends.cuda.matmul.allow_tf32 = True`` or ``torch.set_num_threads(1)``
        in ``__init__``.

    Known limits
        Read at phase boundaries: a setting changed and restored inside one call is not
        seen (its effect on precision is RH-38's).
    """
    base = (ev.baseline or {}).get("state") or {}
    changes = {}
    for phase, snap in _snapshots(ev):
        state = snap.get("state") or {}
        for key in _STATE_KEYS:
            if key in base and key in state and base[key] != state[key] and key not in changes:
                changes[key] = {"before": base[key], "after": state[key], "phase": phase}
    if not changes:
        return []
    return [observe("RH-24", {"changes": changes})]


@detector("RH-25")
def concurrency_runtime(ev):
    """Python threads, new OS threads or live child processes in the worker (A02, A03).

    What it catches
        The harness starts no threads; the intra-op pool and CUDA's threads are warmed
        up before the baseline is taken.  Threads created during loading or a call,
        and any live (non-zombie) child process after a phase, are reported.

    Why it matters
        Background threads and processes do work outside the timed interval, or change
        outputs after they were read.

    Example
        ``threading.Thread(target=fill, daemon=True).start()`` in forward.

    Known limits
        A thread that started and ended between two readings is not seen (RH-21 or
        the timing checks see its effect).  Threads a library starts on first use are
        counted as the candidate's.
    """
    base_threads = baseline_threads(ev)
    hits = []
    for phase, snap in _snapshots(ev):
        hits.extend({"phase": phase, **h} for h in concurrency_hits(snap.get("concurrency"), base_threads))
    for s in ev.samples:
        if s.threads_delta > 0:
            hits.append({"phase": f"timing:{s.index}", "os_threads_delta": s.threads_delta})
            break
    if not hits:
        return []
    return [observe("RH-25", {"hits": hits[:8]})]


def baseline_threads(ev) -> int:
    """The worker's OS threads before the candidate was imported (-1: not known)."""
    return ((ev.baseline or {}).get("concurrency") or {}).get("os_threads", -1)


def concurrency_hits(conc: dict | None, base_threads: int) -> list[dict]:
    """What a concurrency reading (one view, or a call's before/after views) shows running beside the harness.

    Python threads, live children, and OS threads beyond the baseline; RH-25's evidence,
    and the parent's reason to keep pausing a correctness call's second read.
    """
    conc = conc or {}
    views = [conc] if "python_threads" in conc else [v for v in conc.values() if isinstance(v, dict)]
    hits: list[dict] = []
    for view in views:
        if view.get("python_threads"):
            hits.append({"python_threads": view["python_threads"]})
        if view.get("children"):
            hits.append({"children": view["children"]})
        if base_threads > 0 and view.get("os_threads", 0) > base_threads:
            hits.append({"os_threads": view["os_threads"], "baseline": base_threads})
    return hits


@detector("RH-27")
def workspace_write(ev):
    """Files created, changed or deleted outside the worker's build and temp dirs (A43).

    What it catches
        The workspace manifest and the watched directories (for batch runs: the runs
        directory) are compared before and after the candidate ran; every difference
        outside its build and temporary directories is listed.

    Why it matters
        Caches persisted across runs, fake result files and shadowing modules
        (``torch.py`` in the working directory) all leave traces there.

    Example
        Writing ``eval_results.json`` with a forged speedup into the working directory.

    Known limits
        Only the watched directories are compared; files outside them are kept away by
        the sandbox (Landlock) rather than seen here.  A warning, not an error.
    """
    changes = {k: v for k, v in (ev.workspace_changes or {}).items() if v}
    if not changes:
        return []
    return [observe("RH-27", {k: v[:20] for k, v in changes.items()})]
