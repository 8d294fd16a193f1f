"""IRS (Suter et al. 2019, disentanglement_lib's procedure) and CANDLE's UC (Eq. 1)."""

import itertools

import numpy as np
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.irs import (
    _irs_reference,
    _top_latents,
    irs,
    uc_from_irs_matrix,
    unique_capture,
)

GRID = np.array(list(itertools.product(range(3), range(4), range(5))))  # 60 rows, factor sizes 3, 4, 5


def disentangled_codes(seed=0):
    rng = np.random.default_rng(seed)
    return GRID + 0.01 * rng.standard_normal(GRID.shape)


def test_irs_hand_computed_two_factors_two_latents():
    # factors (g0, g1) on the full 2 x 2 grid; z0 = g0, z1 = (0, 2, 1, 5), z2 constant (dropped)
    factors = [[0, 0], [0, 1], [1, 0], [1, 1]]
    codes = [[0.0, 0.0, 7.0], [0.0, 2.0, 7.0], [1.0, 1.0, 7.0], [1.0, 5.0, 7.0]]
    # z0: mean 0.5, max_dev 0.5.
    #   g0 groups {0, 0}, {1, 1}: max |z - group mean| = 0, 0 -> e_loc 0 -> IRS 1
    #   g1 groups {0, 1}, {0, 1}: 0.5, 0.5 -> e_loc 0.5 -> IRS 1 - 0.5 / 0.5 = 0
    # z1: mean 2, max_dev max(2, 0, 1, 3) = 3.
    #   g0 groups {0, 2} (mean 1, dev 1), {1, 5} (mean 3, dev 2) -> e_loc 1.5 -> IRS 1 - 1.5 / 3 = 1/2
    #   g1 groups {0, 1} (mean .5, dev .5), {2, 5} (mean 3.5, dev 1.5) -> e_loc 1 -> IRS 1 - 1/3 = 2/3
    # per latent: max over factors = 1, 2/3; avg weighted by max_dev: (0.5 * 1 + 3 * 2/3) / 3.5 = 5/7
    result = irs(factors, codes, diff_quantile=1.0)
    matrix = np.array(result["irs_matrix"])
    np.testing.assert_allclose(matrix[:2], [[1.0, 0.0], [0.5, 2 / 3]], atol=1e-15)
    assert np.all(np.isnan(matrix[2]))
    np.testing.assert_allclose(result["irs_per_latent"][:2], [1.0, 2 / 3], atol=1e-15)
    assert np.isnan(result["irs_per_latent"][2])
    assert result["irs"] == pytest.approx(5 / 7, abs=1e-15)
    assert result["active_latents"] == [0, 1]
    assert result["max_deviations"] == pytest.approx([0.5, 3.0, 0.0])
    assert result["params"] == {"diff_quantile": 1.0}


def test_irs_averages_over_factor_values_not_rows():
    # one factor, values (0, 0, 0, 1); z = (0, 1, 2, 10): mean 3.25, max_dev 6.75
    # value 0: {0, 1, 2} mean 1, dev 1; value 1: {10}, dev 0 -> e_loc = (1 + 0) / 2 = 0.5 (count-weighted
    # would be 0.75) -> IRS = 1 - 0.5 / 6.75 = 25/27
    result = irs([[0], [0], [0], [1]], [[0.0], [1.0], [2.0], [10.0]], diff_quantile=1.0)
    assert result["irs"] == pytest.approx(25 / 27, abs=1e-15)


def test_whole_float_factors_accepted_and_default_quantile():
    codes = disentangled_codes()
    as_float = irs(GRID.astype(float), codes)
    as_int = irs(GRID, codes)
    assert as_float["irs"] == as_int["irs"]
    assert as_int["params"] == {"diff_quantile": 0.99}


def test_disentangled_near_one_rotation_lower_noise_low():
    codes = disentangled_codes()
    good = irs(GRID, codes)["irs"]
    assert good > 0.97
    rng = np.random.default_rng(1)
    rotation, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    assert irs(GRID, codes @ rotation)["irs"] < good - 0.1
    # independent noise stays around 0.2-0.33 (checked over seeds 0-4: 0.22-0.33)
    factors = np.repeat(GRID, 5, axis=0)
    for seed in range(5):
        noise = np.random.default_rng(seed).standard_normal((len(factors), 3))
        score = irs(factors, noise)["irs"]
        assert score < 0.4
        assert score < good - 0.5


def test_constant_latent_dropped_and_all_constant():
    codes = disentangled_codes()
    with_constant = np.insert(codes, 1, 3.0, axis=1)
    a, b = irs(GRID, codes), irs(GRID, with_constant)
    assert b["active_latents"] == [0, 2, 3]
    assert b["irs"] == pytest.approx(a["irs"], abs=1e-15)
    assert np.all(np.isnan(b["irs_matrix"][1]))
    none_active = irs(GRID, np.ones((len(GRID), 2)))
    assert none_active["irs"] == 0.0
    assert none_active["active_latents"] == []


@pytest.mark.parametrize("diff_quantile", [0.99, 1.0, 0.5, 0.37])
@pytest.mark.parametrize("num_values", [7, 1500])  # 1500 distinct values takes the fully vectorised sort
def test_vectorised_matches_reference_loop(diff_quantile, num_values):
    rng = np.random.default_rng(num_values)
    # factor 2: one group of 2999 rows and one of a single row (a constant factor is refused, check_factors_codes)
    nearly_constant = np.r_[1, np.zeros(2999, int)]
    factors = np.column_stack([rng.integers(0, num_values, 3000), rng.integers(0, 3, 3000), nearly_constant])
    codes = rng.standard_normal((3000, 6)) * [1, 10, 0.1, 1, 1, 1]
    codes[:, 3] = -1.5
    codes[:, 4] = np.round(codes[:, 4])  # ties among deviations
    fast, slow = irs(factors, codes, diff_quantile), _irs_reference(factors, codes, diff_quantile)
    np.testing.assert_allclose(fast["irs_matrix"], slow["irs_matrix"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast["irs_per_latent"], slow["irs_per_latent"], rtol=0, atol=1e-12)
    assert fast["irs"] == pytest.approx(slow["irs"], abs=1e-12)
    assert fast["active_latents"] == slow["active_latents"] == [0, 1, 2, 4, 5]


@pytest.mark.parametrize("diff_quantile", [0.99, 1.0])
def test_threaded_path_and_every_grouping_match_reference_loop(diff_quantile):
    # 40,000 x 6 entries: the factors are scored on threads; the factors take each way of grouping rows:
    # a byte of values, 300 values (16-bit group numbers), values spread too far for a lookup
    # (np.unique), negative values, and more groups than the per-group loop takes
    rng = np.random.default_rng(11)
    n = 40_000
    factors = np.column_stack(
        [
            rng.integers(0, 5, n),
            rng.integers(0, 300, n),
            rng.integers(-3, 3, n) * 10**9,
            rng.integers(-40, -30, n),
            rng.integers(0, 2000, n),
        ]
    )
    codes = rng.standard_normal((n, 6)) + factors[:, :1] * [1, 0, 0, 0.5, 0, 0]
    fast, slow = irs(factors, codes, diff_quantile), _irs_reference(factors, codes, diff_quantile)
    np.testing.assert_allclose(fast["irs_matrix"], slow["irs_matrix"], rtol=0, atol=1e-12)
    assert fast["irs"] == pytest.approx(slow["irs"], abs=1e-12)


def test_reference_uses_numpy_quantile():
    rng = np.random.default_rng(3)
    factors = rng.integers(0, 4, (40, 1))
    codes = rng.standard_normal((40, 1))
    z = codes[:, 0]
    e_loc = np.mean([np.quantile(np.abs(z[factors[:, 0] == v] - z[factors[:, 0] == v].mean()), 0.99) for v in range(4)])
    expected = 1 - e_loc / np.max(np.abs(z - z.mean()))
    assert irs(factors, codes)["irs"] == pytest.approx(expected, abs=1e-12)


# UC ---------------------------------------------------------------------------------------------------

MATRIX = np.array(
    [
        [0.9, 0.1, 0.5],
        [0.2, 0.8, 0.2],
        [0.7, 0.3, 0.4],
        [0.1, 0.6, 0.5],
    ]
)


def test_uc_rho1_hand_computed_with_tie():
    # Q0 = {0}, Q1 = {1}, Q2 = {0} (0.5 at latents 0 and 3: the lower index wins)
    # Jaccard: (0,1) 0, (0,2) 1, (1,2) 0 -> UC = 1 - 1/3 = 2/3 (it would be 1 if the tie went to latent 3)
    assert _top_latents(MATRIX, 1).tolist() == [[0], [1], [0]]
    assert uc_from_irs_matrix(MATRIX, 1) == pytest.approx(2 / 3, abs=1e-15)


def test_uc_rho2_hand_computed():
    # Q0 = {0, 2}, Q1 = {1, 3}, Q2 = {0, 3}
    # Jaccard: (0,1) 0; (0,2) |{0}| / |{0,2,3}| = 1/3; (1,2) |{3}| / |{0,1,3}| = 1/3 -> UC = 1 - 2/9 = 7/9
    assert _top_latents(MATRIX, 2).tolist() == [[0, 2], [1, 3], [0, 3]]
    assert uc_from_irs_matrix(MATRIX, 2) == pytest.approx(7 / 9, abs=1e-15)


def test_uc_extremes_and_single_factor():
    assert uc_from_irs_matrix(np.eye(3), 1) == 1.0
    same = np.tile([[0.9], [0.5], [0.1]], (1, 4))
    assert uc_from_irs_matrix(same, 1) == 0.0
    assert uc_from_irs_matrix(same, 3) == 0.0
    assert uc_from_irs_matrix([[0.3], [0.9]], 1) == 1.0  # one factor: no pairs, 1.0 by definition


def test_unique_capture_on_codes():
    codes = np.insert(disentangled_codes(), 0, 2.0, axis=1)  # constant latent 0: indices shift
    result = unique_capture(GRID, codes)
    assert result["uc_rho1"] == 1.0
    assert result["q_sets"]["rho1"] == [[1], [2], [3]]
    assert [q[0] for q in result["q_sets"]["rho2"]] == [1, 2, 3]
    assert 0 <= result["uc_rho2"] < 1  # with 3 latents for 3 factors, pairs of 2 must overlap
    matrix = np.array(irs(GRID, codes)["irs_matrix"])[1:]
    assert result["uc_rho2"] == pytest.approx(uc_from_irs_matrix(matrix, 2))
    assert result["params"] == {"rho": [1, 2], "diff_quantile": 0.99}
    single = unique_capture(GRID, codes, rho=3, diff_quantile=1.0)
    assert set(single) == {"uc_rho3", "q_sets", "active_latents", "params"}
    assert single["uc_rho3"] == 0.0


# errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factors", "codes", "kwargs", "name"),
    [
        ([[0.5], [1.0]], [[0.0], [1.0]], {}, "factors"),
        ([[np.nan], [1.0]], [[0.0], [1.0]], {}, "factors"),
        ([0, 1], [[0.0], [1.0]], {}, "factors"),
        ([["a"], ["b"]], [[0.0], [1.0]], {}, "factors"),
        ([[0]], [[0.0]], {}, "factors"),
        ([[0], [1]], [[0.0], [np.inf]], {}, "codes"),
        ([[0], [1]], [[0.0], [np.nan]], {}, "codes"),
        ([[0], [1]], [0.0, 1.0], {}, "codes"),
        ([[0], [1]], [[0.0], [1.0], [2.0]], {}, "codes"),
        ([[0], [1]], [[0.0], [1.0]], {"diff_quantile": 0.0}, "diff_quantile"),
        ([[0], [1]], [[0.0], [1.0]], {"diff_quantile": 1.5}, "diff_quantile"),
        ([[0], [1]], [[0.0], [1.0]], {"diff_quantile": "0.9"}, "diff_quantile"),
    ],
)
def test_irs_errors_name_the_argument(factors, codes, kwargs, name):
    with pytest.raises(InvalidArgumentError, match=f"^{name}:"):
        irs(factors, codes, **kwargs)
    with pytest.raises(InvalidArgumentError, match=f"^{name}:"):
        unique_capture(factors, codes, rho=1, **kwargs)


def test_rho_errors():
    codes = np.insert(disentangled_codes(), 0, 2.0, axis=1)  # 3 non-constant latents of 4
    for rho in (4, 0, (1, 4), 1.0, True, (), "1"):
        with pytest.raises(InvalidArgumentError, match="^rho:"):
            unique_capture(GRID, codes, rho=rho)
    with pytest.raises(InvalidArgumentError, match="^rho:"):
        uc_from_irs_matrix(MATRIX, 5)
    with pytest.raises(InvalidArgumentError, match="^matrix:"):
        uc_from_irs_matrix([[np.nan, 0.1], [0.2, 0.3]], 1)
    with pytest.raises(InvalidArgumentError, match="^matrix:"):
        uc_from_irs_matrix([0.1, 0.2], 1)
