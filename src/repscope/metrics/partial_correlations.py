"""Partial correlations between latent codes and generative factors (e.g. morphometrics).

Castro et al. (Morpho-MNIST, section 4.2) measure disentanglement by the partial correlation of each
latent code variable with each morphometric attribute, controlling for the remaining code variables:
unlike a plain correlation it gives the net first-order effect of one code with the others held
fixed. A categorical code enters as one binary dummy per category, each controlled only for the
non-categorical codes (their footnote 3), since the dummies of one code sum to one and would be
collinear with each other.

:func:`code_partial_correlations` takes ``(codes, factors)`` and returns the matrix;
:func:`partial_correlation_metric` is the same computation in the metric convention of the package,
``metric(factors, codes, **params) -> dict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import InvalidArgumentError

# A residual this small relative to the centred variable means the controls explain it entirely.
_EXPLAINED_TOLERANCE = 1e-10


def partial_correlation(x: np.ndarray, y: np.ndarray, controls: np.ndarray | None = None) -> float:
    """Partial correlation of ``x`` and ``y`` given ``controls``.

    Both ``x`` and ``y`` are regressed by least squares on ``[1, controls]`` (an intercept plus the
    control columns); the result is the Pearson correlation of the two residual vectors::

        e_x = x - [1, C] b_x,   e_y = y - [1, C] b_y,   r = <e_x, e_y> / (|e_x| |e_y|)

    With no control columns this is the plain Pearson correlation.

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Finite real values (any numeric dtype; computed in float64), in any units: ``r`` is unitless.
    controls : array-like of shape (n, k) or (n,), optional
        Finite control variables; ``None`` or ``k = 0`` for none.

    Returns
    -------
    float
        ``r`` in [-1, 1], or NaN when a residual vanishes (``x`` or ``y`` constant or fully explained by
        the controls) or fewer than ``k + 3`` rows leave no degrees of freedom.

    Raises
    ------
    InvalidArgumentError
        When an argument is not numeric, has the wrong shape or length, or holds NaN or infinity.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, section 4.2.
    """
    x = _vector(x, "x")
    y = _vector(y, "y")
    if len(y) != len(x):
        raise InvalidArgumentError(f"y: has {len(y)} values but x has {len(x)}")
    design = _design(controls, len(x))
    return _partial_correlation(x, y, design)


def code_partial_correlations(
    codes: Mapping[str, np.ndarray],
    factors: pd.DataFrame,
    categorical: Sequence[str] = (),
) -> pd.DataFrame:
    """Partial correlation of every code variable with every factor (rows: factors, columns: codes).

    ``codes`` maps a name to one value per sample (``n`` samples, the rows of ``factors``):

    * a continuous (or binary) code is a ``(n,)`` array, or ``(n, w)`` for ``w`` variables named
      ``name[0]`` ... ``name[w-1]`` (``name`` alone when ``w = 1``). Each such column is correlated
      with each factor controlling for all *other* non-categorical code columns.
    * a categorical code (named in ``categorical``) is a ``(n,)`` array of integer classes
      ``0 .. K-1``, or ``(n, K)`` logits/probabilities whose arg-max is taken (the MAP class). It
      enters as ``K`` binary dummies named ``name(1)`` ... ``name(K)`` (class ``k`` is dummy
      ``name(k+1)``, numbered from 1 as in the paper's figures; ``K`` is the largest class seen + 1,
      or the width of the logits). Each dummy is correlated with each factor controlling only for the
      non-categorical code columns (Castro et al., footnote 3).

    Columns appear in the order of ``codes``, a categorical code expanding in place. Rows with NaN in
    a factor are left out for that factor only. A constant code column or factor (e.g. a class never
    chosen) gives NaN, not an error.

    Parameters
    ----------
    codes : Mapping of str to array-like of shape (n,) or (n, w)
        Code values by name, e.g. MAP estimates of an InfoGAN's recognition network, or the codes
        that generated the samples; numeric, NaN is not allowed.
    factors : pandas.DataFrame of shape (n, F)
        One numeric column per factor (e.g. the morphometrics ``length, thickness, width, height`` in
        pixels and ``slant`` in radians), one row per sample; NaN marks a missing value.
    categorical : sequence of str, default=()
        Names in ``codes`` that are categorical.

    Returns
    -------
    pandas.DataFrame
        float64 partial correlations in [-1, 1] or NaN, index = factor names (named ``factor``),
        columns = code variable names.

    Raises
    ------
    InvalidArgumentError
        When ``factors`` is not a DataFrame or has a non-numeric column, ``codes`` is empty or not a
        mapping, a code has the wrong number of rows, a non-numeric dtype or NaN, a categorical code
        holds negative or non-integer classes, ``categorical`` names an unknown code, or two code
        variables get the same name after expansion.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, section 4.2 and footnote 3.
    """
    if not isinstance(factors, pd.DataFrame):
        raise InvalidArgumentError(f"factors: expected a pandas.DataFrame, got {type(factors).__name__}")
    if not isinstance(codes, Mapping) or not codes:
        raise InvalidArgumentError("codes: expected a non-empty mapping of code name to array")
    if isinstance(categorical, str):
        categorical = [categorical]
    unknown = [name for name in categorical if name not in codes]
    if unknown:
        raise InvalidArgumentError(f"categorical: {unknown} not in codes (it has {list(codes)})")
    n = len(factors)

    # (column name, values, is_dummy) in output order
    columns: list[tuple[str, np.ndarray, bool]] = []
    for name, values in codes.items():
        array = np.asarray(values)
        label = f"codes[{name!r}]"
        if array.ndim == 0 or array.ndim > 2 or array.shape[0] != n:
            raise InvalidArgumentError(f"{label}: expected {n} rows (one per row of factors), got shape {array.shape}")
        if array.dtype.kind not in "biuf":
            raise InvalidArgumentError(f"{label}: expected numbers, got dtype {array.dtype}")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise InvalidArgumentError(f"{label}: holds NaN or infinite values")
        if name in categorical:
            classes = _classes(array, label)
            width = array.shape[1] if array.ndim == 2 else int(classes.max()) + 1 if classes.size else 0
            for k in range(width):
                columns.append((f"{name}({k + 1})", (classes == k).astype(np.float64), True))
        elif array.ndim == 1 or array.shape[1] == 1:
            columns.append((str(name), array.reshape(n).astype(np.float64), False))
        else:
            for j in range(array.shape[1]):
                columns.append((f"{name}[{j}]", array[:, j].astype(np.float64), False))
    names = [column[0] for column in columns]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise InvalidArgumentError(f"codes: names {duplicated} occur twice after expansion; rename the codes")

    continuous = (
        np.column_stack([v for _, v, dummy in columns if not dummy])
        if any(not dummy for _, _, dummy in columns)
        else np.zeros((n, 0))
    )
    continuous_index = {name: i for i, name in enumerate(name for name, _, dummy in columns if not dummy)}

    result = pd.DataFrame(np.nan, index=[str(c) for c in factors.columns], columns=names, dtype=np.float64)
    for factor_name in factors.columns:
        factor = _factor_values(factors[factor_name], factor_name)
        keep = np.isfinite(factor)
        y = factor[keep]
        kept_continuous = continuous[keep]
        for name, values, dummy in columns:
            if dummy:
                others = kept_continuous
            else:
                others = np.delete(kept_continuous, continuous_index[name], axis=1)
            result.loc[str(factor_name), name] = _partial_correlation(values[keep], y, _design(others, len(y)))
    result.index.name = "factor"
    return result


def partial_correlation_metric(
    factors: pd.DataFrame | np.ndarray,
    codes: Mapping[str, np.ndarray] | np.ndarray,
    categorical: Sequence[str] = (),
) -> dict[str, Any]:
    """Partial correlations of codes with factors, as ``metric(factors, codes, **params) -> dict``.

    A thin wrapper of :func:`code_partial_correlations` (same numbers) taking the ground-truth factors
    first, as every factor-based metric of the package does. For each factor ``f`` and code variable
    ``c`` the value is the partial correlation (:func:`partial_correlation`)::

        r(c, f | C) = <e_c, e_f> / (|e_c| |e_f|),   e_v = v - [1, C] b_v (least-squares residual)

    where ``C`` holds the other non-categorical code columns for a continuous code, and all the
    non-categorical code columns for a dummy ``name(k)`` of a categorical code (Castro et al.,
    section 4.2 and footnote 3).

    Parameters
    ----------
    factors : pandas.DataFrame of shape (n, F) or array-like of shape (n, F)
        Ground-truth values, one row per sample, e.g. the morphometrics table (``length``,
        ``thickness``, ``width``, ``height`` in pixels, ``slant`` in radians). NaN marks a missing value,
        left out for that factor only. Columns of an array are named ``factor[0]`` ... ``factor[F-1]``.
    codes : Mapping of str to array-like, or array-like of shape (n,) or (n, C)
        Learned codes, one row per sample; a mapping as in :func:`code_partial_correlations`. An array
        is one continuous code named ``code`` (columns ``code[0]`` ... ``code[C-1]``, or ``code`` when
        ``C = 1``).
    categorical : sequence of str, default=()
        Names in ``codes`` that are categorical (expanded into one dummy per class).

    Returns
    -------
    dict
        ``partial_correlations`` (pandas.DataFrame, index = factor names, columns = code variable
        names, float64 in [-1, 1] or NaN), ``categorical`` (list of the categorical code names),
        ``samples`` (``n``) and ``metric`` = ``"partial_correlation"``.

    Raises
    ------
    InvalidArgumentError
        When ``factors`` is neither a DataFrame nor a 2-D numeric array, and as
        :func:`code_partial_correlations`.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, section 4.2 and footnote 3.
    """
    if not isinstance(factors, pd.DataFrame):
        array = np.asarray(factors)
        if array.ndim != 2 or array.dtype.kind not in "biuf":
            raise InvalidArgumentError(
                f"factors: expected a pandas.DataFrame or an (n, F) numeric array, got {array.dtype} of shape "
                f"{array.shape}"
            )
        factors = pd.DataFrame(array, columns=[f"factor[{j}]" for j in range(array.shape[1])])
    if not isinstance(codes, Mapping):
        codes = {"code": np.asarray(codes)}
    if isinstance(categorical, str):
        categorical = [categorical]
    matrix = code_partial_correlations(codes, factors, categorical=categorical)
    return {
        "partial_correlations": matrix,
        "categorical": [str(name) for name in categorical],
        "samples": int(len(factors)),
        "metric": "partial_correlation",
    }


def _vector(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{name}: expected numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise InvalidArgumentError(f"{name}: expected a 1-D array, got shape {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise InvalidArgumentError(f"{name}: holds NaN or infinite values")
    return array


def _design(controls: Any, n: int) -> np.ndarray:
    """``[1, controls]`` as an ``(n, k + 1)`` matrix."""
    if controls is None:
        return np.ones((n, 1))
    array = np.asarray(controls)
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"controls: expected numbers, got dtype {array.dtype}")
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] != n:
        raise InvalidArgumentError(f"controls: expected shape ({n}, k), got {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise InvalidArgumentError("controls: holds NaN or infinite values")
    return np.column_stack([np.ones(n), array])


def _residual(values: np.ndarray, design: np.ndarray) -> np.ndarray | None:
    """Least-squares residual of ``values`` on ``design``; None when (numerically) zero."""
    centred = values - values.mean()
    scale = np.linalg.norm(centred)
    if scale == 0:
        return None
    coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
    residual = values - design @ coefficients
    if np.linalg.norm(residual) <= _EXPLAINED_TOLERANCE * scale:
        return None
    return residual


def _partial_correlation(x: np.ndarray, y: np.ndarray, design: np.ndarray) -> float:
    if len(x) < design.shape[1] + 2:
        return float("nan")
    residual_x = _residual(x, design)
    residual_y = _residual(y, design)
    if residual_x is None or residual_y is None:
        return float("nan")
    r = residual_x @ residual_y / (np.linalg.norm(residual_x) * np.linalg.norm(residual_y))
    return float(np.clip(r, -1.0, 1.0))


def _classes(array: np.ndarray, label: str) -> np.ndarray:
    if array.ndim == 2:
        return np.argmax(array, axis=1)
    if array.dtype.kind == "f":
        if not np.array_equal(array, np.round(array)):
            raise InvalidArgumentError(f"{label}: a categorical code needs integer classes (or 2-D logits)")
        array = array.astype(np.int64)
    if array.size and array.min() < 0:
        raise InvalidArgumentError(f"{label}: classes must be 0 .. K-1, found {int(array.min())}")
    return array.astype(np.int64)


def _factor_values(column: pd.Series, name: Any) -> np.ndarray:
    if column.dtype == bool:
        return column.to_numpy(np.float64, copy=True)
    values = pd.to_numeric(column, errors="coerce").to_numpy(np.float64, copy=True)
    if np.isnan(values).all() and column.notna().any():
        raise InvalidArgumentError(f"factors: column {name!r} is not numeric")
    values[~np.isfinite(values)] = np.nan
    return values


__all__ = ["partial_correlation", "code_partial_correlations", "partial_correlation_metric"]
