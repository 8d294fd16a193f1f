"""Groups of near-replicas among samples, found by agglomerative clustering of their features.

Castro et al. (Morpho-MNIST, section 4.1, "Finding replicas") suggest hierarchical agglomerative
clustering of sample morphometrics in standardised Euclidean distance: with a low enough distance
threshold, the clusters of two or more samples are groups of near-replicas, and many of them signal
mode collapse.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster
from scipy.cluster.hierarchy import linkage as hierarchical_linkage
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import pdist
from sklearn.neighbors import radius_neighbors_graph

from repscope.errors import InvalidArgumentError

LINKAGES = ("single", "complete", "average")


def near_replicas(features: np.ndarray, threshold: float = 0.05, linkage: str = "single") -> dict[str, Any]:
    """Groups of near-replicas: clusters of >= 2 samples closer than ``threshold`` after standardising.

    Each column is standardised to z-scores (mean 0, sample standard deviation 1; a constant column
    becomes 0), so distances are standardised Euclidean distances
    ``d(a, b) = sqrt(sum_d (a_d - b_d)^2 / var_d)``. Agglomerative clustering with ``linkage`` is cut
    at ``threshold``: two clusters merge while their linkage distance is ``<= threshold``. A replica
    group is a resulting cluster with at least two members.

    Single linkage at a threshold equals the connected components of the graph joining every pair
    within ``threshold``, built here from a radius-neighbour search without an ``n x n`` distance
    matrix (10,000 samples take well under a second). Complete and average linkage never merge
    samples from different components of that graph, so they are run within each component of two or
    more samples; memory grows with the square of the largest component.

    Parameters
    ----------
    features : array-like of shape (n, D)
        Finite real features, one row per sample (e.g. morphometrics of generated digits; drop rows
        with invalid measurements first). Units do not matter: columns are standardised.
    threshold : float, default=0.05
        Distance cut in standard deviations (>= 0).
    linkage : {"single", "complete", "average"}, default="single"
        Agglomerative linkage.

    Returns
    -------
    dict
        ``groups`` (number of replica groups), ``largest_group`` (members of the largest, 0 if none),
        ``samples_in_groups``, ``fraction_in_groups`` (of ``n``), ``n_samples``, ``threshold``,
        ``linkage`` and ``labels``: ``(n,)`` int array, the group of each sample (0 = largest group,
        ties broken by first member) or -1 for a sample in no group.

    Raises
    ------
    InvalidArgumentError
        When ``features`` is not a 2-D real array or holds NaN or infinity, ``threshold`` is not a
        finite number >= 0, or ``linkage`` is not one of :data:`LINKAGES`.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, section 4.1.
    """
    features = _as_features(features)
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"threshold: expected a number, got {threshold!r}") from None
    if not np.isfinite(threshold) or threshold < 0:
        raise InvalidArgumentError(f"threshold: must be finite and >= 0, got {threshold}")
    if linkage not in LINKAGES:
        raise InvalidArgumentError(f"linkage: expected one of {list(LINKAGES)}, got {linkage!r}")

    n = len(features)
    clusters = np.arange(n)
    if n >= 2:
        scaled = _standardise(features)
        graph = radius_neighbors_graph(scaled, radius=threshold, mode="connectivity", include_self=False)
        _, clusters = connected_components(graph, directed=False)
        if linkage != "single":
            clusters = _refine_components(scaled, clusters, threshold, linkage)

    labels = _group_labels(clusters)
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=int)
    in_groups = int(sizes.sum())
    return {
        "groups": int(sizes.size),
        "largest_group": int(sizes.max()) if sizes.size else 0,
        "samples_in_groups": in_groups,
        "fraction_in_groups": in_groups / n if n else 0.0,
        "n_samples": int(n),
        "threshold": threshold,
        "linkage": linkage,
        "labels": labels,
    }


def _as_features(values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"features: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 2:
        raise InvalidArgumentError(f"features: expected a 2-D array (samples, features), got shape {array.shape}")
    array = array.astype(np.float64, copy=False)
    if not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).any(axis=1).sum())
        raise InvalidArgumentError(f"features: {bad} rows hold NaN or infinite values; drop invalid rows first")
    return array


def _standardise(features: np.ndarray) -> np.ndarray:
    std = features.std(axis=0, ddof=1)
    centred = features - features.mean(axis=0)
    return np.divide(centred, std, out=np.zeros_like(centred), where=std > 0)


def _refine_components(scaled: np.ndarray, components: np.ndarray, threshold: float, method: str) -> np.ndarray:
    """Cut ``method`` linkage at ``threshold`` within each component; cluster ids unique overall."""
    clusters = np.arange(len(scaled))  # singletons keep their own index
    next_id = len(scaled)
    counts = np.bincount(components)
    for component in np.flatnonzero(counts >= 2):
        members = np.flatnonzero(components == component)
        tree = hierarchical_linkage(pdist(scaled[members]), method=method)
        local = fcluster(tree, t=threshold, criterion="distance")
        clusters[members] = next_id + local
        next_id += int(local.max()) + 1
    return clusters


def _group_labels(clusters: np.ndarray) -> np.ndarray:
    """Clusters of >= 2 members numbered 0, 1, ... by size (largest first, then first member); -1 else."""
    _, first, inverse, counts = np.unique(clusters, return_index=True, return_inverse=True, return_counts=True)
    grouped = np.flatnonzero(counts >= 2)
    order = grouped[np.lexsort((first[grouped], -counts[grouped]))]
    mapping = np.full(counts.size, -1, dtype=np.int64)
    mapping[order] = np.arange(order.size)
    return mapping[inverse.ravel()]


__all__ = ["near_replicas", "LINKAGES"]
