"""The 16 variance-matrix features as the authors' released code computes them (``compat="reference"``).

Zukang-Liao/ML4ML-invariance-testing reads a matrix in ``measurement.py:plot_confidence_gradient`` (with
``angle_difference_grad`` and ``utils.py:fillin_relation_diagonal``, ``get_continuity``,
``get_asymmetry``) after ``utils.py:get_relations`` flips its rows. The expected values below are worked
out in our own orientation (row ``i``, column ``j`` = transformations ``i``, ``j``), element by element,
from those rules translated by hand: a flipped row ``r`` of the released code is our row ``N-1-r``.
The pinned numbers ``RELEASED`` were printed by the released functions themselves on ``M7`` and ``R7``.
"""

import math

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.invariance import features as F

N = 7
# Not symmetric (M7[1, 0] = 0.10, M7[0, 1] = 0.12, ...), zero diagonal, growing away from the diagonal.
M7 = np.array(
    [
        [0.00, 0.12, 0.25, 0.31, 0.47, 0.52, 0.66],
        [0.10, 0.00, 0.14, 0.22, 0.35, 0.41, 0.58],
        [0.21, 0.13, 0.00, 0.09, 0.26, 0.33, 0.45],
        [0.34, 0.20, 0.11, 0.00, 0.16, 0.27, 0.38],
        [0.43, 0.36, 0.24, 0.18, 0.00, 0.15, 0.29],
        [0.55, 0.44, 0.30, 0.23, 0.17, 0.00, 0.19],
        [0.61, 0.57, 0.48, 0.37, 0.28, 0.08, 0.00],
    ]
)
# The subsample matrix: M7 plus 0.01 * ((3i + 2j) mod 5 - 2), so the differences are -0.02 .. 0.02.
R7 = M7 + np.array([[0.01 * ((3 * i + 2 * j) % 5 - 2) for j in range(N)] for i in range(N)])

# Printed by the released code's own functions on M7 / R7 (aid = 0, flip_y = True, tau = 0.15).
RELEASED = {
    "sensitivity": 0.5900000000000003,
    "vertical_gradient_mean": 0.054999999999999986,
    "vertical_gradient_std": 0.08148181216864112,
    "vertical_gradient_column_std": 0.0713341909207642,
    "horizontal_gradient_mean": 0.05571428571428573,
    "horizontal_gradient_std": 0.08398250546685182,
    "horizontal_gradient_row_std": 0.08496541854267169,
    "diagonal_gradient_mean": 0.04750000000000001,
    "diagonal_gradient_std": 0.08297841084683814,
    "mean": 0.299795918367347,
    "squared_value_mean": 0.11129591836734692,
    "std": 0.14635001092458447,
    "significant_variance": 0.8163265306122449,
    "discontinuity": 0.4917755201150177,
    "asymmetry": 0.10074880871341046,
    "overall_gradient": 0.6663952612451548,
}


def pstd(values):
    values = list(values)
    mu = sum(values) / len(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))


def mean_of(values):
    values = list(values)
    return sum(values) / len(values)


def filled_by_hand(m):
    """The released fill in our orientation (N = 7, centre rows/columns 2..4 of ours).

    Flipped row 0 is our row 6: D[6, 6] = M[6, 5]; flipped row 6 is our row 0: D[0, 0] = M[0, 1];
    flipped rows 1 and 5 are our rows 5 and 1: D[k, k] = (M[k, k+1] + M[k-1, k]) / 2; flipped rows
    2..4 (centre) are our rows 4..2 and their columns 2..4 all take (F[2, 5] + F[5, 4]) / 2, that is
    (M[4, 5] + M[1, 4]) / 2.
    """
    d = [list(row) for row in m]
    d[6][6] = m[6][5]
    d[0][0] = m[0][1]
    for k in (5, 1):
        d[k][k] = (m[k][k + 1] + m[k - 1][k]) / 2
    block = (m[4][5] + m[1][4]) / 2
    for a in (2, 3, 4):
        for b in (2, 3, 4):
            d[a][b] = block
    return d


def released_by_hand(m, m_r, tau=0.15):
    d = filled_by_hand(m)
    everything = [d[a][b] for a in range(N) for b in range(N)]
    # vertical: flipped row r = our row R = N-1-r holds D[R+1, j] - D[R, j], j = 0..R; flipped rows 3, 4
    # (our rows 3, 2) left out; the per-line std of flipped rows 1, 2, 5 (our 5, 4, 1), the last (our 0) not
    v_lines = {R: [d[R + 1][j] - d[R][j] for j in range(R + 1)] for R in (5, 4, 1, 0)}
    v_values = [g for R in (5, 4, 1, 0) for g in v_lines[R]]
    v_line_std = mean_of(pstd(v_lines[R]) for R in (5, 4, 1))
    # horizontal: column c = 1, 2, 5, 6 (3 and 4 left out) holds D[R, c-1] - D[R, c], R = c..N-1; the
    # per-column std of all but the last column (6, one value)
    h_lines = {c: [d[R][c - 1] - d[R][c] for R in range(c, N)] for c in (1, 2, 5, 6)}
    h_values = [g for c in (1, 2, 5, 6) for g in h_lines[c]]
    h_line_std = mean_of(pstd(h_lines[c]) for c in (1, 2, 5))
    # "diagonal": the vertical map again, columns 1..R, flipped row 3 (our row 3) left out, our row 2 kept
    d_values = [d[R + 1][j] - d[R][j] for R in (5, 4, 2, 1) for j in range(1, R + 1)]
    overall = (mean_of(h_values) / h_line_std + mean_of(v_values) / v_line_std + mean_of(d_values) / pstd(d_values)) / 3
    m_all = sum(everything) / (N * N - N)
    # discontinuity: our sub-diagonals k = 0..N-2 (main diagonal filled), weight (N - k) / N
    discontinuity = sum((N - k) * pstd(d[j + k][j] for j in range(N - k)) / N for k in range(N - 1)) / m_all
    # asymmetry: pairs mirrored about the second diagonal, (a, b) with a + b < N - 1
    pairs = [abs(d[a][b] - d[N - 1 - b][N - 1 - a]) for a in range(N) for b in range(N) if a + b < N - 1]
    return {
        "squared_value_mean": mean_of(v * v for v in everything),
        "mean": mean_of(everything),
        "std": pstd(everything),
        "significant_variance": sum(v > tau for v in everything) / len(everything),
        "sensitivity": sum(abs(m[a][b] - m_r[a][b]) for a in range(N) for b in range(N)),
        "horizontal_gradient_mean": mean_of(h_values),
        "horizontal_gradient_std": pstd(h_values),
        "horizontal_gradient_row_std": h_line_std,
        "vertical_gradient_mean": mean_of(v_values),
        "vertical_gradient_std": pstd(v_values),
        "vertical_gradient_column_std": v_line_std,
        "diagonal_gradient_mean": mean_of(d_values),
        "diagonal_gradient_std": pstd(d_values),
        "overall_gradient": overall,
        "discontinuity": discontinuity,
        "asymmetry": mean_of(pairs) / m_all,
    }


HAND = released_by_hand(M7.tolist(), R7.tolist())


def test_the_hand_rules_agree_with_the_released_code_printout():
    for name, value in RELEASED.items():
        assert HAND[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("name", F.FEATURE_NAMES)
def test_each_reference_feature_by_hand(name):
    result = F.matrix_features(M7, R7, compat="reference")
    assert result[f"{name}_reference"] == pytest.approx(HAND[name], rel=1e-12, abs=1e-15)


def test_keys_say_the_mode_in_the_paper_order():
    with_subsample = F.matrix_features(M7, R7, compat="reference")
    assert tuple(with_subsample) == tuple(f"{name}_reference" for name in F.FEATURE_NAMES)
    without = F.reference_matrix_features(M7)
    assert "sensitivity_reference" not in without and len(without) == 15
    assert without["asymmetry_reference"] == with_subsample["asymmetry_reference"]


def test_the_input_is_not_modified_and_tau_counts():
    before = M7.copy()
    result = F.reference_matrix_features(M7, tau=0.3)
    np.testing.assert_array_equal(M7, before)
    filled = filled_by_hand(M7.tolist())
    expected = sum(v > 0.3 for row in filled for v in row) / N**2
    assert result["significant_variance_reference"] == pytest.approx(expected)


def test_a_transposed_matrix_changes_the_direction_features():
    # the released fill and gradient windows are not symmetric under transposition
    plain, transposed = F.reference_matrix_features(M7), F.reference_matrix_features(M7.T)
    assert plain["vertical_gradient_mean_reference"] != pytest.approx(transposed["vertical_gradient_mean_reference"])
    assert plain["asymmetry_reference"] != pytest.approx(transposed["asymmetry_reference"])


def test_a_flat_matrix_gives_nan_ratios_as_the_released_code():
    with np.errstate(all="ignore"):
        result = F.reference_matrix_features(np.zeros((N, N)))
    assert math.isnan(result["overall_gradient_reference"]) and math.isnan(result["asymmetry_reference"])
    assert result["mean_reference"] == 0.0


# The default (the paper's printed formulas) on M7 / R7, printed by the module as it was before the
# reference mode was added.
PAPER = {
    "squared_value_mean": 0.05130408163265306,
    "mean": 0.30380952380952386,
    "std": 0.15764566024794763,
    "significant_variance": 0.8095238095238095,
    "sensitivity": 0.0001714285714285717,
    "horizontal_gradient_mean": 0.0675,
    "horizontal_gradient_std": 0.060341291240504864,
    "horizontal_gradient_row_std": 0.042937365018523015,
    "vertical_gradient_mean": 0.07583333333333332,
    "vertical_gradient_std": 0.06250872954908994,
    "vertical_gradient_column_std": 0.044514346218471036,
    "diagonal_gradient_mean": 0.17083333333333334,
    "diagonal_gradient_std": 0.0652218436483429,
    "overall_gradient": 1.650355499901907,
    "discontinuity": 0.053449059561128505,
    "asymmetry": 2.567398119122256,
}


def test_the_default_is_unchanged():
    default = F.matrix_features(M7, R7)
    assert default == F.matrix_features(M7, R7, compat="paper")
    assert tuple(default) == F.FEATURE_NAMES
    for name, value in PAPER.items():
        assert default[name] == pytest.approx(value, rel=1e-13), name
    # two printed formulas by hand: the 1/2 of feature 1 and the strict lower triangle of feature 2
    assert default["squared_value_mean"] == pytest.approx(float((M7**2).sum()) / (2 * N * N))
    lower = [M7[i, j] for i in range(N) for j in range(i)]
    assert default["mean"] == pytest.approx(sum(lower) / len(lower))


def test_bad_input_names_the_argument():
    with pytest.raises(InvalidArgumentError, match="compat"):
        F.matrix_features(M7, compat="released")
    with pytest.raises(InvalidArgumentError, match="matrix: .*5x5"):
        F.matrix_features(M7[:4, :4], compat="reference")
    with pytest.raises(InvalidArgumentError, match="subsample_matrix"):
        F.reference_matrix_features(M7, R7[:6, :6])
    with pytest.raises(InvalidArgumentError, match="tau"):
        F.reference_matrix_features(M7, tau=float("nan"))


def test_cli_features_compat_reference_writes_named_values(tmp_path, run_cli):
    import json

    path = tmp_path / "m7.npy"
    np.save(path, M7)
    code, stdout, stderr = run_cli(["invariance", "features", str(path), "--compat", "reference"])
    assert code == 0, stderr
    printed = json.loads(stdout)
    assert printed["compat"] == "reference" and len(printed["features"]) == 15
    for name in F.FEATURE_NAMES:
        if name != "sensitivity":
            assert printed["features"][f"{name}_reference"] == pytest.approx(HAND[name], rel=1e-12, abs=1e-15)
    out = tmp_path / "features.json"
    code, stdout, _ = run_cli(["invariance", "features", str(path), "--compat", "reference", "-o", str(out)])
    assert code == 0 and json.loads(out.read_text())["features"] == printed["features"]
    # the default output keeps its names and its values
    code, stdout, _ = run_cli(["invariance", "features", str(path)])
    assert code == 0 and json.loads(stdout)["features"]["mean"] == pytest.approx(PAPER["mean"], rel=1e-13)
    code, _, stderr = run_cli(["invariance", "features", str(path), "--compat", "released"])
    assert code != 0 and "--compat" in stderr
    small = tmp_path / "small.npy"
    np.save(small, M7[:4, :4])
    code, _, stderr = run_cli(["invariance", "features", str(small), "--compat", "reference"])
    assert code == 1 and "5x5" in stderr and len(stderr.strip().splitlines()) == 1
