"""A timed call's staging that only the judge's trusted read writes: never lent, never filled.

Where the judge copies the frozen candidate's outputs itself (CUDA), the parent asks for
``private_stage``: the staging comes from the judge's own pool for the sample, is not
NaN-filled and cannot be lent.  Lent staging (the harness writes it) keeps its NaN fill.
"""

import os

import pytest
import torch

from kernelbench.reward_hardening.ipc.wire import recv_message


def _timed_input(judge, peer, **header):
    judge.cmd_timed_input({"cmd": "timed_input", "seed": 5, "stage": True, **header})
    reply, fds = recv_message(peer)
    assert reply.get("ok", True), reply
    for fd in fds:
        os.close(fd)
    return reply


def test_lent_staging_is_exported_and_starts_as_nan(demo_judge):
    judge, peer = demo_judge(probe_seed=3)
    reply = _timed_input(judge, peer)
    (meta,) = reply["staging"]
    assert meta["kind"] == "cpu" and not judge.timed["private_stage"]
    assert torch.isnan(judge.arena.tensor(judge.timed["stage"][0])).all()


def test_private_staging_is_neither_exported_nor_filled_and_cannot_be_lent(demo_judge):
    judge, peer = demo_judge(probe_seed=3)
    reply = _timed_input(judge, peer, private_stage=True, spots=20, hold_bytes=1 << 30)
    (meta,) = reply["staging"]
    assert meta["kind"] == "unexported" and "fd" not in meta and "handle" not in meta
    assert judge.timed["private_stage"]
    staged = judge.arena.tensor(judge.timed["stage"][0])
    assert not torch.isnan(staged).any()  # not filled: the trusted read writes what is compared
    with pytest.raises(RuntimeError, match="never lent"):  # (the command loop replies with the error)
        judge.cmd_lend({"cmd": "lend", "which": "timed"})


def test_the_parent_asks_for_private_staging_only_for_the_trusted_read_on_cuda():
    from kernelbench.reward_hardening.config import HardeningConfig
    from kernelbench.reward_hardening.parent.timed import TimedCalls

    sent = []

    class Session:
        def request(self, cmd, header):
            sent.append(header)
            raise RuntimeError("stop after the request")  # the header is all this test needs

    for device, path, stage, expected in (("cuda", "trusted", True, True), ("cuda", "harness", True, False),
                                          ("cpu", "trusted", True, False), ("cuda", "trusted", False, False)):
        calls = TimedCalls.__new__(TimedCalls)
        calls.s, calls.device, calls.cfg = Session(), device, HardeningConfig(num_perf_trials=100)
        calls.ev = type("Ev", (), {"read_path": path})()
        with pytest.raises(RuntimeError, match="stop after"):
            calls._fresh_call("timing", "time", "timing:0", False, stage=stage)
        assert sent[-1]["private_stage"] is expected
        assert sent[-1]["spots"] == 20 and sent[-1]["hold_bytes"] == calls.cfg.spot_hold_bytes


def _pool_bytes_per_call(judge, peer, warm_hold: int) -> list[int]:
    """The stage pool's segment bytes after each of six timed calls, three of them spot-checked and held."""
    sizes = []
    for k in range(6):
        judge.cmd_timed_input({"cmd": "timed_input", "seed": 10 + k, "stage": True, "private_stage": True,
                               "spots": 3, "hold_bytes": warm_hold})
        _, fds = recv_message(peer)
        for fd in fds:
            os.close(fd)
        sizes.append(sum(seg["total_size"] for seg in judge.stage_pool.snapshot()))
        judge.timed["read"] = True  # as the judge's device read marks it
        judge.cmd_check_inputs({"cmd": "check_inputs", "spot": k % 2 == 0, "defer": True, "hold_bytes": 1 << 30})
        verdict, _ = recv_message(peer)
        assert verdict["inputs_unchanged"] and verdict.get("deferred", False) is (k % 2 == 0)
    judge.cmd_check_spots({"cmd": "check_spots"})
    spots, _ = recv_message(peer)
    assert len(spots["comparisons"]) == 3
    judge.cmd_release({"cmd": "release"})
    recv_message(peer)
    assert judge.stage_pool is None
    return sizes


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only")
def test_private_staging_is_served_from_a_warmed_pool_whatever_is_held(demo_judge, add_problem):
    """After the first call no staging set needs new device memory while spot-checked sets are held;
    the same calls without the warm-up (the pool warmed for no held set) do need it."""
    judge, peer = demo_judge(device="cuda:0", probe_seed=3, source=add_problem(1024, 4096))  # 16 MiB outputs
    warmed = _pool_bytes_per_call(judge, peer, warm_hold=1 << 30)
    assert len(set(warmed)) == 1, warmed
    judge.cmd_probe({"cmd": "probe", "seed": 4})
    _, fds = recv_message(peer)
    for fd in fds:
        os.close(fd)
    judge.current = None
    cold = _pool_bytes_per_call(judge, peer, warm_hold=0)
    assert cold[-1] > cold[0], cold  # the control: held sets made the pool grow


def test_a_private_staging_set_is_compared_only_after_the_judges_read(demo_judge):
    judge, peer = demo_judge(probe_seed=3)
    judge.cmd_timed_input({"cmd": "timed_input", "seed": 5, "stage": True, "private_stage": True, "spots": 2,
                           "hold_bytes": 1 << 30})
    _, fds = recv_message(peer)
    for fd in fds:
        os.close(fd)
    with pytest.raises(RuntimeError, match="only after the judge's read"):
        judge.cmd_check_inputs({"cmd": "check_inputs", "spot": True, "defer": True, "hold_bytes": 1 << 30})
