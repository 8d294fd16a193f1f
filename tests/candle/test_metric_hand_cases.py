"""Asymmetric hand-computed cases (3 latents x 3 factors) for MIG, SAP and modularity.

The expected values are worked out here with plain numpy from the printed formulas; nothing is imported
from ``repscope.metrics.disentanglement`` except the functions under test. Every factor's column of the
score matrix has three distinct entries, so a gap taken to the wrong latent, a transposed matrix or a
factor/latent swap changes the result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from repscope.metrics.disentanglement.information import mig, modularity_explicitness, sap

# 16 rows, factors with 3, 2 and 4 classes; codes are integer levels (0..3), so every level falls in its
# own bin of a 20-bin equal-width histogram and the discretised codes are a relabelling of these values
FACTORS = np.array(
    [[2, 0, 2], [1, 1, 3], [2, 0, 3], [2, 0, 3], [1, 1, 2], [2, 0, 2], [2, 0, 1], [0, 0, 3],
     [0, 1, 1], [0, 0, 0], [0, 1, 3], [2, 0, 0], [2, 0, 3], [0, 1, 2], [1, 1, 0], [2, 1, 0]]
)  # fmt: skip
CODES = np.array(
    [[2, 1, 3], [1, 2, 3], [2, 1, 3], [2, 1, 0], [1, 2, 2], [0, 1, 2], [2, 0, 1], [0, 1, 3],
     [0, 1, 1], [0, 0, 0], [0, 2, 3], [2, 0, 0], [2, 1, 3], [0, 2, 2], [1, 1, 0], [2, 1, 0]],
    dtype=float,
)  # fmt: skip


def hand_mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    """sum_{x,y} p(x,y) log(p(x,y) / (p(x) p(y))) in nats, by counting."""
    total = 0.0
    for x in np.unique(a):
        for y in np.unique(b):
            joint = np.mean((a == x) & (b == y))
            if joint > 0:
                total += joint * math.log(joint / (np.mean(a == x) * np.mean(b == y)))
    return total


def hand_entropy(a: np.ndarray) -> float:
    return -sum(np.mean(a == x) * math.log(np.mean(a == x)) for x in np.unique(a))


def hand_information_matrix(factors: np.ndarray, codes: np.ndarray) -> np.ndarray:
    return np.array(
        [[hand_mutual_information(codes[:, i], factors[:, k]) for k in range(factors.shape[1])] for i in range(3)]
    )


def test_fixture_has_three_distinct_informations_per_factor():
    information = hand_information_matrix(FACTORS, CODES)
    for k in range(3):
        column = sorted(information[:, k], reverse=True)
        assert column[0] - column[1] > 0.05 and column[1] - column[2] > 0.05
    # the best latent is not the same index as the factor for every factor after a transpose
    assert not np.allclose(information, information.T, atol=0.05)


def test_mig_three_latents_gap_to_second_best():
    information = hand_information_matrix(FACTORS, CODES)
    expected_per_factor = []
    for k in range(3):
        first, second, _last = sorted(information[:, k], reverse=True)
        expected_per_factor.append((first - second) / hand_entropy(FACTORS[:, k]))
    result = mig(FACTORS, CODES)
    np.testing.assert_allclose(result["mutual_information"], information, atol=1e-12)
    np.testing.assert_allclose(result["mig_per_factor"], expected_per_factor, atol=1e-12)
    assert result["mig"] == pytest.approx(np.mean(expected_per_factor), abs=1e-12)
    # hand-worked value of factor 0: I = 0.85497 (latent 0), 0.25391 (latent 1), H = ln-entropy of (5, 3, 8)/16
    entropy_0 = -(5 / 16 * math.log(5 / 16) + 3 / 16 * math.log(3 / 16) + 8 / 16 * math.log(8 / 16))
    assert result["mig_per_factor"][0] == pytest.approx((0.85496835 - 0.25390997) / entropy_0, abs=1e-7)


def test_modularity_three_latents_three_factors():
    num_train = math.ceil(16 * 0.8)  # first 13 rows train
    information = hand_information_matrix(FACTORS[:num_train], CODES[:num_train])
    expected = []
    for row in information:
        best = np.max(row**2)
        expected.append(1.0 - (np.sum(row**2) - best) / (best * 2))
    result = modularity_explicitness(FACTORS, CODES)
    assert result["modularity_score"] == pytest.approx(np.mean(expected), abs=1e-12)


def test_sap_continuous_three_latents_gap_to_second_best():
    rng = np.random.default_rng(3)
    factors = rng.normal(size=(40, 3))
    # latent 0 tracks factor 1 best, latent 2 factor 0, latent 1 a mixture: no symmetric structure
    codes = np.stack(
        [
            factors[:, 1] + 0.3 * factors[:, 0] + 0.1 * rng.normal(size=40),
            0.5 * factors[:, 2] + 0.6 * factors[:, 0] + 0.4 * rng.normal(size=40),
            factors[:, 0] + 0.2 * factors[:, 2] + 0.3 * rng.normal(size=40),
        ],
        axis=1,
    )
    num_train = 32
    scores = np.array(
        [[np.corrcoef(codes[:num_train, i], factors[:num_train, k])[0, 1] ** 2 for k in range(3)] for i in range(3)]
    )
    for k in range(3):  # three distinct entries per factor: a gap to the last latent would differ
        column = sorted(scores[:, k], reverse=True)
        assert column[1] - column[2] > 0.005
    expected = [sorted(scores[:, k], reverse=True)[0] - sorted(scores[:, k], reverse=True)[1] for k in range(3)]
    result = sap(factors, codes, continuous_factors=True)
    np.testing.assert_allclose(result["score_matrix"], scores, atol=1e-10)
    np.testing.assert_allclose(result["sap_per_factor"], expected, atol=1e-10)
    assert result["sap"] == pytest.approx(np.mean(expected), abs=1e-10)


def test_dci_importance_rows_are_codes_columns_are_factors():
    from repscope.metrics.disentanglement.dci import dci

    rng = np.random.default_rng(5)
    factors = np.stack([rng.integers(0, 3, 60), rng.integers(0, 2, 60), rng.integers(0, 4, 60)], axis=1)
    # a cyclic (non-involutive) assignment: code 0 copies factor 1, code 1 factor 2, code 2 factor 0
    codes = factors[:, [1, 2, 0]].astype(float) + 0.01 * rng.normal(size=(60, 3))
    result = dci(factors, codes, n_estimators=5, seed=0)
    importance = np.array(result["importance_matrix"])
    assert importance.shape == (3, 3)
    # column k (factor k) has its importance on the code that copies it: factor 0 -> code 2, 1 -> 0, 2 -> 1
    assert list(importance.argmax(axis=0)) == [2, 0, 1]
    assert result["dci_disentanglement"] > 0.9 and result["dci_completeness"] > 0.9


def hand_irs(factors: np.ndarray, codes: np.ndarray, quantile: float) -> tuple[np.ndarray, float]:
    """Suter et al.'s IRS with disentanglement_lib's rules, written out: rows latents, columns factors."""
    matrix = np.empty((codes.shape[1], factors.shape[1]))
    max_devs = np.empty(codes.shape[1])
    for latent in range(codes.shape[1]):
        z = codes[:, latent]
        max_devs[latent] = np.max(np.abs(z - z.mean()))
        for factor in range(factors.shape[1]):
            deviations = []
            for value in np.unique(factors[:, factor]):
                group = z[factors[:, factor] == value]
                deviations.append(np.quantile(np.abs(group - group.mean()), quantile))
            matrix[latent, factor] = 1.0 - np.mean(deviations) / max_devs[latent]
    per_latent = matrix.max(axis=1)
    return matrix, float(np.sum(max_devs * per_latent) / np.sum(max_devs))


@pytest.mark.parametrize("quantile", [1.0, 0.5])
def test_irs_three_latents_three_factors_by_hand(quantile):
    from repscope.metrics.disentanglement.irs import irs

    # unequal scales and a row-dependent wobble: no two latents alike, the matrix is not symmetric
    codes = CODES * np.array([1.0, 0.5, 2.0]) + 0.1 * np.sin(np.arange(48.0)).reshape(16, 3)
    matrix, score = hand_irs(FACTORS, codes, quantile)
    assert not np.allclose(matrix, matrix.T, atol=0.05)
    result = irs(FACTORS, codes, diff_quantile=quantile)
    np.testing.assert_allclose(result["irs_matrix"], matrix, atol=1e-12)
    np.testing.assert_allclose(result["irs_per_latent"], matrix.max(axis=1), atol=1e-12)
    assert result["irs"] == pytest.approx(score, abs=1e-12)


def test_cg_three_factors_three_latents_soft_judges_by_hand():
    from repscope.metrics.disentanglement.counterfactual import counterfactual_generativeness

    factors = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    codes = np.array([[0.2, -1.0, 0.5], [1.5, 0.3, -0.4], [-0.6, 0.9, 1.2], [0.8, -0.2, 0.1], [0.1, 0.4, -1.1]])
    mixing = np.array([[1.0, 0.2, -0.3], [0.1, 0.8, 0.5], [-0.4, 0.3, 1.2]])
    readout = np.array([[0.9, -0.4, 0.2], [0.3, 1.1, -0.5], [-0.2, 0.6, 0.7]])  # row i: factor i's judge
    q_sets = [[1], [2], [0]]  # factor 0 <- latent 1, 1 <- 2, 2 <- 0: no latent matches its own index

    def decode(z):
        return z @ mixing

    def predict(images):
        p1 = 1.0 / (1.0 + np.exp(-(images @ readout.T)))  # (n, 3): P(class 1) per factor
        return [np.stack([1 - p1[:, i], p1[:, i]], axis=1) for i in range(3)]

    def true_probability(z, i, label):
        p1 = 1.0 / (1.0 + np.exp(-(z @ mixing @ readout[i])))
        return p1 if label == 1 else 1.0 - p1

    low, high = codes.min(axis=0), codes.max(axis=0)
    per_factor, ice_q, ice_o = np.zeros(3), np.zeros(3), np.zeros(3)
    for z, labels in zip(codes, factors):
        baseline = np.array([low[j] if abs(z[j] - low[j]) >= abs(z[j] - high[j]) else high[j] for j in range(3)])
        for i, chosen in enumerate(q_sets):
            on_q, on_others = z.copy(), baseline.copy()
            on_q[chosen] = baseline[chosen]
            on_others[chosen] = z[chosen]
            p0 = true_probability(z, i, labels[i])
            a = abs(p0 - true_probability(on_q, i, labels[i]))
            b = abs(p0 - true_probability(on_others, i, labels[i]))
            per_factor[i] += abs(a - b) / 5
            ice_q[i] += a / 5
            ice_o[i] += b / 5
    result = counterfactual_generativeness(factors, codes, q_sets, decode, predict, batch_size=2)
    np.testing.assert_allclose(result["cg_per_factor"], per_factor, atol=1e-12)
    np.testing.assert_allclose(result["ice_q"], ice_q, atol=1e-12)
    np.testing.assert_allclose(result["ice_others"], ice_o, atol=1e-12)
    assert result["cg"] == pytest.approx(per_factor.mean(), abs=1e-12)
    assert len(set(np.round(per_factor, 6))) == 3  # every factor's value differs: a swap would show
