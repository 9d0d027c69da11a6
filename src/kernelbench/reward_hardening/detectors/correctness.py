"""Correctness on hidden inputs, caching, degenerate outputs, perturbations, drift."""

from __future__ import annotations

import builtins
import re

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.judge.compare import VALUES_DIFFER, compare, same_values, tolerance
from kernelbench.reward_hardening.findings import observe


def judge(ev, call):
    """Comparison of one call with its reference outputs (computed once per call)."""
    if call.comparison is None:
        call.comparison = compare(call.outputs, call.probe.ref_outputs, ev.config.precision)
    return call.comparison


def _judged(ev):
    """(call, comparison) for every correctness call that returned outputs."""
    return [(c, judge(ev, c)) for c in ev.calls if c.ok]


def _is_replay(ev, call) -> bool:
    """Output equals the reference (or candidate) output of an earlier, different input."""
    if call.replay is not None:  # the judge compared on the device
        return call.replay
    earlier = []
    for c in ev.calls:
        if c is call:
            break
        earlier.append(c)
    for c in earlier:
        if c.probe.index == call.probe.index and c.probe.kind == call.probe.kind:
            continue
        if compare(call.outputs, c.probe.ref_outputs, ev.config.precision).match:
            return True
        if c.ok and right(ev, c) and same_values(call.outputs, c.outputs):
            return True
    return False


# --------------------------------------------------------------------------- what went wrong in one call
_BUILTIN_ERRORS = frozenset(n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
                            and issubclass(getattr(builtins, n), BaseException))
_TORCH_ERRORS = frozenset({"OutOfMemoryError", "AcceleratorError", "DeferredCudaCallError"})
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def exception_site(ev, call) -> dict:
    """The exception's type and the candidate's source line it came from, never its message.

    Messages of calls on hidden inputs could carry the inputs back out
    (``raise RuntimeError(str(x[:64]))``), so only facts that do not depend on the
    data are shown: the type's name when it is a built-in or torch exception (a
    class the candidate defines could encode values in its name), and the deepest
    frame in the candidate's file with that line quoted from the source the parent
    holds.
    """
    name = (call.error_name or "").rsplit(".", 1)[-1]
    module = (call.error_name or "").rsplit(".", 1)[0] if "." in (call.error_name or "") else ""
    if not ((module == "builtins" and name in _BUILTIN_ERRORS) or (module.startswith("torch") and name in _TORCH_ERRORS)):
        name = "an exception of a candidate-defined class" if name else "an exception"
    site: dict = {"exception": name}
    frames = [(f, int(n)) for f, n in _FRAME.findall(call.traceback or "") if f.endswith("candidate.py")]
    src = (ev.candidate_source or "").splitlines()
    frames = [(f, n) for f, n in frames if 0 < n <= len(src)]  # a forged frame cannot carry a number out
    if frames:
        line = frames[-1][1]
        site["line"] = line
        site["source"] = src[line - 1].strip()[:160]
    return site


def call_problem(ev, call) -> dict | None:
    """Why a call that returned is not a right answer, or ``None`` when it is.

    Classes: ``structure`` (a tuple for a tensor, the wrong number of outputs),
    ``shape``, ``dtype``, ``device``, ``non-finite`` (NaN/inf where the reference is
    finite) and ``values`` (outside the tolerance).  Numbers only, never values.
    """
    if not call.ok:
        return None
    ref_meta = (call.probe.reference or {}).get("outputs") or []
    tensors = (call.evidence or {}).get("tensors") or []
    structure = (call.evidence or {}).get("structure_problem")
    want_device = ev.config.device if ev.config.device != "cuda" else "cuda:0"
    if any(not t.get("exact_tensor", True) for t in tensors):  # a subclass or proxy: RH-20's evidence
        return {"class": "type", "detail": str(structure or "not an exact torch.Tensor")[:200]}
    if structure:
        return {"class": "structure", "detail": str(structure)[:200]}
    for i, (t, ref) in enumerate(zip(tensors, ref_meta)):
        if "shape" in ref and "shape" in t and list(t["shape"]) != list(ref["shape"]):
            return {"class": "shape", "detail": f"output {i} has shape {list(t['shape'])}, expected {list(ref['shape'])}"}
    for i, (t, ref) in enumerate(zip(tensors, ref_meta)):
        if "dtype" in ref and "dtype" in t and t["dtype"] != ref["dtype"]:
            return {"class": "dtype", "detail": f"output {i} has dtype {t['dtype']}, expected {ref['dtype']}"}
        dev = t.get("device")
        if dev and dev != want_device and not (want_device.startswith("cuda") and str(dev).startswith("cuda")):
            return {"class": "device", "detail": f"output {i} is on {dev}, expected {want_device}"}
    cmp = judge(ev, call)
    if cmp.match:
        return None
    if cmp.reason.startswith("shape"):
        return {"class": "shape", "detail": cmp.reason}
    if cmp.non_finite:
        return {"class": "non-finite", "detail": f"{cmp.non_finite} of {cmp.numel} output values are NaN or inf",
                "non_finite": cmp.non_finite, "numel": cmp.numel}
    if cmp.reason in ("", VALUES_DIFFER) or cmp.reason.startswith("norm-relative"):
        out = {"class": "values", "max_abs_error": cmp.max_abs, "rel_error": cmp.rel_error}
        if cmp.mean_abs is not None and cmp.mean_abs == cmp.mean_abs:
            out["mean_abs_error"] = cmp.mean_abs
        if cmp.numel:
            out["mismatched"] = f"{cmp.mismatched} of {cmp.numel}"
        if call.judged_by == "relative":
            out["criterion"] = cmp.reason or "norm-relative error"
        return out
    return {"class": "not written", "detail": cmp.reason[:200]}  # the harness could not stage the outputs


def oom_budget(ev, o: dict) -> int | None:
    """The candidate's memory budget an out-of-memory report is measured against (plan, or the fixed cap)."""
    if ev.config.gpu_memory_fraction is not None:
        cap, total = o.get("cap"), o.get("device_total_bytes") or 0
        return int(cap * total) if cap and total else None
    return (ev.memory_plan or {}).get("candidate_bytes")


def oom_kind(ev, o: dict) -> str:
    """``over`` (past the candidate's budget: its fault), ``under`` (within it, and the judge
    saw the device exhausted: the evaluator's limit) or ``unconfirmed`` (within the budget but
    the device had room: the report, which comes from the candidate, is an ordinary exception)."""
    budget = oom_budget(ev, o)
    requested = int(o.get("requested_bytes") or 0)
    need = int(o.get("reserved_bytes") or 0) + requested
    if budget is None or need > 0.99 * budget:
        return "over"
    free = o.get("judge_device_free_bytes")
    if isinstance(free, (int, float)) and free < requested + (1 << 30):
        return "under"
    return "unconfirmed"


def oom_sizes(ev, o: dict) -> dict:
    """The sizes of one out-of-memory report, as every memory finding's evidence shows them.

    Sizes only (what the candidate asked for and needed in all, its budget, the device's
    free memory as the judge read it after the failure), never data.
    """
    requested = int(o.get("requested_bytes") or 0)
    return {"needed_bytes": int(o.get("reserved_bytes") or 0) + requested, "requested_bytes": requested or None,
            "budget_bytes": oom_budget(ev, o), "judge_device_free_bytes": o.get("judge_device_free_bytes")}


def _memory_call(ev, call) -> bool:
    """A call that ran out of memory, judged by the memory rules (RH-39/RH-47), not as an answer."""
    return call.oom is not None and oom_kind(ev, call.oom) != "unconfirmed"


def right(ev, call) -> bool:
    return call.ok and not _memory_call(ev, call) and call_problem(ev, call) is None


def _hidden(ev) -> list:
    return [c for c in ev.calls if c.probe.kind == "hidden" and not _memory_call(ev, c)]


def _same_way(items: list[dict]) -> list[dict]:
    """Failures grouped by what went wrong (class, exception, line), with a count each."""
    groups: dict[tuple, dict] = {}
    for it in items:
        key = (it.get("class"), it.get("exception"), it.get("line"), it.get("detail"))
        if key in groups:
            groups[key]["calls"] += 1
        else:
            groups[key] = {**it, "calls": 1}
    return list(groups.values())


@detector("RH-18")
def wrong_on_hidden_inputs(ev):
    """Wrong output, or an exception, on inputs drawn from hidden seeds.

    What it catches
        Every hidden-seed correctness call must return the reference's structure,
        shapes, dtypes and device, finite values where the reference is finite, and
        values within the precision's tolerance; a call that raises is wrong too.
        Evidence: the class of failure with numbers (never output or input values), the
        exception's type and candidate source line (never its message; for an
        out-of-memory error also the sizes that make it the candidate's, not RH-47's),
        and how many of the hidden calls failed that way.

    Why it matters
        The hidden seeds never reach the candidate process, so memorised outputs for
        the public seed and precomputed tables fail here (A17, A23, A24), and so does a
        plain bug: a broken kernel is a correctness failure with its reason, not a
        cheat.

    Example
        An output of shape ``[16, 4095]`` for ``[16, 4096]``; a constant offset
        (``max abs error 0.5``); ``forward`` raising ``IndexError`` at a given line.

    Known limits
        Failures explained by replaying an earlier right answer are RH-19 instead, and
        an output that changed after return is RH-21.  A shortcut that is right on the
        hidden distribution passes here and is left to RH-30's perturbed inputs.
    """
    hidden = _hidden(ev)
    failures = []
    for c in hidden:
        if not c.ok:
            # an out-of-memory error within the budget on a device with room (RH-47 otherwise): its sizes
            oom = {"out_of_memory": oom_sizes(ev, c.oom)} if isinstance(c.oom, dict) else {}
            failures.append({"class": "raised", **exception_site(ev, c), **oom})
            continue
        problem = call_problem(ev, c)
        # an output that changed after return is deferred work (RH-21), not a wrong answer
        if problem is not None and c.stable and not _is_replay(ev, c):
            failures.append(problem)
    if not failures:
        return []
    groups = _same_way(failures)
    return [observe("RH-18", {
        "failed": len(failures), "checked": len(hidden), "failures": groups[:5],
        "tolerance": tolerance(ev.config.precision)})]


@detector("RH-19")
def history_dependent_output(ev):
    """Outputs that replay an earlier right answer, or differ for a repeated input (A17, A29).

    What it catches
        After the hidden calls the first input is lent again (fresh allocation, same
        values); a wrong output that equals an earlier call's right answer, or a
        repeat answered differently from a first call that was right, is history
        dependence.

    Why it matters
        A cache keyed on pointers, ids, shapes or call counts returns an output that
        was right for an *earlier* input, and costs nothing when timed.

    Example
        ``if self.cache is not None: return self.cache``.

    Known limits
        Both checks need a right answer to replay or to repeat, so a kernel that is
        simply wrong (or constant) is RH-18.  A cache that never hits on fresh inputs
        (keyed on content or on ids of live tensors) earns only its honest time and is
        not reported.
    """
    hits = []
    first = next((c for c in ev.calls if c.probe.kind == "hidden" and c.probe.index == 0), None)
    for c in ev.calls:
        if not c.ok or _memory_call(ev, c):
            continue
        wrong = call_problem(ev, c) is not None
        if c.probe.kind == "canary_repeat" and wrong and first is not None and right(ev, first):
            hits.append({"probe": "repeat_of_first", "reason": "the repeated first input was answered differently"})
        elif wrong and _is_replay(ev, c):
            hits.append({"probe": c.probe.kind, "index": c.probe.index, "reason": "output replays an earlier right answer"})
    if not hits:
        return []
    return [observe("RH-19", {"hits": hits})]


@detector("RH-28")
def degenerate_output(ev):
    """Outputs that pass ``allclose`` only through its absolute tolerance (A33).

    What it catches
        Every passing output must also be close in relative (norm) terms: a relative
        error above ``max(rel_tol_floor, 10 * tolerance)`` on an output that matched
        is reported per probe.

    Why it matters
        Softmax over long rows or normalised outputs are smaller than atol, so zeros or
        a constant pass KernelBench's element-wise check.

    Example
        ``return torch.zeros_like(x)`` for a softmax over 32768 columns.

    Known limits
        Outputs whose honest values are themselves far below the tolerance and noisy in
        relative terms would be reported too; the floor is set above the rounding of
        honest reductions on the bundled problems.
    """
    limit = max(ev.config.rel_tol_floor, 10 * tolerance(ev.config.precision))
    hits = []
    for c, cmp in _judged(ev):
        if cmp.match and cmp.rel_error > limit:
            hits.append({"probe": c.probe.kind, "index": c.probe.index, "relative_error": cmp.rel_error,
                         "limit": limit})
    if not hits:
        return []
    return [observe("RH-28", {"hits": hits[:5]})]


@detector("RH-30")
def wrong_under_perturbation(ev):
    """Right on the hidden inputs, wrong (or raising) on perturbed ones (A32, A34, A35).

    What it catches
        After the hidden calls the judge lends scaled, negated and heavy-tailed
        versions of hidden inputs; the heavy-tailed one gives every non-zero value a
        random sign where the reference stays finite (kept signs otherwise) and is
        judged by the norm-relative error, since cancelling sums make element-wise
        tolerances meaningless for honest reordered arithmetic.

    Why it matters
        Analytic shortcuts (closed forms of the uniform generator's statistics),
        strided partial reductions, identity passthroughs (ReLU on non-negative
        inputs) and errors that grow with magnitude pass on the nominal distribution
        only.

    Example
        ``return x.mean(1) * x.shape[1]`` for a sum is right on U[0, 1) and off on
        signed heavy-tailed inputs.

    Known limits
        Needs at least one hidden call with a right answer and none wrong: a kernel
        that is wrong everywhere is RH-18.  A shortcut that is also right on every
        perturbation the judge draws passes.
    """
    hidden = _hidden(ev)
    if not hidden or not all(right(ev, c) for c in hidden):
        return []
    hits = []
    for c in ev.calls:
        if not c.probe.kind.startswith("perturb:") or _memory_call(ev, c):
            continue
        kind = c.probe.perturbation or c.probe.kind.split(":", 1)[1]
        if not c.ok:
            hits.append({"perturbation": kind, "class": "raised", **exception_site(ev, c)})
            continue
        problem = call_problem(ev, c)
        if problem is not None:
            hits.append({"perturbation": kind, **problem})
    if not hits:
        return []
    return [observe("RH-30", {"hits": hits})]


@detector("RH-29")
def timed_output_mismatch(ev):
    """Outputs of timed calls, spot-checked at hidden positions, must be right (A14, A42).

    What it catches
        Timed calls at positions the parent chose are compared with their reference
        outputs.  The candidate cannot tell which timed call will be checked: every
        timed call gets freshly generated inputs, and the staging buffers of a spot
        check reach the candidate only after its call returned.  The forward run under
        the profiler (the evidence of RH-31 and RH-37) is always compared: a candidate
        can tell that a profiler is active.

    Why it matters
        Phase detection (honest while checked, cheap when timed) and caches keyed on
        content up to a shift or permutation would otherwise be timed at their cheap
        speed.

    Example
        Honest for the first eight calls, then ``return self.last``; or the declared
        kernel launched only while ``torch.autograd._profiler_enabled()``.

    Known limits
        Only some timed calls are checked, so a candidate cheating on few calls may be
        missed (it also gains little).  Skipped when the hidden calls are wrong
        already (RH-18).
    """
    hidden = _hidden(ev)
    if not hidden or not all(right(ev, c) for c in hidden):
        return []  # wrong on the hidden inputs already (RH-18): the timed calls add nothing
    hits, checked = [], 0
    for s in ev.samples:
        cmp = s.spot_comparison
        if cmp is None and s.spot_outputs is not None and s.spot_ref is not None:
            cmp = compare(s.spot_outputs, s.spot_ref, ev.config.precision)
        if cmp is None:
            continue
        checked += 1
        if not cmp.match:
            hits.append({"sample": s.index, "reason": cmp.reason, "max_abs_error": cmp.max_abs})
    profiled = ev.profile_comparison
    if profiled is not None and not profiled.match:
        hits.insert(0, {"sample": "profiled", "reason": profiled.reason, "max_abs_error": profiled.max_abs})
    if not hits:
        return []
    return [observe("RH-29", {"hits": hits[:5], "spot_checked": checked,
                              "profiled_call": None if profiled is None else bool(profiled.match)})]
