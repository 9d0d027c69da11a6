"""The timed calls' input check: a digest of a secret sample of rows for large inputs.

Every timed call gets a fresh input set that the judge digests before the call and
again after it.  Above ``SAMPLE_MIN_BYTES`` the digest covers ``SAMPLE_FRACTION`` of
the rows, drawn from a key that never leaves the judge; correctness probes keep the
whole-tensor fingerprint.
"""

import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest
import torch

from kernelbench.reward_hardening.ipc import lending
from kernelbench.reward_hardening.ipc.lending import fingerprint, import_tensor, input_digest
from kernelbench.reward_hardening.ipc.wire import recv_message
from kernelbench.reward_hardening.judge.worker import Judge
from kernelbench.reward_hardening.parent.records import request_totals

DEMO = Path(__file__).resolve().parents[2] / "src" / "kernelbench" / "demo_tasks"
ROW = lending._ROW


@pytest.fixture
def sampled(monkeypatch, host_sums):
    """Sampling from 64 KiB up, so that CPU-sized tensors take the sampled branch."""
    monkeypatch.setattr(lending, "SAMPLE_MIN_BYTES", 64 << 10)


def _rows(n_rows: int, tail: int = 0) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.rand(n_rows * ROW + tail)


def test_small_tensors_and_calls_without_a_key_get_the_whole_fingerprint(monkeypatch, host_sums):
    x = _rows(64, 5)  # 1 MiB: under the default threshold
    assert input_digest(x, 12345) == fingerprint(x) == input_digest(x)
    monkeypatch.setattr(lending, "SAMPLE_MIN_BYTES", 0)
    assert input_digest(x) == fingerprint(x)  # no key: never sampled
    assert input_digest(x, 12345) != fingerprint(x)  # a sample of 4 rows and the tail


def test_the_same_key_gives_the_same_digest_and_keys_draw_different_rows(sampled):
    x = _rows(1024, 77)
    assert input_digest(x, 7) == input_digest(x.clone(), 7)
    assert len({input_digest(x, k) for k in range(20)}) == 20


def test_the_sampled_digest_is_the_same_whatever_the_block_size(monkeypatch, sampled):
    x = _rows(1024, 77)  # 64 rows sampled: one block, then four of 16
    one_block = input_digest(x, 5)
    monkeypatch.setattr(lending, "_BLOCK_ROWS", 16)
    assert input_digest(x, 5) == one_block


@pytest.mark.parametrize("change", ["zero", "add_one", "negate", "tail_only"])
def test_a_change_to_every_row_or_to_the_tail_is_seen_under_every_key(change, sampled):
    x = _rows(1024, 77)
    y = x.clone()
    if change == "zero":
        y.zero_()
    elif change == "add_one":
        y.add_(1)
    elif change == "negate":
        y.neg_()
    else:
        y[-1] += 1.0
    assert all(input_digest(y, k) != input_digest(x, k) for k in range(50))


def test_a_change_to_one_row_is_seen_about_as_often_as_the_sampled_share(sampled):
    """With 1/16 of the rows sampled, one changed row is seen under about 1 key in 16 (fixed keys: deterministic)."""
    x = _rows(1024)
    y = x.clone()
    y[517 * ROW + 9] += 1.0
    seen = sum(input_digest(y, k) != input_digest(x, k) for k in range(800))
    assert 800 * lending.SAMPLE_FRACTION * 0.5 <= seen <= 800 * lending.SAMPLE_FRACTION * 1.6, seen


def test_the_sample_reads_a_fraction_of_the_tensor(sampled):
    """The cost the sample buys: the widened copy is one sampled block's, not the tensor's."""
    from torch.profiler import ProfilerActivity, profile

    x = _rows(4096)  # 64 MiB; 256 rows sampled
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        input_digest(x, 3)
    allocated = sum(max(e.cpu_memory_usage, 0) for e in prof.events())
    assert allocated <= 4 * 256 * ROW * 8, allocated  # the gathered rows, widened: well under the 64 MiB


def _judge(tmp_path):
    a, b = mp.Pipe(duplex=True)
    src = tmp_path / "ref.py"
    src.write_text((DEMO / "level1/1_Elementwise_add.py").read_text())
    judge = Judge(a, {"device": "cpu", "precision": "fp32", "source_path": str(src)})
    judge.cmd_load({"cmd": "load"})
    recv_message(b)
    return judge, b


@pytest.mark.parametrize("write", [None, "whole", "one_element_per_row"])
def test_the_judge_checks_timed_inputs_on_a_sample_it_never_reveals(write, tmp_path, sampled):
    judge, peer = _judge(tmp_path)
    judge.cmd_timed_input({"cmd": "timed_input", "seed": 11})
    reply, fds = recv_message(peer)
    key = judge.timed["sample_key"]
    assert str(key) not in json.dumps(reply)  # the rows sampled stay in the judge
    assert {"generate", "digest", "export"} <= set(reply["split_ms"])
    inputs = [import_tensor(it["shared"], fds) for it in reply["inputs"]]
    assert inputs[0].numel() * 4 > lending.SAMPLE_MIN_BYTES  # the sampled branch
    if write == "whole":
        inputs[0].mul_(0.5)  # an in-place operation on a lent input
    elif write == "one_element_per_row":
        inputs[1].reshape(-1)[::ROW] = -1.0
    judge.cmd_check_inputs({"cmd": "check_inputs"})
    verdict, _ = recv_message(peer)
    assert verdict["inputs_unchanged"] is (write is None)
    assert {"digest", "release"} <= set(verdict["split_ms"])
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
