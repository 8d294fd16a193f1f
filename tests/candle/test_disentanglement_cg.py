"""Counterfactual Generativeness: 1 for a code whose latents each move one factor, low when entangled."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.counterfactual import counterfactual_generativeness

SIZES = (3, 4)


def grid() -> np.ndarray:
    return np.stack(np.meshgrid(*[np.arange(s) for s in SIZES], indexing="ij"), -1).reshape(-1, 2)


def classifier(images: np.ndarray) -> list[np.ndarray]:
    """A perfect classifier of 'images' that are the factor values themselves: one-hot of the rounded value."""
    out = []
    for i, size in enumerate(SIZES):
        classes = np.clip(np.rint(images[:, i]), 0, size - 1).astype(int)
        out.append(np.eye(size)[classes])
    return out


def test_a_code_whose_latents_each_move_one_factor_scores_one():
    factors = grid()
    result = counterfactual_generativeness(factors, factors.astype(float), [[0], [1]], lambda z: z, classifier)
    # the baseline of every latent is the column's farthest value, always another class: ICE_Q = 1, ICE_O = 0
    assert result["cg"] == 1.0 and result["ice_q"] == [1.0, 1.0] and result["ice_others"] == [0.0, 0.0]
    # the absolute difference is blind to swapped sets; the ICEs say which set moved the factor
    swapped = counterfactual_generativeness(factors, factors.astype(float), [[1], [0]], lambda z: z, classifier)
    assert swapped["cg"] == 1.0 and swapped["ice_q"] == [0.0, 0.0] and swapped["ice_others"] == [1.0, 1.0]


def test_an_entangled_code_scores_lower():
    factors = grid().astype(float)
    mixing = np.array([[1.0, 1.0], [1.0, -1.0]])  # each latent carries both factors
    codes = factors @ mixing.T
    result = counterfactual_generativeness(
        factors, codes, [[0], [1]], lambda z: z @ np.linalg.inv(mixing).T, classifier
    )
    assert result["cg"] < 0.5
    assert min(result["ice_others"]) > 0.3  # intervening on the "other" latent also moves the factor


def test_soft_probabilities_by_hand():
    # two examples, one factor of 2 classes; over the dataset latent 0 spans [0.5, 2], latent 1 [0, 1]
    factors = np.array([[0], [1]])
    codes = np.array([[0.5, 0.0], [2.0, 1.0]])

    def decode(z):
        return z

    def predict(images):
        # P(class 0) = 1 - image[:, 0] / 4 - image[:, 1] / 8
        p0 = 1 - images[:, 0] / 4 - images[:, 1] / 8
        return [np.stack([p0, 1 - p0], 1)]

    result = counterfactual_generativeness(factors, codes, [[0]], decode, predict)
    # example 0: z = (0.5, 0), baselines (2, 1); P(0 | z) = 0.875; on Q -> (2, 0): 0.5, ICE_Q 0.375;
    #            on the others -> (0.5, 1): 0.75, ICE_O 0.125; |0.375 - 0.125| = 0.25
    # example 1: z = (2, 1), true class 1, baselines (0.5, 0); P(1 | z) = 0.625; on Q -> (0.5, 1): 0.25,
    #            ICE_Q 0.375; on the others -> (2, 0): 0.5, ICE_O 0.125; |0.375 - 0.125| = 0.25
    assert result["cg"] == pytest.approx(0.25)
    assert result["ice_q"] == pytest.approx([0.375]) and result["ice_others"] == pytest.approx([0.125])


def test_bad_arguments_are_named():
    factors = grid()
    with pytest.raises(InvalidArgumentError, match="q_sets"):
        counterfactual_generativeness(factors, factors.astype(float), [[0]], lambda z: z, classifier)
    with pytest.raises(InvalidArgumentError, match=r"q_sets\[1\]"):
        counterfactual_generativeness(factors, factors.astype(float), [[0], [5]], lambda z: z, classifier)
    with pytest.raises(InvalidArgumentError, match="predict_proba"):
        counterfactual_generativeness(factors, factors.astype(float), [[0], [1]], lambda z: z, lambda x: [x, x])


def test_the_result_carries_its_judges_and_flags_a_weak_one():
    factors = grid()
    codes = factors.astype(float)
    strong = counterfactual_generativeness(
        factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.99, 0.95]
    )
    assert strong["judge_accuracy"] == [0.99, 0.95] and strong["judge_ok"] is True and strong["weak_judges"] == []
    assert strong["params"]["min_judge_accuracy"] == 0.9
    # a judge of factor 1 near chance (1 / 4 classes): flagged, warned, CG still computed
    with pytest.warns(RuntimeWarning, match=r"factor 1 0\.300"):
        weak = counterfactual_generativeness(
            factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.95, 0.3]
        )
    assert weak["judge_ok"] is False and weak["weak_judges"] == [1] and weak["cg"] == strong["cg"]
    # the threshold is the caller's: 0.95 passes 0.95 but not 0.96
    at = counterfactual_generativeness(
        factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.95, 0.97], min_judge_accuracy=0.95
    )
    assert at["judge_ok"] is True
    with pytest.warns(RuntimeWarning, match=r"factor 0 0\.950"):
        above = counterfactual_generativeness(
            factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.95, 0.97], min_judge_accuracy=0.96
        )
    assert above["weak_judges"] == [0]
    with pytest.raises(InvalidArgumentError, match="judge_accuracy"):
        counterfactual_generativeness(
            factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.95, 0.3], refuse_weak_judges=True
        )
    with pytest.raises(InvalidArgumentError, match="judge_accuracy"):
        counterfactual_generativeness(factors, codes, [[0], [1]], lambda z: z, classifier, judge_accuracy=[0.95])
    with pytest.raises(InvalidArgumentError, match="min_judge_accuracy"):
        counterfactual_generativeness(factors, codes, [[0], [1]], lambda z: z, classifier, min_judge_accuracy=95)
    unknown = counterfactual_generativeness(factors, codes, [[0], [1]], lambda z: z, classifier)
    assert unknown["judge_accuracy"] is None and unknown["judge_ok"] is None
