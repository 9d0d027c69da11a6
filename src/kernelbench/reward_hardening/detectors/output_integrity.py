"""Output identity, materialisation, stability and input integrity."""

from __future__ import annotations

from kernelbench.reward_hardening.detectors import detector
from kernelbench.reward_hardening.findings import finding


@detector("RH-20")
def output_identity(ev):
    """Outputs must be plain, materialised tensors of their own (A04–A06, A32).

    Checks every correctness call: exact type ``torch.Tensor`` or an exact
    ``tuple``/``list`` of them, checked right after the call with captured builtins (no
    subclass, proxy or lazy container, so no candidate-defined method runs while the
    result is read), the same structure as the reference's result (a tensor is not a
    1-tuple), expected device and dtype, storage at
    least as large as the view needs, no instance attributes shadowing methods, and no
    storage shared with the inputs or with earlier outputs (returning an input alias
    or a recycled buffer).
    """
    want_device = ev.config.device if ev.config.device != "cuda" else "cuda:0"
    hits = []
    for c in ev.calls:
        if not c.ok:
            continue
        refs = c.probe.ref_outputs
        ref_meta = (c.probe.reference or {}).get("outputs") or []
        tensors = c.evidence.get("tensors", [])
        if c.evidence.get("structure_problem"):
            hits.append({"probe": c.probe.kind, "problems": [c.evidence["structure_problem"]]})
        for i, t in enumerate(tensors):
            problems = []
            if not t.get("exact_tensor"):
                problems.append(f"type {t.get('type')}")
            if "device" in t and t["device"] != want_device and not (
                    want_device.startswith("cuda") and t["device"].startswith("cuda")):
                problems.append(f"device {t['device']}")
            want = None
            if i < len(refs) and hasattr(refs[i], "dtype"):
                want = str(refs[i].dtype).replace("torch.", "")
            elif i < len(ref_meta) and "dtype" in ref_meta[i]:
                want = ref_meta[i]["dtype"]
            if want is not None and "dtype" in t:
                if t["dtype"] != want:
                    problems.append(f"dtype {t['dtype']} (expected {want})")
            if t.get("storage_nbytes", 0) < t.get("needed_nbytes", 0) or t.get("null_pointer"):
                problems.append("storage smaller than the tensor (not materialised)")
            if t.get("instance_attrs"):
                problems.append(f"instance attributes {t['instance_attrs']}")
            if t.get("aliases_input"):
                problems.append("shares storage with an input")
            if t.get("aliases_earlier_output"):
                problems.append("shares storage with an earlier output")
            if problems:
                hits.append({"probe": c.probe.kind, "output": i, "problems": problems})
    if not hits:
        return []
    return [finding("RH-20", ev.config.policy, {"hits": hits[:5]})]


@detector("RH-21")
def output_unstable(ev):
    """The output read right after return must equal the output after a sync and a pause.

    Work handed to a background thread, a side stream or a graph lands after
    ``forward`` returned; a checker that only looks after a device sync sees correct
    data, but the timed interval never contained the work (A02, A15, A16).
    """
    hits = [{"probe": c.probe.kind, "index": c.probe.index} for c in ev.calls if c.ok and not c.stable]
    if not hits:
        return []
    return [finding("RH-21", ev.config.policy, {"unstable_calls": hits})]


@detector("RH-22")
def input_mutation(ev):
    """Inputs must be byte-identical after the call (A28).

    The judge fingerprints every input set it lends (correctness and timed calls) and
    checks the fingerprints again after the call, on the device; the candidate holds
    handles to its inputs, so this is checked after every call.
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
    return [finding("RH-22", ev.config.policy, {"mutated": hits[:5]})]
