"""Percentile bootstrap intervals for any ``metric(factors, codes, **params) -> dict``.

A disentanglement score computed on one sample of a dataset is itself a random number; models are
often compared on differences smaller than that noise. :func:`bootstrap_interval` resamples the rows
(examples) with replacement ``B`` times, recomputes the metric on each resample and reports, for every
scalar the metric returns, the ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles of the resampled
values (Efron & Tibshirani 1993, ch. 13: the percentile interval) beside the value on the rows given.

Scores built on plug-in estimates (histogram mutual information in MIG and modularity, fitted
classifiers) shift under resampling itself: a resample repeats rows, so its binned distributions are
coarser. The interval then sits off the score, even excluding it. Each result also gives ``mean``, the
mean of the resampled values; ``mean - score`` estimates that shift (the bootstrap bias, Efron &
Tibshirani ch. 10). Compare models on intervals made with the same ``B`` and ``N``.

A resample keeps its rows in the drawn order, so metrics that split rows by position (DCI and SAP
train on the first rows) see a random split on each resample, as on a shuffled dataset.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError


def scalar_scores(result: dict[str, Any]) -> dict[str, float]:
    """The scalar real numbers of a metric's result (its scores), by key; counts (integers), matrices,
    lists and the ``params`` entry are left out.

    Parameters
    ----------
    result : dict
        What a metric returned.

    Returns
    -------
    dict of str to float
        ``key -> value`` for every top-level float value.
    """
    return {key: float(value) for key, value in result.items() if isinstance(value, float | np.floating)}


def bootstrap_interval(
    metric: Callable[..., dict[str, Any]],
    factors: np.ndarray,
    codes: np.ndarray,
    resamples: int,
    seed: int = 0,
    level: float = 0.95,
    **params: Any,
) -> dict[str, dict[str, float]]:
    """Percentile bootstrap interval of every scalar score of ``metric`` (module docstring).

    Parameters
    ----------
    metric : callable
        ``metric(factors, codes, **params) -> dict``.
    factors, codes : numpy.ndarray
        ``(N, K)`` factors and ``(N, L)`` codes. Only their row counts are checked here: ``metric`` applies
        its own input rule to every resample (the registered metrics:
        :func:`repscope.validation.check_factors_codes`).
    resamples : int
        ``B``, the number of resamples (>= 2; a few hundred for a stable 95% interval).
    seed : int, default=0
        Seed of the resampling.
    level : float, default=0.95
        Coverage of the interval, in (0, 1).
    **params
        Passed to ``metric``.

    Returns
    -------
    dict of str to dict
        Per score: ``{"low", "high", "mean", "level", "resamples", "failed"}``; ``mean`` is the mean of
        the resampled values (module docstring); ``failed`` counts resamples on
        which the metric raised (a resample can, e.g., miss a factor's class in a training split) and
        which are left out, or gave a non-finite value.

    Raises
    ------
    InvalidArgumentError
        When ``resamples < 2``, ``level`` is outside (0, 1), the arrays' row counts differ, or every
        resample failed.
    """
    return bootstrap_intervals({"metric": (metric, params)}, factors, codes, resamples, seed=seed, level=level)[
        "metric"
    ]


def bootstrap_intervals(
    metrics: dict[str, tuple[Callable[..., dict[str, Any]], dict[str, Any]]],
    factors: np.ndarray,
    codes: np.ndarray,
    resamples: int,
    seed: int = 0,
    level: float = 0.95,
    on_first: Callable[[float], None] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """:func:`bootstrap_interval` of several metrics on the same resamples, one resample at a time.

    Resample ``b`` draws its rows from ``numpy.random.default_rng(seed)`` as :func:`bootstrap_interval`
    does, so each metric's interval equals the one :func:`bootstrap_interval` gives it alone. After the
    first resample (every metric on it), ``on_first`` receives the seconds it took, before the others run:
    the whole bootstrap takes about ``resamples`` times that.

    Parameters
    ----------
    metrics : dict
        ``name -> (metric, params)``, each called as ``metric(factors, codes, **params) -> dict``.
    factors, codes : numpy.ndarray
        ``(N, K)`` factors and ``(N, L)`` codes (row counts checked here, the rest by each metric).
    resamples : int
        ``B`` (>= 2).
    seed : int, default=0
        Seed of the resampling.
    level : float, default=0.95
        Coverage of the interval, in (0, 1).
    on_first : callable, optional
        Called once with the seconds of the first resample.

    Returns
    -------
    dict
        ``name -> {score: {"low", "high", "mean", "level", "resamples", "failed"}}`` (:func:`bootstrap_interval`).

    Raises
    ------
    InvalidArgumentError
        When ``resamples`` is not an integer >= 2, ``level`` is outside (0, 1), the row counts differ, or a
        metric failed on every resample.
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or int(resamples) < 2:
        raise InvalidArgumentError(f"--bootstrap: needs at least 2 resamples, got {resamples}")
    if not 0.0 < float(level) < 1.0:
        raise InvalidArgumentError(f"level: must be in (0, 1), got {level}")
    factors, codes = np.asarray(factors), np.asarray(codes)
    if len(factors) != len(codes):
        raise InvalidArgumentError(f"factors and codes: {len(factors)} and {len(codes)} rows; they must match")
    rng = np.random.default_rng(seed)
    n = len(codes)
    values: dict[str, dict[str, list[float]]] = {name: {} for name in metrics}
    failed = dict.fromkeys(metrics, 0)
    last_error: dict[str, InvalidArgumentError | None] = dict.fromkeys(metrics)
    for b in range(int(resamples)):
        started = time.perf_counter()
        rows = rng.integers(0, n, size=n)
        for name, (metric, params) in metrics.items():
            try:
                scores = scalar_scores(metric(factors[rows], codes[rows], **params))
            except InvalidArgumentError as error:
                failed[name] += 1
                last_error[name] = error
                continue
            for key, value in scores.items():
                values[name].setdefault(key, []).append(value)
        if b == 0 and on_first is not None:
            on_first(time.perf_counter() - started)
    return {name: _intervals(values[name], failed[name], last_error[name], int(resamples), level) for name in metrics}


def _intervals(
    values: dict[str, list[float]], failed: int, last_error: Exception | None, resamples: int, level: float
) -> dict[str, dict[str, float]]:
    """The percentile intervals of one metric's resampled scores (:func:`bootstrap_interval`)."""
    if not values:
        raise InvalidArgumentError(
            f"--bootstrap: the metric failed on every one of the {resamples} resamples (the last: {last_error})"
        )
    low_q, high_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    out = {}
    for key, drawn in values.items():
        finite = np.array([v for v in drawn if math.isfinite(v)])
        bad = failed + (len(drawn) - len(finite))
        if len(finite) == 0:
            low = high = mean = math.nan
        else:
            low, high = np.percentile(finite, [low_q, high_q])
            mean = finite.mean()
        out[key] = {
            "low": float(low),
            "high": float(high),
            "mean": float(mean),
            "level": level,
            "resamples": resamples,
            "failed": bad,
        }
    return out


__all__ = ["bootstrap_interval", "bootstrap_intervals", "scalar_scores"]
