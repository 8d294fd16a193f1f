"""The 16 features of a variance matrix (ML4ML invariance testing paper, Sec. VII).

A variance matrix ``delta`` of shape ``(n+1, n+1)`` (indices ``0..n``; 31 transforms give ``n = 30``)
holds in ``delta[i, j]`` the variance between a model's outputs under transforms ``i`` and ``j``. It is
usually symmetric with a zero diagonal, but nothing here assumes that. The "meaningful" elements are
the strict lower triangle ``i = 1..n``, ``j = 0..i-1`` (``n(n+1)/2`` elements).

Every standard deviation is the population one (divided by the count). The gradient features
(6-14) read ``D = fill_diagonal_with_neighbours(delta)``: the paper fills the main diagonal with "the
average value of its neighbour(s)", read here as the mean of each diagonal element's in-range
4-neighbours. Every function takes a finite real square ``matrix`` of at least 3x3 and raises
:class:`~repscope.errors.InvalidArgumentError`, naming the argument, otherwise.

:func:`matrix_features` with ``compat="reference"`` (:func:`reference_matrix_features`) computes the 16
features instead as the authors' released code does (Zukang-Liao/ML4ML-invariance-testing, ``measurement.py``
and ``utils.py``), under names ending in ``_reference``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from repscope.errors import InvalidArgumentError

FEATURE_NAMES = (
    "squared_value_mean",
    "mean",
    "std",
    "significant_variance",
    "sensitivity",
    "horizontal_gradient_mean",
    "horizontal_gradient_std",
    "horizontal_gradient_row_std",
    "vertical_gradient_mean",
    "vertical_gradient_std",
    "vertical_gradient_column_std",
    "diagonal_gradient_mean",
    "diagonal_gradient_std",
    "overall_gradient",
    "discontinuity",
    "asymmetry",
)
DEFAULT_TAU = 0.15
COMPAT_CHOICES = ("paper", "reference")
REFERENCE_SUFFIX = "_reference"


def _as_matrix(values: Any, name: str = "matrix") -> np.ndarray:
    try:
        array = np.asarray(values)
    except Exception as error:  # e.g. ragged nested lists
        raise InvalidArgumentError(f"{name}: cannot be read as an array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{name}: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] < 3:
        raise InvalidArgumentError(f"{name}: expected a square matrix of at least 3x3, got shape {array.shape}")
    array = array.astype(np.float64, copy=False)
    if not np.isfinite(array).all():
        raise InvalidArgumentError(f"{name}: holds {int((~np.isfinite(array)).sum())} NaN or infinite values")
    return array


def _meaningful(delta: np.ndarray) -> np.ndarray:
    """``delta[i, j]`` for ``i = 1..n``, ``j = 0..i-1``, row by row."""
    return delta[np.tril_indices(len(delta), k=-1)]


def _gradient_maps(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Horizontal, vertical and diagonal gradient maps of ``D``, each with its valid part lower-triangular.

    ``e_hg[i, j] = D[i, j-1] - D[i, j]`` lies at ``[i, j-1]`` of an ``(n+1, n)`` map (valid: ``j <= i``),
    ``e_vg[i, j] = D[i+1, j] - D[i, j]`` at ``[i, j]`` of an ``(n, n)`` map (valid: ``i >= j``) and
    ``e_dg[i, j] = D[i+1, j-1] - D[i, j]`` at ``[i, j-1]`` of an ``(n, n)`` map (valid: ``1 <= j <= i``).
    """
    filled = fill_diagonal_with_neighbours(delta)
    horizontal = filled[:, :-1] - filled[:, 1:]
    vertical = filled[1:, :-1] - filled[:-1, :-1]
    diagonal = filled[1:, :-1] - filled[:-1, 1:]
    return horizontal, vertical, diagonal


def _gradients(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The valid horizontal, vertical and diagonal gradients, each as a 1-D array."""
    n = len(delta) - 1
    horizontal, vertical, diagonal = _gradient_maps(delta)
    return (
        horizontal[np.tril_indices(n + 1, k=-1, m=n)],
        vertical[np.tril_indices(n)],
        diagonal[np.tril_indices(n, k=-1)],
    )


def _ratio(numerator: float, denominator: float) -> float:
    return 0.0 if denominator == 0 else float(numerator / denominator)


def fill_diagonal_with_neighbours(matrix: Any) -> np.ndarray:
    """A copy of ``matrix`` whose main diagonal holds the mean of each element's in-range 4-neighbours.

    ``D[i, i] = mean(delta[i-1, i], delta[i+1, i], delta[i, i-1], delta[i, i+1])`` over those that
    exist: four inside, two at the corners ``i = 0`` and ``i = n``. The neighbours are off-diagonal, so
    the input's diagonal does not matter. This is how the gradient features read the paper's "the
    primary diagonal ... is filled in using the average value of its neighbour(s)" (Sec. VII, feature 6).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    numpy.ndarray of shape (n+1, n+1)
        The filled float64 copy; off-diagonal elements unchanged, the input not modified.

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    filled = _as_matrix(matrix).copy()
    pairs = np.diagonal(filled, 1) + np.diagonal(filled, -1)  # delta[i, i+1] + delta[i+1, i], i = 0..n-1
    sums = np.zeros(len(filled))
    sums[:-1] += pairs  # the neighbours right of and below each diagonal element
    sums[1:] += pairs  # the neighbours left of and above it
    counts = np.full(len(filled), 4.0)
    counts[[0, -1]] = 2.0
    np.fill_diagonal(filled, sums / counts)
    return filled


def squared_value_mean(matrix: Any) -> float:
    """Feature 1: ``phi = 1 / (2 (n+1)^2) * sum_{i=0..n} sum_{j=0..n} delta[i, j]^2`` over all elements.

    ML4ML invariance testing paper, Sec. VII, feature 1. The prose says "mean of the squared values";
    the factor 1/2 is the paper's formula and is kept: with it, Proposition 1 makes ``phi`` equal
    ``Var(f) - Cov(f_i, f_j)`` when ``dif_ij = f_i - f_j`` (since ``E[(f_i - f_j)^2]`` is twice that).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    delta = _as_matrix(matrix)
    return float(np.sum(delta**2) / (2 * delta.size))


def mean(matrix: Any) -> float:
    """Feature 2: ``phi_mean = 2 / (n(n+1)) * sum_{i=1..n} sum_{j=0..i-1} delta[i, j]``.

    ML4ML invariance testing paper, Sec. VII, feature 2: the mean of the meaningful elements.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.mean(_meaningful(_as_matrix(matrix))))


def std(matrix: Any) -> float:
    """Feature 3: ``phi^2 = 2 / (n(n+1)) * sum_{i=1..n} sum_{j=0..i-1} (delta[i, j] - phi_mean)^2``.

    ML4ML invariance testing paper, Sec. VII, feature 3: the population standard deviation of the
    meaningful elements.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.std(_meaningful(_as_matrix(matrix))))


def significant_variance(matrix: Any, tau: float = DEFAULT_TAU) -> float:
    """Feature 4: ``phi = 2 / (n(n+1)) * #{(i, j) meaningful : delta[i, j] > tau}``.

    ML4ML invariance testing paper, Sec. VII, feature 4: the fraction of meaningful elements strictly
    above ``tau`` (an element equal to ``tau`` does not count).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.
    tau : float, default=0.15
        Finite threshold (the paper's value is 0.15).

    Returns
    -------
    float
        In ``[0, 1]``.

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3, or ``tau`` is not finite.
    """
    delta = _as_matrix(matrix)
    try:
        tau = float(tau)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"tau: expected a number, got {tau!r}") from None
    if not np.isfinite(tau):
        raise InvalidArgumentError(f"tau: must be finite, got {tau}")
    return float(np.mean(_meaningful(delta) > tau))


def sensitivity(matrix: Any, subsample_matrix: Any) -> float:
    """Feature 5: ``phi = 2 / (n(n+1)) * sum_{i=1..n} sum_{j=0..i-1} (delta[i, j] - delta_r[i, j])^2``.

    ML4ML invariance testing paper, Sec. VII, feature 5: ``delta_r`` is the same variance matrix
    computed on an r% subsample of the test set (the paper uses r = 90).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.
    subsample_matrix : array-like of shape (n+1, n+1)
        ``delta_r``: finite, of the same shape as ``matrix``.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When either matrix is not a finite real square matrix of at least 3x3, or their shapes differ.
    """
    delta = _as_matrix(matrix)
    delta_r = _as_matrix(subsample_matrix, "subsample_matrix")
    if delta_r.shape != delta.shape:
        raise InvalidArgumentError(f"subsample_matrix: expected shape {delta.shape} like matrix, got {delta_r.shape}")
    return float(np.mean((_meaningful(delta) - _meaningful(delta_r)) ** 2))


def horizontal_gradient_mean(matrix: Any) -> float:
    """Feature 6: mean of ``e_hg[i, j] = D[i, j-1] - D[i, j]``, ``i = 1..n``, ``j = 1..i`` (``n(n+1)/2`` values).

    ML4ML invariance testing paper, Sec. VII, feature 6; ``D`` is :func:`fill_diagonal_with_neighbours`.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.mean(_gradients(_as_matrix(matrix))[0]))


def horizontal_gradient_std(matrix: Any) -> float:
    """Feature 7: population standard deviation of the ``n(n+1)/2`` values ``e_hg[i, j]`` of feature 6.

    ML4ML invariance testing paper, Sec. VII, feature 7.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.std(_gradients(_as_matrix(matrix))[0]))


def horizontal_gradient_row_std(matrix: Any) -> float:
    """Feature 8: ``phi = 1/n * sum_{i=1..n} std(e_hg[i, 1..i])``, the mean of the rows' population stds.

    ML4ML invariance testing paper, Sec. VII, feature 8 (row 1 has one value, so a std of 0).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    gradient = _gradient_maps(_as_matrix(matrix))[0]
    return float(np.mean([np.std(gradient[i, :i]) for i in range(1, len(gradient))]))


def vertical_gradient_mean(matrix: Any) -> float:
    """Feature 9: mean of ``e_vg[i, j] = D[i+1, j] - D[i, j]``, ``j = 0..n-1``, ``i = j..n-1`` (``n(n+1)/2`` values).

    ML4ML invariance testing paper, Sec. VII, feature 9; ``D`` is :func:`fill_diagonal_with_neighbours`.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.mean(_gradients(_as_matrix(matrix))[1]))


def vertical_gradient_std(matrix: Any) -> float:
    """Feature 10: population standard deviation of the ``n(n+1)/2`` values ``e_vg[i, j]`` of feature 9.

    ML4ML invariance testing paper, Sec. VII, feature 10.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.std(_gradients(_as_matrix(matrix))[1]))


def vertical_gradient_column_std(matrix: Any) -> float:
    """Feature 11: ``phi = 1/n * sum_{j=0..n-1} std(e_vg[j..n-1, j])``, the mean of the columns' population stds.

    ML4ML invariance testing paper, Sec. VII, feature 11 (column n-1 has one value, so a std of 0).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    gradient = _gradient_maps(_as_matrix(matrix))[1]
    return float(np.mean([np.std(gradient[j:, j]) for j in range(len(gradient))]))


def diagonal_gradient_mean(matrix: Any) -> float:
    """Feature 12: mean of ``e_dg[i, j] = D[i+1, j-1] - D[i, j]``, ``i = 1..n-1``, ``j = 1..i`` (``n(n-1)/2`` values).

    ML4ML invariance testing paper, Sec. VII, feature 12; ``D`` is :func:`fill_diagonal_with_neighbours`.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.mean(_gradients(_as_matrix(matrix))[2]))


def diagonal_gradient_std(matrix: Any) -> float:
    """Feature 13: population standard deviation of the ``n(n-1)/2`` values ``e_dg[i, j]`` of feature 12.

    ML4ML invariance testing paper, Sec. VII, feature 13.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return float(np.std(_gradients(_as_matrix(matrix))[2]))


def overall_gradient(matrix: Any) -> float:
    """Feature 14: ``phi = (hg_mean / hg_std + vg_mean / vg_std + dg_mean / dg_std) / 3``.

    ML4ML invariance testing paper, Sec. VII, feature 14, from features 6, 7, 9, 10, 12 and 13. The
    paper leaves a zero std undefined; here a direction whose gradients are all equal (std 0)
    contributes 0 instead of its ratio, so a flat matrix scores 0.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    return sum(_ratio(np.mean(e), np.std(e)) for e in _gradients(_as_matrix(matrix))) / 3


def discontinuity(matrix: Any) -> float:
    """Feature 15: ``phi = sum_{r=1..n-1} sum_{j=0..n-r} (delta[j+r, j] - mu_r)^2 / phi_mean``.

    ML4ML invariance testing paper, Sec. VII, feature 15: ``mu_r`` is the mean of the r-th lower
    sub-diagonal ``delta[j+r, j]``, ``j = 0..n-r``, and ``phi_mean`` is feature 2. Constant
    sub-diagonals (a Toeplitz matrix) give 0. The paper leaves ``phi_mean = 0`` undefined; it gives 0.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    delta = _as_matrix(matrix)
    sub_diagonals = (np.diagonal(delta, -r) for r in range(1, len(delta) - 1))
    spread = sum(float(np.sum((d - d.mean()) ** 2)) for d in sub_diagonals)
    return _ratio(spread, np.mean(_meaningful(delta)))


def asymmetry(matrix: Any) -> float:
    """Feature 16: ``phi = sum_{i=1..n} sum_{j=0..i-1} |delta[i, j] - delta[n-j, n-i]| / phi_mean``.

    ML4ML invariance testing paper, Sec. VII, feature 16: asymmetry about the second diagonal, with
    ``phi_mean`` feature 2. Each mirrored pair is counted twice, as in the paper's sum. The paper
    leaves ``phi_mean = 0`` undefined; it gives 0.

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3.

    Returns
    -------
    float

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite real square matrix of at least 3x3.
    """
    delta = _as_matrix(matrix)
    n = len(delta) - 1
    rows, cols = np.tril_indices(n + 1, k=-1)
    total = float(np.sum(np.abs(delta[rows, cols] - delta[n - cols, n - rows])))
    return _ratio(total, np.mean(delta[rows, cols]))


def matrix_features(
    matrix: Any,
    subsample_matrix: Any = None,
    tau: float = DEFAULT_TAU,
    compat: Literal["paper", "reference"] = "paper",
) -> dict[str, float]:
    """All the features of :data:`FEATURE_NAMES`, in that order (ML4ML invariance testing paper, Sec. VII).

    Parameters
    ----------
    matrix : array-like of shape (n+1, n+1)
        Finite variance matrix, at least 3x3 (at least 5x5 with ``compat="reference"``).
    subsample_matrix : array-like of shape (n+1, n+1), optional
        The matrix computed on a subsample of the test set; without it ``"sensitivity"`` is left out.
    tau : float, default=0.15
        Threshold of :func:`significant_variance`.
    compat : {"paper", "reference"}, default="paper"
        ``"paper"``: the printed formulas (the functions of this module). ``"reference"``: the authors'
        released code, :func:`reference_matrix_features`, whose keys end in ``_reference``.

    Returns
    -------
    dict of str to float
        Feature name to value: 16 keys, or 15 without ``subsample_matrix``; with ``compat="reference"``
        each name carries the suffix ``_reference``.

    Raises
    ------
    InvalidArgumentError
        When a matrix is not a finite real square matrix of at least 3x3, the shapes differ, ``tau``
        is not finite, or ``compat`` is not one of the choices.
    """
    if compat not in COMPAT_CHOICES:
        raise InvalidArgumentError(f"compat: must be one of {', '.join(COMPAT_CHOICES)}, got {compat!r}")
    if compat == "reference":
        return reference_matrix_features(matrix, subsample_matrix, tau)
    delta = _as_matrix(matrix)
    features = {
        "squared_value_mean": squared_value_mean(delta),
        "mean": mean(delta),
        "std": std(delta),
        "significant_variance": significant_variance(delta, tau),
    }
    if subsample_matrix is not None:
        features["sensitivity"] = sensitivity(delta, subsample_matrix)
    for function in (
        horizontal_gradient_mean,
        horizontal_gradient_std,
        horizontal_gradient_row_std,
        vertical_gradient_mean,
        vertical_gradient_std,
        vertical_gradient_column_std,
        diagonal_gradient_mean,
        diagonal_gradient_std,
        overall_gradient,
        discontinuity,
        asymmetry,
    ):
        features[function.__name__] = function(delta)
    return features


# --------------------------------------------------------------------------------------------------
# The released code's features (Zukang-Liao/ML4ML-invariance-testing)


def _reference_fill(flipped: np.ndarray) -> None:
    """``utils.py:fillin_relation_diagonal`` with ``flip_y=True``, in place, on the row-flipped matrix.

    Row by row: row 0 takes its last element from its second-last, row ``N-1`` its first from its
    second; the three centre rows ``N//2 - 1 .. N//2 + 1`` get, in their three centre columns, the mean
    of ``F[N//2 - 1, N//2 + 2]`` and ``F[N//2 + 2, N//2 + 1]``; any other row ``i`` takes
    ``F[i, N-1-i] = (F[i, N-i] + F[i+1, N-1-i]) / 2``.
    """
    size = len(flipped)
    centre = [size // 2 - 1, size // 2, size // 2 + 1]
    for row in range(size):
        if row == 0:
            flipped[0, size - 1] = flipped[0, size - 2]
        elif row == size - 1:
            flipped[row, 0] = flipped[row, 1]
        elif row in centre:
            flipped[row, centre] = (flipped[centre[0], centre[2] + 1] + flipped[centre[2] + 1, centre[2]]) / 2
        else:
            flipped[row, size - 1 - row] = (flipped[row, size - row] + flipped[row + 1, size - 1 - row]) / 2


def _reference_direction(parts: list[np.ndarray]) -> tuple[float, float, float]:
    """Mean and std of all the parts' values, and the mean of the parts' stds but the last one."""
    values = np.concatenate(parts)
    return float(np.mean(values)), float(np.std(values)), float(np.mean([np.std(part) for part in parts[:-1]]))


def _reference_gradients(flipped: np.ndarray) -> dict[str, tuple[float, float, float]]:
    """``measurement.py:angle_difference_grad`` for ``"v"``, ``"h"`` then ``"d"``, each after a fill."""
    size = len(flipped)
    middle = size // 2
    _reference_fill(flipped)
    vertical = np.empty_like(flipped)
    vertical[1:] = flipped[:-1] - flipped[1:]  # row r holds F[r-1] - F[r]; row 0 copies row 1
    vertical[0] = vertical[1]
    rows = [r for r in range(1, size) if r not in (middle, middle + 1)]
    results = {"v": _reference_direction([vertical[r, : size - r] for r in rows])}
    _reference_fill(flipped)
    horizontal = np.empty_like(flipped)
    horizontal[:, 1:] = flipped[:, :-1] - flipped[:, 1:]  # column c holds F[:, c-1] - F[:, c]
    horizontal[:, 0] = horizontal[:, 1]
    columns = [c for c in range(1, size) if c not in (middle, middle + 1)]
    results["h"] = _reference_direction([horizontal[: size - c, c] for c in columns])
    _reference_fill(flipped)
    vertical[1:] = flipped[:-1] - flipped[1:]
    vertical[0] = vertical[1]
    # the released code builds a diagonal-difference map but reads the vertical one: rows 1..N-1 but the
    # middle one, columns 1..N-1-r
    results["d"] = _reference_direction([vertical[r, 1 : size - r] for r in range(1, size) if r != middle])
    return results


def _reference_discontinuity(filled: np.ndarray) -> float:
    """``utils.py:get_continuity``: on a copy of ``F`` filled once more, the sum over its anti-diagonals
    ``r + c = i``, ``i = 1..N-1``, of ``(i + 1) * std / N``, over ``sum(F) / (N^2 - N)``."""
    size = len(filled)
    refilled = filled.copy()  # the released function fills a copy once more
    _reference_fill(refilled)
    flipped_back = refilled[::-1]  # anti-diagonal r + c = i of F is diagonal offset i - (N-1) of F[::-1]
    weighted = sum((i + 1) * np.std(np.diagonal(flipped_back, i - (size - 1))) / size for i in range(1, size))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(weighted) / (np.sum(refilled) / (size * size - size)))


def _reference_asymmetry(filled: np.ndarray) -> float:
    """``utils.py:get_asymmetry`` (``flip_y=True``): mean of ``|F[i, j] - F[j, i]|``, ``j < i``, over
    ``sum(F) / (N^2 - N)``."""
    size = len(filled)
    rows, cols = np.tril_indices(size, k=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.abs(filled[rows, cols] - filled[cols, rows])) / (np.sum(filled) / (size * size - size)))


def reference_matrix_features(matrix: Any, subsample_matrix: Any = None, tau: float = DEFAULT_TAU) -> dict[str, float]:
    """The 16 features as the authors' released code computes them, keys ``<feature>_reference``.

    Follows Zukang-Liao/ML4ML-invariance-testing: ``measurement.py:plot_confidence_gradient`` (and
    ``plot_actoverall_gradient``, the same steps) at ``aid = 0``, the whole matrix, which is the one
    ``ML4MLassessor.py:prepare_dataset`` reads (``intervals_idx = [0]``), with
    ``measurement.py:angle_difference_grad`` and ``utils.py:fillin_relation_diagonal``,
    ``get_continuity`` and ``get_asymmetry`` at their default ``flip_y=True``. ``matrix`` is ours
    (row ``i``, column ``j`` = transformations ``i``, ``j`` in parameter order, as the released
    ``utils.py:get_relations`` builds it before flipping); with ``N = n + 1`` rows the steps are:

    1. ``F = matrix[::-1]`` (``get_relations`` flips the rows), so the zero diagonal is ``F``'s
       anti-diagonal.
    2. ``sensitivity_reference = sum |matrix - subsample_matrix|`` over all ``N^2`` elements of the
       unfilled matrices (an L1 sum, not the paper's mean of squares; the released ``r`` is 0.9).
    3. The gradient pass fills ``F`` in place (``fillin_relation_diagonal`` before each of the three
       directions): anti-diagonal element of row ``i`` = ``(F[i, N-i] + F[i+1, N-1-i]) / 2`` (in our
       orientation ``D[k, k] = (delta[k, k+1] + delta[k-1, k]) / 2``), the corners from their row
       neighbour, and the whole centre 3x3 block (rows and columns ``N//2 - 1 .. N//2 + 1``) one value,
       ``(F[N//2 - 1, N//2 + 2] + F[N//2 + 2, N//2 + 1]) / 2``.
    4. Vertical: ``g[r, c] = F[r-1, c] - F[r, c]`` over rows ``r = 1..N-1`` but ``N//2`` and
       ``N//2 + 1``, columns ``c = 0..N-1-r``; ``vertical_gradient_mean/std_reference`` are their mean and
       population std, ``vertical_gradient_column_std_reference`` the mean of the per-*row* stds, the
       last row (one value) left out. Horizontal: ``g[r, c] = F[r, c-1] - F[r, c]`` over columns
       ``c = 1..N-1`` but ``N//2`` and ``N//2 + 1``, rows ``r = 0..N-1-c``;
       ``horizontal_gradient_row_std_reference`` is the mean of the per-*column* stds, the last
       column left out. Diagonal: the released code reads the *vertical* map ``g`` at rows
       ``r = 1..N-1`` but ``N//2`` (``N//2 + 1`` kept), columns ``1..N-1-r``; mean and std.
    5. ``overall_gradient_reference = (h_mean / h_rowstd + v_mean / v_colstd + d_mean / d_std) / 3``:
       the horizontal and vertical ratios divide by the per-line std (features 8 and 11), not by the
       std of feature 7 and 10.
    6. On the filled ``F``, all ``N^2`` elements (diagonal and centre block included):
       ``squared_value_mean_reference = mean(F^2)`` (no 1/2), ``mean_reference = mean(F)``,
       ``std_reference = std(F)``, ``significant_variance_reference = mean(F > tau)``.
    7. ``discontinuity_reference = sum_{i=1..N-1} (i + 1) std(F[r, c] : r + c = i) / N / m`` and
       ``asymmetry_reference = mean_{j<i} |F[i, j] - F[j, i]| / m``, with ``m = sum(F) / (N^2 - N)``
       of the filled ``F``. In our orientation the anti-diagonals ``r + c = i`` are the
       sub-diagonals of offset ``N - 1 - i`` (main diagonal, filled, included) and the pairs are
       mirrored about the second diagonal.

    Every std is the population one. Where the released code divides by zero (a flat matrix) the
    value is what numpy gives there: NaN or an infinity.

    Parameters
    ----------
    matrix : array-like of shape (N, N)
        Finite variance matrix, at least 5x5 (the centre block needs a row below it); the released
        code was written for odd ``N`` (31 transformations).
    subsample_matrix : array-like of shape (N, N), optional
        The matrix on a subsample of the test set; without it ``sensitivity_reference`` is left out.
    tau : float, default=0.15
        Threshold of ``significant_variance_reference`` (the released code's fixed 0.15).

    Returns
    -------
    dict of str to float
        ``<name>_reference`` for each name of :data:`FEATURE_NAMES`, in that order (15 keys without
        ``subsample_matrix``).

    Raises
    ------
    InvalidArgumentError
        When a matrix is not a finite real square matrix of at least 5x5, the shapes differ, or ``tau``
        is not finite.
    """
    delta = _as_matrix(matrix)
    if len(delta) < 5:
        raise InvalidArgumentError(f"matrix: compat reference needs at least 5x5, got shape {delta.shape}")
    try:
        tau = float(tau)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"tau: expected a number, got {tau!r}") from None
    if not np.isfinite(tau):
        raise InvalidArgumentError(f"tau: must be finite, got {tau}")
    filled = delta[::-1].copy()
    sensitivity_value = None
    if subsample_matrix is not None:
        delta_r = _as_matrix(subsample_matrix, "subsample_matrix")
        if delta_r.shape != delta.shape:
            raise InvalidArgumentError(
                f"subsample_matrix: expected shape {delta.shape} like matrix, got {delta_r.shape}"
            )
        sensitivity_value = float(np.sum(np.abs(delta - delta_r)))
    gradients = _reference_gradients(filled)
    (h_mean, h_std, h_line_std), (v_mean, v_std, v_line_std), (d_mean, d_std, _) = (
        gradients["h"],
        gradients["v"],
        gradients["d"],
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.float64(h_mean) / h_line_std + np.float64(v_mean) / v_line_std + np.float64(d_mean) / d_std
    values: dict[str, float] = {
        "squared_value_mean": float(np.mean(filled**2)),
        "mean": float(np.mean(filled)),
        "std": float(np.std(filled)),
        "significant_variance": float(np.mean(filled > tau)),
    }
    if sensitivity_value is not None:
        values["sensitivity"] = sensitivity_value
    values.update(
        horizontal_gradient_mean=h_mean,
        horizontal_gradient_std=h_std,
        horizontal_gradient_row_std=h_line_std,
        vertical_gradient_mean=v_mean,
        vertical_gradient_std=v_std,
        vertical_gradient_column_std=v_line_std,
        diagonal_gradient_mean=d_mean,
        diagonal_gradient_std=d_std,
        overall_gradient=float(ratios / 3),
        discontinuity=_reference_discontinuity(filled),
        asymmetry=_reference_asymmetry(filled),
    )
    return {f"{name}{REFERENCE_SUFFIX}": values[name] for name in FEATURE_NAMES if name in values}
