"""The judge's comparison follows ``torch.isclose`` exactly, non-finite values included."""

from __future__ import annotations

import torch

from kernelbench.reward_hardening.judge.compare import compare, compare_tensor


def test_mismatch_count_equals_torch_isclose_with_infinities_and_nans():
    gen = torch.Generator().manual_seed(1)
    for trial in range(60):
        ref = torch.randn(500, generator=gen)
        scale = 10.0 ** -(trial % 7)
        out = ref + torch.randn(500, generator=gen) * scale
        for t in (ref, out):
            idx = torch.randint(0, 500, (5,), generator=gen)
            t[idx[:2]], t[idx[2:4]], t[idx[4]] = float("inf"), float("-inf"), float("nan")
        if trial % 3 == 0:
            out[:40] = ref[:40]
        ok, _, _, _, counts = compare_tensor(out, ref, 1e-4)
        expected = int((~torch.isclose(ref, out, rtol=1e-4, atol=1e-4)).sum())
        assert counts["mismatched"] == expected
        assert ok is (expected == 0)


def test_an_infinite_output_never_matches_a_finite_reference():
    ref = torch.rand(1000)
    out = ref.clone()
    out[123] = float("inf")
    result = compare([out], [ref], "fp32")
    assert not result.match and result.mismatched == 1 and result.non_finite == 1


def test_equal_outputs_match_and_report_zero_error():
    ref = torch.rand(1 << 16)
    result = compare([ref.clone()], [ref], "fp32")
    assert result.match and result.max_abs == 0.0 and result.mismatched == 0
