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
    finally:
        s.close()
    assert not twin.loaded and twin.handle is None  # closed with its session


def test_without_room_in_the_plan_the_judge_times_the_reference_and_the_record_says_why():
    cfg = HardeningConfig(device="cpu", timeout=60)
    s = _session(cfg)
    try:
        twin = ReferenceTwin(s, cfg, "cpu")
        twin.start()
        s.start()  # on the CPU there is no memory plan: no twin fraction
        timer, why = _twin_ready(s, twin, cfg)
        assert timer == "judge" and "no room" in why
        assert twin.handle is None  # its worker was stopped
        assert _twin_ready(s, None, HardeningConfig(device="cpu", reference_twin=False)) == (
            "judge", "reference_twin=False")
    finally:
        s.close()


def test_twins_are_cuda_only_and_can_be_switched_off():
    cfg = HardeningConfig(device="cpu")
    s = _session(cfg)
    try:
        assert twin_for(s, cfg, "cpu") is None
        assert twin_for(s, HardeningConfig(device="cuda", reference_twin=False), "cuda:0") is None
        assert s.twin is None
    finally:
        s.close()
