"""Medial-axis skeletons of many binary shapes at once, with seeded, per-shape tie-breaking.

The medial axis (``skimage.morphology.medial_axis``) removes foreground pixels one at a time in
order of increasing distance to the background, then of decreasing "cornerness" (the number of
background pixels in the 3x3 neighbourhood), then of a random tie-breaker; a pixel is removed
unless that would change the 8-connectivity of its 3x3 neighbourhood or leave an end point.
Each decision only looks at a 3x3 neighbourhood, so shapes separated by at least one background
pixel do not interact, and many cropped digits tiled into one canvas can be skeletonised in one
pass. Two things make that pass give, digit by digit, the very skeleton of the per-image call:

* the lookup tables are built once per process instead of once per call (the per-call rebuild
  is most of the per-image cost);
* each digit's tie-breaker is its own ``default_rng(seed).permutation(n_foreground)`` over its
  pixels in raster order, exactly the one ``medial_axis(binary, rng=seed)`` draws, so the result
  does not depend on which other digits share the canvas.

The inner loop is scikit-image's compiled ``_skeletonize_loop`` (the one its ``medial_axis``
runs); a plain-Python loop stands in if a future scikit-image moves it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import edt
import numpy as np
from scipy import ndimage

try:  # the compiled inner loop of skimage.morphology.medial_axis
    from skimage.morphology._skeletonize_various_cy import _skeletonize_loop
except ImportError:  # pragma: no cover - exercised only on a scikit-image without it
    _skeletonize_loop = None

# weights of the 3x3 neighbourhood bits, in the layout of skimage's _table_lookup:
#   0 1 2 / 3 4 5 / 6 7 8  (bit k has weight 2**k)
_NEIGHBOURHOOD_WEIGHTS = (2 ** np.arange(9)).reshape(3, 3)
_EIGHT_CONNECTED = np.ones((3, 3), dtype=bool)


def _pattern_of(index: int) -> np.ndarray:
    return ((index >> np.arange(9)) & 1).astype(bool).reshape(3, 3)


@functools.lru_cache(maxsize=1)
def lookup_tables() -> tuple[np.ndarray, np.ndarray]:
    """(keep table, cornerness table) over the 512 binary 3x3 configurations.

    keep: the centre is foreground and removing it changes the number of 8-connected components,
    or the neighbourhood holds fewer than 3 pixels (an end point). cornerness: the number of
    background pixels in the neighbourhood (pixels with more are processed later).

    Configuration ``k`` has neighbour ``j`` (raster order in the 3x3 window, centre 4) on when bit
    ``j`` of ``k`` is set, as :func:`neighbourhood_index` computes it. Built once per process.

    Returns
    -------
    keep : numpy.ndarray
        uint8 ``(512,)``, 1 where the centre pixel must stay; read-only.
    cornerness : numpy.ndarray
        int64 ``(512,)``, 0-9; read-only.
    """
    keep = np.zeros(512, dtype=np.uint8)
    cornerness = np.zeros(512, dtype=np.int64)
    for index in range(512):
        pattern = _pattern_of(index)
        cornerness[index] = 9 - pattern.sum()
        if not pattern[1, 1]:
            continue
        without_centre = pattern.copy()
        without_centre[1, 1] = False
        components_with = ndimage.label(pattern, _EIGHT_CONNECTED)[1]
        components_without = ndimage.label(without_centre, _EIGHT_CONNECTED)[1]
        keep[index] = (components_with != components_without) or pattern.sum() < 3
    keep.setflags(write=False)
    cornerness.setflags(write=False)
    return keep, cornerness


def neighbourhood_index(binary: np.ndarray) -> np.ndarray:
    """Index (0..511) of each pixel's 3x3 neighbourhood; outside the image counts as background.

    Parameters
    ----------
    binary : numpy.ndarray
        bool (or 0/1) ``(H, W)``.

    Returns
    -------
    numpy.ndarray
        int32 ``(H, W)``: ``sum_j 2**j * binary[neighbour j]`` over the 3x3 window in raster order.
    """
    return ndimage.correlate(binary.astype(np.int32), _NEIGHBOURHOOD_WEIGHTS.astype(np.int32), mode="constant", cval=0)


def tiebreak_permutation(n_pixels: int, seed: int) -> np.ndarray:
    """The tie-breaker ``medial_axis(..., rng=seed)`` draws for a shape of ``n_pixels`` pixels.

    Parameters
    ----------
    n_pixels : int
        Foreground pixels of the shape.
    seed : int
        Tie-breaking seed.

    Returns
    -------
    numpy.ndarray
        int64 ``(n_pixels,)`` permutation of ``0 .. n_pixels - 1``: ``default_rng(seed).permutation``.
    """
    return np.random.default_rng(seed).permutation(np.arange(n_pixels))


def legacy_tiebreak_permutation(n_pixels: int, seed: int = 0) -> np.ndarray:
    """The tie-breaker of ``medial_axis`` in scikit-image <= 0.18: ``RandomState(seed).permutation``.

    Those versions drew it from a fixed ``numpy.random.RandomState(0)`` for every image; the
    released Morpho-MNIST morphometrics were computed with it (see
    :mod:`repscope.data.morpho.published`).

    Parameters
    ----------
    n_pixels : int
        Foreground pixels of the shape.
    seed : int, default=0
        Seed of the legacy generator (0 in scikit-image).

    Returns
    -------
    numpy.ndarray
        int64 ``(n_pixels,)`` permutation of ``0 .. n_pixels - 1``.
    """
    # re-seeding one generator (per thread) gives the stream of a new RandomState(seed) at a
    # seventh of the cost
    generator = getattr(_LEGACY, "generator", None)
    if generator is None:
        generator = _LEGACY.generator = np.random.RandomState(seed)
    generator.seed(seed)
    return generator.permutation(n_pixels)


_LEGACY = threading.local()


# the sort key packs (squared distance, cornerness, tie-breaker) into one int64
_TIEBREAK_BITS = 24
_CORNER_BITS = 4


def _rank_within_label(labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For pixels listed in raster order, each one's rank among the pixels of its label."""
    sort_dtype = np.uint16 if counts.size <= np.iinfo(np.uint16).max else np.int64
    order = np.argsort(labels.astype(sort_dtype), kind="stable")  # radix sort for uint16
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(labels.size, dtype=np.int64)
    rank[order] = np.arange(labels.size) - np.repeat(starts, counts)
    return rank


def medial_axis_tiled(
    binary: np.ndarray,
    distance_sq: np.ndarray,
    labels: np.ndarray,
    seed: int,
    tiebreak: Callable[[int, int], np.ndarray] = tiebreak_permutation,
) -> np.ndarray:
    """Medial axis of a canvas of shapes separated by background.

    Parameters
    ----------
    binary : numpy.ndarray
        bool ``(H, W)`` foreground of all shapes; the outermost rows and columns must be background.
    distance_sq : numpy.ndarray
        ``(H, W)`` squared Euclidean distance of each pixel to the background, in pixels squared
        (integer values, any numeric dtype).
    labels : numpy.ndarray
        int ``(H, W)``: index (0..n-1) of the shape each foreground pixel belongs to. Each shape must
        occupy a rectangle of the canvas no other shape's pixels enter, so that the canvas raster
        order of its pixels is its own raster order.
    seed : int
        Tie-breaking seed; shape k gets ``tiebreak(n_k, seed)`` over its pixels.
    tiebreak : callable, default=tiebreak_permutation
        ``tiebreak(n_pixels, seed)`` gives a shape's tie-breaking permutation
        (:func:`legacy_tiebreak_permutation` for scikit-image <= 0.18's).

    Returns
    -------
    numpy.ndarray
        bool ``(H, W)``: the medial axis.

    Raises
    ------
    ValueError
        When the canvas border holds foreground or a shape has ``2**24`` pixels or more (internal
        preconditions, not user input).
    """
    keep_table, cornerness_table = lookup_tables()
    binary = np.ascontiguousarray(binary, dtype=bool)
    height, width = binary.shape
    if binary.any() and (binary[0].any() or binary[-1].any() or binary[:, 0].any() or binary[:, -1].any()):
        raise ValueError("the canvas border must be background")
    flat = binary.ravel()
    pixels = np.flatnonzero(flat)
    if pixels.size == 0:
        return np.zeros_like(binary)
    # 3x3 neighbourhood index at the foreground pixels only (bit k: neighbour k in raster order)
    index = np.zeros(pixels.size, dtype=np.int64)
    for bit, (dr, dc) in enumerate((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)):
        index |= flat[pixels + (dr * width + dc)].astype(np.int64) << bit
    corner = cornerness_table[index]
    pixel_labels = labels.ravel()[pixels]
    counts = np.bincount(pixel_labels)
    if counts.size and counts.max() >= (1 << _TIEBREAK_BITS):
        raise ValueError("a shape has more than 2**24 pixels")
    permutations = np.concatenate([tiebreak(int(n), seed) for n in counts] or [np.zeros(0, np.int64)])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    ties = permutations[starts[pixel_labels] + _rank_within_label(pixel_labels, counts)]
    dist_sq = distance_sq.ravel()[pixels].astype(np.int64)  # exact integers
    key = (dist_sq << (_TIEBREAK_BITS + _CORNER_BITS)) | (corner << _TIEBREAK_BITS) | ties
    # ties in the key only occur between different shapes, which do not interact
    order = np.argsort(key).astype(np.int32)
    result = binary.astype(np.uint8)
    rows, cols = np.divmod(pixels, width)
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    cols = np.ascontiguousarray(cols, dtype=np.intp)
    if _skeletonize_loop is not None:
        _skeletonize_loop(result, rows, cols, order, keep_table.copy())
    else:  # pragma: no cover
        _skeletonize_loop_python(result, rows, cols, order, keep_table)
    return result.astype(bool)


def _skeletonize_loop_python(result, rows, cols, order, keep_table) -> None:  # pragma: no cover
    height, width = result.shape
    padded = np.zeros((height + 2, width + 2), dtype=np.uint8)
    padded[1:-1, 1:-1] = result
    weights = _NEIGHBOURHOOD_WEIGHTS
    for k in order:
        r, c = rows[k] + 1, cols[k] + 1
        index = int((padded[r - 1 : r + 2, c - 1 : c + 2] * weights).sum())
        if not keep_table[index]:
            padded[r, c] = 0
    result[...] = padded[1:-1, 1:-1]


def medial_axis(binary: np.ndarray, seed: int = 0) -> np.ndarray:
    """Medial axis of one binary image with the tie-breaking of ``medial_axis(binary, rng=seed)``.

    The image is taken as surrounded by background.

    Parameters
    ----------
    binary : array-like of shape (H, W)
        Foreground (converted to bool).
    seed : int, default=0
        Tie-breaking seed.

    Returns
    -------
    numpy.ndarray
        bool ``(H, W)``: the medial axis.
    """
    padded = np.pad(np.asarray(binary, dtype=bool), 1)
    distance_sq = edt.edtsq(padded, black_border=True, parallel=1)
    labels = np.zeros(padded.shape, dtype=np.int32)
    return medial_axis_tiled(padded, distance_sq, labels, seed)[1:-1, 1:-1]
