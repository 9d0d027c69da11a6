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
    """Max error, error and reference norms and the finite error sum add up over chunks (a non-finite chunk in float64)."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 1000)
    torch.manual_seed(0)
    ref = torch.randn(4321)
    out = ref + 1e-3 * torch.randn(4321)
    out[17] = float("inf")  # a non-finite element in the first chunk
    ok, max_abs, num, den, counts = cmp.compare_tensor(out, ref, 1e-4)
    d = (out - ref).abs().to(torch.float64)
    assert not ok and max_abs == float("inf") and num == float("inf")
    assert den == pytest.approx(float((ref.to(torch.float64) ** 2).sum()), rel=1e-6)
    assert counts["abs_sum"] == pytest.approx(float(d[torch.isfinite(d)].sum()), rel=1e-6)
    assert counts["non_finite"] == 1
    assert counts["mismatched"] == int((~torch.isclose(out, ref, rtol=1e-4, atol=1e-4)).sum())


def _f64_formulas(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float, float]:
    d = (out - ref).abs().to(torch.float64)
    return float(d.max()), float((d * d).sum()), float((ref.to(torch.float64) ** 2).sum()), float(d.sum())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e4])
def test_first_pass_sums_agree_with_float64_formulas(monkeypatch, dtype, scale):
    """Chunks, rows and a tail row: the first pass's sums are float64's within 1e-5 at any magnitude."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 1000)
    monkeypatch.setattr(cmp, "_ROW", 64)
    gen = torch.Generator().manual_seed(3)
    ref = (torch.randn(9_037, generator=gen) * scale).to(dtype)
    out = (ref.to(torch.float64) + torch.randn(9_037, generator=gen, dtype=torch.float64) * scale * 1e-3).to(dtype)
    ok, max_abs, num, den, counts = cmp.compare_tensor(out, ref, cmp.tolerance("fp32"))
    m, sq, ref_sq, abs_sum = _f64_formulas(out, ref)
    assert max_abs == m
    assert num == pytest.approx(sq, rel=1e-5) and den == pytest.approx(ref_sq, rel=1e-5)
    assert counts["abs_sum"] == pytest.approx(abs_sum, rel=1e-5)
    assert counts["mismatched"] == int((~torch.isclose(out, ref, rtol=1e-4, atol=1e-4)).sum())
    assert ok is (counts["mismatched"] == 0)


def test_sums_past_float32_range_are_taken_in_float64(monkeypatch):
    """Squares beyond float32's range overflow a float32 row: that chunk is summed again in float64."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 256)
    ref = torch.full((1000,), 3e19)
    ref[::2] = 1.0
    out = ref.clone()
    out[1] = out[1] * (1 + 1e-6)
    ok, max_abs, num, den, counts = cmp.compare_tensor(out, ref, 1e-4)
    m, sq, ref_sq, abs_sum = _f64_formulas(out, ref)
    assert ok and max_abs == m and den == pytest.approx(ref_sq, rel=1e-12) and num == pytest.approx(sq, rel=1e-12)


def test_errors_above_the_absolute_tolerance_are_counted_by_the_relative_rule(monkeypatch):
    """Large values: errors above tol but within tol * |out| are close; the others are counted, chunk by chunk."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 500)
    ref = torch.linspace(1e3, 2e3, 4000)
    out = ref + 0.05  # within 1e-4 + 1e-4 * |out| (0.1 or more)
    ok, _, _, _, counts = cmp.compare_tensor(out, ref, 1e-4)
    assert ok and counts["mismatched"] == 0
    out[[7, 1999, 3999]] += 1.0
    ok, _, _, _, counts = cmp.compare_tensor(out, ref, 1e-4)
    assert not ok and counts["mismatched"] == 3 == int((~torch.isclose(out, ref, rtol=1e-4, atol=1e-4)).sum())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_outputs_against_float32_are_compared_as_if_widened_whole(monkeypatch, dtype):
    """A reduced-precision variant's outputs are widened a chunk at a time, with the numbers of a whole widening."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 512)
    gen = torch.Generator().manual_seed(5)
    ref = torch.randn(5000, generator=gen)
    half = (ref + 1e-3 * torch.randn(5000, generator=gen)).to(dtype)
    assert cmp.compare([half], [ref], "fp32").as_dict() == cmp.compare([half.float()], [ref], "fp32").as_dict()


def test_integer_outputs_are_compared_in_float64_a_chunk_at_a_time(monkeypatch):
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 100)
    ref = torch.arange(1000, dtype=torch.int64)
    out = ref.clone()
    assert cmp.compare([out], [ref], "fp32").match
    out[[3, 999]] += 1
    result = cmp.compare([out], [ref], "fp32")
    assert not result.match and result.mismatched == 2 and result.max_abs == 1.0


def test_tiny_values_keep_their_relative_error(monkeypatch):
    """Values whose float32 squares underflow (below about 1e-19) get their sums in float64."""
    from kernelbench.reward_hardening.judge import compare as cmp

    monkeypatch.setattr(cmp, "_CHUNK", 256)
    for scale in (1e-21, 1e-22, 1e-30):
        ref = torch.rand(3000) * scale + scale
        result = cmp.compare([ref * 1.01], [ref], "fp32")
        assert result.match and result.rel_error == pytest.approx(0.01, rel=1e-3), (scale, result.rel_error)


def test_complex_outputs_compare_both_parts():
    ref = torch.randn(1000, dtype=torch.complex64)
    out = ref.clone()
    assert compare([out], [ref], "fp32").match
    out.imag[17] += 1.0  # only the imaginary part differs
    result = compare([out], [ref], "fp32")
    assert not result.match and result.mismatched == 1


def test_same_values_sees_the_imaginary_part():
    from kernelbench.reward_hardening.judge.compare import same_values

    a = torch.randn(50, dtype=torch.complex64)
    b = a.clone()
    assert same_values([a], [b])
    b.imag[3] += 1.0
    assert not same_values([a], [b])
