"""The one histogram discretiser of the disentanglement metrics (MIG, modularity, IRS's reference mode).

disentanglement_lib (Locatello et al., 2019) bins a real column ``z`` into ``num_bins`` equal-width bins
over its range before counting mutual information (MIG, modularity) and before IRS groups factor values:
``numpy.digitize(z, numpy.histogram(z, num_bins)[1][:-1])``, bins numbered ``1..num_bins``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repscope.validation import check_positive_int

__all__ = ["histogram_discretize"]


def histogram_discretize(values: Any, num_bins: int) -> np.ndarray:
    """Per column, the bin (1..num_bins) of an equal-width ``num_bins``-bin histogram over the column's range.

    The rule of disentanglement_lib's ``_histogram_discretize``: ``np.digitize`` against the left edges of
    ``np.histogram``'s bins, so the column minimum falls in bin 1 and its maximum in bin ``num_bins`` (the
    last bin is closed); a constant column falls in one bin. Computed without a search: the bin is first
    read off ``(z - min) / width`` and then moved by one where rounding put ``z`` on the wrong side of an
    edge, so the result is ``np.digitize``'s exactly.

    Parameters
    ----------
    values : array-like of shape (N, K)
        Finite real values, one column per variable (checked by the caller).
    num_bins : int
        Bins per column.

    Returns
    -------
    numpy.ndarray of shape (N, K)
        int64 bin numbers in ``1..num_bins``.

    Raises
    ------
    InvalidArgumentError
        When ``num_bins`` is not a positive integer.

    References
    ----------
    google-research/disentanglement_lib, ``disentanglement_lib/evaluation/metrics/utils.py``,
    ``make_discretizer`` and ``_histogram_discretize`` (rows there are variables; columns here).
    """
    num_bins = check_positive_int(num_bins, "num_bins")
    by_column = np.ascontiguousarray(np.asarray(values).T, dtype=np.float64)
    discretized = np.empty(by_column.shape, dtype=np.int64)
    for column, row in enumerate(by_column):
        left_edges = np.histogram_bin_edges(row, bins=num_bins)[:-1]
        width = left_edges[1] - left_edges[0] if num_bins > 1 else 1.0
        if width > 0:
            # z >= min, so truncation is the floor; 0-based: the index of the left edge at or below z
            guess = ((row - left_edges[0]) / width).astype(np.int64)
            np.minimum(guess, num_bins - 1, out=guess)
        else:
            guess = np.zeros(row.shape, dtype=np.int64)
        guess -= row < np.take(left_edges, guess)
        above = np.minimum(guess + 1, num_bins - 1)
        guess += (row >= np.take(left_edges, above)) & (above > guess)
        discretized[column] = guess + 1
    return np.ascontiguousarray(discretized.T)
