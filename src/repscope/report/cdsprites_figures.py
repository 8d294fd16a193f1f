"""Figures of sprite datasets: sample grids with their captions."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from repscope.errors import InvalidArgumentError
from repscope.report.figures import new_figure

CAPTION_WRAP = 18  # characters per title line at 7 pt in a 1.3-inch cell


def captioned_grid(
    images: np.ndarray,
    captions: Sequence[str] | None,
    ncols: int = 8,
    row_labels: Sequence[str] | None = None,
    cell_inches: float = 1.3,
) -> Figure:
    """``images`` (``(N, 64, 64, 3)`` RGB or ``(N, 64, 64)`` binary / grey) in rows of ``ncols``,
    each titled with its caption wrapped to a few lines."""
    images = np.asarray(images)
    if images.ndim not in (3, 4) or len(images) == 0:
        raise InvalidArgumentError(f"images: expected (N, H, W) or (N, H, W, 3) with N >= 1, got {images.shape}")
    if captions is not None and len(captions) != len(images):
        raise InvalidArgumentError(f"captions: expected {len(images)} captions, got {len(captions)}")
    ncols = min(int(ncols), len(images))
    nrows = -(-len(images) // ncols)
    if row_labels is not None and len(row_labels) != nrows:
        raise InvalidArgumentError(f"row_labels: expected {nrows} labels, got {len(row_labels)}")
    wrapped = None if captions is None else [textwrap.fill(str(c), CAPTION_WRAP) for c in captions]
    lines = 0 if wrapped is None else max(text.count("\n") + 1 for text in wrapped)
    title_inches = 0.13 * lines
    label_inches = 0.7 if row_labels is not None else 0.0
    fig = new_figure(width=label_inches + cell_inches * ncols + 0.1, height=(cell_inches + title_inches) * nrows + 0.1)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    grey = images.ndim == 3
    top = 1 if images.dtype != np.uint8 or images.max() <= 1 else 255
    for index, ax in enumerate(axes.ravel()):
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        if index >= len(images):
            continue
        if grey:
            ax.imshow(images[index], cmap="gray", vmin=0, vmax=top, interpolation="nearest")
        else:
            ax.imshow(images[index], interpolation="nearest")
        if wrapped is not None:
            ax.set_title(wrapped[index], fontsize=7, pad=2, linespacing=1.0)
    if row_labels is not None:
        for row, label in enumerate(row_labels):
            axes[row, 0].set_ylabel(str(label), fontsize=9, rotation=0, ha="right", va="center")
    return fig
