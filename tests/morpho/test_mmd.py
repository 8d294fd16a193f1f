"""Kernel two-sample tests on morphometric-like data: formulas, calibration, power, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from repscope.errors import InvalidArgumentError
from repscope.metrics import mmd_linear_test, mmd_quadratic_test, scott_bandwidths

THICKNESS_SHAPE, THICKNESS_SCALE = 8.0, 0.3
THICKNESS_STD = np.sqrt(THICKNESS_SHAPE) * THICKNESS_SCALE


def morphometrics_like(rng: np.random.Generator, n: int, thickness_shift_std: float = 0.0) -> np.ndarray:
    """``(n, 5)`` columns resembling length, thickness, slant, width, height of MNIST digits: skewed
    (gamma) size and thickness, width and length driven by size, width also by thickness. The
    thickness column is shifted by ``thickness_shift_std`` of its standard deviation."""
    size = rng.gamma(9.0, 1.0, n)
    thickness = rng.gamma(THICKNESS_SHAPE, THICKNESS_SCALE, n)
    length = 5.0 + 3.0 * size + 2.0 * rng.standard_normal(n)
    slant = 0.25 * rng.standard_normal(n)
    width = 1.2 * size + 0.8 * thickness + 2.0 * rng.standard_normal(n)
    height = 18.0 + 0.2 * size + rng.standard_normal(n)
    return np.column_stack([length, thickness + thickness_shift_std * THICKNESS_STD, slant, width, height])


def rejection_rate(test, repeats: int, n: int, shift: float, seed: int, **kwargs) -> float:
    rng = np.random.default_rng(seed)
    rejected = [
        test(morphometrics_like(rng, n), morphometrics_like(rng, n, shift), **kwargs)["p_value"] < 0.05
        for _ in range(repeats)
    ]
    return float(np.mean(rejected))


# ---------------------------------------------------------------- formulas by hand


def test_scott_bandwidths_by_hand():
    x = np.array([[0.0, 10.0], [1.0, 10.0], [2.0, 13.0], [5.0, 11.0]])
    n, dims = 4, 2
    std = np.array([np.sqrt(((x[:, d] - x[:, d].mean()) ** 2).sum() / (n - 1)) for d in range(dims)])
    np.testing.assert_allclose(scott_bandwidths(x), n ** (-1 / 6) * std)
    # std of [0, 1, 2, 5] with ddof=1 is sqrt(14/3)
    assert scott_bandwidths(x)[0] == pytest.approx(4 ** (-1 / 6) * np.sqrt(14 / 3))


def test_linear_statistic_by_hand():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [9.0, 9.0]])
    y = np.array([[0.5, 0.0], [0.0, 1.0], [2.0, 2.0], [1.0, 0.0]])
    s2 = np.array([1.5, 2.0])

    def k(a, b):
        return np.exp(-np.sum((a - b) ** 2 / (2 * s2)))

    h = np.array(
        [
            k(x[0], x[1]) + k(y[0], y[1]) - k(x[0], y[1]) - k(x[1], y[0]),
            k(x[2], x[3]) + k(y[2], y[3]) - k(x[2], y[3]) - k(x[3], y[2]),
        ]
    )
    result = mmd_linear_test(x, y, bandwidth_sq=s2)
    assert result["pairs"] == 2  # the fifth row of x is not used
    assert result["mmd2"] == pytest.approx(h.mean())
    assert result["std_error"] == pytest.approx(h.std(ddof=1) / np.sqrt(2))
    assert result["z"] == pytest.approx(h.mean() / (h.std(ddof=1) / np.sqrt(2)))
    assert result["p_value"] == pytest.approx(norm.sf(result["z"]))
    assert result["bandwidth_sq"] == pytest.approx(list(s2))
    assert result["test"] == "linear"


def test_linear_default_bandwidth_adds_squared_scott_bandwidths():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 3)), rng.normal(2.0, 3.0, size=(40, 3))
    expected = scott_bandwidths(x) ** 2 + scott_bandwidths(y) ** 2
    assert mmd_linear_test(x, y)["bandwidth_sq"] == pytest.approx(list(expected))
    explicit = mmd_linear_test(x, y, bandwidth_sq=expected)
    assert explicit["mmd2"] == mmd_linear_test(x, y)["mmd2"]


def test_linear_rng_shuffles_reproducibly_and_none_keeps_order():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(200, 2)), rng.normal(size=(200, 2))
    assert mmd_linear_test(x, y, rng=5) == mmd_linear_test(x, y, rng=5)
    assert mmd_linear_test(x, y, rng=5)["mmd2"] != mmd_linear_test(x, y)["mmd2"]
    # with rng=None rows pair up in the given order; h is symmetric in the two rows of a pair, so
    # swapping them within every pair (of both samples) leaves the statistic unchanged
    swap = np.arange(200).reshape(-1, 2)[:, ::-1].ravel()
    assert mmd_linear_test(x[swap], y[swap])["mmd2"] == pytest.approx(mmd_linear_test(x, y)["mmd2"])


def test_quadratic_statistic_by_hand():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(6, 2)), rng.normal(0.5, 1.0, size=(5, 2))
    s2 = np.array([0.8, 1.3])

    def gram(a, b):
        return np.exp(-0.5 * (((a[:, None, :] - b[None, :, :]) ** 2) / s2).sum(axis=2))

    kxx, kyy, kxy = gram(x, x), gram(y, y), gram(x, y)
    m, n = len(x), len(y)
    expected = (
        (kxx.sum() - np.trace(kxx)) / (m * (m - 1))
        + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
        - 2 * kxy.sum() / (m * n)
    )
    result = mmd_quadratic_test(x, y, bandwidth_sq=s2, permutations=50, rng=0)
    assert result["mmd2"] == pytest.approx(expected, rel=1e-10)
    assert result["test"] == "quadratic" and result["permutations"] == 50
    assert 1 / 51 <= result["p_value"] <= 1.0


def test_quadratic_permutation_p_value_by_brute_force():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(8, 2)), rng.normal(0.3, 1.0, size=(7, 2))
    s2 = np.array([1.0, 1.0])
    result = mmd_quadratic_test(x, y, bandwidth_sq=s2, permutations=40, rng=11)
    # the same permutations, one by one through the statistic itself
    generator = np.random.default_rng(11)
    pooled = np.concatenate([x, y])
    order = generator.permuted(np.tile(np.arange(15), (40, 1)), axis=1)
    stats = [mmd_quadratic_test(pooled[o[:8]], pooled[o[8:]], bandwidth_sq=s2, permutations=1)["mmd2"] for o in order]
    exceed = sum(s >= result["mmd2"] - 1e-12 for s in stats)
    assert result["p_value"] == pytest.approx((1 + exceed) / 41)


def test_quadratic_statistic_ignores_row_order_and_is_symmetric():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(30, 3)), rng.normal(size=(25, 3))
    base = mmd_quadratic_test(x, y, permutations=10)["mmd2"]
    shuffled = mmd_quadratic_test(x[rng.permutation(30)], y[rng.permutation(25)], permutations=10)["mmd2"]
    swapped = mmd_quadratic_test(y, x, permutations=10)["mmd2"]
    assert shuffled == pytest.approx(base, rel=1e-10)
    assert swapped == pytest.approx(base, rel=1e-10)


def test_identical_samples_are_not_rejected():
    rng = np.random.default_rng(5)
    x = morphometrics_like(rng, 80)
    quadratic = mmd_quadratic_test(x, x.copy(), permutations=200, rng=1)
    # every row has its twin in the other sample: the split is as similar as any split can be
    assert quadratic["mmd2"] <= 0
    assert quadratic["p_value"] > 0.9
    linear = mmd_linear_test(x, x.copy())
    assert linear["mmd2"] == pytest.approx(0.0, abs=1e-12)
    assert linear["p_value"] >= 0.5


def test_quadratic_is_reproducible_from_its_seed():
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    assert mmd_quadratic_test(x, y, permutations=100, rng=3) == mmd_quadratic_test(x, y, permutations=100, rng=3)


# ---------------------------------------------------------------- calibration and power


def test_linear_test_calibration_on_one_distribution():
    # 200 repeats of two independent draws of n = 2,000 from one distribution
    rate = rejection_rate(mmd_linear_test, repeats=200, n=2000, shift=0.0, seed=20240)
    print(f"linear MMD test: rejection rate at alpha 0.05 under H0 = {rate:.3f}")
    assert 0.02 <= rate <= 0.09


def test_quadratic_test_detects_half_std_thickness_shift_at_n_2000():
    rate = rejection_rate(mmd_quadratic_test, repeats=12, n=2000, shift=0.5, seed=20241, permutations=99)
    print(f"quadratic MMD test: power against a 0.5 std thickness shift, n = 2000: {rate:.3f}")
    assert rate >= 0.9


def test_linear_test_detects_a_larger_thickness_shift_at_n_2000():
    # the linear-time test uses each row once (1,000 pairs): it trades power for speed, so at n = 2,000
    # it reliably finds a shift of 1.5 standard deviations (a 0.5 std shift needs the quadratic test)
    rate = rejection_rate(mmd_linear_test, repeats=100, n=2000, shift=1.5, seed=20242)
    print(f"linear MMD test: power against a 1.5 std thickness shift, n = 2000: {rate:.3f}")
    assert rate >= 0.9
    weak = rejection_rate(mmd_linear_test, repeats=100, n=2000, shift=0.5, seed=20243)
    print(f"linear MMD test: power against a 0.5 std thickness shift, n = 2000: {weak:.3f}")
    assert weak < rate


def test_quadratic_test_calibration_and_power_at_small_n():
    null_rate = rejection_rate(mmd_quadratic_test, repeats=100, n=60, shift=0.0, seed=20244, permutations=99)
    print(f"quadratic MMD test: rejection rate at alpha 0.05 under H0 (n = 60) = {null_rate:.3f}")
    assert 0.0 <= null_rate <= 0.12
    power = rejection_rate(mmd_quadratic_test, repeats=20, n=60, shift=2.0, seed=20245, permutations=99)
    assert power >= 0.9


def test_p_values_under_h0_are_roughly_uniform():
    rng = np.random.default_rng(20246)
    p = np.array(
        [
            mmd_quadratic_test(morphometrics_like(rng, 40), morphometrics_like(rng, 40), permutations=99, rng=r)[
                "p_value"
            ]
            for r in range(100)
        ]
    )
    # a broad check of uniformity: each half of [0, 1] holds between 35% and 65% of the p-values
    assert 0.35 <= np.mean(p < 0.5) <= 0.65
    assert 0.1 <= np.mean(p < 0.25) <= 0.4


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("test", [mmd_linear_test, mmd_quadratic_test])
def test_validation_names_the_argument(test):
    good = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(InvalidArgumentError, match=r"^x: .*2-D"):
        test(good[:, 0], good)
    with pytest.raises(InvalidArgumentError, match=r"^y: .*2-D"):
        test(good, good[:, 0])
    with pytest.raises(InvalidArgumentError, match=r"^y: .*columns"):
        test(good, good[:, :2])
    with_nan = good.copy()
    with_nan[3, 1] = np.nan
    with pytest.raises(InvalidArgumentError, match=r"^x: 1 rows hold NaN"):
        test(with_nan, good)
    with pytest.raises(InvalidArgumentError, match=r"^y: .*NaN"):
        test(good, with_nan)
    with pytest.raises(InvalidArgumentError, match=r"^y: needs at least 4 rows"):
        test(good, good[:3])
    with pytest.raises(InvalidArgumentError, match=r"^x: expected real numbers"):
        test(np.full((5, 3), "a"), good)
    with pytest.raises(InvalidArgumentError, match=r"^bandwidth_sq: expected shape \(3,\)"):
        test(good, good, bandwidth_sq=[1.0, 1.0])
    with pytest.raises(InvalidArgumentError, match=r"^bandwidth_sq: must be finite and positive"):
        test(good, good, bandwidth_sq=[1.0, 0.0, 1.0])
    constant = good.copy()
    constant[:, 2] = 7.0
    with pytest.raises(InvalidArgumentError, match=r"columns \[2\] are constant"):
        test(constant, constant)


def test_quadratic_rejects_bad_permutation_count():
    good = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(InvalidArgumentError, match=r"^permutations:"):
        mmd_quadratic_test(good, good, permutations=0)


def test_integer_input_is_accepted():
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 20, size=(30, 2)), rng.integers(0, 20, size=(30, 2))
    assert np.isfinite(mmd_linear_test(x, y)["mmd2"])
    assert np.isfinite(mmd_quadratic_test(x, y, permutations=5)["mmd2"])
