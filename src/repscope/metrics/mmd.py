"""Kernel two-sample tests (maximum mean discrepancy) between two sets of morphometrics.

Castro et al., "Morpho-MNIST: Quantitative Assessment and Diagnostics for Representation Learning"
(section 4.1 and Appendix C), compare the morphometrics of model samples with those of the test
digits by the linear-time MMD test of Gretton et al. (2012, section 6), with a Gaussian product kernel
whose bandwidths come from Scott's rule: the per-dimension kernel density bandwidths of the two
samples are found separately and their squares added, since the convolution of the two density
estimation kernels is again Gaussian with that variance.

Both tests here take arrays ``(n, D)`` of features (one row per image, e.g. length, thickness, slant,
width, height) and accept a fixed ``bandwidth_sq`` so several tests can share one kernel.

References
----------
A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schoelkopf, A. Smola. A kernel two-sample test.
JMLR 13 (2012), eq. 3 (unbiased MMD_u^2) and section 6 (linear-time MMD_l^2).
D. W. Scott. Multivariate Density Estimation (1992), eq. 6.42.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import norm

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

MIN_ROWS = 4
# Permutation statistics are computed in blocks of this many permutations to bound memory.
_PERMUTATION_BLOCK = 128


def scott_bandwidths(x: np.ndarray) -> np.ndarray:
    """Per-dimension kernel density bandwidths by Scott's rule.

    ``h_d = n^(-1/(D+4)) * std_d``, with ``n`` rows, ``D`` columns and ``std_d`` the sample standard
    deviation (``ddof=1``) of column ``d`` (Scott 1992, eq. 6.42; Castro et al., Appendix C).

    Parameters
    ----------
    x : array-like of shape (n, D)
        Finite real values (e.g. morphometrics: pixels for lengths, radians for slant), ``n >= 2``.

    Returns
    -------
    numpy.ndarray
        ``(D,)`` float64 bandwidths, in the units of the columns.

    Raises
    ------
    InvalidArgumentError
        When ``x`` is not a 2-D real array with at least one column and two rows, or holds NaN or
        infinity.
    """
    x = _as_sample(x, "x", min_rows=2)
    n, dims = x.shape
    return n ** (-1.0 / (dims + 4)) * x.std(axis=0, ddof=1)


def mmd_linear_test(
    x: np.ndarray,
    y: np.ndarray,
    bandwidth_sq: np.ndarray | None = None,
    rng: np.random.Generator | int | None = None,
) -> dict[str, Any]:
    """Linear-time MMD two-sample test (Gretton et al. 2012, section 6).

    Consecutive rows are paired: with ``m2 = floor(min(n_x, n_y) / 2)`` and, for ``i < m2``,
    ``x1 = x[2i], x2 = x[2i+1], y1 = y[2i], y2 = y[2i+1]``::

        h_i = k(x1, x2) + k(y1, y2) - k(x1, y2) - k(x2, y1)
        MMD_l^2 = mean_i h_i
        std_error = std(h, ddof=1) / sqrt(m2)
        z = MMD_l^2 / std_error,   p = P(N(0, 1) > z)

    ``MMD_l^2`` is an unbiased estimate of the squared MMD and asymptotically normal, so the p-value is
    the one-sided normal upper tail (large values speak against equal distributions). Rows past
    ``2 * m2`` are not used.

    The kernel is the Gaussian product kernel ``k(a, b) = exp(-sum_d (a_d - b_d)^2 / (2 s_d^2))``
    with ``s_d^2 = scott(x)_d^2 + scott(y)_d^2`` (:func:`scott_bandwidths`; Castro et al.,
    Appendix C) unless ``bandwidth_sq`` is given.

    Rows are used in the order given, so the caller shuffles them when that order carries structure
    (e.g. sorted by class), or passes ``rng`` to shuffle both samples here first.

    Parameters
    ----------
    x, y : array-like of shape (n_x, D) and (n_y, D)
        Finite real values with the same columns in the same units (e.g. morphometrics; drop rows
        with invalid morphometrics first), at least 4 rows each.
    bandwidth_sq : array-like of shape (D,), optional
        Positive squared kernel bandwidths ``s_d^2``, in the squared units of the columns; default from
        Scott's rule as above.
    rng : numpy.random.Generator or int, optional
        Generator or seed to shuffle the rows of ``x`` and ``y`` before pairing; ``None`` keeps the
        given order.

    Returns
    -------
    dict
        ``mmd2`` (MMD_l^2, unitless since the kernel is), ``std_error``, ``z``, ``p_value``, ``pairs``
        (m2), ``bandwidth_sq`` (list of D floats) and ``test`` = ``"linear"``.

    Raises
    ------
    InvalidArgumentError
        When ``x`` or ``y`` is not a 2-D real array of at least 4 finite rows, their column counts
        differ, ``bandwidth_sq`` is not ``D`` finite positive values, or a column is constant in both
        samples (Scott's rule then gives a zero bandwidth).

    References
    ----------
    Gretton et al., A kernel two-sample test, JMLR 13 (2012), section 6. Castro et al., Morpho-MNIST,
    section 4.1 and Appendix C.
    """
    x, y = _as_sample(x, "x"), _as_sample(y, "y")
    _check_same_columns(x, y)
    bandwidth_sq = _bandwidth_sq(x, y, bandwidth_sq)
    if rng is not None:
        generator = np.random.default_rng(rng)
        x = x[generator.permutation(len(x))]
        y = y[generator.permutation(len(y))]
    pairs = min(len(x), len(y)) // 2
    x1, x2 = x[0 : 2 * pairs : 2], x[1 : 2 * pairs : 2]
    y1, y2 = y[0 : 2 * pairs : 2], y[1 : 2 * pairs : 2]
    h = (
        _paired_kernel(x1, x2, bandwidth_sq)
        + _paired_kernel(y1, y2, bandwidth_sq)
        - _paired_kernel(x1, y2, bandwidth_sq)
        - _paired_kernel(x2, y1, bandwidth_sq)
    )
    mmd2 = float(h.mean())
    std_error = float(h.std(ddof=1) / np.sqrt(pairs))
    if std_error > 0:
        z = mmd2 / std_error
    else:  # every h_i equal: no spread to judge the mean by
        z = 0.0 if mmd2 == 0 else float(np.copysign(np.inf, mmd2))
    return {
        "mmd2": mmd2,
        "std_error": std_error,
        "z": float(z),
        "p_value": float(norm.sf(z)),
        "pairs": int(pairs),
        "bandwidth_sq": [float(v) for v in bandwidth_sq],
        "test": "linear",
    }


def mmd_quadratic_test(
    x: np.ndarray,
    y: np.ndarray,
    bandwidth_sq: np.ndarray | None = None,
    permutations: int = 500,
    rng: np.random.Generator | int | None = 0,
) -> dict[str, Any]:
    """Unbiased quadratic-time MMD test with a permutation p-value (Gretton et al. 2012, eq. 3).

    With ``m = n_x``, ``n = n_y`` and the kernel of :func:`mmd_linear_test`::

        MMD_u^2 = 1/(m(m-1)) sum_{i != j} k(x_i, x_j) + 1/(n(n-1)) sum_{i != j} k(y_i, y_j)
                  - 2/(mn) sum_{i, j} k(x_i, y_j)

    The p-value is ``(1 + #{b : MMD_u^2(perm_b) >= MMD_u^2}) / (1 + permutations)`` where each
    permutation reassigns the pooled rows to two groups of sizes ``m`` and ``n``. The kernel matrix
    of the pooled sample is computed once (memory ``8 (m + n)^2`` bytes: subsample above a few
    thousand rows per sample).

    Parameters
    ----------
    x, y : array-like of shape (n_x, D) and (n_y, D)
        Finite real values with the same columns in the same units, at least 4 rows each.
    bandwidth_sq : array-like of shape (D,), optional
        Positive squared kernel bandwidths, in the squared units of the columns; default
        ``scott(x)^2 + scott(y)^2``.
    permutations : int, default=500
        Number of random permutations (>= 1).
    rng : numpy.random.Generator or int, default=0
        Generator or seed for the permutations.

    Returns
    -------
    dict
        ``mmd2`` (MMD_u^2; may be negative), ``p_value``, ``permutations``, ``bandwidth_sq`` (list)
        and ``test`` = ``"quadratic"``.

    Raises
    ------
    InvalidArgumentError
        When ``x`` or ``y`` is not a 2-D real array of at least 4 finite rows, their column counts
        differ, ``permutations`` is not a positive integer, ``bandwidth_sq`` is not ``D`` finite
        positive values, or a column is constant in both samples.

    References
    ----------
    Gretton et al., A kernel two-sample test, JMLR 13 (2012), eq. 3 and section 3.2.
    Castro et al., Morpho-MNIST, Appendix C (kernel and bandwidths).
    """
    x, y = _as_sample(x, "x"), _as_sample(y, "y")
    _check_same_columns(x, y)
    permutations = check_positive_int(permutations, "permutations")
    bandwidth_sq = _bandwidth_sq(x, y, bandwidth_sq)
    generator = np.random.default_rng(rng)

    m, n = len(x), len(y)
    pooled = np.concatenate([x, y]) / np.sqrt(bandwidth_sq)
    kernel = _gram(pooled)
    np.fill_diagonal(kernel, 0.0)
    row_sums = kernel.sum(axis=1)
    total = float(row_sums.sum())

    def statistic(in_x: np.ndarray) -> np.ndarray:
        # in_x: (m + n, B) 0/1 indicators of the x group. With K zero on its diagonal and r = K 1:
        # S_xx = a'Ka, S_xy = a'r - S_xx, S_yy = total - 2 a'r + S_xx.
        s_xx = np.einsum("ib,ib->b", in_x, kernel @ in_x)
        s_x_all = row_sums @ in_x
        s_xy = s_x_all - s_xx
        s_yy = total - 2.0 * s_x_all + s_xx
        return s_xx / (m * (m - 1)) + s_yy / (n * (n - 1)) - 2.0 * s_xy / (m * n)

    observed_groups = np.zeros((m + n, 1))
    observed_groups[:m] = 1.0
    observed = float(statistic(observed_groups)[0])
    exceed = 0
    for start in range(0, permutations, _PERMUTATION_BLOCK):
        block = min(_PERMUTATION_BLOCK, permutations - start)
        order = generator.permuted(np.tile(np.arange(m + n), (block, 1)), axis=1)
        groups = np.zeros((m + n, block))
        groups[order[:, :m].T, np.arange(block)[None, :]] = 1.0
        exceed += int(np.count_nonzero(statistic(groups) >= observed))
    return {
        "mmd2": observed,
        "p_value": (1 + exceed) / (1 + permutations),
        "permutations": int(permutations),
        "bandwidth_sq": [float(v) for v in bandwidth_sq],
        "test": "quadratic",
    }


def _as_sample(values: Any, name: str, min_rows: int = MIN_ROWS) -> np.ndarray:
    try:
        array = np.asarray(values)
    except Exception as error:  # e.g. ragged nested lists
        raise InvalidArgumentError(f"{name}: cannot be read as an array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{name}: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 2:
        raise InvalidArgumentError(f"{name}: expected a 2-D array (samples, features), got shape {array.shape}")
    if array.shape[1] < 1:
        raise InvalidArgumentError(f"{name}: has no columns")
    if array.shape[0] < min_rows:
        raise InvalidArgumentError(f"{name}: needs at least {min_rows} rows, got {array.shape[0]}")
    array = array.astype(np.float64, copy=False)
    if not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).any(axis=1).sum())
        raise InvalidArgumentError(f"{name}: {bad} rows hold NaN or infinite values; drop invalid rows before testing")
    return array


def _check_same_columns(x: np.ndarray, y: np.ndarray) -> None:
    if x.shape[1] != y.shape[1]:
        raise InvalidArgumentError(f"y: has {y.shape[1]} columns but x has {x.shape[1]}; both need the same features")


def _bandwidth_sq(x: np.ndarray, y: np.ndarray, bandwidth_sq: Any) -> np.ndarray:
    dims = x.shape[1]
    if bandwidth_sq is None:
        squared = scott_bandwidths(x) ** 2 + scott_bandwidths(y) ** 2
        constant = np.flatnonzero(squared <= 0)
        if constant.size:
            raise InvalidArgumentError(
                f"x, y: columns {constant.tolist()} are constant in both samples, so Scott's rule gives a zero "
                "bandwidth; drop them or pass bandwidth_sq"
            )
        return squared
    squared = np.asarray(bandwidth_sq, dtype=np.float64)
    if squared.shape != (dims,):
        raise InvalidArgumentError(f"bandwidth_sq: expected shape ({dims},) (one per column), got {squared.shape}")
    if not (np.isfinite(squared).all() and (squared > 0).all()):
        raise InvalidArgumentError(f"bandwidth_sq: must be finite and positive, got {squared.tolist()}")
    return squared


def _paired_kernel(a: np.ndarray, b: np.ndarray, bandwidth_sq: np.ndarray) -> np.ndarray:
    """``k(a_i, b_i)`` row by row."""
    return np.exp(-0.5 * (((a - b) ** 2) / bandwidth_sq).sum(axis=1))


def _gram(scaled: np.ndarray) -> np.ndarray:
    """Gaussian kernel matrix of rows already divided by their bandwidths."""
    squared_norms = (scaled**2).sum(axis=1)
    distances = squared_norms[:, None] + squared_norms[None, :] - 2.0 * (scaled @ scaled.T)
    np.maximum(distances, 0.0, out=distances)  # rounding can make tiny negatives
    return np.exp(-0.5 * distances, out=distances)


__all__ = ["scott_bandwidths", "mmd_linear_test", "mmd_quadratic_test"]
