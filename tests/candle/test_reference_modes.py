"""IRS and UC as the authors' code computes them (``compat="reference"``), checked against values worked
out by hand from that code's rules: the CANDLE fork's ``np.argpartition(col, -1)[::-rho][:rho]``
(causal-disentanglement/disentanglement_lib, evaluation/metrics/irs.py, scalable_disentanglement_score) and
disentanglement_lib's 20-bin histogram discretiser before IRS (evaluation/metrics/utils.py).

The fork's ``argpartition`` order is numpy 1.x's introselect; the installed numpy is never asked (numpy 2 on
AVX-512 machines selects with SIMD code and orders the other entries differently). The orders numpy 1.26.4
gave are recorded in ``tests/data/numpy1-argpartition-last.json``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from repscope.cli import app
from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.irs import (
    histogram_discretize,
    irs,
    reference_selection,
    uc_from_irs_matrix,
    unique_capture,
)

DATA = Path(__file__).parent.parent / "data"

# latents x factors; each column is built so that the fork's selection differs from the top two:
#   column 0: max 0.9 at latent 1; numpy 1's order for n = 5 is (0, 4, 2, 3, 1): rho 2 takes positions 4
#             and 2 -> {1, 2}, while the top two are {1, 3}
#   column 1: max 0.95 at latent 2 = n - 3, swapped with the last: order (0, 1, 4, 3, 2) -> {2, 4}; top {2, 3}
#   column 2: the max 0.9 twice (latents 1 and 3); numpy swaps the last one: order (0, 1, 2, 4, 3) -> rho 1
#             {3}, rho 2 {3, 2}; the top (ties to the lower index) {1}, {1, 3}
MATRIX = np.array(
    [
        [0.1, 0.7, 0.4],
        [0.9, 0.1, 0.9],
        [0.2, 0.95, 0.1],
        [0.8, 0.8, 0.9],
        [0.3, 0.6, 0.3],
    ]
)


def fork_argpartition_last(column) -> list[int]:
    """numpy 1.x's ``argpartition(column, -1)`` order for float data, written out from its introselect
    (``npysort/selection.cpp``): with ``kth = n - 1 < 3``, ``dumb_select`` (a selection sort whose
    position ``i`` swaps with the first strictly smallest of the rest); otherwise the scan that keeps the
    last entry not below the running maximum, swapped into the last position. Plain loops, no numpy."""
    values = [float(v) for v in column]
    order = list(range(len(values)))
    if len(values) - 1 < 3:
        for position in range(len(values)):
            smallest = position
            for other in range(position + 1, len(values)):
                if values[order[other]] < values[order[smallest]]:
                    smallest = other
            order[position], order[smallest] = order[smallest], order[position]
        return order
    last_max = 0
    for index in range(1, len(values)):
        if not values[index] < values[last_max]:
            last_max = index
    order[last_max], order[-1] = order[-1], order[last_max]
    return order


def fork_selection(order: list[int], rho: int) -> list[int]:
    """The fork's ``order[::-rho][:rho]``: every rho-th position counting back from the last."""
    return [order[position] for position in range(len(order) - 1, -1, -rho)][:rho]


def test_the_fork_selection_by_hand():
    by_hand = {1: [[1], [2], [3]], 2: [[1, 2], [2, 4], [3, 2]]}
    for rho, expected in by_hand.items():
        assert [reference_selection(MATRIX[:, i], rho) for i in range(3)] == expected
    # four latents or more: the identity with the last maximum swapped into the last position
    # (0.3, 0.1, 0.4, 0.2): order (0, 1, 3, 2); rho 2 -> positions 3, 1; rho 3 -> 3, 0; rho 4 -> 3
    assert [reference_selection([0.3, 0.1, 0.4, 0.2], rho) for rho in (1, 2, 3, 4)] == [[2], [2, 1], [2, 0], [2]]
    # the maximum three times: the last one (4) is already last, so the order is the identity and rho 2
    # takes 4 and 2, where the top two (ties to the lower index) are 0 and 2
    assert reference_selection([0.7, 0.2, 0.7, 0.1, 0.7], 2) == [4, 2]
    # the last maximum (3) swaps with 4: order (0, 1, 2, 4, 3), positions 4 and 2 -> latents 3 and 2
    assert reference_selection([0.4, 0.9, 0.1, 0.9, 0.3], 2) == [3, 2]
    # integers are read as floats (numpy 1.x runs the full introselect on integer data)
    assert reference_selection([3, 1, 4, 2], 2) == [2, 1]
    # three latents or fewer: numpy sorts (selection sort, ascending), so rho 2 takes the argmax and the minimum
    assert reference_selection([0.5, 0.2, 0.9], 2) == [2, 1]
    assert reference_selection([0.9, 0.1, 0.5], 2) == [0, 1]  # swaps (0 1), then (1 2): order (1, 2, 0)
    assert reference_selection([0.5, 0.5, 0.1], 2) == [0, 2]  # a tie kept in place: the first 0.5 is last
    assert reference_selection([0.2, 0.2, 0.2], 2) == [2, 0]  # all equal: nothing moves
    assert reference_selection([0.3, 0.6], 2) == [1]  # positions 1, -1, ...: only one latent for rho 2
    assert reference_selection([0.6, 0.3], 1) == [0]
    assert reference_selection([0.5], 1) == [0]


def test_the_selection_matches_numpy_1_orders_recorded():
    """Every column of the fixture (orders numpy 1.26.4 gave, tests/data/README.md), every rho: the
    selection read off the recorded order; the loops above give the same orders (so they can stand in
    for numpy 1 on the random columns below and on the UC of codes)."""
    recorded = json.loads((DATA / "numpy1-argpartition-last.json").read_text())
    assert int(recorded["provenance"]["numpy"].split(".")[0]) == 1
    assert len(recorded["cases"]) >= 50
    for case in recorded["cases"]:
        column, order = case["column"], case["order"]
        assert fork_argpartition_last(column) == order, case
        for rho in range(1, len(column) + 1):
            assert reference_selection(column, rho) == fork_selection(order, rho), (case, rho)


def test_random_columns_match_the_introselect_order():
    rng = np.random.default_rng(5)
    for size in range(1, 25):
        for values in (rng.normal(size=size), rng.integers(0, 3, size=size).astype(float)):  # ties included
            for rho in range(1, min(size, 4) + 1):
                expected = fork_selection(fork_argpartition_last(values), rho)
                assert reference_selection(values, rho) == expected, (values, rho)


def test_uc_of_the_matrix_in_both_modes_by_hand():
    # reference, rho 1: {1}, {2}, {3}: no pair shares -> UC 1
    # paper, rho 1: {1}, {2}, {1}: the pair (0, 2) has Jaccard 1 -> UC = 1 - 1/3
    assert uc_from_irs_matrix(MATRIX, 1, compat="reference") == pytest.approx(1.0)
    assert uc_from_irs_matrix(MATRIX, 1) == pytest.approx(2 / 3)
    # reference, rho 2: {1, 2}, {2, 4}, {3, 2}: every pair shares latent 2 of 3 -> Jaccard 1/3 each -> UC 2/3
    # paper, rho 2: {1, 3}, {2, 3}, {1, 3}: Jaccard 1/3, 1, 1/3 -> mean 5/9 -> UC 4/9
    assert uc_from_irs_matrix(MATRIX, 2, compat="reference") == pytest.approx(2 / 3)
    assert uc_from_irs_matrix(MATRIX, 2) == pytest.approx(4 / 9)
    with pytest.raises(InvalidArgumentError, match="compat"):
        uc_from_irs_matrix(MATRIX, 1, compat="fork")
    with pytest.raises(InvalidArgumentError, match="rho"):
        reference_selection(MATRIX[:, 0], 6)
    with pytest.raises(InvalidArgumentError, match="column"):
        reference_selection(MATRIX, 1)


def test_histogram_discretize_by_hand():
    # 40 values 0..39 in 20 bins: edges 0, 1.95, 3.9, ...; np.digitize against the first 20 edges
    # ([0, 40] values with an outlier: edges 0, 2, ..., 40; 0 and 1 share the first bin, 40 the last)
    factors = np.array([[0, 0], [1, 1], [2, 40], [3, 40], [4, 1], [39, 0]])
    np.testing.assert_array_equal(histogram_discretize(factors), [[1, 1], [1, 1], [2, 20], [2, 20], [3, 1], [20, 1]])
    with pytest.raises(InvalidArgumentError, match="num_bins"):
        histogram_discretize(factors, num_bins=0)


def test_irs_reference_bins_the_factors_by_hand():
    # one factor g = (0, 1, 40, 40), one latent z = (0, 2, 5, 7): mean 3.5, max_dev 3.5; diff_quantile 1
    # paper: groups {0}: dev 0, {1}: dev 0, {40}: (5, 7) dev 1 -> e_loc 1/3 -> IRS 1 - (1/3) / 3.5 = 19/21
    # reference: 20 bins of width 2 put 0 and 1 in one bin: (0, 2) dev 1, (5, 7) dev 1 -> e_loc 1 -> 5/7
    factors, codes = [[0], [1], [40], [40]], [[0.0], [2.0], [5.0], [7.0]]
    paper = irs(factors, codes, diff_quantile=1.0)
    reference = irs(factors, codes, diff_quantile=1.0, compat="reference")
    assert paper["irs"] == pytest.approx(19 / 21, abs=1e-15)
    assert reference["irs_reference"] == pytest.approx(5 / 7, abs=1e-15)
    assert reference["irs_matrix_reference"] == [[pytest.approx(5 / 7)]]
    assert "irs" not in reference and reference["params"] == {
        "diff_quantile": 1.0,
        "compat": "reference",
        "num_bins": 20,
    }
    # the default quantile 0.99 (numpy's linear interpolation): groups of two have dev 1 at any quantile
    assert irs(factors, codes, compat="reference")["irs_reference"] == pytest.approx(5 / 7, abs=1e-15)
    # continuous factors are binned too in this mode (refused by the paper mode)
    continuous = irs([[0.0], [0.5], [40.0], [40.0]], codes, diff_quantile=1.0, compat="reference")
    assert continuous["irs_reference"] == pytest.approx(5 / 7, abs=1e-15)
    with pytest.raises(InvalidArgumentError, match="factors"):
        irs([[0.0], [0.5], [40.0], [40.0]], codes)


def test_factors_with_at_most_twenty_evenly_spaced_values_keep_their_irs():
    grid = np.array(list(itertools.product(range(3), range(4), range(5))))
    codes = grid @ np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.3], [0.1, 0.0, 1.0]]) + 0.05 * np.random.default_rng(
        0
    ).normal(size=grid.shape)
    assert irs(grid, codes, compat="reference")["irs_reference"] == pytest.approx(irs(grid, codes)["irs"], abs=1e-12)


def test_unique_capture_reference_on_codes():
    rng = np.random.default_rng(2)
    factors = np.stack([rng.integers(0, 4, 300), rng.integers(0, 40, 300), rng.integers(0, 6, 300)], axis=1)
    codes = np.concatenate([factors / [4, 40, 6] + 0.3 * rng.normal(size=(300, 3)), rng.normal(size=(300, 3))], 1)
    codes[:, 4] = 1.0  # a constant latent: dropped, the indices refer to the columns of codes
    result = unique_capture(factors, codes, compat="reference")
    assert set(result) == {"uc_rho1_reference", "uc_rho2_reference", "q_sets_reference", "active_latents", "params"}
    assert result["params"]["compat"] == "reference" and result["active_latents"] == [0, 1, 2, 3, 5]
    # the fork's expression, on numpy 1's order, on the reference IRS matrix of the active latents
    matrix = np.array(irs(factors, codes, compat="reference")["irs_matrix_reference"])[[0, 1, 2, 3, 5]]
    active = [0, 1, 2, 3, 5]
    for rho in (1, 2):
        expected = [[active[k] for k in fork_selection(fork_argpartition_last(matrix[:, i]), rho)] for i in range(3)]
        assert result["q_sets_reference"][f"rho{rho}"] == expected
        sets = [set(q) for q in expected]
        jaccard = [len(a & b) / len(a | b) for a, b in itertools.combinations(sets, 2)]
        assert result[f"uc_rho{rho}_reference"] == pytest.approx(1 - sum(jaccard) / 3)


def test_cli_compat_reference_writes_the_reference_scores(tmp_path):
    rng = np.random.default_rng(4)
    factors = np.stack([rng.integers(0, 3, 200), rng.integers(0, 32, 200)], axis=1)
    codes = np.concatenate([factors / [3, 32] + 0.2 * rng.normal(size=(200, 2)), rng.normal(size=(200, 3))], 1)
    np.savez(tmp_path / "codes.npz", factors=factors, codes=codes)
    runner = CliRunner()
    scores = {}
    for compat in ("paper", "reference", "both"):
        out = tmp_path / f"{compat}.json"
        command = ["disentangle", "score", str(tmp_path / "codes.npz"), "--metric", "irs", "--metric", "uc"]
        result = runner.invoke(app, [*command, "--compat", compat, "--out", str(out)])
        assert result.exit_code == 0, result.output
        written = json.loads(out.read_text())
        assert written["compat"] == compat
        scores[compat] = written["scores"]
    reference_keys = {"irs_reference", "uc_rho1_reference", "uc_rho2_reference"}
    assert set(scores["paper"]) == {"irs", "uc_rho1", "uc_rho2"}
    assert set(scores["reference"]) == reference_keys
    assert set(scores["both"]) == {"irs", "uc_rho1", "uc_rho2"} | reference_keys
    assert scores["reference"]["irs_reference"] == irs(factors, codes, compat="reference")["irs_reference"]
    capture = unique_capture(factors, codes, compat="reference")
    assert scores["both"]["uc_rho2_reference"] == capture["uc_rho2_reference"]
    assert scores["both"]["irs"] == scores["paper"]["irs"] != scores["both"]["irs_reference"]  # 32 values binned
    bad = runner.invoke(app, ["disentangle", "score", str(tmp_path / "codes.npz"), "--compat", "fork"])
    assert bad.exit_code != 0
