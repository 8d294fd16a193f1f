"""The contract every registered factor/code metric keeps (repscope.metrics.registry).

* the same bad input is refused by every metric with the same error, naming the argument
  (repscope.validation.check_factors_codes);
* a perfectly disentangled code scores the metric's maximum, and a code without information about the
  factors (rows shuffled) scores near its minimum. Both values are the definitions' own (worked out in
  the comments), not numbers our code printed.

A metric added to the registry fails here until its expected values are added to ``EXPECTED``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.registry import ARRAY_INPUTS, metric, metric_entry, metric_names
from repscope.validation import check_factors_codes

# three binary factors on a full 2 x 2 x 2 grid: a linear classifier of one latent can separate two
# classes (SAP, explicitness), and each latent's farthest value is the other class (CG)
NUM_FACTORS = 3
REPEATS = 100  # 800 rows: the first 80% (train) and the rest (test) are each whole grids


def grid_factors() -> np.ndarray:
    """(800, 3) factors: 100 copies of the 8-row grid, each copy in its own seeded random order."""
    grid = np.stack(np.meshgrid(*[np.arange(2)] * NUM_FACTORS, indexing="ij"), -1).reshape(-1, NUM_FACTORS)
    rng = np.random.default_rng(0)
    return np.concatenate([grid[rng.permutation(len(grid))] for _ in range(REPEATS)])


FACTORS = grid_factors()
# asymmetric on purpose: latent 0 holds factor 2, latent 1 factor 0, latent 2 factor 1 (a cyclic
# permutation, whose transpose is another one), each with its own scale, sign and offset
PERFECT = np.column_stack([2.0 * FACTORS[:, 2] + 1.0, -0.5 * FACTORS[:, 0] + 3.0, 4.0 * FACTORS[:, 1] - 2.0])
SHUFFLED = PERFECT[np.random.default_rng(1).permutation(len(PERFECT))]
# one latent carries every factor (a binary expansion), the others are constant: every factor's best
# latent is the same one
ONE_LATENT = np.column_stack([FACTORS @ [1.0, 2.0, 4.0], np.full(len(FACTORS), 5.0), np.full(len(FACTORS), -1.0)])
# every latent is the same symmetric mixture of all factors: each informs about all of them equally
MIXED = np.column_stack([scale * FACTORS.sum(axis=1) for scale in (1.0, -2.0, 0.5)])


def affine_decoder(codes: np.ndarray) -> Any:
    """The least-squares affine map from codes to 'images' (here the factor values themselves), fitted
    on the fixture: it reproduces the images exactly from a perfect code, and their mean from a code
    that carries no information."""
    design = np.column_stack([codes, np.ones(len(codes))])
    weights, *_ = np.linalg.lstsq(design, FACTORS.astype(float), rcond=None)
    return lambda z: np.column_stack([z, np.ones(len(z))]) @ weights


def factor_classifier(images: np.ndarray) -> list[np.ndarray]:
    """P(factor k = 1 | image) = the image's k-th value clipped to [0, 1]; for each factor (n, 2)."""
    ones = np.clip(images, 0.0, 1.0)
    return [np.column_stack([1.0 - ones[:, k], ones[:, k]]) for k in range(ones.shape[1])]


def further_inputs(name: str, factors: Any, codes: Any) -> dict[str, Any]:
    """What a metric takes beyond (factors, codes): CG's latent sets, decoder and factor classifier."""
    inputs = metric_entry(name).inputs
    if inputs == ARRAY_INPUTS:
        return {}
    assert name == "cg", f"{name} takes {inputs}: teach further_inputs how to feed it"
    codes_array = np.asarray(codes, dtype=float)
    num_factors = np.shape(factors)[1] if np.ndim(factors) == 2 else 1
    q_sets = [[(k + 1) % 3] for k in range(num_factors)]  # the latent that holds factor k in PERFECT
    fits = codes_array.shape == PERFECT.shape and np.all(np.isfinite(codes_array))
    decode = affine_decoder(codes_array) if fits else (lambda z: z)  # bad input is refused before decoding
    return {"q_sets": q_sets, "decode": decode, "predict_proba": factor_classifier}


def score(name: str, factors: Any, codes: Any, **params: Any) -> dict[str, Any]:
    return metric(name)(factors, codes, **further_inputs(name, factors, codes), **params)


# --------------------------------------------------------------------------------------------------------------------
# one input rule


def with_nan(codes: np.ndarray) -> np.ndarray:
    bad = codes.copy()
    bad[7, 1] = np.nan
    return bad


def with_constant_factor(factors: np.ndarray) -> np.ndarray:
    return np.column_stack([factors[:, :2], np.full(len(factors), 1), factors[:, 2:]])


BAD_INPUTS = {
    "NaN in codes": (FACTORS, with_nan(PERFECT), r"^codes: column 1 holds NaN or infinite values \(first in row 7\)"),
    "NaN in factors": (
        np.where(np.arange(len(FACTORS))[:, None] == 3, np.nan, FACTORS),
        PERFECT,
        r"^factors: column 0 holds NaN or infinite values \(first in row 3\)",
    ),
    "a constant factor": (
        with_constant_factor(FACTORS),
        PERFECT,
        r"^factors: column 2 takes the single value 1 in all",
    ),
    "mismatched lengths": (FACTORS, PERFECT[:-1], r"^codes: has 799 rows but factors has 800"),
    "1-D codes": (FACTORS, PERFECT[:, 0], r"^codes: expected a 2-D array .*got shape \(800,\)"),
    "1-D factors": (FACTORS[:, 0], PERFECT, r"^factors: expected a 2-D array .*got shape \(800,\)"),
    "too few samples": (FACTORS[:1], PERFECT[:1], r"^factors: needs at least 2 rows \(samples\), got 1"),
    "non-integer factors": (FACTORS + 0.25, PERFECT, r"^factors: column 0 holds 0\.25 in row 0; expected integer"),
    "strings": (FACTORS.astype(str), PERFECT, r"^factors: expected real numbers"),
}


@pytest.mark.parametrize("name", metric_names())
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_every_metric_refuses_the_same_bad_input_naming_the_argument(name, case):
    factors, codes, message = BAD_INPUTS[case]
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        score(name, factors, codes)
    assert type(caught.value) is InvalidArgumentError


def test_the_checked_arrays_hold_the_values_given():
    factors, codes = check_factors_codes(FACTORS.astype(np.float32), PERFECT.astype(np.float32))
    assert factors.dtype == np.int64 and np.array_equal(factors, FACTORS)
    assert codes.dtype == np.float64 and np.array_equal(codes, PERFECT.astype(np.float32))
    continuous, _ = check_factors_codes(FACTORS + 0.25, PERFECT, discrete_factors=False)
    assert continuous.dtype == np.float64 and np.array_equal(continuous, FACTORS + 0.25)
    two_constant = np.column_stack([FACTORS[:, 0], np.full(len(FACTORS), 3), np.full(len(FACTORS), -1)])
    with pytest.raises(InvalidArgumentError, match=r"^factors: columns \[1, 2\] each take a single value \(3, -1\)"):
        check_factors_codes(two_constant, PERFECT)


@pytest.mark.parametrize("name", metric_names())
def test_a_constant_code_is_accepted(name):
    # a collapsed latent is a normal outcome of training: every metric defines its share (no error)
    collapsed = np.column_stack([PERFECT, np.full(len(PERFECT), 0.5)])
    params = {"rho": 1} if name == "uc" else {"n_estimators": 5} if name == "dci" else {}
    result = score(name, FACTORS, collapsed, **params)
    assert any(isinstance(value, float) for value in result.values())


# --------------------------------------------------------------------------------------------------------------------
# maximum on a perfect code, near the minimum on an uninformative one

# name -> (keyword parameters, {score: value on PERFECT}, worst code, {score: (value by hand, tolerance)})
EXPECTED: dict[str, tuple[dict[str, Any], dict[str, float], np.ndarray, dict[str, tuple[float, float]]]] = {
    # IRS: grouping by the factor a latent holds leaves no spread (e_loc = 0), so 1 - 0 / max_dev = 1;
    # a shuffled latent spreads as much within any group as overall, 1 - ~1 = ~0
    "irs": ({}, {"irs": 1.0}, SHUFFLED, {"irs": (0.0, 0.1)}),
    # UC (rho 1): each factor's top latent is a different one, no overlap: 1 - 0 = 1; when one latent
    # carries every factor each pair shares it, Jaccard 1: 1 - 1 = 0 (a shuffled code's top latents are
    # arbitrary, so UC says nothing about it)
    "uc": ({"rho": 1}, {"uc_rho1": 1.0}, ONE_LATENT, {"uc_rho1": (0.0, 0.0)}),
    # CG: setting a factor's latent to its farthest value flips the decoded factor (ICE_Q = 1) and the
    # other latents leave it (ICE_O = 0): |1 - 0| = 1; a decoder fitted to a shuffled code returns about
    # the mean image whatever the code, so both ICEs are about 0
    "cg": ({}, {"cg": 1.0}, SHUFFLED, {"cg": (0.0, 0.1)}),
    # MIG: the factor's latent has I = H(v), every other latent I = 0 (independent on a full grid):
    # (H - 0) / H = 1; shuffled: every I is a plug-in bias of ~(bins - 1) / (2N) nats, the gap ~0
    "mig": ({}, {"mig": 1.0}, SHUFFLED, {"mig": (0.0, 0.05)}),
    # DCI: each factor's classifier uses its one latent only: one-hot importance rows and columns give
    # disentanglement and completeness 1 (up to the 1e-11 of the entropy), accuracy 1; shuffled: the
    # classifiers guess: importances spread evenly (D and C ~0), accuracy at chance (1/2 for binary factors)
    "dci": (
        {},
        {"dci_disentanglement": 1.0, "dci_completeness": 1.0, "dci_informativeness_test": 1.0},
        SHUFFLED,
        {"dci_disentanglement": (0.0, 0.15), "dci_completeness": (0.0, 0.15), "dci_informativeness_test": (0.5, 0.1)},
    ),
    # SAP (R^2 of each latent alone, continuous_factors): the factor's latent R^2 = 1, the others 0 on
    # the training rows (whole grids): 1 - 0 = 1; shuffled: every R^2 ~0. (Discrete SAP's classifier
    # accuracy of an unrelated latent is 1/2, so its perfect code scores 1/2 on binary factors.)
    "sap": ({"continuous_factors": True}, {"sap": 1.0}, SHUFFLED, {"sap": (0.0, 0.05)}),
    # modularity: each latent informs about one factor only, delta = 0: 1 - 0 = 1; a latent that is the
    # same symmetric mixture of all factors informs about each equally, delta = 1: 1 - 1 = 0.
    # explicitness: a binary factor is separated by its latent: ROC AUC 1 (a shuffled code's AUC is
    # chance, 1/2)
    "modularity_explicitness": (
        {},
        {"modularity_score": 1.0, "explicitness_score_test": 1.0},
        MIXED,
        {"modularity_score": (0.0, 1e-9)},
    ),
}


def test_every_registered_metric_has_expected_values():
    assert sorted(EXPECTED) == sorted(metric_names())


@pytest.mark.parametrize("name", metric_names())
def test_a_perfect_code_scores_the_maximum(name):
    params, maximum, _, _ = EXPECTED[name]
    result = score(name, FACTORS, PERFECT, **params)
    for key, value in maximum.items():
        assert result[key] == pytest.approx(value, abs=1e-8), key


@pytest.mark.parametrize("name", metric_names())
def test_an_uninformative_code_scores_near_the_minimum(name):
    params, _, worst, minimum = EXPECTED[name]
    result = score(name, FACTORS, worst, **params)
    for key, (value, tolerance) in minimum.items():
        assert result[key] == pytest.approx(value, abs=tolerance), key


def test_explicitness_of_a_shuffled_code_is_chance():
    result = score("modularity_explicitness", FACTORS, SHUFFLED)
    assert result["explicitness_score_test"] == pytest.approx(0.5, abs=0.1)


# --------------------------------------------------------------------------------------------------------------------
# the registry is the one source of the names


def test_an_unknown_name_lists_the_registered_ones():
    with pytest.raises(InvalidArgumentError, match=r"^metric: unknown metric 'nope'; registered: irs, uc, cg, "):
        metric("nope")


def test_the_cli_help_and_the_score_command_read_the_registry():
    from typer.testing import CliRunner

    from repscope.cli import app
    from repscope.registry import registries
    from repscope.studies.candle.score_arrays import score_arrays

    scorable = metric_names(ARRAY_INPUTS)
    assert "cg" in metric_names() and "cg" not in scorable  # CG needs a decoder and factor classifiers
    help_text = " ".join(CliRunner().invoke(app, ["disentangle", "score", "--help"], terminal_width=200).output.split())
    assert f"only these metrics (repeat): {', '.join(scorable)}" in help_text
    assert list(score_arrays(FACTORS, PERFECT, metrics=["irs", "mig"])["metrics"]) == ["irs", "mig"]
    with pytest.raises(InvalidArgumentError, match="^--metric: 'cg' needs q_sets, decode, predict_proba"):
        score_arrays(FACTORS, PERFECT, metrics=["cg"])
    assert sorted(registries()["metrics"]) == sorted(metric_names())
