"""Morphometrics of digit images: area, stroke length and thickness, slant, width and height.

Castro et al., "Morpho-MNIST", section 2. All values are in pixels of the original (e.g. 28x28)
image; hi-res quantities are divided by the scale f (lengths) or f^2 (areas).

* ``area``: foreground pixels of the binarised hi-res image / f^2.
* ``length``: length of the medial-axis skeleton: for every pair of 8-neighbours on the skeleton,
  1 if they share a side and sqrt(2) if they share a corner, each pair counted once; / f.
* ``thickness``: 2 x mean Euclidean distance to the background over skeleton pixels / f.
* ``slant``: ``arctan(-mu_rc / mu_rr)`` in radians, from the second-order central moments of the
  hi-res grey levels (r: row, downwards; c: column); positive = leaning right (paper eq. 1).
* ``width``, ``height``: sides of the bounding parallelogram holding ``1 - bound_fraction`` of
  the image mass (``bound_fraction / 2`` cut from each side; paper section 2.5): ``height`` from
  the vertical marginal of the grey levels, ``width`` from the marginal along the sheared
  horizontal axis ``c' = c - (mu_rc / mu_rr) (r - r_mean)``, whose boundaries lean by the slant.
  Each marginal is read as a piecewise-uniform density (each row, or each unit bin of c', spreads
  its mass evenly over one hi-res pixel), and the bounds are its quantiles.

Digits with no foreground give NaN and ``valid = False``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from repscope.data.morpho import published
from repscope.data.morpho.pipeline import (
    METHODS,
    DigitMorphology,
    MorphologyBatch,
    PipelineConfig,
    analyse_batch,
    analyse_reference,
    check_digits,
)
from repscope.data.morpho.strokes import COLUMNS, MORPHOMETRICS, morphometric_table, stroke_measures
from repscope.errors import InvalidArgumentError
from repscope.pools import ordered_map, pool_context
from repscope.validation import check_positive_int

# --------------------------------------------------------------------------------------------
# grey-level measures (moments and mass bounds of the hi-res image), vectorised over a batch


def _quantile_bounds(masses: np.ndarray, lower_fraction: float, upper_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles of piecewise-uniform densities: bin k spreads masses[:, k] over [k-0.5, k+0.5].

    The lower bound is the last position where the cumulative mass is still <= the lower
    fraction, the upper bound the first where it reaches the upper fraction (so fractions 0 and
    1 give the ends of the support).
    """
    n, n_bins = masses.shape
    rows = np.arange(n)
    cumulative = np.cumsum(masses, axis=1)
    total = cumulative[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf = cumulative / total
        share = masses / total
    edges = np.arange(n_bins + 1) - 0.5
    bounds = []
    for fraction, crossed in ((lower_fraction, cdf > lower_fraction), (upper_fraction, cdf >= upper_fraction)):
        k = np.argmax(crossed, axis=1)  # the bin in which the cumulative mass crosses
        before = np.where(k > 0, cdf[rows, np.maximum(k - 1, 0)], 0.0)
        within = share[rows, k]
        with np.errstate(invalid="ignore", divide="ignore"):
            offset = np.where(within > 0, (fraction - before) / within, 0.0)
        bounds.append(edges[k] + np.clip(offset, 0.0, 1.0))
    return bounds[0], bounds[1]


def grey_measures(hires: np.ndarray, scale: int, bound_fraction: float = 0.02) -> dict[str, np.ndarray]:
    """Slant, width and height of a batch of hi-res grey images ``(N, H, W)``.

    With grey levels ``x[r, c]`` (r: row, downwards; c: column), their centroid and second-order
    central moments ``mu_rr = sum x (r - r_mean)^2``, ``mu_rc = sum x (r - r_mean)(c - c_mean)``
    (Castro et al., section 2.4, eq. 1)::

        slant  = arctan(-mu_rc / mu_rr)                   (radians, positive = leaning right)
        height = (q(1 - b/2) - q(b/2)) / f    of the row marginal
        width  = (q(1 - b/2) - q(b/2)) / f    of the marginal along c' = c - (mu_rc / mu_rr)(r - r_mean)

    where ``q`` is the quantile of the marginal read as a piecewise-uniform density and ``b`` is
    ``bound_fraction`` (section 2.5; see the module docstring).

    Parameters
    ----------
    hires : numpy.ndarray
        float ``(N, H, W)`` hi-res grey levels in [0, 1].
    scale : int
        Upscaling factor f (hi-res pixels per image pixel).
    bound_fraction : float, default=0.02
        Image mass left outside the width/height bounds, half on each side.

    Returns
    -------
    dict of str to numpy.ndarray
        float64 ``(N,)`` arrays ``slant`` (radians), ``width`` and ``height`` (pixels of the original
        image); NaN for an image with no mass.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, sections 2.4-2.5.
    """
    n, height, width = hires.shape
    rows = np.arange(height, dtype=np.float64)
    cols = np.arange(width, dtype=np.float64)
    row_mass = hires.sum(axis=2)  # (N, H)
    col_mass = hires.sum(axis=1)  # (N, W)
    mass = row_mass.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_mean = row_mass @ rows / mass
        col_mean = col_mass @ cols / mass
        dr = rows[None, :] - row_mean[:, None]  # (N, H)
        dc = cols[None, :] - col_mean[:, None]  # (N, W)
        mu_rr = np.einsum("nh,nh->n", row_mass, dr**2)
        mu_rc = np.einsum("nh,nhw,nw->n", dr, hires, dc)
        shear = mu_rc / mu_rr
    slant = np.arctan(-shear)

    lower, upper = bound_fraction / 2.0, 1.0 - bound_fraction / 2.0
    top, bottom = _quantile_bounds(row_mass, lower, upper)
    height_px = bottom - top

    # marginal along the sheared horizontal axis c' = c - shear (r - r_mean): row r of an image
    # is its column profile shifted by s_r = -shear (r - r_mean), and its cumulative mass at c'
    # is the linear interpolation of the row's cumulative sums at c' - s_r + 1/2; the bounds
    # are found by bisection on the summed cumulative mass
    finite = np.isfinite(shear) & (mass > 0)
    shift = np.where(finite[:, None], -np.where(finite, shear, 0.0)[:, None] * np.nan_to_num(dr), 0.0)
    row_cumulative = np.zeros((n, height, width + 1))
    np.cumsum(hires, axis=2, out=row_cumulative[:, :, 1:])
    row_totals = row_cumulative[:, :, -1]
    flat_cumulative = row_cumulative.reshape(n * height, width + 1)
    flat_offsets = (np.arange(n * height) * (width + 1)).reshape(n, height)

    def sheared_cdf(position: np.ndarray) -> np.ndarray:
        knot = np.clip(position[:, None] - shift + 0.5, 0.0, float(width))  # (N, H)
        left = np.minimum(np.floor(knot).astype(np.int64), width - 1)
        frac = knot - left
        flat = flat_offsets + left
        below = flat_cumulative.ravel()[flat]
        above = flat_cumulative.ravel()[flat + 1]
        return (below + frac * (above - below)).sum(axis=1)

    reach = np.abs(shift).max(axis=1) + 1.0
    safe_mass = np.where(mass > 0, mass, 1.0)
    bounds = []
    for fraction, strict in ((lower, False), (upper, True)):
        # lower bound: last position with cumulative mass <= fraction; upper: first >= fraction
        low = -reach
        high = width + reach
        target = fraction * safe_mass
        for _ in range(34):  # interval / 2**34 < 1e-7 hi-res px
            middle = 0.5 * (low + high)
            cdf = sheared_cdf(middle)
            below_target = cdf < target if strict else cdf <= target
            low = np.where(below_target, middle, low)
            high = np.where(below_target, high, middle)
        bounds.append(0.5 * (low + high))
    width_px = bounds[1] - bounds[0]
    del row_totals

    empty = ~(mass > 0)
    out = {
        "slant": slant,
        "width": width_px / scale,
        "height": height_px / scale,
    }
    for values in out.values():
        values[empty] = np.nan
    return out


# --------------------------------------------------------------------------------------------
# public API


def measure_batch(batch: MorphologyBatch) -> pd.DataFrame:
    """Morphometrics of an analysed batch (see :func:`analyse_batch`).

    Parameters
    ----------
    batch : MorphologyBatch
        The output of :func:`~repscope.data.morpho.pipeline.analyse_batch`.

    Returns
    -------
    pandas.DataFrame
        One row per digit, columns :data:`COLUMNS` (``index`` int64 from 0, ``area`` in pixels^2,
        ``length``, ``thickness``, ``width``, ``height`` in pixels of the original image, ``slant`` in
        radians, ``valid`` bool; NaN morphometrics where not valid).
    """
    config = batch.config
    n = len(batch)
    stroke = stroke_measures(batch.canvas.binary, batch.distance, batch.skeleton, batch.canvas.labels, n, config.scale)
    grey = grey_measures(batch.hires, config.scale, config.bound_fraction)
    return morphometric_table(np.arange(n), stroke, grey, batch.valid)


def measure_digit(hires: np.ndarray, morph: DigitMorphology) -> dict[str, float]:
    """Morphometrics of one digit from its hi-res grey image and morphology.

    Parameters
    ----------
    hires : numpy.ndarray
        float ``(f H, f W)`` hi-res grey levels in [0, 1].
    morph : DigitMorphology
        Its binary image, distance transform and skeleton
        (:func:`~repscope.data.morpho.pipeline.analyse_reference`).

    Returns
    -------
    dict of str to float or bool
        ``area`` (pixels^2), ``length``, ``thickness``, ``width``, ``height`` (pixels of the original
        image), ``slant`` (radians), ``valid``; NaN morphometrics when not valid.
    """
    config = morph.config
    labels = np.zeros(morph.binary.shape, dtype=np.int32)
    stroke = stroke_measures(morph.binary, morph.distance, morph.skeleton, labels, 1, config.scale)
    grey = grey_measures(hires[None], config.scale, config.bound_fraction)
    frame = morphometric_table(np.arange(1), stroke, grey, np.array([morph.valid]))
    return {name: frame[name].iloc[0] for name in (*MORPHOMETRICS, "valid")}


def _measure_chunk(args: tuple[np.ndarray, PipelineConfig, str, str]) -> pd.DataFrame:
    images, config, method, compat = args
    if method == "fast":
        if compat == "published":
            return published.measure_published_batch(images, config)
        return measure_batch(analyse_batch(images, config))
    rows = []
    for image in images:
        if compat == "published":
            rows.append(published.measure_published_reference(image, config))
            continue
        hires, morph = analyse_reference(image, config)
        rows.append(measure_digit(hires, morph))
    frame = pd.DataFrame(rows, columns=[*MORPHOMETRICS, "valid"])
    frame.insert(0, "index", np.arange(len(images)))
    frame["valid"] = frame["valid"].astype(bool)
    return frame


_pool_context = pool_context  # the name other modules imported


def measure(
    images: np.ndarray,
    *,
    config: PipelineConfig | None = None,
    method: str = "fast",
    compat: str = "none",
    jobs: int = 1,
    chunk_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Morphometrics of a batch of digits ``(N, H, W)`` (uint8 0-255 or float 0-1).

    Parameters
    ----------
    images : array-like of shape (N, H, W), or one digit (H, W)
        uint8 (0-255), or float / bool in [0, 1] without NaN or infinity; zero-size images and a
        channel axis such as (28, 28, 1) or (N, 28, 28, 1) are refused
        (:func:`repscope.validation.check_images`), whatever the method.
    config : PipelineConfig, optional
        Pipeline parameters (paper defaults: scale 4, threshold 0.5, bound_fraction 0.02).
    method : {"fast", "reference"}, default="fast"
        ``"fast"`` (batched) or ``"reference"`` (plain per-image procedure); both give the same
        numbers.
    compat : {"none", "published"}, default="none"
        ``"none"``: this pipeline on today's scikit-image (module docstring). ``"published"``: the
        values of the released Morpho-MNIST ``*-morpho.csv`` files (scikit-image <= 0.18: cubic
        convolution upscale, uint8 hi-res image, threshold relative to its range, legacy medial-axis
        tie-breaking, the released bounding parallelogram; :mod:`repscope.data.morpho.published`);
        ``config`` may then set only ``scale``, ``threshold`` and ``bound_fraction``.
    jobs : int, default=1
        Worker processes; results do not depend on it.
    chunk_size : int, default=500
        Digits per batch handed to a worker.
    progress : callable, optional
        Called after each chunk with the number of digits finished so far (a running total, as a
        progress bar's update takes it), ending at ``len(images)``.

    Returns
    -------
    pandas.DataFrame
        Columns ``index, area, length, thickness, slant, width, height, valid``: ``index`` int64
        (position in ``images``), ``area`` in pixels^2 and ``length``, ``thickness``, ``width``,
        ``height`` in pixels of the input images (not the hi-res ones), ``slant`` in radians
        (positive = leaning right), ``valid`` bool (False, with NaN morphometrics, for a digit
        without foreground).

    Raises
    ------
    InvalidArgumentError
        Images against the rules above, or a bad method, jobs or chunk_size.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, section 2.
    """
    if method not in METHODS:
        raise InvalidArgumentError(f"method: must be one of {', '.join(METHODS)}, got {method!r}")
    if compat not in published.COMPAT_MODES:
        raise InvalidArgumentError(f"compat: must be one of {', '.join(published.COMPAT_MODES)}, got {compat!r}")
    jobs, chunk_size = check_positive_int(jobs, "jobs"), check_positive_int(chunk_size, "chunk_size")
    config = config or PipelineConfig()
    if compat == "published":
        published.check_published_config(config)
    # one validation for both methods: the reference path sees exactly what the fast path accepts
    images = check_digits(images, "images", min_count=0)
    n = images.shape[0]
    if n == 0:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in COLUMNS}).astype({"index": np.int64, "valid": bool})
    starts = list(range(0, n, chunk_size))
    tasks = [(images[s : s + chunk_size], config, method, compat) for s in starts]
    frames: list[pd.DataFrame] = []
    finished = 0
    with ordered_map(_measure_chunk, tasks, jobs) as results:
        for task, frame in zip(tasks, results):
            frames.append(frame)
            finished += len(task[0])
            if progress:
                progress(finished)
    for start, frame in zip(starts, frames):
        frame["index"] += start
    return pd.concat(frames, ignore_index=True)


def default_jobs() -> int:
    """Worker processes to use by default: the CPU cores this process may run on, at most 8.

    Returns
    -------
    int
        Between 1 and 8.
    """
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


__all__: Sequence[str] = [
    "MORPHOMETRICS",
    "COLUMNS",
    "measure",
    "measure_batch",
    "measure_digit",
    "stroke_measures",
    "grey_measures",
]
