"""The CANDLE causal grid a render covers: points, their stable indices and seeds, shards and resuming.

The paper's grid (section 3) is object x color x size x rotation x scene x light = 5 x 5 x 3 x 6 x 3 x 3 =
4,050 points, enumerated in row-major order of :data:`GRID_FACTORS` (light fastest). A point keeps its
index in the full grid whatever sub-grid is asked for, and its image seed is derived from that index
alone (:func:`image_seed`), so the same index renders the same image on any machine, in any shard.
Rotations are in degrees here; a renderer converts them to radians for Blender.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError

GRID_FACTORS: dict[str, tuple[Any, ...]] = {
    "object": ("cube", "sphere", "cylinder", "cone", "torus"),
    "color": ("red", "blue", "yellow", "purple", "orange"),
    "size": ("small", "medium", "large"),
    "rotation": (0, 15, 30, 45, 60, 90),
    "scene": ("indoor", "playground", "outdoor"),
    "light": ("left", "middle", "right"),
}
GRID_SIZE = int(np.prod([len(values) for values in GRID_FACTORS.values()]))


def parse_grid(options: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """The sub-grid that ``--grid factor=v1,v2`` options select (every value of a factor not named).

    Parameters
    ----------
    options : sequence of str
        ``"factor=v1,v2,..."`` each; a factor at most once; values of :data:`GRID_FACTORS`
        (rotations as integers, in degrees).

    Returns
    -------
    dict of str to tuple
        Each factor's values, in the full grid's order.

    Raises
    ------
    InvalidArgumentError
        Naming ``--grid`` and the option: no ``=``, an unknown factor, a factor twice, an unknown or
        empty value.
    """
    grid = dict(GRID_FACTORS)
    seen: set[str] = set()
    for option in options:
        name, sep, values = option.partition("=")
        name = name.strip()
        if not sep:
            raise InvalidArgumentError(f"--grid {option!r}: expected factor=v1,v2 (factors: {', '.join(GRID_FACTORS)})")
        if name not in GRID_FACTORS:
            raise InvalidArgumentError(
                f"--grid {option!r}: unknown factor {name!r}; factors: {', '.join(GRID_FACTORS)}"
            )
        if name in seen:
            raise InvalidArgumentError(f"--grid {option!r}: factor {name!r} is given twice")
        seen.add(name)
        words = [word.strip().lower() for word in values.split(",") if word.strip()]
        if not words:
            raise InvalidArgumentError(f"--grid {option!r}: no values for {name!r}")
        allowed = {str(value): value for value in GRID_FACTORS[name]}
        unknown = [word for word in words if word not in allowed]
        if unknown:
            raise InvalidArgumentError(
                f"--grid {option!r}: {name} has no value {unknown[0]!r}; values: {', '.join(allowed)}"
            )
        chosen = {allowed[word] for word in words}
        grid[name] = tuple(value for value in GRID_FACTORS[name] if value in chosen)
    return grid


def grid_points(grid: dict[str, tuple[Any, ...]] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """The points of a (sub-)grid in full-grid order, each with its full-grid ``index``.

    Parameters
    ----------
    grid : dict, optional
        Values per factor (:func:`parse_grid`); default the full grid.
    limit : int, optional
        Keep ``limit`` points spread evenly over the (sub-)grid, in grid order: of its ``n`` points, those
        at positions ``k * n // limit`` for ``k = 0 .. limit - 1`` (every point when ``limit >= n``), so
        that each value of a slow factor (``object``, ``color``) is kept when ``limit`` allows it.

    Returns
    -------
    list of dict
        ``{"index": int, "object": ..., "color": ..., "size": ..., "rotation": ..., "scene": ...,
        "light": ...}`` per point.

    Raises
    ------
    InvalidArgumentError
        When ``limit`` is below 1 or a factor's value is not in the full grid.
    """
    grid = grid or GRID_FACTORS
    if limit is not None and (isinstance(limit, bool) or int(limit) != limit or limit < 1):
        raise InvalidArgumentError(f"--limit: expected a positive integer, got {limit!r}")
    positions = []
    for name, full in GRID_FACTORS.items():
        values = grid.get(name, full)
        missing = [value for value in values if value not in full]
        if missing:
            raise InvalidArgumentError(f"grid: {name} has no value {missing[0]!r}")
        positions.append([full.index(value) for value in values])
    sizes = [len(values) for values in GRID_FACTORS.values()]
    mesh = np.stack(np.meshgrid(*positions, indexing="ij"), axis=-1).reshape(-1, len(sizes))
    indices = np.ravel_multi_index(tuple(mesh.T), sizes)
    order = np.argsort(indices, kind="stable")
    if limit is not None and int(limit) < len(order):
        # evenly spread, deterministic: the first of each of `limit` equal stretches of the grid order
        order = order[(np.arange(int(limit)) * len(order)) // int(limit)]
    names = list(GRID_FACTORS)
    return [
        {"index": int(indices[row]), **{name: GRID_FACTORS[name][mesh[row, k]] for k, name in enumerate(names)}}
        for row in order
    ]


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` as ``(i, n)`` with ``0 <= i < n``.

    Parameters
    ----------
    text : str
        The ``--shard`` option.

    Returns
    -------
    tuple of int
        ``(i, n)``.

    Raises
    ------
    InvalidArgumentError
        Naming ``--shard`` when the text is not ``i/n`` with ``0 <= i < n``.
    """
    left, sep, right = str(text).partition("/")
    try:
        shard, count = int(left), int(right)
    except ValueError:
        shard, count = -1, 0
    if not sep or not 0 <= shard < count:
        raise InvalidArgumentError(f"--shard {text!r}: expected i/n with 0 <= i < n, e.g. 0/4")
    return shard, count


def shard_points(points: list[dict[str, Any]], shard: int, count: int) -> list[dict[str, Any]]:
    """Shard ``shard`` of ``count``: every ``count``-th point from position ``shard``.

    Shards are disjoint and their union is ``points``; dealing points out in turn gives every shard
    a share of each scene (the slowest factor to change), so shards take about the same time.

    Parameters
    ----------
    points : list of dict
        :func:`grid_points`.
    shard, count : int
        ``0 <= shard < count``.

    Returns
    -------
    list of dict
        The shard's points, in grid order.
    """
    return points[shard::count]


def image_seed(index: int, seed: int = 0) -> int:
    """The seed of grid point ``index``'s random draws (position, jitter): a function of the index alone.

    Parameters
    ----------
    index : int
        Full-grid index.
    seed : int, default 0
        The render's base seed (0 for the dataset).

    Returns
    -------
    int
        A 32-bit seed from ``numpy.random.SeedSequence([seed, index])``.
    """
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def image_stem(index: int) -> str:
    """File name (without suffix) of grid point ``index``: its zero-padded index.

    Parameters
    ----------
    index : int
        Full-grid index.

    Returns
    -------
    str
        E.g. ``"00042"``; five digits keep the names in grid order when sorted.
    """
    return f"{int(index):05d}"


def pending_points(points: list[dict[str, Any]], out: str | Path) -> list[dict[str, Any]]:
    """The points whose image or JSON is not yet in ``out`` (what a resumed render still has to do).

    Parameters
    ----------
    points : list of dict
        :func:`grid_points`.
    out : str or Path
        The render folder.

    Returns
    -------
    list of dict
        The points lacking ``<stem>.png`` or ``<stem>.json``.
    """
    out = Path(out)
    return [
        point
        for point in points
        if not (
            (out / f"{image_stem(point['index'])}.png").exists()
            and (out / f"{image_stem(point['index'])}.json").exists()
        )
    ]


__all__ = [
    "GRID_FACTORS",
    "GRID_SIZE",
    "grid_points",
    "image_seed",
    "image_stem",
    "parse_grid",
    "parse_shard",
    "pending_points",
    "shard_points",
]
