"""The timed calls' input check: a private copy of a secret sample of rows for large inputs.

Every timed call gets a fresh input set that the judge copies (a sample of it) before
the call and compares after it.  Above ``SAMPLE_MIN_BYTES`` the copy covers
``SAMPLE_FRACTION`` of the rows, drawn from a key that never leaves the judge;
correctness probes keep the whole-tensor fingerprint.
"""

import json
import os

import pytest
import torch

from kernelbench.reward_hardening.ipc import lending
from kernelbench.reward_hardening.ipc.lending import InputCheck, import_tensor, input_checks
from kernelbench.reward_hardening.ipc.wire import recv_message
from kernelbench.reward_hardening.parent.records import request_totals

ROW = lending._ROW


@pytest.fixture
def sampled(monkeypatch):
    """Sampling from 64 KiB up, so that CPU-sized tensors take the sampled branch."""
    monkeypatch.setattr(lending, "SAMPLE_MIN_BYTES", 64 << 10)


def _rows(n_rows: int, tail: int = 0) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.rand(n_rows * ROW + tail)


def test_small_tensors_are_copied_whole_and_large_ones_on_a_sample(monkeypatch):
    x = _rows(64, 5)  # 1 MiB: under the default threshold
    check = InputCheck(x, 12345)
    assert check.rows is None and check.nbytes == x.numel() * 4 and check.unchanged(x)
    monkeypatch.setattr(lending, "SAMPLE_MIN_BYTES", 0)
    check = InputCheck(x, 12345)
    assert check.rows is not None and check.nbytes == (4 * ROW + 5) * 4  # 4 of 64 rows and the tail
    assert check.unchanged(x.clone())


def test_a_set_is_copied_whole_up_to_the_threshold_smallest_tensors_first(sampled):
    """However many tensors a set has, its whole copies stay within SAMPLE_MIN_BYTES (64 KiB here)."""
    sizes_kib = [64, 16, 1024, 32]  # 16 and 32 fit the budget; 64 would exceed what is left
    tensors = [torch.rand(k * 256) for k in sizes_kib]
    checks = input_checks(tensors, 9)
    assert [c.rows is None for c in checks] == [False, True, False, True]
    assert sum(c.nbytes for c in checks if c.rows is None) <= lending.SAMPLE_MIN_BYTES
    assert all(c.unchanged(t) for c, t in zip(checks, tensors))
    tensors[1][-1] += 1.0  # a whole-copied tensor: any single change is seen
    assert not checks[1].unchanged(tensors[1])


def test_the_copy_is_private_and_the_same_key_draws_the_same_rows(sampled):
    x = _rows(1024, 77)
    check = InputCheck(x, 7)
    assert check.bits.data_ptr() != x.data_ptr() and check.unchanged(x) and check.unchanged(x.clone())
    assert torch.equal(InputCheck(x, 7).rows, check.rows)
    assert len({tuple(InputCheck(x, k).rows.tolist()) for k in range(20)}) == 20


@pytest.mark.parametrize("change", ["zero", "add_one", "negate", "tail_only", "nan_payload"])
def test_a_change_to_every_row_or_to_the_tail_is_seen_under_every_key(change, sampled):
    x = _rows(1024, 77)
    x[3] = float("nan")  # a NaN left as it is stays equal (bits compared, not values)
    checks = [InputCheck(x, k) for k in range(50)]
    assert all(c.unchanged(x) for c in checks)
    if change == "zero":
        x.zero_()
    elif change == "add_one":
        x.add_(1)
    elif change == "negate":
        x.neg_()
    elif change == "tail_only":
        x[-1] += 1.0
    else:  # another NaN: the same value to allclose, other bits
        x.view(torch.int32)[::ROW] = 0x7FC00001
    assert not any(c.unchanged(x) for c in checks)


def test_a_change_to_one_row_is_seen_about_as_often_as_the_sampled_share(sampled):
    """With 1/16 of the rows sampled, one changed row is seen under about 1 key in 16 (fixed keys: deterministic)."""
    x = _rows(1024)
    checks = [InputCheck(x, k) for k in range(800)]
    x[517 * ROW + 9] += 1.0
    seen = sum(not c.unchanged(x) for c in checks)
    assert 800 * lending.SAMPLE_FRACTION * 0.5 <= seen <= 800 * lending.SAMPLE_FRACTION * 1.6, seen


def test_the_check_holds_and_reads_a_fraction_of_the_tensor(sampled):
    """The cost the sample buys: the copy and the comparison's gather are the sample's size, not the tensor's."""
    from torch.profiler import ProfilerActivity, profile

    x = _rows(4096)  # 64 MiB; 256 rows sampled
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        check = InputCheck(x, 3)
        assert check.unchanged(x)
    allocated = sum(max(e.cpu_memory_usage, 0) for e in prof.events())
    assert check.nbytes == 256 * ROW * 4
    assert allocated <= 3 * check.nbytes, allocated  # the copy and one gather: well under the 64 MiB


@pytest.mark.parametrize("write", [None, "whole", "one_element_per_row"])
def test_the_judge_checks_timed_inputs_on_a_sample_it_never_reveals(write, demo_judge, sampled):
    judge, peer = demo_judge()
    judge.cmd_timed_input({"cmd": "timed_input", "seed": 11})
    reply, fds = recv_message(peer)
    rows = [c.rows for c in judge.timed["checks"] if c.rows is not None]
    assert rows and str(rows[0].tolist()[:4])[1:-1] not in json.dumps(reply)  # the rows sampled stay in the judge
    assert {"generate", "check", "export"} <= set(reply["split_ms"])
    inputs = [import_tensor(it["shared"], fds) for it in reply["inputs"]]
    assert inputs[0].numel() * 4 > lending.SAMPLE_MIN_BYTES  # the sampled branch
    if write == "whole":
        inputs[0].mul_(0.5)  # an in-place operation on a lent input
    elif write == "one_element_per_row":
        inputs[1].reshape(-1)[::ROW] = -1.0
    judge.cmd_check_inputs({"cmd": "check_inputs"})
    verdict, _ = recv_message(peer)
    assert verdict["inputs_unchanged"] is (write is None)
    assert {"check", "release"} <= set(verdict["split_ms"])
    for fd in fds:
        os.close(fd)


def test_request_totals_add_the_judges_parts_and_ignore_malformed_ones():
    reqs = [{"role": "reference", "cmd": "check_inputs", "ms": 10.0, "split": {"digest": 6.0, "release": 3.0}},
            {"role": "reference", "cmd": "check_inputs", "ms": 12.0, "split": {"digest": 7.0, "bad": "x",
                                                                               "nan": float("nan")}},
            {"role": "candidate", "cmd": "time", "ms": 1.0}]
    got = request_totals(reqs)
    assert got["reference:check_inputs"] == {"n": 2, "ms": 22.0}
    assert got["reference:check_inputs.digest"] == {"n": 2, "ms": 13.0}
    assert got["reference:check_inputs.release"] == {"n": 1, "ms": 3.0}
    assert not any(k.endswith((".bad", ".nan")) for k in got)
