"""MIG, SAP, modularity and explicitness (repscope.metrics.disentanglement.information)."""

import itertools
import json
import math

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.discretize import histogram_discretize
from repscope.metrics.disentanglement.information import (
    _mig_reference,
    _modularity,
    mig,
    modularity_explicitness,
    sap,
)


def grid_factors(sizes=(3, 4, 5), repeats=10, seed=0):
    """Every combination of factor classes ``repeats`` times, rows in random order."""
    rng = np.random.default_rng(seed)
    factors = np.repeat(np.array(list(itertools.product(*[range(s) for s in sizes]))), repeats, axis=0)
    return factors[rng.permutation(len(factors))]


def disentangled(factors, seed=1):
    rng = np.random.default_rng(seed)
    return factors + 0.01 * rng.standard_normal(factors.shape)


def rotated(codes, seed=2):
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((codes.shape[1], codes.shape[1])))
    return codes @ rotation


# ----------------------------------------------------------------------------------------------------------------------
# MIG


def test_mig_hand_computed_case():
    # f0 = [0,0,1,1], f1 = [0,1,0,1]; z0 = f0 and z1 = f0 AND f1. Each code has two values, which the
    # 20-bin histogram over [0, 1] puts in bins 1 and 20: discretisation only relabels them.
    #   H(f0) = H(f1) = ln 2
    #   I(z0; f0) = ln 2, I(z0; f1) = 0
    #   I(z1; f0) = H(z1) - H(z1 | f0) = [3/4 ln(4/3) + 1/4 ln 4] - 1/2 ln 2 = 3/4 ln(4/3), same for f1
    #   MIG_0 = (ln 2 - 3/4 ln(4/3)) / ln 2 = 1 - 3/4 log2(4/3) = 0.68872
    #   MIG_1 = (3/4 ln(4/3) - 0) / ln 2 = 3/4 log2(4/3) = 0.31128;  MIG = 1/2
    factors = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    codes = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    result = mig(factors, codes)
    gain = 0.75 * math.log(4 / 3)
    np.testing.assert_allclose(result["entropy"], [math.log(2)] * 2, atol=1e-12)
    np.testing.assert_allclose(result["mutual_information"], [[math.log(2), 0.0], [gain, gain]], atol=1e-12)
    np.testing.assert_allclose(result["mig_per_factor"], [1 - 0.75 * math.log2(4 / 3), 0.75 * math.log2(4 / 3)])
    assert result["mig"] == pytest.approx(0.5, abs=1e-12)
    assert result["params"] == {"num_bins": 20, "continuous_factors": False, "discretization": "histogram"}
    json.dumps(result)  # plain Python types, ready for metrics.json


def test_histogram_discretize_follows_numpy_histogram_edges():
    values = np.array([[0.0], [0.049], [0.05], [0.5], [1.0]])
    # 20 bins over [0, 1]: left edges 0, 0.05, ..., 0.95; the minimum is bin 1 and the maximum bin 20
    np.testing.assert_array_equal(histogram_discretize(values, 20)[:, 0], [1, 1, 2, 11, 20])
    # a constant column falls in one bin
    assert np.unique(histogram_discretize(np.full((5, 1), 3.0), 20)).size == 1


@pytest.mark.parametrize("num_bins", [1, 2, 7, 20])
def test_histogram_discretize_equals_digitize_on_every_edge(num_bins):
    # the bins are read off (z - min) / width and corrected at the edges: they must equal np.digitize
    # against np.histogram's left edges everywhere, values lying exactly on (rounded) edges included
    rng = np.random.default_rng(num_bins)
    columns = [
        rng.standard_normal(3000),
        np.round(rng.standard_normal(3000), 1),  # many ties
        np.linspace(-0.3, 0.7, 3001)[:3000],  # values on or next to every edge
        np.histogram_bin_edges(rng.standard_normal(3000), bins=num_bins).repeat(3000)[:3000],
        np.r_[np.zeros(2999), 1e-300],  # a range too small for the division to be exact
        rng.integers(-5, 5, 3000) * 1e8,
    ]
    values = np.column_stack(columns)
    expected = np.column_stack(
        [np.digitize(column, np.histogram_bin_edges(column, bins=num_bins)[:-1]) for column in columns]
    )
    np.testing.assert_array_equal(histogram_discretize(values, num_bins), expected)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("num_bins", [2, 20])
def test_vectorised_mutual_information_matches_sklearn_loop(continuous, num_bins):
    rng = np.random.default_rng(3)
    factors = rng.standard_normal((500, 4)) if continuous else rng.integers(0, [2, 3, 7, 10], size=(500, 4))
    codes = rng.standard_normal((500, 6))
    codes[:, 0] += factors[:, 1]  # some real dependence, not only estimator bias
    fast = mig(factors, codes, num_bins=num_bins, continuous_factors=continuous)
    reference = _mig_reference(factors, codes, num_bins=num_bins, continuous_factors=continuous)
    for key in ("mutual_information", "entropy", "mig_per_factor"):
        np.testing.assert_allclose(fast[key], reference[key], rtol=0, atol=1e-10)
    assert fast["mig"] == pytest.approx(reference["mig"], abs=1e-10)


def test_mig_disentangled_rotated_and_noise():
    factors = grid_factors()
    codes = disentangled(factors)
    good = mig(factors, codes)["mig"]
    assert good > 0.97
    assert mig(factors, rotated(codes))["mig"] < good - 0.3
    noise = np.random.default_rng(4).standard_normal(factors.shape)
    assert mig(factors, noise)["mig"] < 0.03
    # shape of the MI matrix is (latents, factors) with an extra latent
    assert np.array(mig(factors, np.hstack([codes, noise]))["mutual_information"]).shape == (6, 3)


def test_mig_continuous_factors():
    rng = np.random.default_rng(5)
    factors = rng.uniform(0, 3, size=(2000, 2))
    codes = 10 * factors + 0.001 * rng.standard_normal(factors.shape)  # any scale: binning is per column
    result = mig(factors, codes, continuous_factors=True)
    assert result["params"]["continuous_factors"] is True
    # the entropy is that of the 20-bin discretised factor: about ln 20 for a uniform factor
    assert all(math.log(20) - 0.02 < h <= math.log(20) for h in result["entropy"])
    assert result["mig"] > 0.95
    # the same numbers as passing the discretised factors as classes
    binned = mig(histogram_discretize(factors, 20), codes)
    np.testing.assert_allclose(result["mutual_information"], binned["mutual_information"], atol=1e-12)
    assert result["mig"] == pytest.approx(binned["mig"], abs=1e-12)
    assert mig(factors, rng.standard_normal(factors.shape), continuous_factors=True)["mig"] < 0.05
    # continuous factors without the option are refused rather than treated as 2000 classes
    with pytest.raises(InvalidArgumentError, match="continuous_factors=True"):
        mig(factors, codes)


# ----------------------------------------------------------------------------------------------------------------------
# SAP


def test_sap_discrete_prefers_the_matching_latent():
    factors = grid_factors()
    codes = disentangled(factors)
    result = sap(factors, codes)
    scores = np.array(result["score_matrix"])
    assert scores.shape == (3, 3)
    # each factor is best predicted (test accuracy) by its own latent
    np.testing.assert_array_equal(scores.argmax(axis=0), [0, 1, 2])
    assert (result["num_train"], result["num_test"]) == (480, 120)
    # a 1-D linear classifier cannot isolate the middle classes of a 3-5 class factor, and the other latents
    # score chance level, so discrete SAP stays well below 1 even here (as in disentanglement_lib)
    assert 0.3 < result["sap"] < 0.6
    assert sap(factors, rotated(codes))["sap"] < result["sap"] - 0.1
    noise = np.random.default_rng(6).standard_normal(factors.shape)
    assert sap(factors, noise)["sap"] < 0.12  # max over 20 noise seeds: 0.078


def test_sap_binary_factors_gap_is_accuracy_minus_chance():
    factors = grid_factors(sizes=(2, 2), repeats=100)
    scores = np.array(sap(factors, disentangled(factors))["score_matrix"])
    np.testing.assert_allclose(np.diag(scores), 1.0)
    assert np.all(np.abs(scores[[0, 1], [1, 0]] - 0.5) < 0.15)


def test_sap_continuous_is_r_squared_on_training_rows():
    factors = grid_factors()
    codes = disentangled(factors)
    result = sap(factors, codes, continuous_factors=True)
    assert result["sap"] > 0.99
    assert sap(factors, rotated(codes), continuous_factors=True)["sap"] < result["sap"] - 0.1
    rng = np.random.default_rng(7)
    assert sap(factors, rng.standard_normal(factors.shape), continuous_factors=True)["sap"] < 0.05
    # the score is the squared correlation on the first 80 % of rows
    train = result["num_train"]
    r = np.corrcoef(codes[:train, 1], factors[:train, 2])[0, 1]
    assert result["score_matrix"][1][2] == pytest.approx(r**2, abs=1e-12)
    # a constant latent scores 0 rather than NaN
    with_constant = np.hstack([codes, np.ones((len(codes), 1))])
    assert sap(factors, with_constant, continuous_factors=True)["score_matrix"][3] == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------------------------------------------------
# modularity and explicitness


def test_modularity_formula():
    information = np.array([[2.0, 0.0, 0.0], [2.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    # latent 0 matches its template; latent 1: delta = (1 + 1) / ((3 - 1) * 4) = 1/4; latent 2 has no information
    np.testing.assert_allclose(_modularity(information), [1.0, 0.75, 0.0])


def test_modularity_explicitness_disentangled_rotated_and_noise():
    factors = grid_factors()
    codes = disentangled(factors)
    result = modularity_explicitness(factors, codes)
    assert result["modularity_score"] > 0.99
    assert result["explicitness_score_train"] > 0.99
    assert result["explicitness_score_test"] > 0.99
    assert result["params"]["num_bins"] == 20 and result["params"]["test_fraction"] == 0.2
    assert np.array(result["mutual_information"]).shape == (3, 3)
    assert modularity_explicitness(factors, rotated(codes))["modularity_score"] < result["modularity_score"] - 0.1
    noise = modularity_explicitness(factors, np.random.default_rng(8).standard_normal(factors.shape))
    assert noise["explicitness_score_test"] < 0.62
    json.dumps(result)


def test_explicitness_ignores_code_scale():
    factors = grid_factors()
    codes = disentangled(factors)
    scaled = codes * [1000.0, 0.001, 1.0] + 50.0
    a, b = modularity_explicitness(factors, codes), modularity_explicitness(factors, scaled)
    assert a["explicitness_score_test"] == pytest.approx(b["explicitness_score_test"], abs=1e-6)
    assert a["modularity_score"] == pytest.approx(b["modularity_score"], abs=1e-12)


# ----------------------------------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("metric", [mig, sap, modularity_explicitness])
def test_input_errors(metric):
    factors = grid_factors(sizes=(2, 3), repeats=5)
    codes = disentangled(factors)
    with pytest.raises(InvalidArgumentError, match="integer"):
        metric(factors + 0.5, codes)
    bad = codes.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidArgumentError, match=r"^codes: column 1 holds NaN or infinite values \(first in row 3\)"):
        metric(factors, bad)
    with pytest.raises(
        InvalidArgumentError, match=rf"^codes: has {len(codes) - 1} rows but factors has {len(factors)}"
    ):
        metric(factors, codes[:-1])
    with pytest.raises(InvalidArgumentError, match=r"^factors: column 2 takes the single value"):
        metric(np.hstack([factors, np.zeros((len(factors), 1))]), codes)
    with pytest.raises(InvalidArgumentError, match=r"^codes: expected a 2-D array"):
        metric(factors, codes[:, :, None])
    with pytest.raises(InvalidArgumentError, match=r"^factors: expected real numbers"):
        metric(np.full(factors.shape, "a"), codes)


def test_parameter_errors():
    factors = grid_factors(sizes=(2, 3), repeats=5)
    codes = disentangled(factors)
    for num_bins in (0, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="num_bins"):
            mig(factors, codes, num_bins=num_bins)
        with pytest.raises(InvalidArgumentError, match="num_bins"):
            modularity_explicitness(factors, codes, num_bins=num_bins)
    for fraction in (0.0, 1.0, "0.2"):
        with pytest.raises(InvalidArgumentError, match="test_fraction"):
            sap(factors, codes, test_fraction=fraction)
        with pytest.raises(InvalidArgumentError, match="test_fraction"):
            modularity_explicitness(factors, codes, test_fraction=fraction)
    # rows sorted by a factor leave one class in the training rows: refused with advice, not a sklearn error
    order = np.argsort(factors[:, 0], kind="stable")
    with pytest.raises(InvalidArgumentError, match="random order"):
        sap(factors[order], codes[order], test_fraction=0.5)
