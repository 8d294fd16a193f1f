"""Figures of the disentanglement studies: IRS matrices and UC sets per model, latent traversals with
their model's name, a sample of rendered images, and the check that flags flat (near-constant) images."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from repscope.errors import InvalidArgumentError
from repscope.report.figures import image_grid, new_figure, traversal_grid

# an image whose pixels (on the 0-1 scale) vary by less than this standard deviation shows nothing
FLAT_STD = 0.01


def uc_membership(q_sets: Mapping[str, Sequence[Sequence[int]]], latents: int, factors: int) -> np.ndarray:
    """Which latents UC attributes to each factor: ``(latents, factors)`` integers, the smallest rho whose
    set ``Q_i`` holds latent ``l`` (0: in no set).

    Parameters
    ----------
    q_sets : mapping
        ``{"rho<r>": [[latent indices of Q_i] for each factor i]}``
        (:func:`repscope.metrics.disentanglement.irs.unique_capture`).
    latents : int
        Number of latents L.
    factors : int
        Number of factors K.

    Returns
    -------
    numpy.ndarray
        ``(L, K)`` int array.

    Raises
    ------
    InvalidArgumentError
        When a key is not ``rho<r>``, a set's count is not ``factors`` or a latent index is out of range.
    """
    table = np.zeros((int(latents), int(factors)), dtype=np.int64)
    ranked = []
    for key, sets in q_sets.items():
        if not (isinstance(key, str) and key.startswith("rho") and key[3:].isdigit() and int(key[3:]) >= 1):
            raise InvalidArgumentError(f"q_sets: key {key!r} is not rho<r>")
        ranked.append((int(key[3:]), sets))
    for rho, sets in sorted(ranked, key=lambda item: item[0], reverse=True):  # the smallest rho written last
        if len(sets) != factors:
            raise InvalidArgumentError(f"q_sets: rho{rho} has {len(sets)} sets for {factors} factors")
        for factor, members in enumerate(sets):
            for latent in members:
                if not 0 <= int(latent) < latents:
                    raise InvalidArgumentError(f"q_sets: rho{rho} names latent {latent} of {latents}")
                table[int(latent), factor] = rho
    return table


def irs_uc_heatmaps(
    irs_matrix: Any, q_sets: Mapping[str, Sequence[Sequence[int]]], factor_names: Sequence[str], model: str
) -> Figure:
    """Two heatmaps of one model, latents (rows ``z0``...) by factors: its IRS matrix, and its UC sets.

    Parameters
    ----------
    irs_matrix : array-like
        ``(L, K)`` IRS of latent l for factor k (NaN for a dropped constant latent).
    q_sets : mapping
        UC's latent sets per rho (:func:`uc_membership`).
    factor_names : sequence of str
        The K factors' names (the columns).
    model : str
        The model's name, the figure's title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    matrix = np.asarray(irs_matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != len(factor_names):
        raise InvalidArgumentError(
            f"irs_matrix: expected (latents, {len(factor_names)}) for the factors, got shape {matrix.shape}"
        )
    latents, factors = matrix.shape
    member = uc_membership(q_sets, latents, factors)
    rhos = sorted(int(key[3:]) for key in q_sets)
    width = 2.0 + 1.3 * factors
    fig = new_figure(2 * width, 1.2 + 0.38 * latents)
    left, right = fig.subplots(1, 2)
    shown = np.ma.masked_invalid(matrix)
    image = left.imshow(shown, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    for (row, column), value in np.ndenumerate(matrix):
        if np.isfinite(value):
            left.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                      color="black" if value > 0.6 else "white")  # fmt: skip
    fig.colorbar(image, ax=left, fraction=0.05)
    left.set_title("IRS (latent x factor)", fontsize=9)
    colours = np.where(member > 0, (max(rhos or [1]) + 1 - member), 0)
    right.imshow(colours, cmap="Blues", vmin=0, vmax=max(rhos or [1]) + 1, aspect="auto")
    for (row, column), rho in np.ndenumerate(member):
        if rho:
            right.text(column, row, f"\u03c1={rho}", ha="center", va="center", fontsize=7)
    right.set_title("UC sets: latents attributed to each factor", fontsize=9)
    for axis in (left, right):
        axis.set_xticks(range(factors), [str(name) for name in factor_names], rotation=30, ha="right", fontsize=8)
        axis.set_yticks(range(latents), [f"z{latent}" for latent in range(latents)], fontsize=8)
        axis.set_xlabel("factor", fontsize=8)
        axis.set_ylabel("latent", fontsize=8)
    fig.suptitle(model, fontsize=11)
    return fig


def traversal_figure(images: Any, latents: int, steps: int, model: str, span: float) -> Figure:
    """A latent traversal grid: one row per latent, labelled ``z<l>``, the model's name above it.

    Parameters
    ----------
    images : array-like
        ``(latents * steps, H, W[, 3])`` decoded images, row by row.
    latents, steps : int
        The grid's rows and columns.
    model : str
        The model's name, the figure's title.
    span : float
        Each latent runs over ``[-span, span]`` (named in the title).

    Returns
    -------
    matplotlib.figure.Figure
    """
    grid = np.asarray(images).reshape(int(latents), int(steps), *np.shape(images)[1:])
    # the Morpho-MNIST grid's title wraps to the figure's width (a narrow grid cut a one-line title)
    return traversal_grid(
        grid,
        row_labels=[f"z{latent}" for latent in range(int(latents))],
        cell_inches=0.9,
        title=f"{model}: latent traversals, each row varies one latent over \u00b1{span:g}",
    )


def near_constant(images: Any, threshold: float = FLAT_STD) -> np.ndarray:
    """Which images are flat: the standard deviation of their pixels, on the 0-1 scale, below ``threshold``.

    Parameters
    ----------
    images : array-like
        ``(N, H, W)`` or ``(N, H, W, C)``: floats in [0, 1], or integers in 0-255 (divided by 255).
    threshold : float, default=FLAT_STD
        The least pixel standard deviation of an image that shows something.

    Returns
    -------
    numpy.ndarray
        ``(N,)`` bool.
    """
    array = np.asarray(images)
    if array.ndim < 3:
        raise InvalidArgumentError(f"images: expected (N, H, W[, C]), got shape {array.shape}")
    values = array.astype(np.float64) / (255.0 if array.dtype.kind in "iu" else 1.0)
    spread = values.reshape(len(values), -1).std(axis=1)
    return spread < float(threshold)


def sample_figure(images: Any, titles: Sequence[str], columns: int = 6) -> Figure:
    """A grid of sample images with a title each (e.g. the factor values of rendered CANDLE images).

    Parameters
    ----------
    images : array-like
        ``(N, H, W[, 3])``.
    titles : sequence of str
        One per image.
    columns : int, default=6
        Images per row.

    Returns
    -------
    matplotlib.figure.Figure
    """
    array = np.asarray(images)
    rows = max(1, -(-len(array) // int(columns)))
    return image_grid(array, rows, min(int(columns), max(1, len(array))), titles=list(titles), cell_inches=1.6)


__all__ = ["FLAT_STD", "irs_uc_heatmaps", "near_constant", "sample_figure", "traversal_figure", "uc_membership"]
