"""Interventional Robustness Score (IRS) and the Unconfoundedness (UC) metric built on it.

IRS is the score of Suter et al., "Robustly disentangled causal mechanisms: validating deep
representations for interventional robustness" (ICML 2019), computed as disentanglement_lib's
``scalable_disentanglement_score`` does (``evaluation/metrics/irs.py``). UC is Eq. 1 of the CANDLE
paper (Reddy et al., "On causally disentangled representations", section 4.1), which uses the IRS
matrix to pick the latents that capture each generative factor.

Both follow the metric convention of the package, ``metric(factors, codes, **params) -> dict``:
``factors`` is ``(N, K)`` integer-valued, ``codes`` is ``(N, L)`` finite reals (checked by
:func:`repscope.validation.check_factors_codes`: a constant factor, which is never intervened on, is
refused; a constant latent is dropped, step 1 of :func:`irs`), and the dict carries the parameters used
under ``"params"``.

Both take ``compat``: ``"paper"`` (the default) follows the printed definitions; ``"reference"``
reproduces the released code whose numbers the CANDLE paper reports -- the factors binned as
disentanglement_lib's ``compute_irs`` bins them (:func:`histogram_discretize`) and, for UC, the latents
chosen as the CANDLE fork's ``scalable_disentanglement_score`` chooses them (:func:`reference_selection`).
Values of that mode carry a ``_reference`` suffix and ``params["compat"] = "reference"``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement import discretize
from repscope.resources import usable_cores
from repscope.validation import as_array, check_factors_codes, check_positive_int

__all__ = ["histogram_discretize", "irs", "reference_selection", "uc_from_irs_matrix", "unique_capture"]

COMPAT_MODES = ("paper", "reference")
# disentanglement_lib's IRS configuration (config/unsupervised_study_v1/metric_configs/irs.gin, and the
# CANDLE fork's examples/example.py): discretizer.num_bins = 20, discretizer_fn = @histogram_discretizer
REFERENCE_NUM_BINS = 20

# above this many distinct values of a factor, sorting within groups is done without a loop over them
_MAX_GROUPS_LOOPED = 1000
# below this many code entries (N x L) the factors are scored one after the other: a thread costs more
_MIN_ENTRIES_THREADED = 200_000


# --------------------------------------------------------------------------------------------------
# validation


def _check_inputs(factors: Any, codes: Any) -> tuple[np.ndarray, np.ndarray]:
    """int64 ``factors`` and float64 ``codes`` after the rule every factor/code metric shares
    (:func:`repscope.validation.check_factors_codes`)."""
    return check_factors_codes(factors, codes)


def _check_compat(compat: Any) -> str:
    if compat not in COMPAT_MODES:
        raise InvalidArgumentError(f"compat: must be one of {', '.join(COMPAT_MODES)}, got {compat!r}")
    return str(compat)


def _check_reference_inputs(factors: Any, codes: Any) -> tuple[np.ndarray, np.ndarray]:
    """The shared rule with any real factors (they are binned), then the factors binned."""
    factors, codes = check_factors_codes(factors, codes, discrete_factors=False)
    return histogram_discretize(factors), codes


def histogram_discretize(factors: Any, num_bins: int = REFERENCE_NUM_BINS) -> np.ndarray:
    """Bin each factor column as disentanglement_lib's histogram discretiser does before IRS.

    The factors are checked, then binned by the discretiser every metric shares
    (:func:`repscope.metrics.disentanglement.discretize.histogram_discretize`).

    For each column ``g``: ``edges = numpy.histogram(g, num_bins)[1]`` (``num_bins + 1`` equally spaced
    edges from ``min(g)`` to ``max(g)``) and the bin of a value is ``numpy.digitize(g, edges[:-1])``, a
    number in ``1..num_bins`` (the last bin is closed: ``max(g)`` falls in bin ``num_bins``). Values
    that share a bin become one factor value, so a factor with more than ``num_bins`` values (dSprites'
    40 orientations, 32 positions) or with unevenly spaced values is merged into coarser groups; a factor
    whose distinct values all fall in distinct bins keeps its grouping (only the labels change).

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Real factor values, one column per factor.
    num_bins : int, default 20
        Bins per factor (disentanglement_lib's IRS configuration uses 20).

    Returns
    -------
    numpy.ndarray of shape (N, K)
        int64 bin numbers in ``1..num_bins``.

    Raises
    ------
    InvalidArgumentError
        When ``factors`` is not a finite 2-D real array or ``num_bins`` not a positive integer.

    References
    ----------
    google-research/disentanglement_lib, ``disentanglement_lib/evaluation/metrics/utils.py``,
    ``make_discretizer`` and ``_histogram_discretize`` (rows there are factors; columns here), called by
    ``compute_irs`` in ``evaluation/metrics/irs.py`` (and in the CANDLE fork's copy of that file).
    """
    num_bins = check_positive_int(num_bins, "num_bins")
    array = as_array(factors, "factors")
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"factors: expected a 2-D real array (N, K), got shape {array.shape}, {array.dtype}")
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError("factors: holds NaN or infinity")
    return discretize.histogram_discretize(array, num_bins)


def _check_quantile(diff_quantile: Any) -> float:
    if isinstance(diff_quantile, bool) or not isinstance(diff_quantile, numbers.Real):
        raise InvalidArgumentError(f"diff_quantile: expected a number in (0, 1], got {diff_quantile!r}")
    value = float(diff_quantile)
    if not 0.0 < value <= 1.0:
        raise InvalidArgumentError(f"diff_quantile: expected a number in (0, 1], got {value}")
    return value


def _check_rho(rho: Any, num_latents: int, what: str = "non-constant latents") -> int:
    if isinstance(rho, bool) or not isinstance(rho, numbers.Integral):
        raise InvalidArgumentError(f"rho: expected a positive integer, got {rho!r}")
    value = int(rho)
    if value < 1:
        raise InvalidArgumentError(f"rho: expected a positive integer, got {value}")
    if value > num_latents:
        raise InvalidArgumentError(
            f"rho: {value} latents per factor asked for, but there are only {num_latents} {what}"
        )
    return value


def _active_latents(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mask of the latents that are not constant over the rows (max != min) and those latents' codes
    as ``(L_active, N)``, one contiguous row per latent: every later step reduces along rows, which
    runs far faster than along columns."""
    by_latent = np.ascontiguousarray(codes.T)
    mask = by_latent.max(axis=1) > by_latent.min(axis=1)
    return mask, by_latent if mask.all() else by_latent[mask]


# --------------------------------------------------------------------------------------------------
# IRS


def _group_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row order that puts the rows of each distinct value together, the group sizes and group starts.

    The groups are numbered in ascending order of value (as ``np.unique`` does); the row order is a
    stable sort of those numbers, which numpy does by radix sort (linear time) when they fit in 8 or 16
    bits.
    """
    low, high = int(values.min()), int(values.max())
    if high - low <= np.iinfo(np.uint16).max:
        # small integer range: the shifted values are the group numbers (empty ones dropped below)
        inverse = (values - low).astype(np.uint8 if high - low <= np.iinfo(np.uint8).max else np.uint16)
        counts = np.bincount(inverse)
        counts = counts[counts > 0]
    else:
        _, inverse = np.unique(values, return_inverse=True)
        inverse = inverse.reshape(-1)
        counts = np.bincount(inverse)
        if counts.size <= np.iinfo(np.uint16).max:
            inverse = inverse.astype(np.uint8 if counts.size <= np.iinfo(np.uint8).max else np.uint16)
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return order, counts, starts


def _sorted_within_groups(diffs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``diffs`` ``(L, N)`` (columns ordered by group) with each group's columns sorted, row by row.

    For many tiny groups (nearly unique factor values): an argsort of every latent's deviations
    followed by a stable argsort by group number, with no loop over the groups.
    """
    group_of_column = np.repeat(np.arange(counts.size), counts)
    by_diff = np.argsort(diffs, axis=1)
    by_group = np.argsort(group_of_column[by_diff], axis=1, kind="stable")
    return np.take_along_axis(diffs, np.take_along_axis(by_diff, by_group, axis=1), axis=1)


def _deviation_from_group_means(
    values: np.ndarray, codes_by_latent: np.ndarray, diff_quantile: float, workspace: np.ndarray
) -> np.ndarray:
    """``e_loc`` of one factor: per latent, the mean over the factor's values of the within-group quantile.

    ``codes_by_latent`` is ``(L, N)``, one contiguous row per latent; ``workspace`` an array of the same
    shape that is overwritten. The columns are put in group
    order once (a radix sort of the group numbers), group means come from ``np.add.reduceat``, and the
    quantile is read by numpy's default ("linear") interpolation at position ``(n_g - 1) * q`` of each
    group's sorted absolute deviations. Only the two order statistics around that position are
    needed: one linear-time partition of the group's block at the lower one, whose upper neighbour is
    then the minimum of the (short) part above it.
    """
    order, counts, starts = _group_rows(values)
    diffs = np.take(codes_by_latent, order, axis=1, out=workspace, mode="clip")  # "raise" would buffer `out`
    position = (counts - 1) * diff_quantile
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, counts - 1)
    fraction = position - low
    if starts.size > _MAX_GROUPS_LOOPED:
        means = np.add.reduceat(diffs, starts, axis=1) / counts
        np.subtract(diffs, np.repeat(means, counts, axis=1), out=diffs)
        np.abs(diffs, out=diffs)
        if diff_quantile == 1.0:
            return np.maximum.reduceat(diffs, starts, axis=1).mean(axis=1)
        sorted_diffs = _sorted_within_groups(diffs, counts)
        below, above = sorted_diffs[:, starts + low], sorted_diffs[:, starts + high]
        return (below + fraction * (above - below)).mean(axis=1)
    below = np.empty((diffs.shape[0], starts.size))
    above = np.empty_like(below)
    for group, (start, count) in enumerate(zip(starts, counts)):
        # in place on the group's block: a fresh (L, N) temporary per step costs more than the arithmetic
        block = diffs[:, start : start + count]
        np.subtract(block, block.mean(axis=1, keepdims=True), out=block)
        np.abs(block, out=block)
        if diff_quantile == 1.0:
            below[:, group] = above[:, group] = block.max(axis=1)  # the maximum: no order statistics needed
            continue
        block = np.partition(block, low[group], axis=1)
        below[:, group] = block[:, low[group]]
        above[:, group] = block[:, low[group] + 1 :].min(axis=1) if high[group] > low[group] else below[:, group]
    return (below + fraction * (above - below)).mean(axis=1)


def _irs_active(
    factors: np.ndarray, codes_by_latent: np.ndarray, diff_quantile: float
) -> tuple[np.ndarray, np.ndarray]:
    """IRS matrix ``(L_active, K)`` and ``max_deviations`` ``(L_active,)`` of non-constant codes given
    as ``(L_active, N)``."""
    means = codes_by_latent.mean(axis=1)
    # max |z - m| is reached at the largest or the smallest z (rounded subtraction is monotone), so it
    # needs no (L, N) temporary
    max_deviations = np.maximum(codes_by_latent.max(axis=1) - means, means - codes_by_latent.min(axis=1))
    num_factors = factors.shape[1]
    threads = min(num_factors, usable_cores()) if codes_by_latent.size >= _MIN_ENTRIES_THREADED else 1
    columns: list[np.ndarray] = [np.empty(0)] * num_factors

    def score_factors(thread: int) -> None:
        # one buffer per thread, reused for each of its factors: fresh pages cost more than the work
        workspace = np.empty_like(codes_by_latent)
        for i in range(thread, num_factors, threads):
            columns[i] = _deviation_from_group_means(factors[:, i], codes_by_latent, diff_quantile, workspace)

    if threads == 1:
        score_factors(0)
    else:
        # numpy releases the GIL in the gathers, reductions and partitions that make up the work
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(score_factors, range(threads)))
    e_loc = np.stack(columns, axis=1)
    return 1.0 - e_loc / max_deviations[:, None], max_deviations


def _assemble(
    matrix_active: np.ndarray,
    max_dev_active: np.ndarray,
    mask: np.ndarray,
    num_factors: int,
    diff_quantile: float,
) -> dict[str, Any]:
    num_latents = mask.shape[0]
    matrix = np.full((num_latents, num_factors), np.nan)
    per_latent = np.full(num_latents, np.nan)
    max_deviations = np.zeros(num_latents)
    if matrix_active.shape[0] == 0:
        score = 0.0
    else:
        scores = matrix_active.max(axis=1)
        score = float(np.average(scores, weights=max_dev_active))
        matrix[mask] = matrix_active
        per_latent[mask] = scores
        max_deviations[mask] = max_dev_active
    return {
        "irs": score,
        "irs_per_latent": per_latent.tolist(),
        "irs_matrix": matrix.tolist(),
        "max_deviations": max_deviations.tolist(),
        "active_latents": np.flatnonzero(mask).tolist(),
        "params": {"diff_quantile": diff_quantile},
    }


def _reference_keys(result: dict[str, Any], keys: Sequence[str], num_bins: int) -> dict[str, Any]:
    """``result`` with ``keys`` renamed ``<key>_reference`` and the mode written into its params."""
    renamed = {f"{key}_reference" if key in keys else key: value for key, value in result.items()}
    renamed["params"] = {**result["params"], "compat": "reference", "num_bins": num_bins}
    return renamed


def irs(factors: Any, codes: Any, diff_quantile: float = 0.99, compat: str = "paper") -> dict[str, Any]:
    """Interventional Robustness Score (Suter et al. 2019), as computed by disentanglement_lib.

    With ``z_l`` the ``l``-th latent (column of ``codes``) and ``g_i`` the ``i``-th factor:

    1. Constant latents (same value on every row) are dropped; the steps below use the others.
    2. ``max_dev_l = max_n |z_l[n] - mean(z_l)|`` over all rows (the normaliser; a maximum, not a
       quantile, whatever ``diff_quantile`` is).
    3. For each factor ``i`` and each distinct value ``v`` of ``g_i`` (``np.unique``), with
       ``G = {n : g_i[n] = v}``: ``m = mean_{n in G} z_l[n]`` (``E[z | g_i = v]``) and
       ``dev_v = quantile_{n in G}(|z_l[n] - m|, diff_quantile)`` (numpy's linear interpolation;
       ``diff_quantile = 1`` is the maximum, the paper's version).
    4. ``e_loc[j, i] = mean_v dev_v`` -- a plain mean over the distinct values, each value counting
       once whatever its number of rows (as disentanglement_lib does).
    5. ``IRS[l, i] = 1 - e_loc[j, i] / max_dev_l``. Not clipped: an entry can be negative when a
       group's spread exceeds the global one (as in disentanglement_lib).
    6. ``irs_per_latent[l] = max_i IRS[l, i]``.
    7. ``irs = sum_l max_dev_l * irs_per_latent[l] / sum_l max_dev_l`` over the kept latents; 0.0 when
       every latent is constant (disentanglement_lib's value).

    disentanglement_lib's "parents" of a latent (the other factors) do not enter the score: each
    factor is intervened on alone, grouping the rows by its value. Its ``compute_irs`` draws
    ``num_train`` points and discretises the factors into histogram bins first; this function takes
    the rows it is given and, by default, the factor values as they are.

    ``compat="reference"`` bins the factors first, as ``compute_irs`` of disentanglement_lib's
    ``evaluation/metrics/irs.py`` (and the CANDLE fork's copy, causal-disentanglement/disentanglement_lib,
    same file and function) does with its IRS configuration: :func:`histogram_discretize` with 20 bins;
    steps 1-7 then group the rows by bin. Factors may then be any finite reals.

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Discrete ground-truth factor values: integers, or floats that are whole numbers. N >= 2; no
        column constant.
    codes : array-like of shape (N, L)
        Finite real latent codes of the same N samples.
    diff_quantile : float, default 0.99
        Quantile in (0, 1] of the within-group deviations (step 3); 1.0 for the paper's maximum.
    compat : {"paper", "reference"}, default "paper"
        ``"reference"``: group by the 20-bin histogram bins of each factor (disentanglement_lib).

    Returns
    -------
    dict
        With ``compat="reference"`` the keys ``irs``, ``irs_per_latent`` and ``irs_matrix`` are named
        ``irs_reference``, ``irs_per_latent_reference`` and ``irs_matrix_reference``, and ``"params"``
        adds ``"compat": "reference"`` and ``"num_bins": 20``.
        ``"irs"``: the weighted average score (step 7), a float.
        ``"irs_per_latent"``: list of L floats (step 6), NaN for a dropped constant latent.
        ``"irs_matrix"``: L lists of K floats (latents x factors, step 5), a row of NaN for a dropped
        constant latent.
        ``"max_deviations"``: list of L floats (step 2, the weights of step 7), 0.0 for a constant latent.
        ``"active_latents"``: indices of the latents kept (step 1).
        ``"params"``: ``{"diff_quantile": ...}``.

    Raises
    ------
    InvalidArgumentError
        When ``factors`` is not a 2-D integer-valued array, ``codes`` not a 2-D finite real array,
        their row counts differ or are below 2, a factor is constant
        (:func:`repscope.validation.check_factors_codes`), ``diff_quantile`` is outside (0, 1] or
        ``compat`` is not a mode.

    References
    ----------
    R. Suter, D. Miladinovic, B. Schoelkopf, S. Bauer, Robustly disentangled causal mechanisms:
    validating deep representations for interventional robustness, ICML 2019; disentanglement_lib,
    ``evaluation/metrics/irs.py``.
    """
    compat = _check_compat(compat)
    if compat == "reference":
        factors, codes = _check_reference_inputs(factors, codes)
    else:
        factors, codes = _check_inputs(factors, codes)
    diff_quantile = _check_quantile(diff_quantile)
    mask, active = _active_latents(codes)
    if mask.any():
        matrix_active, max_dev_active = _irs_active(factors, active, diff_quantile)
    else:
        matrix_active, max_dev_active = np.empty((0, factors.shape[1])), np.empty(0)
    result = _assemble(matrix_active, max_dev_active, mask, factors.shape[1], diff_quantile)
    if compat == "reference":
        return _reference_keys(result, ("irs", "irs_per_latent", "irs_matrix"), REFERENCE_NUM_BINS)
    return result


def _irs_reference(factors: Any, codes: Any, diff_quantile: float = 0.99) -> dict[str, Any]:
    """Straightforward-loop IRS (the steps of :func:`irs` written one by one), for tests and benchmarks."""
    factors, codes = _check_inputs(factors, codes)
    diff_quantile = _check_quantile(diff_quantile)
    mask = np.array([codes[:, j].max() > codes[:, j].min() for j in range(codes.shape[1])], dtype=bool)
    active = codes[:, mask]
    num_active, num_factors = active.shape[1], factors.shape[1]
    max_deviations = np.zeros(num_active)
    e_loc = np.zeros((num_active, num_factors))
    for j in range(num_active):
        max_deviations[j] = np.max(np.abs(active[:, j] - np.mean(active[:, j])))
    for i in range(num_factors):
        values = np.unique(factors[:, i])
        for v in values:
            rows = active[factors[:, i] == v]
            for j in range(num_active):
                group = rows[:, j]
                e_loc[j, i] += np.quantile(np.abs(group - np.mean(group)), diff_quantile)
        e_loc[:, i] /= len(values)
    matrix = np.zeros((num_active, num_factors))
    for j in range(num_active):
        for i in range(num_factors):
            matrix[j, i] = 1.0 - e_loc[j, i] / max_deviations[j]
    return _assemble(matrix, max_deviations, mask, num_factors, diff_quantile)


# --------------------------------------------------------------------------------------------------
# UC


def _check_matrix(matrix: Any) -> np.ndarray:
    array = as_array(matrix, "matrix")
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise InvalidArgumentError(f"matrix: expected a non-empty 2-D array (L latents, K factors), got {array.shape}")
    if array.dtype.kind not in "iuf":
        raise InvalidArgumentError(f"matrix: expected real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError("matrix: holds NaN or infinity; drop the rows of constant latents first")
    return array


def _top_latents(matrix: np.ndarray, rho: int) -> np.ndarray:
    """``(K, rho)`` row indices of the ``rho`` largest entries of each column, ties to the lower index."""
    return np.argsort(-matrix, axis=0, kind="stable")[:rho].T


def _uc(matrix: np.ndarray, rho: int) -> float:
    num_latents, num_factors = matrix.shape
    if num_factors < 2:
        return 1.0
    membership = np.zeros((num_factors, num_latents))
    np.put_along_axis(membership, _top_latents(matrix, rho), 1.0, axis=1)
    intersections = membership @ membership.T
    jaccard = intersections / (2 * rho - intersections)
    upper = np.triu_indices(num_factors, k=1)
    return float(1.0 - jaccard[upper].mean())


def reference_selection(column: Any, rho: int) -> list[int]:
    """The latents the CANDLE fork attributes to one factor: ``np.argpartition(column, -1)[::-rho][:rho]``.

    ``column`` is one factor's column of the latents x factors IRS matrix (one entry per latent). The
    fork's expression takes every ``rho``-th entry, counting back from the last, of numpy's
    ``argpartition`` order and keeps the first ``rho`` of them; that order only guarantees that its last
    entry is the argmax, so beside the argmax the selection holds whatever latents numpy's partition left
    at those positions, not the next-best ones. The order is that of numpy's introselect (numpy 1.x, the
    numpy the fork ran on), for float entries and ``kth = n - 1``:

    * ``n >= 4`` latents: the identity order ``0, 1, ..., n - 1`` with the last position swapped with the
      position of the maximum (the *last* index holding the maximum value, as numpy's scan keeps a later
      entry that is not smaller);
    * ``n <= 3``: a selection sort, ascending (position ``i`` takes the first smallest of the rest).

    The selection is then the entries at positions ``n - 1, n - 1 - rho, n - 1 - 2 rho, ...`` of that
    order, at most ``rho`` of them: for ``rho = 2`` and ``n >= 4``, the argmax ``m`` and latent ``n - 3``
    (``n - 1`` when ``m = n - 3``), whatever their IRS; for ``rho = 2`` and ``n = 2``, the argmax alone.
    The rule is written out here rather than read from the installed numpy: a numpy build that hands
    ``argpartition`` to a SIMD selection (x86-simd-sort on AVX-512 machines) may order the other entries
    differently, and the fork's numbers came from the introselect order.

    Parameters
    ----------
    column : array-like of shape (L,)
        Finite IRS entries of one factor, one per latent.
    rho : int
        The fork's ``rho``, 1 <= rho <= L.

    Returns
    -------
    list of int
        The selected latents (indices into ``column``), the argmax first; at most ``rho`` of them.

    Raises
    ------
    InvalidArgumentError
        When ``column`` is not a finite non-empty 1-D array or ``rho`` is not an integer in [1, L].

    References
    ----------
    causal-disentanglement/disentanglement_lib (the CANDLE authors' fork),
    ``disentanglement_lib/evaluation/metrics/irs.py``, ``scalable_disentanglement_score`` ("UC score
    start"); numpy 1.x ``core/src/npysort/selection.cpp``, ``introselect_`` and ``dumb_select_``.
    """
    values = as_array(column, "column")
    if values.ndim != 1 or values.size < 1 or values.dtype.kind not in "iuf":
        raise InvalidArgumentError(f"column: expected a non-empty 1-D real array, got {values.shape}, {values.dtype}")
    values = values.astype(np.float64, copy=False)
    if not np.all(np.isfinite(values)):
        raise InvalidArgumentError("column: holds NaN or infinity")
    rho = _check_rho(rho, values.size, what="entries in column")
    return _reference_selection(values, rho)


def _reference_selection(values: np.ndarray, rho: int) -> list[int]:
    """:func:`reference_selection` on a checked float64 vector."""
    count = values.size
    order = np.arange(count)
    if count <= 3:
        # numpy's argpartition takes kth = count - 1 < 3 by selection sort
        for position in range(count):
            smallest = position + int(np.argmin(values[order[position:]]))
            order[[position, smallest]] = order[[smallest, position]]
    else:
        # float data and kth = count - 1: numpy swaps the last maximum into the last position
        last_max = count - 1 - int(np.argmax(values[::-1]))
        order[[last_max, count - 1]] = order[[count - 1, last_max]]
    return order[::-1][::rho][:rho].tolist()


def _uc_reference(matrix: np.ndarray, rho: int) -> tuple[float, list[list[int]]]:
    """UC and the selections of the CANDLE fork (:func:`uc_from_irs_matrix` with ``compat="reference"``)."""
    selections = [_reference_selection(matrix[:, factor], rho) for factor in range(matrix.shape[1])]
    num_factors = len(selections)
    if num_factors < 2:
        return 1.0, selections
    sets = [set(selection) for selection in selections]
    total = 0.0
    for first in range(num_factors - 1):
        for second in range(first + 1, num_factors):
            total += len(sets[first] & sets[second]) / len(sets[first] | sets[second])
    return 1.0 - total / (num_factors * (num_factors - 1) / 2), selections


def uc_from_irs_matrix(matrix: Any, rho: int, compat: str = "paper") -> float:
    """Unconfoundedness (CANDLE, Eq. 1) of a latents-by-factors IRS matrix.

    ``Q_i`` is the set of the ``rho`` latents (rows) with the largest entries in column ``i`` (ties go
    to the lower row index: a stable sort of ``-matrix``), and::

        UC = 1 - mean_{i < j} |Q_i & Q_j| / |Q_i | Q_j|

    over the ``K (K - 1) / 2`` unordered factor pairs (the paper's ``1/K sum_{i != j}`` with its
    ``K = C(N, 2)`` pairs). UC is 1 when no two factors share a latent and 0 when all factors pick the
    same latents. With a single factor there is no pair and nothing can be shared: UC is 1.0 by this
    definition. The expectation over ``x`` in Eq. 1 is taken by the IRS matrix itself, computed on all
    the rows.

    ``compat="reference"`` takes ``Q_i`` as the CANDLE fork does (:func:`reference_selection`: at
    ``rho >= 2`` the argmax and latents that numpy's partition order puts at fixed positions, not the
    top ``rho``; a set may hold fewer than ``rho`` latents) and averages the same Jaccard indices over
    the pairs, as ``scalable_disentanglement_score`` of causal-disentanglement/disentanglement_lib
    (``disentanglement_lib/evaluation/metrics/irs.py``) does. With one factor the fork divides by zero;
    this mode returns 1.0 there, as the default does.

    Parameters
    ----------
    matrix : array-like of shape (L, K)
        Finite IRS entries, latents x factors (the ``"irs_matrix"`` of :func:`irs` without the NaN rows
        of constant latents).
    rho : int
        Number of latents attributed to each factor, 1 <= rho <= L.
    compat : {"paper", "reference"}, default "paper"
        How ``Q_i`` is chosen: the top ``rho`` latents, or the CANDLE fork's selection.

    Returns
    -------
    float
        UC in [0, 1].

    Raises
    ------
    InvalidArgumentError
        When ``matrix`` is not a finite non-empty 2-D array, ``rho`` is not an integer in [1, L] or
        ``compat`` is not a mode.

    References
    ----------
    A. G. Reddy, B. Godfrey L, V. N. Balasubramanian, On causally disentangled representations
    (CANDLE), section 4.1, Eq. 1.
    """
    compat = _check_compat(compat)
    matrix = _check_matrix(matrix)
    rho = _check_rho(rho, matrix.shape[0], what="rows in matrix")
    if compat == "reference":
        return float(_uc_reference(matrix, rho)[0])
    return _uc(matrix, rho)


def unique_capture(
    factors: Any,
    codes: Any,
    rho: int | Sequence[int] = (1, 2),
    diff_quantile: float = 0.99,
    compat: str = "paper",
) -> dict[str, Any]:
    """Unconfoundedness (CANDLE, Eq. 1) of codes, with the factor-to-latent sets taken from IRS.

    Computes the IRS matrix of :func:`irs` (constant latents dropped), then for each ``rho`` the UC of
    :func:`uc_from_irs_matrix` on the non-constant latents.

    ``compat="reference"`` reproduces the UC of the CANDLE authors' code
    (causal-disentanglement/disentanglement_lib, ``disentanglement_lib/evaluation/metrics/irs.py``:
    ``compute_irs`` and ``scalable_disentanglement_score``): the IRS matrix of the factors binned into
    20 histogram bins (:func:`irs` with ``compat="reference"``) and each factor's latents chosen by
    :func:`reference_selection` (at ``rho = 2``: the argmax and one latent fixed by numpy's partition
    order, not the second best).

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Discrete ground-truth factor values: integers, or floats that are whole numbers. N >= 2; no
        column constant.
    codes : array-like of shape (N, L)
        Finite real latent codes of the same N samples.
    rho : int or sequence of int, default (1, 2)
        Number(s) of latents attributed to each factor; each in [1, number of non-constant latents].
    diff_quantile : float, default 0.99
        Quantile of the within-group deviations of IRS, in (0, 1].
    compat : {"paper", "reference"}, default "paper"
        ``"reference"``: binned factors and the CANDLE fork's selection (above).

    Returns
    -------
    dict
        ``"uc_rho<r>"``: UC for each ``r`` in ``rho`` (a float in [0, 1]).
        ``"q_sets"``: ``{"rho<r>": [[latent indices of Q_i] for each factor i]}``, indices into the
        columns of ``codes`` (constant latents never appear), best first.
        ``"active_latents"``: indices of the non-constant latents.
        ``"params"``: ``{"rho": [...], "diff_quantile": ...}``.
        With ``compat="reference"``: ``"uc_rho<r>_reference"`` and ``"q_sets_reference"`` (the fork's
        selections, argmax first) instead, and ``"params"`` adds ``"compat": "reference"`` and
        ``"num_bins": 20``.

    Raises
    ------
    InvalidArgumentError
        On invalid ``factors``, ``codes``, ``diff_quantile`` or ``compat`` (see :func:`irs`), or a
        ``rho`` that is not a positive integer or exceeds the number of non-constant latents.

    References
    ----------
    A. G. Reddy, B. Godfrey L, V. N. Balasubramanian, On causally disentangled representations
    (CANDLE), section 4.1; Suter et al., ICML 2019 for IRS.
    """
    compat = _check_compat(compat)
    if compat == "reference":
        factors, codes = _check_reference_inputs(factors, codes)
    else:
        factors, codes = _check_inputs(factors, codes)
    diff_quantile = _check_quantile(diff_quantile)
    if isinstance(rho, numbers.Integral) and not isinstance(rho, bool):
        rhos = [rho]
    elif isinstance(rho, Sequence) and not isinstance(rho, str) and len(rho) > 0:
        rhos = list(rho)
    else:
        raise InvalidArgumentError(f"rho: expected a positive integer or a non-empty sequence of them, got {rho!r}")
    mask, active = _active_latents(codes)
    active_index = np.flatnonzero(mask)
    rhos = list(dict.fromkeys(_check_rho(r, active_index.size) for r in rhos))
    matrix, _ = _irs_active(factors, active, diff_quantile)
    result: dict[str, Any] = {}
    q_sets: dict[str, list[list[int]]] = {}
    for r in rhos:
        if compat == "reference":
            value, selections = _uc_reference(matrix, r)
            result[f"uc_rho{r}"] = float(value)
            q_sets[f"rho{r}"] = [active_index[selection].tolist() for selection in selections]
        else:
            result[f"uc_rho{r}"] = _uc(matrix, r)
            q_sets[f"rho{r}"] = active_index[_top_latents(matrix, r)].tolist()
    result["q_sets"] = q_sets
    result["active_latents"] = active_index.tolist()
    result["params"] = {"rho": rhos, "diff_quantile": diff_quantile}
    if compat == "reference":
        return _reference_keys(result, [*(f"uc_rho{r}" for r in rhos), "q_sets"], REFERENCE_NUM_BINS)
    return result
