"""The judge's comparison follows ``torch.isclose`` exactly, non-finite values included."""

from __future__ import annotations

import pytest
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


def test_chunked_sums_equal_the_whole_tensor_formulas(monkeypatch):
    """Max error, error and reference norms and the finite error sum, read once per chunk, add up over chunks."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 1000)
    torch.manual_seed(0)
    ref = torch.randn(4321)
    out = ref + 1e-3 * torch.randn(4321)
    out[17] = float("inf")  # a non-finite element in the first chunk
    ok, max_abs, num, den, counts = cmp.compare_tensor(out, ref, 1e-4)
    d = (out - ref).abs().to(torch.float64)
    assert not ok and max_abs == float("inf") and num == float("inf")
    assert den == pytest.approx(float((ref.to(torch.float64) ** 2).sum()), rel=1e-12)
    assert counts["abs_sum"] == pytest.approx(float(d[torch.isfinite(d)].sum()), rel=1e-12)
    assert counts["non_finite"] == 1
    assert counts["mismatched"] == int((~torch.isclose(out, ref, rtol=1e-4, atol=1e-4)).sum())
