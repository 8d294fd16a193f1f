"""Variance matrices (ML4ML, Sec. III): how much a model's signals differ between transformations.

For transformations ``t_0 .. t_n`` of every test example ``x`` and a difference function ``dif``,

    delta[i, j] = sqrt( mean over x of dif_ij(x)^2 )          (the paper's cumul; Eq. 2)

When ``dif_ij(x) = f(S_i(x)) - f(S_j(x))`` (``max`` or ``mean`` of the signal set, the paper's five
matrices), the mean of squares is a Gram-matrix identity on the per-example values ``v[x, i] =
f(S_i(x))``: mean (v_i - v_j)^2 = m_ii + m_jj - 2 m_ij with ``m = v^T v / N``, so the whole matrix is one
matrix product (:func:`variance_matrix`) instead of a loop over the ``(n + 1)^2`` pairs. Any other
difference function goes through :func:`variance_matrix_of_dif`. The matrix is stored with row ``i`` and
column ``j``; figures put ``delta[0, 0]`` at the bottom-left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError


def _values(values: Any, name: str = "values") -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 2:
        raise InvalidArgumentError(
            f"{name}: expected (examples, transformations) with 2+ transformations, got {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError(f"{name}: holds NaN or infinite values")
    return array


def variance_matrix(values: Any) -> np.ndarray:
    """The variance matrix of a statistic ``v[x, i] = f(S_i(x))``, dif = f_i - f_j.

    delta[i, j] = sqrt(mean_x (v[x, i] - v[x, j])^2) = sqrt(m_ii + m_jj - 2 m_ij), m = v^T v / N.

    Parameters
    ----------
    values : array-like of shape (N, T)
        The statistic of each example (rows) under each transformation (columns).

    Returns
    -------
    numpy.ndarray
        ``(T, T)`` float64, symmetric, zero diagonal.

    Raises
    ------
    InvalidArgumentError
        A shape other than (N >= 1, T >= 2), or non-finite values.
    """
    array = _values(values)
    # subtracting the overall mean from every value leaves every difference unchanged and keeps the
    # Gram entries small, so the subtraction below does not lose digits to large signal values
    array = array - array.mean()
    gram = array.T @ array / array.shape[0]
    squares = np.diag(gram)
    delta2 = squares[:, None] + squares[None, :] - 2.0 * gram
    np.fill_diagonal(delta2, 0.0)
    return np.sqrt(np.clip(delta2, 0.0, None))


def variance_matrix_of_dif(signals: Sequence[Any], dif: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The variance matrix of any difference function, one pair at a time.

    delta[i, j] = sqrt(mean_x dif(S_i, S_j)(x)^2).

    Parameters
    ----------
    signals : sequence of array-like
        ``T`` arrays ``(N, ...)``: the signal sets of the N examples under each transformation.
    dif : callable
        ``dif(S_i, S_j) -> (N,)`` differences, one per example.

    Returns
    -------
    numpy.ndarray
        ``(T, T)`` float64 (symmetric only when ``dif`` is antisymmetric).

    Raises
    ------
    InvalidArgumentError
        Fewer than 2 transformations, arrays of different example counts, or a ``dif`` that does not
        give one finite value per example.
    """
    arrays = [np.asarray(s) for s in signals]
    if len(arrays) < 2:
        raise InvalidArgumentError(f"signals: expected 2+ transformations, got {len(arrays)}")
    count = arrays[0].shape[0]
    if any(a.shape[0] != count for a in arrays):
        raise InvalidArgumentError("signals: every transformation needs the same examples (first dimension)")
    matrix = np.zeros((len(arrays), len(arrays)))
    for i, first in enumerate(arrays):
        for j, second in enumerate(arrays):
            if i == j:
                continue
            difference = np.asarray(dif(first, second), dtype=np.float64)
            if difference.shape != (count,) or not np.all(np.isfinite(difference)):
                raise InvalidArgumentError(f"dif: expected {count} finite differences, got shape {difference.shape}")
            matrix[i, j] = np.sqrt(np.mean(difference**2))
    return matrix


def subsample_rows(count: int, fraction: float = 0.9, seed: int = 0) -> np.ndarray:
    """A seeded subsample of ``round(fraction * count)`` row indices, sorted (for the sensitivity feature).

    Parameters
    ----------
    count : int
        Rows (test examples).
    fraction : float, default 0.9
        The paper's r = 90%.
    seed : int, default 0
        Seed.

    Returns
    -------
    numpy.ndarray
        int64 indices.

    Raises
    ------
    InvalidArgumentError
        When ``fraction`` is not in (0, 1] or the subsample would be empty.
    """
    if not 0 < fraction <= 1:
        raise InvalidArgumentError(f"fraction: expected a number in (0, 1], got {fraction!r}")
    size = int(round(fraction * count))
    if size < 1:
        raise InvalidArgumentError(f"fraction: {fraction} of {count} rows is empty")
    return np.sort(np.random.default_rng(seed).choice(count, size=size, replace=False))


__all__ = ["subsample_rows", "variance_matrix", "variance_matrix_of_dif"]
