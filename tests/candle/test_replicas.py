"""Near-replica groups: duplicates found, spread points not, monotone in the threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from repscope.errors import InvalidArgumentError
from repscope.metrics import near_replicas


def spread_points(n: int, seed: int = 0) -> np.ndarray:
    """Points on a jittered grid in 2-D: no two closer than ~0.1 standard deviations."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), axis=-1).reshape(-1, 2)[:n].astype(float)
    return grid + rng.uniform(-0.2, 0.2, size=grid.shape)


def test_exact_and_near_duplicates_form_groups():
    base = spread_points(100) * [1.0, 50.0]  # columns on different scales: standardising matters
    std = base.std(axis=0, ddof=1)
    features = np.concatenate(
        [
            base,
            base[[3, 3, 3]],  # three exact copies of row 3: a group of 4
            base[[10]] + 0.01 * std,  # a near copy of row 10 (0.014 std away)
            base[[20]] + [0.0, 0.02 * std[1]],  # a near copy of row 20 (0.02 std away in column 1)
        ]
    )
    result = near_replicas(features, threshold=0.05)
    labels = result["labels"]
    assert result["groups"] == 3
    assert result["largest_group"] == 4
    assert result["samples_in_groups"] == 8
    assert result["fraction_in_groups"] == pytest.approx(8 / 105)
    assert result["n_samples"] == 105 and result["threshold"] == 0.05 and result["linkage"] == "single"
    assert labels.shape == (105,)
    assert len({labels[3], labels[100], labels[101], labels[102]}) == 1 and labels[3] == 0  # largest first
    assert labels[10] == labels[103] != -1
    assert labels[20] == labels[104] != -1
    assert (labels[[i for i in range(100) if i not in (3, 10, 20)]] == -1).all()


def test_well_spread_points_give_no_group():
    result = near_replicas(spread_points(400, seed=1), threshold=0.05)
    assert result["groups"] == 0 and result["samples_in_groups"] == 0 and result["largest_group"] == 0
    assert (result["labels"] == -1).all()


def test_more_replicas_as_the_threshold_rises():
    features = np.random.default_rng(2).normal(size=(1500, 5))
    previous_in_groups, previous_labels = -1, None
    for threshold in [0.0, 0.1, 0.2, 0.3, 0.4, 0.6]:
        result = near_replicas(features, threshold=threshold)
        assert result["samples_in_groups"] >= previous_in_groups
        if previous_labels is not None:
            # clusters only merge: every earlier group lies inside one later group
            for group in np.unique(previous_labels[previous_labels >= 0]):
                assert len(np.unique(result["labels"][previous_labels == group])) == 1
        previous_in_groups, previous_labels = result["samples_in_groups"], result["labels"]
    assert near_replicas(features, threshold=0.0)["groups"] == 0
    assert previous_in_groups > 0


@pytest.mark.parametrize("method", ["single", "complete", "average"])
def test_matches_scipy_hierarchical_clustering(method):
    rng = np.random.default_rng(3)
    features = np.concatenate([rng.normal(size=(300, 3)), rng.normal(0, 0.02, size=(40, 3))])
    threshold = 0.15
    result = near_replicas(features, threshold=threshold, linkage=method)
    z = (features - features.mean(axis=0)) / features.std(axis=0, ddof=1)
    reference = fcluster(linkage(pdist(z), method=method), t=threshold, criterion="distance")
    # same partition into clusters of >= 2 members
    ours = {frozenset(np.flatnonzero(result["labels"] == g)) for g in range(result["groups"])}
    sizes = np.bincount(reference)
    theirs = {frozenset(np.flatnonzero(reference == c)) for c in np.flatnonzero(sizes >= 2)}
    assert ours == theirs
    assert result["groups"] > 0


def test_ten_thousand_samples_single_linkage():
    rng = np.random.default_rng(4)
    features = rng.normal(size=(10000, 5))
    features[9000:] = features[:1000] + rng.normal(0, 1e-3, size=(1000, 5))  # 1,000 planted pairs
    result = near_replicas(features, threshold=0.05)
    assert result["groups"] >= 1000
    assert result["samples_in_groups"] >= 2000


def test_validation_names_the_argument():
    with pytest.raises(InvalidArgumentError, match=r"^features: expected a 2-D array"):
        near_replicas(np.zeros(5))
    with pytest.raises(InvalidArgumentError, match=r"^features: 1 rows hold NaN"):
        near_replicas(np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]]))
    with pytest.raises(InvalidArgumentError, match=r"^threshold: must be finite and >= 0"):
        near_replicas(np.zeros((3, 2)), threshold=-1)
    with pytest.raises(InvalidArgumentError, match=r"^linkage: expected one of"):
        near_replicas(np.zeros((3, 2)), linkage="ward")


def test_tiny_and_constant_inputs():
    assert near_replicas(np.zeros((1, 3)))["groups"] == 0
    assert near_replicas(np.zeros((0, 3)))["fraction_in_groups"] == 0.0
    constant = near_replicas(np.ones((5, 2)))  # all identical: one group of five
    assert constant["groups"] == 1 and constant["largest_group"] == 5
