"""The exact permutation p-value of Spearman's rho (:func:`repscope.metrics.zeroshot.rank_correlation`)
for negative correlations, where a one-sided count or a dropped absolute value shows: two-sided means
``|rho|`` of a pairing reaches ``|rho|`` observed, so ``y`` and ``-y`` give one p-value. The references
enumerate every pairing of a tiny sample (n = 5 and 6) in plain Python."""

from __future__ import annotations

import itertools
import math

import pytest

from repscope.metrics.zeroshot import exact_spearman_p_value, rank_correlation


def average_ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    return [sum(w < v for w in values) + (sum(w == v for w in values) + 1) / 2 for v in values]


def spearman(x: list[float], y: list[float]) -> float:
    """Pearson's r of the average ranks."""
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def enumerated_p_values(x: list[float], y: list[float]) -> dict[str, float]:
    """Two-sided, lower and upper one-sided p-values over every pairing of ``y`` with ``x``."""
    observed = spearman(x, y)
    rhos = [spearman(x, list(order)) for order in itertools.permutations(y)]
    count = len(rhos)
    return {
        "two_sided": sum(abs(r) >= abs(observed) - 1e-12 for r in rhos) / count,
        "lower": sum(r <= observed + 1e-12 for r in rhos) / count,
        "upper": sum(r >= observed - 1e-12 for r in rhos) / count,
    }


CASES = {
    # one swap from a reversed order: rho -0.9, 5 pairings as low and 5 as high of 120
    "n=5, rho -0.9": ([1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 1.0, 2.0]),
    # a reversed order of 6: 2 of 720 pairings as extreme
    "n=6, rho -1": ([0.2, 0.4, 0.5, 0.7, 0.8, 0.95], [60.0, 50.0, 40.0, 30.0, 20.0, 10.0]),
    # n = 6, unsorted, ties on both sides: the null distribution is not symmetric
    "n=6, ties": ([0.3, 0.1, 0.5, 0.5, 0.9, 0.7], [40.0, 60.0, 20.0, 30.0, 10.0, 10.0]),
    # ties that are not at the end of the order: ranks of a tie taken as its lowest (not its average)
    # give another p-value here (0.056 and 0.078 against 0.044)
    "n=6, inner ties": ([0.3, 0.1, 0.5, 0.5, 0.9, 0.7], [40.0, 60.0, 10.0, 30.0, 10.0, 20.0]),
    # a weak negative correlation: most pairings are as extreme
    "n=6, weak": ([3.0, 1.0, 4.0, 1.5, 5.0, 9.0], [2.0, 6.0, 5.0, 3.0, 5.5, 1.0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_negative_correlations_get_the_two_sided_share_of_every_pairing(case):
    x, y = CASES[case]
    hand = enumerated_p_values(x, y)
    assert spearman(x, y) < 0
    # the fixture is where one-sided counts differ from the two-sided one
    assert hand["lower"] != hand["two_sided"] and hand["upper"] > hand["two_sided"]
    result = rank_correlation(x, y)
    assert result["p_method"] == "exact permutation" and result["n"] == len(x)
    assert result["rho"] == pytest.approx(spearman(x, y), abs=1e-12)
    assert result["p_value"] == pytest.approx(hand["two_sided"], abs=1e-12)
    assert exact_spearman_p_value(x, y) == pytest.approx(hand["two_sided"], abs=1e-12)


def test_hand_counts_of_the_simple_cases():
    assert enumerated_p_values(*CASES["n=5, rho -0.9"])["two_sided"] == pytest.approx(10 / 120)
    assert rank_correlation(*CASES["n=5, rho -0.9"])["p_value"] == pytest.approx(10 / 120, abs=1e-15)
    assert rank_correlation(*CASES["n=6, rho -1"])["p_value"] == pytest.approx(2 / 720, abs=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
def test_flipping_the_sign_of_one_side_keeps_the_p_value(case):
    x, y = CASES[case]
    flipped = [-value for value in y]
    negative, positive = rank_correlation(x, y), rank_correlation(x, flipped)
    assert positive["rho"] == pytest.approx(-negative["rho"], abs=1e-12)
    assert positive["p_value"] == pytest.approx(negative["p_value"], abs=1e-12)
    # and swapping the sides changes nothing
    assert rank_correlation(y, x)["p_value"] == pytest.approx(negative["p_value"], abs=1e-12)


def test_ten_models_still_get_the_exact_count():
    """n = 10, the largest exact case: a reversed order but for one adjacent swap. rho = 1 - 6 S / 990 with
    S the sum of squared rank differences; |rho| >= 1 - 12 / 990 takes S <= 2 from one order or the
    other: the order itself and its 9 adjacent swaps, both ways, so 20 of the 10! pairings."""
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 9.0]
    y = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    result = rank_correlation(x, y)
    assert result["rho"] == pytest.approx(-(1 - 12 / 990), abs=1e-12)
    assert result["p_method"] == "exact permutation"
    assert result["p_value"] == pytest.approx(20 / math.factorial(10), rel=1e-12)
