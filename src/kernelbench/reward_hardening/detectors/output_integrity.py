"""Output identity, materialisation, stability and input integrity."""

from __future__ import annotations

from kernelbench.reward_hardening.detectors._base import detector
from kernelbench.reward_hardening.findings import observe


@detector("RH-20")
def output_identity(ev):
    """Outputs must be plain, materialised tensors of their own (A04–A06, A32).

    What it catches
        Every correctness call's result is checked right after the call with captured
        builtins: exact type ``torch.Tensor`` or an exact ``tuple``/``list`` of them
        (no subclass, proxy or lazy container, so no candidate-defined method runs
        while the result is read), storage at least as large as the view needs, no
        instance attributes shadowing methods, and no storage shared with the inputs
        or with earlier outputs the candidate still holds (an input alias or a
        recycled buffer).

    Why it matters
        Each of these lets the result's bytes be produced or changed after the clock
        stopped, or be an earlier answer.

    Example
        Returning ``x`` itself for an in-place op, or ``self.buf`` filled on read.

    Known limits
        A wrong structure, shape, dtype or device is a correctness failure (RH-18), not
        this finding.  Aliasing is checked against outputs the candidate still holds;
        a buffer it released and reallocated is a fresh tensor.
    """
    hits = []
    for c in ev.calls:
        if not c.ok:
            continue
        tensors = c.evidence.get("tensors", [])
        for i, t in enumerate(tensors):
            problems = []
            if not t.get("exact_tensor"):
                problems.append(f"type {t.get('type')}")
                if c.evidence.get("structure_problem"):
                    problems.append(str(c.evidence["structure_problem"])[:200])
            if t.get("storage_nbytes", 0) < t.get("needed_nbytes", 0) or t.get("null_pointer"):
                problems.append("storage smaller than the tensor (not materialised)")
            if t.get("instance_attrs"):
                problems.append(f"instance attributes {t['instance_attrs']}")
            if t.get("aliases_input"):
                problems.append("shares storage with an input")
            if t.get("aliases_earlier_output"):
                problems.append("shares storage with an earlier output it still holds")
            if problems:
                hits.append({"probe": c.probe.kind, "output": i, "problems": problems})
    if not hits:
        return []
    return [observe("RH-20", {"hits": hits[:5]})]


@detector("RH-21")
def output_unstable(ev):
    """The output read right after return must equal the output after a sync and a pause.

    What it catches
        The harness reads every output as soon as ``forward`` returns and again after
        a device synchronisation and a short pause; any difference is reported.

    Why it matters
        Work handed to a background thread, a side stream or a graph lands after
        ``forward`` returned; a checker that only looks after a device sync sees
        correct data, but the timed interval never contained the work (A02, A15, A16).

    Example
        ``threading.Thread(target=lambda: out.copy_(softmax(x))).start(); return out``.

    Known limits
        Deferred work that finishes before the first read is not seen here (it is
        timing's business, RH-26/RH-36/RH-37); the pause bounds how late a write can
        land and still be caught.
    """
    hits = [{"probe": c.probe.kind, "index": c.probe.index} for c in ev.calls if c.ok and not c.stable]
    if not hits:
        return []
    return [observe("RH-21", {"unstable_calls": hits})]


@detector("RH-22")
def input_mutation(ev):
    """Inputs must be byte-identical after the call (A28).

    What it catches
        The judge checks every input set it lends after the call, on the device
        (correctness probes: a whole-tensor fingerprint taken before the call; timed
        calls: a private copy of the bits, compared after); the candidate holds handles
        to its inputs, so this is checked after every call.  A timed call's input set
        is copied whole up to 256 MiB (its smallest tensors first) and its other
        tensors on a secret sample of 1/16 of their rows (the same rows before and
        after; a new sample every call).

    Why it matters
        Zeroing or overwriting inputs makes the reference's later work trivial or the
        next check meaningless, and an in-place result aliases the input.

    Example
        ``a.zero_(); b.zero_()`` after computing the sum.

    Known limits
        A change undone before the check (written and restored within the call) is
        not seen; it changes no later check either.  In a timed
        call on large inputs, a write confined to a few rows is seen with about the
        sampled share per call (whole-input writes always); every correctness probe
        fingerprints its inputs whole.
    """
    hits = []
    for c in ev.calls:
        if c.inputs_unchanged is not None:
            if c.ok and not c.inputs_unchanged:
                hits.append({"probe": c.probe.kind})
            continue
        if not c.ok or not c.input_digests_after:
            continue
        for i, (before, after) in enumerate(zip(c.input_digests_before, c.input_digests_after)):
            if before is not None and before != after:
                hits.append({"probe": c.probe.kind, "input": i})
    hits += [{"timed_sample": s.index} for s in ev.samples if s.inputs_unchanged is False]
    if not hits:
        return []
    return [observe("RH-22", {"mutated": hits[:5]})]
