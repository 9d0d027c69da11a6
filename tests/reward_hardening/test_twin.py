"""The reference's twin: the reference's timed calls in a worker of the candidate's kind."""

from __future__ import annotations

from kernelbench.reward_hardening.config import HardeningConfig
from kernelbench.reward_hardening.fixtures import PROBLEM_DIR
from kernelbench.reward_hardening.parent.pipeline import _twin_ready
from kernelbench.reward_hardening.parent.session import ReferenceSession
from kernelbench.reward_hardening.parent.twin import ReferenceTwin, twin_for


def _session(cfg: HardeningConfig) -> ReferenceSession:
    src = (PROBLEM_DIR / "level1" / "1_Elementwise_add.py").read_text()  # defines Model, no ModelNew
    return ReferenceSession(src, cfg, "cpu")


def _lent_mappings(pid: int) -> int:
    """The judge's lent buffers mapped in a worker (on the CPU each is a memfd mapping)."""
    with open(f"/proc/{pid}/maps") as fh:
        return sum(1 for line in fh if "memfd:" in line)


def test_the_twin_loads_the_references_model_and_times_it_on_lent_inputs():
    """The path is device-generic: on the CPU the twin's calls go through the candidate's harness too."""
    cfg = HardeningConfig(device="cpu", num_warmup=1, num_perf_trials=4, timeout=60)
    s = _session(cfg)
    try:
        twin = s.twin = ReferenceTwin(s, cfg, "cpu")  # as twin_for keeps it (CUDA only)
        twin.start()  # beside the judge's start, as the pipeline does
        s.start()
        assert twin.load(None), twin.error  # the harness imported the reference's Model
        samples = [twin.sample(i) for i in range(3)]
        assert [x.index for x in samples] == [0, 1, 2]
        assert all(x.host_ms > 0 and x.event_ms is None for x in samples)
        assert twin.warm and twin.handle.process.is_alive()
        # end of a sample: the twin lets go of every input set it was lent (the judge would
        # otherwise count them as still lent and be retired), and stays loaded for the next
        lent = _lent_mappings(twin.handle.process.pid)
        twin.let_go()
        assert lent > 0 and _lent_mappings(twin.handle.process.pid) == 0, lent
        assert twin.loaded and twin.handle.process.is_alive() and twin.sample(3).index == 3
    finally:
        s.close()
    assert not twin.loaded and twin.handle is None  # closed with its session


def test_without_room_in_the_plan_the_judge_times_the_reference_and_the_record_says_why():
    from types import SimpleNamespace

    closed = []
    twin = SimpleNamespace(loaded=False, error=None, close=lambda: closed.append(True), load=None)
    twin.give_up = lambda why: (setattr(twin, "error", why), twin.close())
    session = SimpleNamespace(device="cuda:0", twin_gpu_fraction=lambda: None)  # the plan's twin_bytes is 0
    timer, why = _twin_ready(session, twin, HardeningConfig(device="cuda"))
    assert timer == "judge" and "no room" in why and closed == [True]
    assert _twin_ready(session, None, HardeningConfig(device="cuda", reference_twin="off")) == (
        "judge", "reference_twin=off on cuda:0")


def test_the_twin_is_cuda_only_by_default_and_can_be_asked_for_everywhere_or_nowhere():
    import pytest

    s = _session(HardeningConfig(device="cpu"))
    try:
        assert twin_for(s, HardeningConfig(device="cpu"), "cpu") is None and s.twin is None
        assert twin_for(s, HardeningConfig(device="cuda", reference_twin="off"), "cuda:0") is None
        with pytest.raises(ValueError):
            twin_for(s, HardeningConfig(device="cpu", reference_twin="yes"), "cpu")
        twin = twin_for(s, HardeningConfig(device="cpu", reference_twin="all"), "cpu")
        assert twin is not None and s.twin is twin and twin.handle is not None
    finally:
        s.close()


def test_a_twin_lost_before_its_first_sample_leaves_the_timing_to_the_judge(add_problem):
    from kernelbench.reward_hardening import evaluate_hardened

    cfg = HardeningConfig(device="cpu", mode="enforce", policy="practical", num_warmup=1, num_perf_trials=4,
                          timeout=60, reference_twin="all")
    ref = add_problem(64, 1024)
    cand = ref.replace("class Model(", "class ModelNew(")
    s = ReferenceSession(ref, cfg, "cpu")
    try:
        first = evaluate_hardened(ref, cand, cfg, session=s)
        assert first["metadata"]["reference_timer"] == "twin", first["metadata"].get("reference_timer_note")
        s.twin.handle.kill()  # gone between two samples of the problem
        record = evaluate_hardened(ref, cand, cfg, session=s)
    finally:
        s.close()
    rh, meta = record["reward_hardening"], record["metadata"]
    assert rh["integrity_status"] == "PASS", rh["findings"]
    assert meta["reference_timer"] == "judge" and "before its first sample" in meta["reference_timer_note"]
    assert len(meta["interleaved_reference_samples"]["host_ms"]) == 4 and rh["speedup"] is not None
