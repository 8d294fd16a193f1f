"""The 16 variance-matrix features of the ML4ML invariance testing paper (Sec. VII).

The expected values on the 4x4 matrix ``M`` (n = 3) are worked out by hand below, element by element,
without the module's helpers.
"""

import math

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.invariance import features as F

# Not symmetric, so a reading that mixes up rows and columns fails. Meaningful (strict lower) elements:
# M[1,0]=0.1, M[2,0]=0.3, M[2,1]=0.2, M[3,0]=0.5, M[3,1]=0.4, M[3,2]=0.2.
M = np.array(
    [
        [0.0, 0.1, 0.2, 0.4],
        [0.1, 0.0, 0.3, 0.2],
        [0.3, 0.2, 0.0, 0.1],
        [0.5, 0.4, 0.2, 0.0],
    ]
)
LOWER = [0.1, 0.3, 0.2, 0.5, 0.4, 0.2]
MEAN = (0.1 + 0.3 + 0.2 + 0.5 + 0.4 + 0.2) / 6

# Diagonal filled with the mean of the in-range 4-neighbours:
# D[0,0] = (M[1,0] + M[0,1]) / 2 = (0.1 + 0.1) / 2
# D[1,1] = (M[0,1] + M[2,1] + M[1,0] + M[1,2]) / 4 = (0.1 + 0.2 + 0.1 + 0.3) / 4
# D[2,2] = (M[1,2] + M[3,2] + M[2,1] + M[2,3]) / 4 = (0.3 + 0.2 + 0.2 + 0.1) / 4
# D[3,3] = (M[2,3] + M[3,2]) / 2 = (0.1 + 0.2) / 2
D_DIAGONAL = [0.1, 0.175, 0.2, 0.15]
# e_hg[i, j] = D[i, j-1] - D[i, j], i = 1..3, j = 1..i, row by row
HG_ROWS = [[0.1 - 0.175], [0.3 - 0.2, 0.2 - 0.2], [0.5 - 0.4, 0.4 - 0.2, 0.2 - 0.15]]
# e_vg[i, j] = D[i+1, j] - D[i, j], j = 0..2, i = j..2, column by column
VG_COLUMNS = [[0.1 - 0.1, 0.3 - 0.1, 0.5 - 0.3], [0.2 - 0.175, 0.4 - 0.2], [0.2 - 0.2]]
# e_dg[i, j] = D[i+1, j-1] - D[i, j]: (1,1) D[2,0]-D[1,1], (2,1) D[3,0]-D[2,1], (2,2) D[3,1]-D[2,2]
DG = [0.3 - 0.175, 0.5 - 0.2, 0.4 - 0.2]


def pstd(values):
    mu = sum(values) / len(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))


def test_fill_diagonal_with_neighbours_by_hand():
    filled = F.fill_diagonal_with_neighbours(M)
    np.testing.assert_allclose(np.diag(filled), D_DIAGONAL)
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_array_equal(filled[off], M[off])
    assert np.all(np.diag(M) == 0)  # the input is untouched


def test_squared_value_mean_by_hand():
    squares = (0.1**2 + 0.2**2 + 0.4**2) + (0.1**2 + 0.3**2 + 0.2**2) + (0.3**2 + 0.2**2 + 0.1**2)
    squares += 0.5**2 + 0.4**2 + 0.2**2
    assert F.squared_value_mean(M) == pytest.approx(squares / (2 * 4**2))


def test_mean_std_significant_variance_by_hand():
    assert F.mean(M) == pytest.approx(1.7 / 6)
    expected_std = math.sqrt(
        (
            (0.1 - MEAN) ** 2
            + (0.3 - MEAN) ** 2
            + (0.2 - MEAN) ** 2
            + (0.5 - MEAN) ** 2
            + (0.4 - MEAN) ** 2
            + (0.2 - MEAN) ** 2
        )
        / 6
    )
    assert F.std(M) == pytest.approx(expected_std)
    assert F.significant_variance(M) == pytest.approx(5 / 6)  # all but 0.1 exceed 0.15
    assert F.significant_variance(M, tau=0.35) == pytest.approx(2 / 6)  # 0.5 and 0.4


def test_sensitivity_by_hand():
    subsample = np.array(
        [
            [9.0, 9.0, 9.0, 9.0],  # upper triangle and diagonal are ignored
            [0.2, 9.0, 9.0, 9.0],
            [0.3, 0.1, 9.0, 9.0],
            [0.5, 0.4, 0.4, 9.0],
        ]
    )
    expected = ((0.1 - 0.2) ** 2 + 0.0 + (0.2 - 0.1) ** 2 + 0.0 + 0.0 + (0.2 - 0.4) ** 2) / 6
    assert F.sensitivity(M, subsample) == pytest.approx(expected)


def test_horizontal_gradients_by_hand():
    values = [-0.075, 0.1, 0.0, 0.1, 0.2, 0.05]
    np.testing.assert_allclose([v for row in HG_ROWS for v in row], values, atol=1e-12)
    hg_mean = (-0.075 + 0.1 + 0.0 + 0.1 + 0.2 + 0.05) / 6
    assert F.horizontal_gradient_mean(M) == pytest.approx(hg_mean)
    assert F.horizontal_gradient_std(M) == pytest.approx(math.sqrt(sum((v - hg_mean) ** 2 for v in values) / 6))
    row3_mean = (0.1 + 0.2 + 0.05) / 3
    row3_std = math.sqrt(((0.1 - row3_mean) ** 2 + (0.2 - row3_mean) ** 2 + (0.05 - row3_mean) ** 2) / 3)
    assert F.horizontal_gradient_row_std(M) == pytest.approx((0.0 + 0.05 + row3_std) / 3)


def test_vertical_gradients_by_hand():
    values = [0.0, 0.2, 0.2, 0.025, 0.2, 0.0]
    np.testing.assert_allclose([v for column in VG_COLUMNS for v in column], values, atol=1e-12)
    vg_mean = (0.0 + 0.2 + 0.2 + 0.025 + 0.2 + 0.0) / 6
    assert F.vertical_gradient_mean(M) == pytest.approx(vg_mean)
    assert F.vertical_gradient_std(M) == pytest.approx(math.sqrt(sum((v - vg_mean) ** 2 for v in values) / 6))
    column0_std = math.sqrt(((0.0 - 0.4 / 3) ** 2 + 2 * (0.2 - 0.4 / 3) ** 2) / 3)
    column1_std = (0.2 - 0.025) / 2
    assert F.vertical_gradient_column_std(M) == pytest.approx((column0_std + column1_std + 0.0) / 3)


def test_diagonal_gradients_and_overall_gradient_by_hand():
    dg_mean = (0.125 + 0.3 + 0.2) / 3
    dg_std = math.sqrt(((0.125 - dg_mean) ** 2 + (0.3 - dg_mean) ** 2 + (0.2 - dg_mean) ** 2) / 3)
    assert sum(DG) / 3 == pytest.approx(dg_mean)
    assert F.diagonal_gradient_mean(M) == pytest.approx(dg_mean)
    assert F.diagonal_gradient_std(M) == pytest.approx(dg_std)
    hg = [v for row in HG_ROWS for v in row]
    vg = [v for column in VG_COLUMNS for v in column]
    expected = (sum(hg) / 6 / pstd(hg) + sum(vg) / 6 / pstd(vg) + dg_mean / dg_std) / 3
    assert F.overall_gradient(M) == pytest.approx(expected)


def test_discontinuity_and_asymmetry_by_hand():
    mu1 = (0.1 + 0.2 + 0.2) / 3  # sub-diagonal r = 1: M[1,0], M[2,1], M[3,2]
    mu2 = (0.3 + 0.4) / 2  # r = 2: M[2,0], M[3,1]; r = n = 3 is not summed
    spread = (0.1 - mu1) ** 2 + (0.2 - mu1) ** 2 + (0.2 - mu1) ** 2 + (0.3 - mu2) ** 2 + (0.4 - mu2) ** 2
    assert F.discontinuity(M) == pytest.approx(spread / MEAN)
    # (i, j) vs (3-j, 3-i): (1,0)~(3,2), (2,0)~(3,1), (2,1) and (3,0) are their own mirrors
    total = abs(0.1 - 0.2) + abs(0.3 - 0.4) + 0.0 + 0.0 + abs(0.4 - 0.3) + abs(0.2 - 0.1)
    assert F.asymmetry(M) == pytest.approx(total / MEAN)


def test_a_zero_matrix_gives_zero():
    zero = np.zeros((5, 5))
    for name in ("mean", "std", "significant_variance", "discontinuity", "asymmetry", "overall_gradient"):
        assert getattr(F, name)(zero) == 0.0, name


def test_overall_gradient_of_a_flat_matrix_is_zero_not_nan():
    ones = np.ones((6, 6)) - np.eye(6)
    assert F.horizontal_gradient_std(ones) == 0.0
    assert F.overall_gradient(ones) == 0.0


def test_asymmetry_vanishes_exactly_for_symmetry_about_the_second_diagonal():
    a = np.random.default_rng(0).uniform(0.1, 1.0, (7, 7))
    persymmetric = (a + a[::-1, ::-1].T) / 2  # delta[i, j] == delta[n-j, n-i]
    n = 6
    assert all(persymmetric[i, j] == pytest.approx(persymmetric[n - j, n - i]) for i in range(7) for j in range(7))
    assert F.asymmetry(persymmetric) == pytest.approx(0.0, abs=1e-12)
    perturbed = persymmetric.copy()
    perturbed[4, 1] += 0.3
    assert F.asymmetry(perturbed) > 0.1


def test_scaling():
    delta = np.random.default_rng(1).uniform(0.0, 1.0, (7, 7))
    c = 3.0
    assert F.mean(c * delta) == pytest.approx(c * F.mean(delta))
    assert F.std(c * delta) == pytest.approx(c * F.std(delta))
    assert F.squared_value_mean(c * delta) == pytest.approx(c**2 * F.squared_value_mean(delta))
    assert F.discontinuity(c * delta) == pytest.approx(c * F.discontinuity(delta))
    assert F.asymmetry(c * delta) == pytest.approx(F.asymmetry(delta))
    assert F.asymmetry(delta) > 0 and F.discontinuity(delta) > 0


def test_toeplitz_has_no_discontinuity():
    lag = np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    toeplitz = 0.05 * lag**2 + 0.01 * lag
    assert F.discontinuity(toeplitz) == pytest.approx(0.0, abs=1e-12)
    bumped = toeplitz.copy()
    bumped[3, 1] += 0.1
    assert F.discontinuity(bumped) > 0


def test_significant_variance_is_strictly_greater():
    at_tau = np.full((4, 4), 0.15)
    assert F.significant_variance(at_tau) == 0.0
    assert F.significant_variance(at_tau, tau=0.1499) == 1.0
    above = at_tau.copy()
    above[2, 1] = 0.16
    assert F.significant_variance(above) == pytest.approx(1 / 6)


def test_sensitivity_against_itself_and_a_shift():
    assert F.sensitivity(M, M) == 0.0
    shifted = M + 0.1 * np.tri(4, k=-1)
    assert F.sensitivity(M, shifted) == pytest.approx(0.01)
    assert F.sensitivity(M, M + 0.5 * np.triu(np.ones((4, 4)))) == 0.0  # only the lower triangle counts


def test_matrix_features_keys_and_values():
    with_subsample = F.matrix_features(M, subsample_matrix=M + 0.1 * np.tri(4, k=-1))
    assert tuple(with_subsample) == F.FEATURE_NAMES and len(F.FEATURE_NAMES) == 16
    without = F.matrix_features(M)
    assert tuple(without) == tuple(name for name in F.FEATURE_NAMES if name != "sensitivity")
    assert len(without) == 15
    assert with_subsample["sensitivity"] == pytest.approx(0.01)
    assert all(type(value) is float for value in with_subsample.values())
    assert without["asymmetry"] == F.asymmetry(M) and without["mean"] == F.mean(M)
    assert F.matrix_features(M, tau=0.35)["significant_variance"] == pytest.approx(2 / 6)


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((2, 5)), r"^matrix: expected a square matrix of at least 3x3, got shape \(2, 5\)"),
        (np.zeros((2, 2)), r"^matrix: .*got shape \(2, 2\)"),
        (np.zeros(9), r"^matrix: .*got shape \(9,\)"),
        (np.where(np.eye(4) == 1, np.nan, 0.1), r"^matrix: .*NaN"),
        (np.full((3, 3), np.inf), r"^matrix: .*infinite"),
        (np.array([["a", "b", "c"]] * 3), r"^matrix: expected real numbers"),
    ],
)
def test_bad_matrix_is_rejected(bad, message):
    for function in (F.mean, F.asymmetry, F.horizontal_gradient_row_std, F.matrix_features):
        with pytest.raises(InvalidArgumentError, match=message):
            function(bad)


def test_bad_subsample_and_tau_are_rejected():
    with pytest.raises(InvalidArgumentError, match=r"^subsample_matrix: expected shape \(4, 4\)"):
        F.sensitivity(M, np.zeros((3, 3)))
    with pytest.raises(InvalidArgumentError, match=r"^subsample_matrix: .*NaN"):
        F.matrix_features(M, subsample_matrix=np.full((4, 4), np.nan))
    with pytest.raises(InvalidArgumentError, match=r"^tau:"):
        F.significant_variance(M, tau=float("nan"))
