"""The generator role of ``repscope assess``: morphometrics, diversity and code correlations of digit generators
defined here (never registered), on real digits of the embedded MNIST sample."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.morpho.perturb import Thickening, apply_batch
from repscope.data.morpho.training_sets import load_digits
from repscope.errors import InvalidArgumentError
from repscope.studies.assess.generator import assess_generator

N = 100
REFERENCE = 150


class DrawnDigits:
    """Draws distinct real test digits by seeded index: a generator whose samples are distributed as the test digits."""

    latent_dim = 3

    def __init__(self, bank: np.ndarray) -> None:
        self.bank = bank

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        return self.bank[np.random.default_rng(seed).choice(len(self.bank), n, replace=False)]

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Code 0 sets how much a digit is thickened (0.1 to 1.9 of its stroke), codes 1 and 2 do nothing."""
        codes = np.asarray(codes)
        base = self.bank[np.arange(len(codes)) % 10]
        amounts = 1.0 + 0.45 * np.clip(codes[:, 0], -2.0, 2.0)
        thickened, _ = apply_batch(
            base, [Thickening(amount=float(a)) for a in amounts], [np.random.default_rng(0)] * len(codes)
        )
        return thickened


class OneDigit(DrawnDigits):
    """Mode collapse: the same digit every time."""

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        return np.repeat(self.bank[:1], n, axis=0)


class Fixed:
    """Returns the given digits, whatever is asked."""

    def __init__(self, images: np.ndarray) -> None:
        self.images = images

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        return self.images


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    """A random reference set of test digits and the other test digits (the split's order is by class)."""
    test = load_digits(target="none").test_images
    order = np.random.default_rng(7).permutation(len(test))
    return test[order[:REFERENCE]], test[order[REFERENCE:]]


@pytest.fixture(scope="module")
def diverse(digits):
    reference, pool = digits
    return assess_generator(DrawnDigits(pool), test_images=reference, n=N, codes=[0, 1], permutations=100)


@pytest.fixture(scope="module")
def collapsed(digits):
    reference, pool = digits
    return assess_generator(OneDigit(pool), test_images=reference, n=N, permutations=100)


def _row(assessment, metric):
    return next(row for row in assessment.headline if row.metric == metric)


def test_a_collapsed_generator_is_rejected_where_one_drawing_test_digits_is_not(diverse, collapsed):
    diverse_p, collapsed_p = diverse.metrics["diversity"]["p_value"], collapsed.metrics["diversity"]["p_value"]
    assert diverse_p > 0.05
    assert collapsed_p < 1e-6
    assert collapsed.metrics["diversity"]["mmd2"] > 10 * max(diverse.metrics["diversity"]["mmd2"], 0.01)
    # one digit repeated: every sample a replica of the others; real digits: next to none
    assert collapsed.metrics["diversity"]["fraction_in_replica_groups"] == 1.0
    assert (
        diverse.metrics["diversity"]["fraction_in_replica_groups"]
        <= _row(diverse, "fraction_in_replica_groups").chance + 0.05
    )
    # the chance row (test digits against test digits) does not depend on the generator
    assert _row(diverse, "mmd2").chance == _row(collapsed, "mmd2").chance
    assert _row(diverse, "p_value").chance > 0.05
    row = _row(collapsed, "mmd2")
    assert row.ci_low < row.value < row.ci_high and row.ci_low > row.chance


def test_the_code_that_thickens_correlates_with_thickness_and_the_idle_code_does_not(diverse):
    table = diverse.tables["partial_correlations"].set_index("factor")
    assert table.loc["thickness", "z[0]"] > 0.6
    assert abs(table.loc["thickness", "z[1]"]) < 0.25
    row = _row(diverse, "z[0]_thickness")
    assert row.value == table.loc["thickness", "z[0]"]
    assert abs(row.chance) < 0.25  # the same codes shuffled across rows
    assert diverse.arrays["codes"].shape == (N, DrawnDigits.latent_dim)
    # traversal figure: one row of 9 digits per chosen code
    assert diverse.figures["traversals"].shape == (2 * 28 + 2, 9 * 28 + 8 * 2)


def test_a_generator_returning_the_test_digits_matches_their_morphometrics(digits):
    reference, _ = digits
    lines = []
    found = assess_generator(
        Fixed(reference), test_images=reference, n=REFERENCE, permutations=20, progress=lines.append
    )
    assert lines == [f"sampling {REFERENCE} digits", f"measuring {REFERENCE} test digits and {REFERENCE} samples"]
    summary = found.tables["morphometrics_summary"].set_index("morphometric")
    assert np.allclose(summary["difference"], 0.0)
    assert np.allclose(summary["samples_std"], summary["test_std"])
    assert _row(found, "thickness_mean").value == pytest.approx(summary.loc["thickness", "test_mean"])
    # the sample grid shows the first samples in order, 8 to a row
    grid = found.figures["samples"]
    assert grid.dtype == np.uint8
    assert np.array_equal(grid[:28, :28], reference[0]) and np.array_equal(grid[:28, 30:58], reference[1])
    assert found.role == "generator" and found.settings["n"] == REFERENCE


def test_float_samples_and_a_channel_axis_are_read_as_digits(digits):
    reference, _ = digits
    as_float = reference[:, None].astype(np.float32) / 255.0  # (N, 1, 28, 28) in [0, 1]
    found = assess_generator(Fixed(as_float), test_images=reference, n=REFERENCE, permutations=20)
    assert np.array_equal(found.arrays["samples"], reference)


@pytest.mark.parametrize(
    ("generator", "kwargs", "named"),
    [
        (Fixed(np.zeros((20, 32, 32), np.uint8)), {"n": 20}, "generator.sample"),
        (Fixed(np.zeros((12, 28, 28), np.uint8)), {"n": 20}, "generator.sample: asked for 20"),
        (object(), {"n": 20}, "no sample()"),
        (Fixed(None), {"n": 4}, "n:"),
        (Fixed(None), {"n": 20, "seed": -1}, "seed"),
        (Fixed(None), {"n": 20, "permutations": 5}, "permutations: at least 10"),
        (Fixed(None), {"n": 20, "replica_threshold": 0}, "replica_threshold"),
    ],
)
def test_bad_generators_and_arguments_are_named(digits, generator, kwargs, named):
    with pytest.raises(InvalidArgumentError, match=named):
        assess_generator(generator, test_images=digits[0][:20], **kwargs)


def test_codes_need_a_latent_size_and_dimensions_inside_it(digits):
    reference, pool = digits
    no_size = DrawnDigits(pool)
    no_size.latent_dim = None
    with pytest.raises(InvalidArgumentError, match="latent_dim"):
        assess_generator(no_size, test_images=reference[:20], n=20, codes=[0])
    with pytest.raises(InvalidArgumentError, match="codes: expected distinct code dimensions in 0..2"):
        assess_generator(DrawnDigits(pool), test_images=reference[:20], n=20, codes=[3])
