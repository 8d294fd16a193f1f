"""Partial correlations of codes with factors: values known by hand, dummies, NaN handling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics import code_partial_correlations, partial_correlation, partial_correlation_metric


def test_controlling_for_the_other_cause_recovers_a_perfect_relation():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(20000), rng.standard_normal(20000)
    x, y = a, a + b
    # plain correlation: cov(a, a + b) / sqrt(var a * var(a + b)) = 1 / sqrt(2)
    assert partial_correlation(x, y, np.zeros((len(a), 0))) == pytest.approx(1 / np.sqrt(2), abs=0.01)
    assert partial_correlation(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
    # with b held fixed, y moves one for one with x
    assert partial_correlation(x, y, b) == pytest.approx(1.0, abs=1e-12)


def test_small_example_by_hand():
    x = np.array([1.0, 2.0, 4.0, 3.0, 6.0, 5.0])
    y = np.array([2.0, 1.0, 3.0, 5.0, 4.0, 7.0])
    z = np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.0])

    # simple regression on one control with intercept: residual = (v - mean v) - beta (z - mean z),
    # beta = S_vz / S_zz with S the centred cross-products
    def residual(v):
        vc, zc = v - v.mean(), z - z.mean()
        return vc - (vc @ zc) / (zc @ zc) * zc

    ex, ey = residual(x), residual(y)
    expected = (ex @ ey) / np.sqrt((ex @ ex) * (ey @ ey))
    # the same value from the three pairwise correlations: (r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))
    r = np.corrcoef([x, y, z])
    from_correlations = (r[0, 1] - r[0, 2] * r[1, 2]) / np.sqrt((1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2))
    assert expected == pytest.approx(from_correlations)
    assert partial_correlation(x, y, z) == pytest.approx(expected, rel=1e-12)
    assert partial_correlation(x, y, z[:, None]) == pytest.approx(expected, rel=1e-12)


def test_constant_or_fully_explained_gives_nan():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert np.isnan(partial_correlation(np.full(5, 2.0), x))
    assert np.isnan(partial_correlation(x, 2 * x + 1, x))  # x fully explained by the control
    assert np.isnan(partial_correlation(x[:3], x[:3] ** 2, np.ones((3, 1))))  # no degrees of freedom left


def test_partial_correlation_validation_names_the_argument():
    x = np.arange(6.0)
    with pytest.raises(InvalidArgumentError, match=r"^y: has 5 values"):
        partial_correlation(x, x[:5])
    with pytest.raises(InvalidArgumentError, match=r"^x: .*NaN"):
        partial_correlation(np.where(x > 3, np.nan, x), x)
    with pytest.raises(InvalidArgumentError, match=r"^controls: expected shape"):
        partial_correlation(x, x, np.ones((5, 1)))


def make_codes(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    digit = rng.integers(0, 3, n)
    c2, c3 = rng.standard_normal(n), rng.standard_normal(n)
    noise = rng.standard_normal((n, 3))
    factors = pd.DataFrame(
        {
            "slant": 0.8 * c3 + 0.1 * noise[:, 0],
            "thickness": c2 + c3 + 0.5 * noise[:, 1],
            "width": np.where(digit == 1, -2.0, 0.0) + 0.3 * c2 + noise[:, 2],
        }
    )
    return {"c1": digit, "c2": c2, "c3": c3}, factors


def test_code_partial_correlations_matches_direct_computation():
    codes, factors = make_codes(3000)
    matrix = code_partial_correlations(codes, factors, categorical=["c1"])
    assert list(matrix.index) == ["slant", "thickness", "width"]
    assert list(matrix.columns) == ["c1(1)", "c1(2)", "c1(3)", "c2", "c3"]
    continuous = np.column_stack([codes["c2"], codes["c3"]])
    for factor in factors.columns:
        y = factors[factor].to_numpy()
        assert matrix.loc[factor, "c2"] == pytest.approx(partial_correlation(codes["c2"], y, codes["c3"]))
        assert matrix.loc[factor, "c3"] == pytest.approx(partial_correlation(codes["c3"], y, codes["c2"]))
        for k in range(3):
            dummy = (codes["c1"] == k).astype(float)
            # a dummy is controlled for the continuous codes only, not for the other dummies
            assert matrix.loc[factor, f"c1({k + 1})"] == pytest.approx(partial_correlation(dummy, y, continuous))
    # the structure put in: slant is c3 only, the class-1 dummy narrows the width
    assert matrix.loc["slant", "c3"] > 0.95
    assert abs(matrix.loc["slant", "c2"]) < 0.1
    assert matrix.loc["width", "c1(2)"] < -0.5
    assert matrix.loc["thickness", "c2"] > 0.7 and matrix.loc["thickness", "c3"] > 0.7


def test_dummy_partial_correlation_by_hand():
    # with no continuous code, a dummy's partial correlation is its point-biserial correlation
    classes = np.array([0, 1, 1, 0, 2, 1])
    factor = np.array([1.0, 4.0, 5.0, 2.0, 0.5, 6.0])
    matrix = code_partial_correlations({"digit": classes}, pd.DataFrame({"f": factor}), categorical=["digit"])
    for k in range(3):
        d = (classes == k).astype(float)
        dc, fc = d - d.mean(), factor - factor.mean()
        assert matrix.loc["f", f"digit({k + 1})"] == pytest.approx((dc @ fc) / np.sqrt((dc @ dc) * (fc @ fc)))


def test_logits_and_wide_continuous_codes_expand():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((200, 4))
    wide = rng.standard_normal((200, 2))
    factors = pd.DataFrame({"f": wide[:, 1] + 0.1 * rng.standard_normal(200)})
    matrix = code_partial_correlations({"cat": logits, "cont": wide}, factors, categorical=("cat",))
    assert list(matrix.columns) == ["cat(1)", "cat(2)", "cat(3)", "cat(4)", "cont[0]", "cont[1]"]
    assert matrix.loc["f", "cont[1]"] > 0.99
    as_classes = code_partial_correlations({"cat": logits.argmax(axis=1), "cont": wide}, factors, categorical=["cat"])
    pd.testing.assert_frame_equal(matrix, as_classes)


def test_nan_factor_rows_are_dropped_per_factor_and_constants_give_nan():
    codes, factors = make_codes(500, seed=2)
    with_nan = factors.copy()
    with_nan.loc[::7, "slant"] = np.nan
    with_nan["constant"] = 3.0
    matrix = code_partial_correlations(codes, with_nan, categorical=["c1"])
    keep = with_nan["slant"].notna().to_numpy()
    expected = code_partial_correlations(
        {k: v[keep] for k, v in codes.items()}, factors.loc[keep, ["slant"]].reset_index(drop=True), categorical=["c1"]
    )
    pd.testing.assert_series_equal(matrix.loc["slant"], expected.loc["slant"])
    pd.testing.assert_series_equal(
        matrix.loc["thickness"], code_partial_correlations(codes, factors, categorical=["c1"]).loc["thickness"]
    )
    assert matrix.loc["constant"].isna().all()
    # a class that never occurs below the largest one gives a constant (all-zero) dummy
    codes["c1"] = np.where(codes["c1"] == 1, 2, codes["c1"])
    assert code_partial_correlations(codes, factors, categorical=["c1"])["c1(2)"].isna().all()


def test_code_partial_correlations_validation():
    codes, factors = make_codes(50)
    with pytest.raises(InvalidArgumentError, match=r"codes\['c2'\]: expected 50 rows"):
        code_partial_correlations({**codes, "c2": codes["c2"][:40]}, factors)
    with pytest.raises(InvalidArgumentError, match=r"codes\['c3'\]: holds NaN"):
        code_partial_correlations({**codes, "c3": np.where(codes["c3"] > 0, np.nan, 0.0)}, factors)
    with pytest.raises(InvalidArgumentError, match=r"^categorical: \['c9'\] not in codes"):
        code_partial_correlations(codes, factors, categorical=["c9"])
    with pytest.raises(InvalidArgumentError, match=r"codes\['c1'\]: classes must be 0 .. K-1"):
        code_partial_correlations({**codes, "c1": codes["c1"] - 1}, factors, categorical=["c1"])
    with pytest.raises(InvalidArgumentError, match=r"^factors: expected a pandas.DataFrame"):
        code_partial_correlations(codes, factors.to_numpy())


def test_metric_convention_wrapper_gives_the_same_numbers():
    codes, factors = make_codes(400, seed=3)
    expected = code_partial_correlations(codes, factors, categorical=["c1"])
    result = partial_correlation_metric(factors, codes, categorical=["c1"])
    pd.testing.assert_frame_equal(result["partial_correlations"], expected)
    assert result["categorical"] == ["c1"] and result["samples"] == 400
    assert result["metric"] == "partial_correlation"

    # arrays in the (factors, codes) order: an (n, F) factor array and an (n, C) code array
    continuous = np.column_stack([codes["c2"], codes["c3"]])
    from_arrays = partial_correlation_metric(factors.to_numpy(), continuous)["partial_correlations"]
    by_name = code_partial_correlations({"code": continuous}, factors)
    assert list(from_arrays.index) == ["factor[0]", "factor[1]", "factor[2]"]
    assert list(from_arrays.columns) == ["code[0]", "code[1]"]
    np.testing.assert_array_equal(from_arrays.to_numpy(), by_name.to_numpy())
    assert from_arrays.loc["factor[1]", "code[0]"] == partial_correlation(
        codes["c2"], factors["thickness"].to_numpy(), codes["c3"]
    )

    with pytest.raises(InvalidArgumentError, match=r"^factors: expected a pandas.DataFrame or an \(n, F\)"):
        partial_correlation_metric(factors["slant"].to_numpy(), continuous)
