"""Figures shared by the studies, drawn on :class:`matplotlib.figure.Figure` objects.

Figures are built directly (not through ``pyplot``) and drawn by the Agg canvas, so no global
figure registry grows and a user's own backend choice is left untouched.
"""

from __future__ import annotations

import inspect
import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DEFAULT_DPI = 110

# matplotlib >= 3.10 spells the direction `orientation`; older versions use `vert`
_HORIZONTAL = (
    {"orientation": "horizontal"} if "orientation" in inspect.signature(Axes.violinplot).parameters else {"vert": False}
)


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches drawn by Agg, outside pyplot's registry."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png_bytes(fig: Figure, dpi: int = DEFAULT_DPI) -> bytes:
    """The PNG encoding of ``fig`` at ``dpi`` dots per inch."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def checked_columns(table: Any, columns: Any) -> list[str]:
    """``columns`` as a non-empty list of names that ``table`` holds (one name may be a string)."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    if not columns:
        raise InvalidArgumentError("columns: name at least one column to plot")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InvalidArgumentError(f"columns: {missing} not in the table (it has {list(table.columns)})")
    return columns


def distributions_by_class(
    df: Any,
    columns: Sequence[str],
    class_column: str = "label",
    column_labels: Mapping[str, str] | None = None,
    ncols: int | None = None,
) -> Figure:
    """Distribution of each column per class: one panel per column, one horizontal violin per class.

    Each panel has the classes on the y axis (first class on top) and the column's values on the
    x axis. NaN and infinite values are dropped per column and class; a class with fewer than two
    distinct values left is drawn as points instead of a violin. A white dot marks each median
    (the points of the line with gid ``"medians"``; NaN where a class has no value).

    Parameters
    ----------
    df
        A pandas DataFrame holding ``columns`` and ``class_column``.
    columns
        The numeric columns to show, one panel each (e.g. the morphometrics).
    class_column
        The column holding the class of each row (e.g. the digit label).
    column_labels
        Axis labels by column name (e.g. with units); the column name is used where missing.
    ncols
        Panels per row (default: all columns in one row, at most 6 per row).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(df, pd.DataFrame):
        raise InvalidArgumentError(f"df: expected a pandas.DataFrame, got {type(df).__name__}")
    columns = checked_columns(df, columns)
    classes = _classes_of(df, class_column)
    column_labels = dict(column_labels or {})
    ncols = min(len(columns), 6) if ncols is None else check_positive_int(ncols, "ncols")
    nrows = math.ceil(len(columns) / ncols)

    fig = new_figure(width=0.4 + 2.3 * ncols, height=0.6 + (0.3 * len(classes) + 0.6) * nrows)
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    positions = np.arange(len(classes))
    for ax, column in zip(axes, columns):
        values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
        by_class = [values[(df[class_column] == cls).to_numpy()] for cls in classes]
        _class_distributions_panel(ax, by_class, positions)
        ax.set_xlabel(column_labels.get(column, column))
    for ax in axes[len(columns) :]:
        ax.set_visible(False)
    first = axes[0]
    first.set_yticks(positions, [str(c) for c in classes])
    first.set_ylim(len(classes) - 0.5, -0.5)  # first class on top
    for row in range(nrows):
        axes[row * ncols].set_ylabel(class_column)
    return fig


def _classes_of(df: pd.DataFrame, class_column: str) -> list[Any]:
    """The classes in ``df[class_column]``, sorted (in the order of first appearance when of mixed types)."""
    if class_column not in df.columns:
        raise InvalidArgumentError(f"class_column: {class_column!r} not in the table (it has {list(df.columns)})")
    classes = list(pd.unique(df[class_column].dropna()))
    if not classes:
        raise InvalidArgumentError(f"df: no row has a class in {class_column!r}")
    try:
        classes = sorted(classes)
    except TypeError:  # mixed types: keep the order of first appearance
        pass
    return classes


def _class_distributions_panel(ax: Axes, by_class: list[np.ndarray], positions: np.ndarray) -> None:
    """One panel of :func:`distributions_by_class`: a horizontal violin (points for fewer than two distinct
    values) of each class's finite values at its position, and the medians as white dots."""
    medians = np.full(len(by_class), np.nan)
    for position, chosen in zip(positions, by_class):
        chosen = chosen[np.isfinite(chosen)]
        if chosen.size == 0:
            continue
        medians[position] = np.median(chosen)
        if np.unique(chosen).size >= 2:
            parts = ax.violinplot([chosen], positions=[position], widths=0.8, showextrema=False, **_HORIZONTAL)
            for body in parts["bodies"]:
                body.set_facecolor("#4c72b0")
                body.set_edgecolor("#2a4a7f")
                body.set_alpha(0.75)
        else:
            ax.scatter(chosen, np.full(chosen.size, position), s=10, color="#2a4a7f", zorder=2)
    ax.plot(
        medians,
        positions,
        linestyle="none",
        marker="o",
        markersize=3.5,
        markerfacecolor="white",
        markeredgecolor="#222222",
        markeredgewidth=0.6,
        zorder=3,
        gid="medians",
    )
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def image_grid(
    images: np.ndarray,
    nrows: int,
    ncols: int,
    titles: Sequence[str] | None = None,
    row_labels: Sequence[str] | None = None,
    cmap: str = "gray",
    vmin: float | None = None,
    vmax: float | None = None,
    cell_inches: float = 0.9,
) -> Figure:
    """Show ``images`` row by row in an ``nrows`` x ``ncols`` grid without axis ticks.

    Parameters
    ----------
    images
        ``(N, H, W)`` grey or ``(N, H, W, 3)`` RGB images, ``N <= nrows * ncols``; cells past
        ``N`` stay blank.
    nrows, ncols
        The grid's shape; the figure has exactly ``nrows * ncols`` axes.
    titles
        One title per image (``N`` of them), shown above its cell.
    row_labels
        One label per row, shown left of the row's first cell.
    cmap
        Colour map of grey images.
    vmin, vmax
        Grey range shared by all cells. Default: 0-255 for integer images, 0-1 for float images
        within [0, 1], else the images' finite minimum and maximum, so intensities compare across
        cells.
    cell_inches
        Size of one cell in inches.

    Returns
    -------
    matplotlib.figure.Figure
    """
    images = np.asarray(images)
    if images.ndim == 4 and images.shape[-1] == 3:
        rgb = True
    elif images.ndim == 3:
        rgb = False
    else:
        raise InvalidArgumentError(f"images: expected shape (N, H, W) or (N, H, W, 3), got {images.shape}")
    nrows, ncols = check_positive_int(nrows, "nrows"), check_positive_int(ncols, "ncols")
    count = images.shape[0]
    if count > nrows * ncols:
        raise InvalidArgumentError(f"images: {count} images do not fit a {nrows} x {ncols} grid")
    if titles is not None and len(titles) != count:
        raise InvalidArgumentError(f"titles: expected {count} titles (one per image), got {len(titles)}")
    if row_labels is not None and len(row_labels) != nrows:
        raise InvalidArgumentError(f"row_labels: expected {nrows} labels (one per row), got {len(row_labels)}")
    if not rgb:
        vmin, vmax = _grey_range(images, vmin, vmax)

    title_space = 0.25 if titles is not None else 0.0
    label_space = 0.6 if row_labels is not None else 0.0
    fig = new_figure(width=label_space + cell_inches * ncols + 0.1, height=(cell_inches + title_space) * nrows + 0.1)
    fig.get_layout_engine().set(w_pad=0.01, h_pad=0.01, wspace=0.02, hspace=0.02)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for index, ax in enumerate(axes.ravel()):
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        if index < count:
            if rgb:
                ax.imshow(images[index], interpolation="nearest")
            else:
                ax.imshow(images[index], cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
            if titles is not None:
                ax.set_title(str(titles[index]), fontsize=8, pad=2)
    if row_labels is not None:
        for row, label in enumerate(row_labels):
            axes[row, 0].set_ylabel(str(label), fontsize=9, rotation=0, ha="right", va="center")
    return fig


def traversal_grid(
    images: np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    cell_inches: float = 0.7,
    title: str | None = None,
) -> Figure:
    """Latent traversals as an image grid (Castro et al., Fig. 7): one row per traversal, a title above
    that says what it traverses (the Morpho-MNIST, dSprites/CANDLE and MMVAE reports draw theirs here).

    Parameters
    ----------
    images
        ``(rows, cols, H, W)`` grey images (a channel axis of size 1, ``(rows, cols, 1, H, W)`` or
        ``(rows, cols, H, W, 1)``, is dropped) or ``(rows, cols, H, W, 3)`` RGB; ``(cols, H, W)`` is one
        row.
    row_labels
        One label per row, left of the row.
    col_labels
        One label per column (e.g. the code value), above the first row.
    cell_inches
        Size of one cell in inches.
    title
        Above the grid: which model and which latent the grid traverses (a bare grid of images does not
        say).

    Returns
    -------
    matplotlib.figure.Figure
        With ``rows * cols`` axes, row by row.
    """
    images = np.asarray(images)
    if images.ndim == 3:
        images = images[None]
    if images.ndim == 5 and images.shape[2] == 1:
        images = images[:, :, 0]
    elif images.ndim == 5 and images.shape[-1] == 1:
        images = images[..., 0]
    rgb = images.ndim == 5 and images.shape[-1] == 3
    if not (images.ndim == 4 or rgb):
        raise InvalidArgumentError(f"images: expected shape (rows, cols, H, W), got {np.shape(images)}")
    rows, cols = images.shape[:2]
    if rows == 0 or cols == 0:
        raise InvalidArgumentError(f"images: no images in shape {images.shape}")
    if col_labels is not None and len(col_labels) != cols:
        raise InvalidArgumentError(f"col_labels: expected {cols} labels (one per column), got {len(col_labels)}")
    flat = images.reshape(rows * cols, *images.shape[2:])
    fig = image_grid(flat, nrows=rows, ncols=cols, row_labels=row_labels, cell_inches=cell_inches)
    if col_labels is not None:
        for ax, label in zip(fig.axes[:cols], col_labels):
            ax.set_title(str(label), fontsize=7, pad=2)
    if title:
        # wrapped to the figure's width (about 13 characters an inch at 9 pt): a longer line is cut off
        width = max(int(fig.get_figwidth() * 13), 20)
        lines = [wrapped for line in title.splitlines() for wrapped in textwrap.wrap(line, width) or [""]]
        fig.suptitle("\n".join(lines), fontsize=9)
    return fig


def _grey_range(images: np.ndarray, vmin: float | None, vmax: float | None) -> tuple[float, float]:
    if vmin is not None and vmax is not None:
        return vmin, vmax
    if images.dtype == np.uint8:
        low, high = 0.0, 255.0
    else:
        finite = images[np.isfinite(images)] if images.dtype.kind == "f" else images.ravel()
        if finite.size == 0:
            low, high = 0.0, 1.0
        elif finite.min() >= 0 and finite.max() <= 1 and images.dtype.kind == "f":
            low, high = 0.0, 1.0
        elif images.dtype.kind in "iu" and finite.min() >= 0 and finite.max() <= 255:
            low, high = 0.0, 255.0
        else:
            low, high = float(finite.min()), float(finite.max())
    return (low if vmin is None else vmin), (high if vmax is None else vmax)


__all__ = [
    "distributions_by_class",
    "image_grid",
    "traversal_grid",
    "save_png_bytes",
    "new_figure",
    "PNG_SIGNATURE",
]


def variance_heatmap(matrix: Any, values: Sequence[float], title: str = "", unit: str = "") -> Figure:
    """A variance matrix in the ML4ML paper's orientation: delta_00 at the bottom-left, V on both axes.

    Parameters
    ----------
    matrix : array-like of shape (T, T)
        The variance matrix (row i, column j).
    values : sequence of float
        ``V`` of the ``T`` transformations.
    title : str, optional
        Above the image.
    unit : str, optional
        Axis label suffix (``degrees``).

    Returns
    -------
    matplotlib.figure.Figure
        Heat map with a colour bar.
    """
    matrix = np.asarray(matrix, dtype=float)
    values = np.asarray(values, dtype=float)
    if matrix.ndim != 2 or matrix.shape != (len(values), len(values)):
        raise InvalidArgumentError(f"matrix: expected ({len(values)}, {len(values)}), got {matrix.shape}")
    fig = new_figure(3.6, 3.0)
    ax = fig.add_subplot()
    half = (values[-1] - values[0]) / (len(values) - 1) / 2
    extent = (values[0] - half, values[-1] + half, values[0] - half, values[-1] + half)
    # row i at height V_i (origin lower), column j at V_j: the paper's delta_00 sits bottom-left
    image = ax.imshow(matrix, origin="lower", extent=extent, cmap="viridis", interpolation="nearest")
    label = f"V ({unit})" if unit else "V"
    ax.set_xlabel(f"{label}, transformation j")
    ax.set_ylabel(f"{label}, transformation i")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.85)
    return fig
