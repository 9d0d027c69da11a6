"""kernelbench.score: upstream fast_p / geomean vectors, numerical robustness, pass@k."""

import math

import numpy as np
import pytest

from kernelbench.score import (
    fastp,
    geometric_mean_speed_ratio_correct_and_faster_only,
    geometric_mean_speed_ratio_correct_only,
    pass_at_k,
)

ABS_TOL = 1e-7

# Upstream KernelBench test vectors (interface reference 5.4).
ROW1 = ([1, 0, 1, 1, 0], [0.1, 0.15, 0.2, 0.05, 0.3], [0.2, 0.15, 0.3, 0.01, 0.2], 5)
ROW2 = ([1, 1, 1, 1, 0], [0.24, 0.31, 100.0, 0.0001, 0.3], [0.3, 0.3, 200.0, 0.0001, 0.3], 5)
NONE_CORRECT = ([0, 0, 0, 0, 0], [0.1, 0.15, 0.2, 0.05, 0.3], [0.2, 0.15, 0.3, 0.01, 0.2], 5)
ALL_ZERO = ([0, 0, 0, 0, 0], [0.0] * 5, [0.0] * 5, 5)


def _upstream_geomean(is_correct, baseline, actual):
    """Upstream's raw-product formula, for bit-exact comparison on benign inputs."""
    b = np.array([x for i, x in enumerate(baseline) if is_correct[i]])
    a = np.array([x for i, x in enumerate(actual) if is_correct[i]])
    k = np.sum(is_correct)
    return np.prod(b / a) ** (1 / k) if k > 0 else 0


@pytest.mark.parametrize("row, expected", [(ROW1, 1.185631101), (ROW2, 0.801816719)])
def test_geomean_correct_only_vectors(row, expected):
    assert math.isclose(geometric_mean_speed_ratio_correct_only(*row), expected, abs_tol=ABS_TOL)
    # bit-identical to upstream's formula on the documented vectors
    assert geometric_mean_speed_ratio_correct_only(*row) == float(_upstream_geomean(*row[:3]))


@pytest.mark.parametrize("row, expected", [(ROW1, 5.0), (ROW2, 1.033333333)])
def test_geomean_correct_and_faster_vectors(row, expected):
    assert math.isclose(geometric_mean_speed_ratio_correct_and_faster_only(*row), expected, abs_tol=ABS_TOL)


@pytest.mark.parametrize(
    "row, p, expected",
    [(ROW1, 1.0, 0.2), (ROW2, 1.0, 0.2), (ROW1, 0.5, 0.4), (ROW2, 0.5, 0.6)],
)
def test_fastp_vectors(row, p, expected):
    assert math.isclose(fastp(*row, p), expected, abs_tol=ABS_TOL)


@pytest.mark.parametrize("row", [NONE_CORRECT, ALL_ZERO])
def test_zero_inputs_give_zero(row):
    assert geometric_mean_speed_ratio_correct_only(*row) == 0
    assert geometric_mean_speed_ratio_correct_and_faster_only(*row) == 0
    for p in (0.0, 0.5, 1.0):
        assert fastp(*row, p) == 0


def test_fastp_is_strict_and_divides_by_n():
    # speedups exactly 1.0 and 2.0: strictly greater than p only
    is_correct, baseline, actual = [1, 1, 0], [1.0, 2.0, 5.0], [1.0, 1.0, 1.0]
    assert fastp(is_correct, baseline, actual, 3, 1.0) == pytest.approx(1 / 3)
    assert fastp(is_correct, baseline, actual, 3, 0.0) == pytest.approx(2 / 3)
    assert fastp(is_correct, baseline, actual, 3, 2.0) == 0
    # denominator is n, whatever it is
    assert fastp(is_correct, baseline, actual, 10, 0.0) == pytest.approx(0.2)


def test_fastp_n_zero():
    assert fastp([], [], [], 0, 0.0) == 0
    assert fastp([1], [1.0], [0.5], 0, 0.0) == 0


def test_correct_but_untimed_sample_drops_out_of_fast0():
    # a correct record with the -1.0 runtime placeholder has a negative speedup
    assert fastp([1, 1], [1.0, 1.0], [0.5, -1.0], 2, 0.0) == pytest.approx(0.5)


def test_negative_speedup_gives_nan_like_upstream():
    assert math.isnan(geometric_mean_speed_ratio_correct_only([1, 1], [1.0, 1.0], [0.5, -1.0], 2))
    # upstream's product of two negatives would be positive; reported as NaN here
    assert math.isnan(geometric_mean_speed_ratio_correct_only([1, 1], [1.0, 1.0], [-1.0, -1.0], 2))
    # the faster-only variant ignores non-faster (negative) speedups, as upstream
    assert geometric_mean_speed_ratio_correct_and_faster_only([1, 1], [1.0, 1.0], [0.5, -1.0], 2) == 2.0


def test_zero_and_infinite_speedups_follow_upstream():
    assert geometric_mean_speed_ratio_correct_only([1, 1], [0.0, 1.0], [1.0, 1.0], 2) == 0.0
    assert geometric_mean_speed_ratio_correct_only([1, 1], [1.0, 1.0], [0.0, 1.0], 2) == math.inf


def test_geomean_does_not_overflow_or_underflow():
    k = 400
    big = geometric_mean_speed_ratio_correct_only([1] * k, [1e10] * k, [1.0] * k, k)
    small = geometric_mean_speed_ratio_correct_only([1] * k, [1.0] * k, [1e10] * k, k)
    assert big == pytest.approx(1e10, rel=1e-12)
    assert small == pytest.approx(1e-10, rel=1e-12)
    faster = geometric_mean_speed_ratio_correct_and_faster_only([1] * k, [1e10] * k, [1.0] * k, k)
    assert faster == pytest.approx(1e10, rel=1e-12)
    # upstream's raw product overflows here
    with np.errstate(over="ignore"):
        assert math.isinf(_upstream_geomean([1] * k, [1e10] * k, [1.0] * k))


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError):
        fastp([1, 1], [1.0], [1.0, 1.0], 2, 0.0)


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (5, 0, 1, 0.0),
        (5, 5, 1, 1.0),
        (5, 1, 1, 0.2),
        (10, 3, 1, 0.3),
        (5, 2, 2, 1 - (3 * 2) / (5 * 4)),  # 1 - C(3,2)/C(5,2) = 0.7
        (10, 3, 5, 1 - math.comb(7, 5) / math.comb(10, 5)),
        (4, 1, 4, 1.0),  # n - c < k
        (3, 1, 10, 1.0),  # k clamped to n
        (3, 0, 10, 0.0),  # k clamped to n, nothing correct
        (0, 0, 1, 0.0),  # no samples
    ],
)
def test_pass_at_k(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n, c, k", [(3, 4, 1), (-1, 0, 1), (3, -1, 1), (3, 1, 0)])
def test_pass_at_k_rejects_invalid(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
