"""Tests of DCI disentanglement / completeness / informativeness (repscope.metrics.disentanglement.dci)."""

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.dci import (
    completeness_from_importance,
    dci,
    disentanglement_from_importance,
)

FACTOR_SIZES = (3, 4, 5)
CHANCE_ACCURACY = float(np.mean([1 / size for size in FACTOR_SIZES]))  # 0.261
FAST = {"n_estimators": 20}


def grid_factors(repeats: int = 5, seed: int = 0) -> np.ndarray:
    """Every combination of factor values ``repeats`` times (300 rows), shuffled so both splits see every class."""
    grid = np.stack(np.meshgrid(*[np.arange(size) for size in FACTOR_SIZES], indexing="ij"), axis=-1)
    factors = np.tile(grid.reshape(-1, len(FACTOR_SIZES)), (repeats, 1))
    return factors[np.random.default_rng(seed).permutation(len(factors))]


def disentangled_codes(factors: np.ndarray, seed: int = 1) -> np.ndarray:
    return factors + np.random.default_rng(seed).normal(0.0, 0.01, factors.shape)


def entropy_reference(p: np.ndarray, base: int) -> float:
    """Entropy of ``p + 1e-11`` normalised, written out with numpy logs (disentanglement_lib's definition)."""
    q = (p + 1e-11) / np.sum(p + 1e-11)
    return float(-np.sum(q * np.log(q)) / np.log(base))


# --- the pure formulas on hand-written importance matrices -----------------------------------------


def test_identity_importance_is_perfectly_disentangled_and_complete():
    matrix = np.eye(4)
    assert disentanglement_from_importance(matrix) == pytest.approx(1.0, abs=1e-8)
    assert completeness_from_importance(matrix) == pytest.approx(1.0, abs=1e-8)
    # a permutation of the codes changes nothing
    assert disentanglement_from_importance(matrix[[2, 0, 3, 1]]) == pytest.approx(1.0, abs=1e-8)


def test_uniform_importance_scores_zero():
    matrix = np.full((3, 5), 0.2)
    assert disentanglement_from_importance(matrix) == pytest.approx(0.0, abs=1e-8)
    assert completeness_from_importance(matrix) == pytest.approx(0.0, abs=1e-8)


def test_two_by_two_by_hand():
    # rows = codes, columns = factors; total importance 2.
    # disentanglement: row 0 = (0.5, 0.5) -> entropy_2 = 1 -> 0; row 1 = (1, 0) -> entropy 0 -> 1;
    #   row weights 1/2, 1/2  ->  D = 0.5
    # completeness: column 0 = (0.5, 1) -> p = (1/3, 2/3) -> entropy_2 = 0.918296 -> 0.081704, weight 1.5/2;
    #   column 1 = (0.5, 0) -> entropy 0 -> 1, weight 0.5/2  ->  C = 0.75 * 0.081704 + 0.25 = 0.311278
    matrix = np.array([[0.5, 0.5], [1.0, 0.0]])
    assert disentanglement_from_importance(matrix) == pytest.approx(0.5, abs=1e-8)
    assert completeness_from_importance(matrix) == pytest.approx(0.311278, abs=1e-6)


def test_matches_the_written_out_formula_on_random_matrices():
    rng = np.random.default_rng(3)
    for shape in [(2, 3), (5, 2), (6, 6)]:
        matrix = rng.random(shape) ** 3
        n_codes, n_factors = shape
        total = matrix.sum()
        expected_d = sum(
            (1 - entropy_reference(matrix[row], n_factors)) * matrix[row].sum() / total for row in range(n_codes)
        )
        expected_c = sum(
            (1 - entropy_reference(matrix[:, col], n_codes)) * matrix[:, col].sum() / total for col in range(n_factors)
        )
        assert disentanglement_from_importance(matrix) == pytest.approx(expected_d, abs=1e-12)
        assert completeness_from_importance(matrix) == pytest.approx(expected_c, abs=1e-12)


def test_zero_rows_and_zero_matrix_follow_disentanglement_lib():
    # a code with no importance has weight 0: only the first code counts
    assert disentanglement_from_importance([[1.0, 0.0], [0.0, 0.0]]) == pytest.approx(1.0, abs=1e-8)
    # all zero: the 1e-11 makes every row uniform (score 0) and the weights fall back to uniform
    assert disentanglement_from_importance(np.zeros((3, 2))) == pytest.approx(0.0, abs=1e-8)
    assert completeness_from_importance(np.zeros((3, 2))) == pytest.approx(0.0, abs=1e-8)


def test_single_factor_or_single_code_is_trivially_one_not_nan():
    column = np.array([[0.3], [0.7]])
    assert disentanglement_from_importance(column) == 1.0
    assert completeness_from_importance(column) == pytest.approx(1 - entropy_reference(column[:, 0], 2), abs=1e-12)
    assert completeness_from_importance(column.T) == 1.0


@pytest.mark.parametrize(
    "matrix",
    [np.array([[1.0, -0.1]]), np.array([[np.nan, 1.0]]), np.zeros((0, 2)), np.ones(3), np.array([["a", "b"]])],
)
def test_bad_importance_matrix_is_refused(matrix):
    with pytest.raises(InvalidArgumentError, match="importance_matrix"):
        disentanglement_from_importance(matrix)
    with pytest.raises(InvalidArgumentError, match="importance_matrix"):
        completeness_from_importance(matrix)


# --- the full metric with gradient-boosted trees ------------------------------------------------------


def test_disentangled_codes_score_one_on_all_three():
    factors = grid_factors()
    result = dci(factors, disentangled_codes(factors), **FAST)
    assert result["dci_disentanglement"] > 0.99
    assert result["dci_completeness"] > 0.99
    assert result["dci_informativeness_train"] == 1.0
    assert result["dci_informativeness_test"] == 1.0
    importance = np.array(result["importance_matrix"])
    assert importance.shape == (3, 3)
    np.testing.assert_allclose(importance, np.eye(3), atol=1e-6)
    assert result["params"] == {
        "train_fraction": 0.8,
        "n_train": 240,
        "n_test": 60,
        "n_estimators": 20,
        "seed": 0,
        "classifier": "sklearn.ensemble.GradientBoostingClassifier",
    }
    assert len(result["accuracy_test_per_factor"]) == 3


def test_a_rotation_lowers_disentanglement_and_completeness_but_keeps_information():
    factors = grid_factors()
    codes = disentangled_codes(factors)
    standardised = (codes - codes.mean(axis=0)) / codes.std(axis=0)
    rotation, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(3, 3)))
    result = dci(factors, standardised @ rotation, **FAST)
    # measured: D 0.27, C 0.28, test accuracy 0.97
    assert result["dci_disentanglement"] < 0.6
    assert result["dci_completeness"] < 0.6
    assert result["dci_informativeness_test"] > 0.85


def test_independent_noise_scores_near_zero_and_near_chance():
    factors = grid_factors()
    noise = np.random.default_rng(4).normal(size=(len(factors), 5))
    result = dci(factors, noise, **FAST)
    # measured over seeds: D and C 0.01-0.03, test accuracy 0.22-0.33 (chance 0.26); train accuracy ~0.77
    assert result["dci_disentanglement"] < 0.1
    assert result["dci_completeness"] < 0.1
    assert abs(result["dci_informativeness_test"] - CHANCE_ACCURACY) < 0.15
    assert result["dci_informativeness_train"] > result["dci_informativeness_test"]


def test_same_seed_same_result_and_threads_change_nothing():
    factors = grid_factors()
    codes = np.random.default_rng(5).normal(size=(len(factors), 4)) + 0.3 * factors[:, [0, 1, 2, 0]]
    sequential = dci(factors, codes, **FAST)
    assert dci(factors, codes, **FAST) == sequential
    assert dci(factors, codes, n_jobs=2, **FAST) == sequential


def test_whole_number_floats_one_column_inputs_and_split_size():
    factors = grid_factors()[:, :1]
    codes = disentangled_codes(factors.astype(float))
    result = dci(factors.astype(np.float32), codes, train_fraction=0.5, **FAST)
    assert result["params"]["n_train"] == 150
    assert np.array(result["importance_matrix"]).shape == (1, 1)
    # one factor and one code: both scores are 1 by convention (disentanglement_lib: NaN)
    assert result["dci_disentanglement"] == 1.0
    assert result["dci_completeness"] == 1.0
    # a 1-D array is refused, as every factor/code metric refuses it (check_factors_codes): one column or one row?
    with pytest.raises(InvalidArgumentError, match=r"^factors: expected a 2-D array.*reshape\(-1, 1\)"):
        dci(factors[:, 0], codes, **FAST)
    with pytest.raises(InvalidArgumentError, match=r"^codes: expected a 2-D array.*reshape\(-1, 1\)"):
        dci(factors, codes[:, 0], **FAST)


def test_split_is_positional_first_rows_train():
    factors = grid_factors()
    codes = disentangled_codes(factors)
    # break the codes of the test rows only: training is unaffected, the test accuracy collapses
    broken = codes.copy()
    broken[240:] = np.random.default_rng(6).normal(size=(60, 3))
    clean, corrupted = dci(factors, codes, **FAST), dci(factors, broken, **FAST)
    assert corrupted["importance_matrix"] == clean["importance_matrix"]
    assert corrupted["dci_informativeness_train"] == 1.0
    assert corrupted["dci_informativeness_test"] < 0.6


@pytest.mark.parametrize(
    ("factors", "codes", "kwargs", "argument"),
    [
        (np.full((20, 1), 0.5), np.zeros((20, 2)), {}, "factors"),
        (np.array([[0.0], [np.nan]] * 10), np.zeros((20, 2)), {}, "factors"),
        (np.array([["a"]] * 20), np.zeros((20, 2)), {}, "factors"),
        (np.tile([[0], [1]], (10, 1)), np.full((20, 2), np.inf), {}, "codes"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((19, 2)), {}, "codes"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 1, 1)), {}, "codes"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"train_fraction": 0.95}, "train_fraction"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"train_fraction": 1.0}, "train_fraction"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"n_estimators": 0}, "n_estimators"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"seed": -1}, "seed"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"seed": None}, "seed"),
        (np.tile([[0], [1]], (10, 1)), np.zeros((20, 2)), {"n_jobs": 0}, "n_jobs"),
    ],
)
def test_bad_input_names_the_argument(factors, codes, kwargs, argument):
    with pytest.raises(InvalidArgumentError, match=argument):
        dci(factors, codes, **kwargs)


def test_factor_constant_in_the_training_rows_is_a_clear_error():
    # factor 1 only varies in the last 20% of rows, which the classifier never trains on
    factors = np.zeros((20, 2), dtype=int)
    factors[:, 0] = np.arange(20) % 2
    factors[16:, 1] = 1
    with pytest.raises(InvalidArgumentError, match="column 1 takes the single value 0"):
        dci(factors, np.random.default_rng(0).normal(size=(20, 2)))
