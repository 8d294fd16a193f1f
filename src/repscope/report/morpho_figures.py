"""Morpho-MNIST figures: morphometric pair plots, partial-correlation circle matrices, latent traversals.

Drawn on :class:`matplotlib.figure.Figure` objects from :func:`repscope.report.figures.new_figure`
(Agg canvas, outside pyplot's registry), like the other report figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from scipy.stats import gaussian_kde

from repscope.errors import InvalidArgumentError
from repscope.report.figures import checked_columns, new_figure

# Above this many rows the kernel density estimates use a fixed random subsample (drawing only).
KDE_MAX_POINTS = 4000
CIRCLE_CMAP = "RdBu"  # red negative, blue positive
_HIST_COLOUR = "#4c72b0"
_LINE_COLOUR = "#1f3b73"


def morphometric_pairplot(
    tables: Any,
    columns: Sequence[str],
    column_labels: Mapping[str, str] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    bins: int = 30,
    title: str | None = None,
) -> Figure:
    """Pair plot of morphometrics as in Castro et al. (Morpho-MNIST), Fig. 4.

    A ``len(columns)`` x ``len(columns)`` grid: the diagonal shows each column's histogram (density)
    with a Gaussian kernel density estimate (Scott's rule bandwidth); the upper triangle shows
    pairwise 2-D histograms with a logarithmic colour scale (empty bins blank); the lower triangle
    shows contours of pairwise 2-D kernel density estimates. Row ``i``, column ``j`` plots column
    ``columns[j]`` on x against ``columns[i]`` on y. Non-finite values are dropped per panel.

    Parameters
    ----------
    tables
        A pandas DataFrame, or a mapping ``{name: DataFrame}`` with one entry (the name becomes the
        title). Draw one figure per table and share ``ranges`` to compare tables.
    columns
        The numeric columns to show (e.g. ``["length", "thickness", "slant", "width", "height"]``).
    column_labels
        Axis labels by column name (e.g. with units); the column name where missing.
    ranges
        Axis range ``(low, high)`` by column; default the 0.5 and 99.5 percentiles of the table.
    bins
        Histogram bins per axis.
    title
        Figure title (default the mapping's key, else none).

    Returns
    -------
    matplotlib.figure.Figure
        With exactly ``len(columns) ** 2`` axes, row by row.
    """
    table, title = _one_table(tables, title)
    columns = checked_columns(table, columns)
    if not isinstance(bins, (int, np.integer)) or bins < 2:
        raise InvalidArgumentError(f"bins: must be an integer >= 2, got {bins!r}")
    column_labels = dict(column_labels or {})
    values = {c: pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float) for c in columns}
    limits = {c: _range(values[c], (ranges or {}).get(c)) for c in columns}
    sample = np.random.default_rng(0).permutation(len(table))[:KDE_MAX_POINTS]

    count = len(columns)
    fig = new_figure(width=1.0 + 1.7 * count, height=0.8 + 1.7 * count)
    axes = fig.subplots(count, count, squeeze=False)
    for i, row_column in enumerate(columns):
        for j, col_column in enumerate(columns):
            ax = axes[i, j]
            if i == j:
                _marginal_panel(ax, values[col_column], sample, limits[col_column], bins)
            elif i < j:
                _histogram_panel(
                    ax, values[col_column], values[row_column], limits[col_column], limits[row_column], bins
                )
            else:
                _density_panel(
                    ax, values[col_column], values[row_column], sample, limits[col_column], limits[row_column]
                )
            ax.set_xlim(*limits[col_column])
            ax.tick_params(labelsize=7)
            _label_panel(
                ax, i, j, count, column_labels.get(col_column, col_column), column_labels.get(row_column, row_column)
            )
    if count > 1:
        # the top-left panel is a density: label its row by the column name without density ticks
        axes[0, 0].set_ylabel(column_labels.get(columns[0], columns[0]))
    if title:
        fig.suptitle(title)
    return fig


def _one_table(tables: Any, title: str | None) -> tuple[pd.DataFrame, str | None]:
    """The table of a pair plot and its title: ``tables`` is a DataFrame, or a mapping of one name to
    one (the name is the title unless ``title`` is given)."""
    if isinstance(tables, Mapping):
        if len(tables) != 1:
            raise InvalidArgumentError(
                f"tables: expected one table, got {len(tables)}; draw one figure per table and pass the same ranges"
            )
        ((name, table),) = tables.items()
        title = str(name) if title is None else title
    else:
        table = tables
    if not isinstance(table, pd.DataFrame):
        raise InvalidArgumentError(f"tables: expected a pandas.DataFrame, got {type(table).__name__}")
    return table, title


def _kde(points: np.ndarray) -> gaussian_kde | None:
    """A Gaussian kernel density estimate (Scott's rule bandwidth), or None for too few or identical values."""
    try:
        return gaussian_kde(points, bw_method="scott")
    except (ValueError, np.linalg.LinAlgError):
        return None


def _marginal_panel(ax: Any, values: np.ndarray, sample: np.ndarray, limits: tuple[float, float], bins: int) -> None:
    """A diagonal panel: the column's histogram (density) within its range and the KDE of its sample."""
    low, high = limits
    data = values[np.isfinite(values)]
    # a sample wholly outside the shared ranges has an empty (all-zero) histogram
    data = data[(data >= low) & (data <= high)]
    if data.size:
        ax.hist(data, bins=np.linspace(low, high, bins + 1), density=True, color=_HIST_COLOUR, alpha=0.45)
    kde_data = values[sample]
    density = _kde(kde_data[np.isfinite(kde_data)])
    if density is not None:
        grid = np.linspace(low, high, 200)
        ax.plot(grid, density(grid), color=_LINE_COLOUR, linewidth=1.0)
    ax.set_yticks([])


def _histogram_panel(
    ax: Any, x: np.ndarray, y: np.ndarray, x_limits: tuple[float, float], y_limits: tuple[float, float], bins: int
) -> None:
    """An upper panel: the 2-D histogram of the finite pairs, on a logarithmic colour scale (empty bins blank)."""
    both = np.isfinite(x) & np.isfinite(y)
    counts, x_edges, y_edges = np.histogram2d(
        x[both], y[both], bins=[np.linspace(*x_limits, bins + 1), np.linspace(*y_limits, bins + 1)]
    )
    if counts.max() > 0:
        ax.pcolormesh(
            x_edges,
            y_edges,
            np.ma.masked_equal(counts.T, 0),
            cmap="viridis",
            norm=LogNorm(vmin=1, vmax=max(counts.max(), 2)),
            rasterized=True,
        )
    ax.set_ylim(*y_limits)


def _density_panel(
    ax: Any,
    x: np.ndarray,
    y: np.ndarray,
    sample: np.ndarray,
    x_limits: tuple[float, float],
    y_limits: tuple[float, float],
) -> None:
    """A lower panel: contours of the 2-D KDE of the sample's finite pairs."""
    in_sample = (np.isfinite(x) & np.isfinite(y))[sample]
    density = _kde(np.vstack([x[sample][in_sample], y[sample][in_sample]]))
    if density is not None:
        grid_x, grid_y = np.meshgrid(np.linspace(*x_limits, 48), np.linspace(*y_limits, 48))
        z = density(np.vstack([grid_x.ravel(), grid_y.ravel()])).reshape(grid_x.shape)
        if z.max() > z.min():
            ax.contour(grid_x, grid_y, z, levels=6, cmap="Blues", linewidths=0.8)
    ax.set_ylim(*y_limits)


def _label_panel(ax: Any, i: int, j: int, count: int, x_label: str, y_label: str) -> None:
    """Axis labels on the bottom row and the first column only; tick labels elsewhere hidden."""
    if i == count - 1:
        ax.set_xlabel(x_label)
    else:
        ax.set_xticklabels([])
    if j == 0 and i != 0:
        ax.set_ylabel(y_label)
    elif i != j:
        ax.set_yticklabels([])


def partial_correlation_circles(
    matrix: Any,
    title: str | None = None,
    annotate: bool = False,
    cmap: str = CIRCLE_CMAP,
    max_area: float = 600.0,
) -> Figure:
    """Circle matrix of partial correlations as in Castro et al. (Morpho-MNIST), Figs. 5, 6 and 8.

    Rows are factors (top to bottom), columns are code variables (labels on top). Each finite entry
    ``r`` is a circle of area ``max_area * |r|`` (points^2) whose colour is ``cmap`` at ``r`` on
    [-1, 1]: blue positive, red negative, stronger with ``|r|``. NaN entries are marked by a small
    grey dot. Columns named with a parenthesis (the dummies ``c1(1)`` ... of a categorical code) are
    moved before the others (order kept within each block) and a vertical line and the labels
    "categorical" / "continuous" separate the two blocks.

    The circles are one scatter collection with gid ``"partial_correlations"``; its offsets are
    ``(column position, row position)`` in data coordinates.

    Parameters
    ----------
    matrix
        A pandas DataFrame of correlations in [-1, 1] (index: factors, columns: codes), e.g. from
        :func:`repscope.metrics.code_partial_correlations`.
    title
        Figure title.
    annotate
        Print each value (two decimals) next to its circle.
    cmap
        A diverging colour map whose low end is red and high end blue.
    max_area
        Circle area in points^2 for ``|r| = 1``.

    Returns
    -------
    matplotlib.figure.Figure
        With one axes.
    """
    values, codes, factors, n_dummies = _categorical_first(matrix)
    blocks = 0 < n_dummies < len(codes)
    fig = new_figure(
        width=1.6 + 0.48 * len(codes), height=(1.3 if blocks else 0.9) + 0.48 * len(factors) + (0.3 if title else 0.0)
    )
    ax = fig.subplots()
    _draw_circles(ax, values, annotate, cmap, max_area)
    _circle_grid(ax, codes, factors)
    if blocks:
        _separate_blocks(ax, n_dummies, len(codes))
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _categorical_first(matrix: Any) -> tuple[np.ndarray, list[str], list[str], int]:
    """A partial-correlation matrix checked, with the dummies of categorical codes (columns named with a
    parenthesis) moved before the other codes: its values, code names, factor names and dummy count."""
    if not isinstance(matrix, pd.DataFrame):
        raise InvalidArgumentError(f"matrix: expected a pandas.DataFrame, got {type(matrix).__name__}")
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise InvalidArgumentError(f"matrix: is empty (shape {matrix.shape})")
    codes = [str(c) for c in matrix.columns]
    dummy = ["(" in c for c in codes]
    order = [k for k in range(len(codes)) if dummy[k]] + [k for k in range(len(codes)) if not dummy[k]]
    values = matrix.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)[:, order]
    if np.any(np.abs(values[np.isfinite(values)]) > 1 + 1e-9):
        raise InvalidArgumentError("matrix: correlations must lie in [-1, 1]")
    return values, [codes[k] for k in order], [str(f) for f in matrix.index], sum(dummy)


def _draw_circles(ax: Any, values: np.ndarray, annotate: bool, cmap: str, max_area: float) -> None:
    """One circle per finite entry (area ``max_area * |r|``, colour ``cmap`` at ``r``), a grey dot per NaN."""
    rows, cols = np.indices(values.shape)
    finite = np.isfinite(values)
    # colours resolved here (not at draw time) so the artist holds them as soon as it exists
    colours = matplotlib.colormaps[cmap](Normalize(-1.0, 1.0)(values[finite]))
    ax.scatter(
        cols[finite],
        rows[finite],
        s=max_area * np.abs(values[finite]),
        color=colours,
        edgecolors="#555555",
        linewidths=0.4,
        gid="partial_correlations",
        zorder=3,
    )
    if (~finite).any():
        ax.scatter(cols[~finite], rows[~finite], s=4, color="#aaaaaa", gid="undefined", zorder=3)
    if annotate:
        for r, c in zip(rows[finite], cols[finite]):
            ax.annotate(
                f"{values[r, c]:.2f}",
                (c, r),
                xytext=(0, -11),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=6,
                color="#333333",
                zorder=4,
            )


def _circle_grid(ax: Any, codes: list[str], factors: list[str]) -> None:
    """Codes labelled on top, factors on the left (first on top), a light grid between the cells."""
    ax.set_xlim(-0.6, len(codes) - 0.4)
    ax.set_ylim(len(factors) - 0.4, -0.6)  # first factor on top
    ax.set_xticks(np.arange(len(codes)), codes)
    ax.set_yticks(np.arange(len(factors)), factors)
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", labelrotation=90, labelsize=8, length=0)
    ax.tick_params(axis="y", labelsize=9, length=0)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(len(codes) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(factors) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="#e4e4e4", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _separate_blocks(ax: Any, n_dummies: int, n_codes: int) -> None:
    """A vertical line between the categorical dummies and the continuous codes, each block named below."""
    ax.axvline(n_dummies - 0.5, color="#444444", linewidth=1.0, gid="block_separator")
    transform = ax.get_xaxis_transform()
    ax.text((n_dummies - 1) / 2, -0.02, "categorical", transform=transform, ha="center", va="top", fontsize=9)
    ax.text(
        n_dummies + (n_codes - n_dummies - 1) / 2,
        -0.02,
        "continuous",
        transform=transform,
        ha="center",
        va="top",
        fontsize=9,
    )


def _range(values: np.ndarray, given: tuple[float, float] | None) -> tuple[float, float]:
    if given is not None:
        low, high = float(given[0]), float(given[1])
        if not (np.isfinite(low) and np.isfinite(high) and high > low):
            raise InvalidArgumentError(f"ranges: expected (low, high) with low < high, got {given!r}")
        return low, high
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = np.percentile(finite, [0.5, 99.5])
    if high <= low:
        low, high = float(finite.min()), float(finite.max())
    if high <= low:
        low, high = low - 0.5, high + 0.5
    pad = 0.05 * (high - low)
    return float(low - pad), float(high + pad)


__all__ = ["morphometric_pairplot", "partial_correlation_circles"]
