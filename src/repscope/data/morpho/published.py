"""Morphometrics with the values of the released Morpho-MNIST ``*-morpho.csv`` files.

The released files were computed with the published measurement code on scikit-image <= 0.18.
Neither that code on today's scikit-image nor our default pipeline reproduces them; on the 5,000
``mnist-sample`` digits the default differs by a median of 0.3-2.3% per morphometric. This module
computes what the published procedure computed then, batched, so that numbers can be compared
with the released CSVs and with papers that used them (``compat="published"``).

The published procedure, per 28x28 uint8 digit (Castro et al., "Morpho-MNIST", section 2, and its
released ``measure_image``), and how it differs from our default:

1. **Upscale** by ``f`` with ``pyramid_expand(image, f, order=3)``. In scikit-image <= 0.18 its
   ``resize`` went through ``warp`` with a pure scaling: output pixel ``o`` samples the input at
   ``u = (o + 1/2) / f - 1/2`` with Keys' cubic convolution (Catmull-Rom, ``a = -1/2``; rows of the
   4x4 neighbourhood first, then the column), the neighbourhood read past the border by mirror
   reflection (``d c b | a b c d | c b a``); the result is clipped to the input's range and
   smoothed with a Gaussian of ``sigma = 2 f / 6`` (SciPy, ``reflect`` mode). From 0.19 ``resize``
   uses SciPy's spline interpolation instead, which our default follows.
2. The hi-res image is **quantised**: ``(255 * upscaled).astype(uint8)`` (truncation) for uint8
   input (a float input stays float, times 255).
3. **Binarise** relative to the hi-res image's own range: foreground where
   ``hires >= min + (max - min) * threshold`` (our default: ``upscaled >= threshold``).
4. **Medial axis** (``skimage.morphology.medial_axis``), whose tie-breaker among pixels of equal
   distance and cornerness was ``numpy.random.RandomState(0).permutation`` over the image's
   foreground pixels in raster order (today: ``default_rng``); the distance map is SciPy's
   Euclidean distance transform of the binary image as it is (a stroke touching the image border
   is not measured to the border).
5. **Area, length, thickness** as in the default (:func:`~repscope.data.morpho.strokes.stroke_measures`).
6. **Slant, width, height** from the quantised hi-res image: ``slant = arctan(-u11 / u02)`` with
   ``u11``, ``u02`` its second-order central moments (x: column, y: row); the vertical CDF
   ``V(t) = mass(y < t) / mass`` and the sheared horizontal CDF
   ``H(t) = mass(x + 1/2 < t + s (y - y_mid)) / mass`` (``s = u11 / u02``, ``y_mid`` the row centroid)
   are evaluated at the integers ``t = 0 .. size - 1`` and inverted by linear interpolation
   (``numpy.interp``) at ``b/2`` and ``1 - b/2``; ``width = (right - left) / f``,
   ``height = (bottom - top) / f``. (Our default reads the marginals as piecewise-uniform densities.)

A digit without foreground gets NaN and ``valid = False`` (the published code would binarise the
whole blank image as foreground).

The fixture ``tests/data/morpho-published-100.csv`` (the published procedure's values for 100
``mnist-sample`` digits) is matched to 1e-6 in every value.
"""

from __future__ import annotations

import functools

import edt
import numpy as np
import pandas as pd
from scipy import ndimage

from repscope.data.morpho import resample, skeleton
from repscope.data.morpho.pipeline import PipelineConfig, tile_crops
from repscope.data.morpho.strokes import morphometric_table, stroke_measures
from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

COMPAT_MODES: tuple[str, ...] = ("none", "published")


def check_published_config(config: PipelineConfig) -> None:
    """Refuse pipeline parameters the published procedure does not have.

    The published code takes ``scale``, ``threshold`` and ``bound_fraction``; its interpolation
    (cubic convolution), smoothing (``2 f / 6``) and tie-breaker (``RandomState(0)``) are fixed.

    Parameters
    ----------
    config : PipelineConfig
        Pipeline parameters.

    Raises
    ------
    InvalidArgumentError
        When ``order``, ``sigma`` or ``skeleton_seed`` differ from their defaults.
    """
    fixed = {"order": (config.order, 3), "sigma": (config.sigma, None), "skeleton_seed": (config.skeleton_seed, 0)}
    changed = [f"{name}={value!r}" for name, (value, default) in fixed.items() if value != default]
    if changed:
        raise InvalidArgumentError(
            f"compat='published': {', '.join(changed)} cannot be set; the published procedure fixes the "
            "interpolation (cubic convolution), the smoothing (2 f / 6) and the tie-breaker (RandomState(0))"
        )


# --------------------------------------------------------------------------------------------
# step 1-2: the upscale of scikit-image <= 0.18


def _reflect_index(index: np.ndarray, size: int) -> np.ndarray:
    """Mirror reflection of out-of-range indices without repeating the edge (``d c b | a b c d | c b a``)."""
    if size == 1:
        return np.zeros_like(index)
    period = 2 * (size - 1)
    folded = np.mod(index, period)
    return np.where(folded < size, folded, period - folded)


@functools.lru_cache(maxsize=16)
def _cubic_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour indices ``(n_out, 4)`` and fractional offsets ``(n_out,)`` of a cubic-convolution resize."""
    scale = n_in / n_out
    position = scale * (np.arange(n_out) + 0.5) - 0.5
    base = np.floor(position)
    offset = position - base
    taps = _reflect_index(base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], n_in)
    taps.setflags(write=False)
    offset.setflags(write=False)
    return taps, offset


def _cubic_convolution(f0: np.ndarray, f1: np.ndarray, f2: np.ndarray, f3: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution (a = -1/2) between f1 (x = 0) and f2 (x = 1), in the nested form
    scikit-image evaluated, so that saturated and blank regions stay exactly 1 and 0."""
    return f1 + 0.5 * x * (f2 - f0 + x * (2.0 * f0 - 5.0 * f1 + 4.0 * f2 - f3 + x * (3.0 * (f1 - f2) + f3 - f0)))


def upscale_published(images: np.ndarray, factor: int = 4) -> np.ndarray:
    """Upscale a batch as the released Morpho-MNIST morphometrics did (steps 1-2 of the module docstring).

    Parameters
    ----------
    images : array-like of shape (N, H, W) or (H, W)
        uint8 (0-255), or float / bool in [0, 1].
    factor : int, default=4
        Upscaling factor f (>= 1).

    Returns
    -------
    numpy.ndarray
        float64 ``(N, f H, f W)`` in the range 0-255: whole numbers (the truncated uint8 values) for
        uint8 input, ``255 x upscaled`` otherwise.

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not such a batch or ``factor < 1``.
    """
    batch = resample._as_float_batch(images)
    integer_input = np.asarray(images).dtype == np.uint8
    factor = check_positive_int(factor, "factor")
    n, height, width = batch.shape
    if factor > 1:
        col_taps, col_offset = _cubic_taps(width, factor * width)
        row_taps, row_offset = _cubic_taps(height, factor * height)
        # along each row first (the 4 row values of the neighbourhood), then down the columns;
        # one contiguous gather per tap keeps the arithmetic on contiguous arrays
        taps = [np.take(batch, col_taps[:, j], axis=2) for j in range(4)]  # 4 x (N, H, fW)
        along_rows = _cubic_convolution(*taps, col_offset)
        taps = [np.take(along_rows, row_taps[:, j], axis=1) for j in range(4)]  # 4 x (N, fH, fW)
        upscaled = _cubic_convolution(*taps, row_offset[:, None])
        low = batch.min(axis=(1, 2))[:, None, None]
        high = batch.max(axis=(1, 2))[:, None, None]
        np.clip(upscaled, low, high, out=upscaled)
        sigma = resample.default_sigma(factor)
        upscaled = ndimage.gaussian_filter(upscaled, sigma=(0, sigma, sigma), mode="reflect")
    else:
        upscaled = batch.copy()
    upscaled *= 255.0
    if integer_input:
        upscaled = upscaled.astype(np.uint8).astype(np.float64)  # truncation, as astype(uint8) did
    return upscaled


def binarise_published(hires: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Foreground of each hi-res image relative to its own range: ``x >= min + (max - min) threshold``.

    Parameters
    ----------
    hires : numpy.ndarray
        ``(N, H, W)`` hi-res images (any scale).
    threshold : float, default=0.5
        Fraction of each image's range.

    Returns
    -------
    numpy.ndarray
        bool ``(N, H, W)``; all False for an image whose range is empty (a blank image).
    """
    low = hires.min(axis=(1, 2))
    high = hires.max(axis=(1, 2))
    level = (low + (high - low) * threshold)[:, None, None]
    return (hires >= level) & (high > low)[:, None, None]


# --------------------------------------------------------------------------------------------
# steps 3-5: binary analysis


def _distance_sq_as_is(binary: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance to the nearest background pixel inside the image (SciPy's rule)."""
    if binary.all():
        return np.zeros(binary.shape)  # nothing to measure to (SciPy returns garbage here too)
    return np.rint(ndimage.distance_transform_edt(binary) ** 2)


def stroke_measures_published(binary: np.ndarray, scale: int) -> dict[str, np.ndarray]:
    """Area, length and thickness of a batch of binary hi-res images, as the published procedure.

    Parameters
    ----------
    binary : numpy.ndarray
        bool ``(N, H, W)`` foreground (:func:`binarise_published`).
    scale : int
        Upscaling factor f.

    Returns
    -------
    dict of str to numpy.ndarray
        float64 ``(N,)`` ``area``, ``length``, ``thickness`` in pixels of the original image (NaN
        thickness without skeleton); see :func:`~repscope.data.morpho.strokes.stroke_measures`.
    """
    n = binary.shape[0]
    edges = (binary[:, 0], binary[:, -1], binary[:, :, 0], binary[:, :, -1])
    touches = np.logical_or.reduce([edge.any(axis=1) for edge in edges])
    canvas = tile_crops(binary & ~touches[:, None, None])
    distance_sq = edt.edtsq(canvas.binary, black_border=True, parallel=1)
    medial = skeleton.medial_axis_tiled(
        canvas.binary, distance_sq, canvas.labels, 0, tiebreak=skeleton.legacy_tiebreak_permutation
    )
    out = stroke_measures(canvas.binary, np.sqrt(distance_sq, dtype=np.float64), medial, canvas.labels, n, scale)
    # digits touching the image border: their distances are measured inside the image only
    for k in np.flatnonzero(touches):
        image = binary[k]
        padded_sq = np.pad(_distance_sq_as_is(image), 1)
        padded = np.pad(image, 1)
        labels = np.where(padded, 0, -1).astype(np.int32)
        axis = skeleton.medial_axis_tiled(padded, padded_sq, labels, 0, tiebreak=skeleton.legacy_tiebreak_permutation)
        one = stroke_measures(padded, np.sqrt(padded_sq), axis, labels, 1, scale)
        for name in out:
            out[name][k] = one[name][0]
    return out


# --------------------------------------------------------------------------------------------
# step 6: moments and the bounding parallelogram


def grey_measures_published(hires: np.ndarray, scale: int, bound_fraction: float = 0.02) -> dict[str, np.ndarray]:
    """Slant, width and height of a batch of quantised hi-res images, as the published procedure.

    With x the column and y the row, mass ``m = sum I``, centroid ``(x_mid, y_mid)``, central
    moments ``u11 = sum I x y / m - x_mid y_mid`` and ``u02 = sum I y^2 / m - y_mid^2``, and the
    shear ``s = u11 / u02``::

        slant  = arctan(-s)
        V(t)   = sum_{y < t} I / m                                 t = 0 .. H - 1
        H(t)   = sum_{x + 1/2 < t + s (y - y_mid)} I / m           t = 0 .. W - 1
        top, bottom = interp([b/2, 1 - b/2], V, t);  left, right = interp([b/2, 1 - b/2], H, t)
        width  = (right - left) / f,   height = (bottom - top) / f

    Parameters
    ----------
    hires : numpy.ndarray
        ``(N, H, W)`` hi-res grey levels (the 0-255 values of :func:`upscale_published`).
    scale : int
        Upscaling factor f.
    bound_fraction : float, default=0.02
        Mass left outside the bounds, ``b``, half on each side.

    Returns
    -------
    dict of str to numpy.ndarray
        float64 ``(N,)`` ``slant`` (radians, positive = leaning right), ``width``, ``height`` (pixels of
        the original image); NaN for an image without mass.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, sections 2.4-2.5, and the released ``bounding_parallelogram``.
    """
    n, height, width = hires.shape
    x = np.arange(width, dtype=np.float64)
    y = np.arange(height, dtype=np.float64)
    row_mass = hires.sum(axis=2)
    col_mass = hires.sum(axis=1)
    mass = row_mass.sum(axis=1)
    safe = np.where(mass > 0, mass, 1.0)
    x_mid = col_mass @ x / safe
    y_mid = row_mass @ y / safe
    m11 = np.einsum("h,nhw,w->n", y, hires, x) / safe
    m02 = row_mass @ (y**2) / safe
    with np.errstate(invalid="ignore", divide="ignore"):
        shear = (m11 - x_mid * y_mid) / (m02 - y_mid**2)
    slant = np.arctan(-shear)

    # V(t): mass of the rows above t (exclusive cumulative sum)
    vertical = np.zeros((n, height))
    np.cumsum(row_mass[:, :-1], axis=1, out=vertical[:, 1:])
    vertical /= safe[:, None]
    # H(t): per row y, the pixels x with x + 1/2 < t + s (y - y_mid), i.e. the first k of the row
    finite_shear = np.where(np.isfinite(shear), shear, 0.0)
    threshold = x[None, None, :] + (finite_shear[:, None] * (y[None, :] - y_mid[:, None]))[:, :, None]  # (N, H, T)
    # x + 1/2 < a  <=>  x < a - 1/2 exactly (both sides are exact in float64 at these magnitudes),
    # and the integers 0 <= x < b number clip(ceil(b), 0, W)
    counts = np.clip(np.ceil(threshold - 0.5), 0, width).astype(np.intp)
    row_cumulative = np.zeros((n, height, width + 1))
    np.cumsum(hires, axis=2, out=row_cumulative[:, :, 1:])
    horizontal = np.take_along_axis(row_cumulative, counts, axis=2).sum(axis=1) / safe[:, None]  # (N, T)

    lower, upper = bound_fraction / 2.0, 1.0 - bound_fraction / 2.0
    out = {name: np.full(n, np.nan) for name in ("slant", "width", "height")}
    for k in np.flatnonzero((mass > 0) & np.isfinite(shear)):
        left, right = np.interp([lower, upper], horizontal[k], x)
        top, bottom = np.interp([lower, upper], vertical[k], y)
        offset = finite_shear[k] * (top - y_mid[k])
        out["slant"][k] = slant[k]
        out["width"][k] = ((right + offset) - (left + offset)) / scale
        out["height"][k] = (bottom - top) / scale
    return out


# --------------------------------------------------------------------------------------------
# the measurement


def measure_published_batch(images: np.ndarray, config: PipelineConfig | None = None) -> pd.DataFrame:
    """Morphometrics of a batch as the released Morpho-MNIST CSVs have them (module docstring).

    Parameters
    ----------
    images : array-like of shape (N, H, W)
        uint8 (0-255; the released files were made from uint8 digits), or float / bool in [0, 1].
    config : PipelineConfig, optional
        ``scale``, ``threshold`` (relative to each hi-res image's range) and ``bound_fraction``; the
        other parameters must keep their defaults (:func:`check_published_config`).

    Returns
    -------
    pandas.DataFrame
        Columns ``index, area, length, thickness, slant, width, height, valid`` as
        :func:`repscope.data.morpho.measure` gives them.

    Raises
    ------
    InvalidArgumentError
        When ``config`` changes a fixed parameter or ``images`` is not such a batch.
    """
    config = config or PipelineConfig()
    check_published_config(config)
    hires = upscale_published(images, config.scale)
    binary = binarise_published(hires, config.threshold)
    valid = binary.any(axis=(1, 2))
    stroke = stroke_measures_published(binary, config.scale)
    grey = grey_measures_published(hires, config.scale, config.bound_fraction)
    return morphometric_table(np.arange(len(hires)), stroke, grey, valid)


def measure_published_reference(image: np.ndarray, config: PipelineConfig | None = None) -> dict[str, float]:
    """One digit's published morphometrics, computed image by image as the released code did.

    The baseline :func:`measure_published_batch` is tested and benchmarked against: SciPy's distance
    transform of the whole hi-res image, a medial axis of that image alone, and the cumulative
    distributions summed threshold by threshold (``t = 0 .. size - 1``).

    Parameters
    ----------
    image : array-like of shape (H, W)
        uint8 (0-255), or float / bool in [0, 1].
    config : PipelineConfig, optional
        As for :func:`measure_published_batch`.

    Returns
    -------
    dict of str to float or bool
        ``area, length, thickness, slant, width, height`` and ``valid``.
    """
    config = config or PipelineConfig()
    check_published_config(config)
    scale = config.scale
    hires = upscale_published(image, scale)[0]
    binary = binarise_published(hires[None], config.threshold)[0]
    nan = float("nan")
    if not binary.any():
        return dict.fromkeys(("area", "length", "thickness", "slant", "width", "height"), nan) | {"valid": False}
    distance_sq = _distance_sq_as_is(binary)
    padded = np.pad(binary, 1)
    axis = skeleton.medial_axis_tiled(
        padded, np.pad(distance_sq, 1), np.where(padded, 0, -1), 0, tiebreak=skeleton.legacy_tiebreak_permutation
    )[1:-1, 1:-1]
    # each skeleton pair once: right, down-left, down, down-right neighbours
    weights = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [np.sqrt(2.0), 1.0, np.sqrt(2.0)]])
    pairs = ndimage.correlate(axis.astype(float), weights, mode="constant")
    distance = np.sqrt(distance_sq)

    rows, cols = hires.shape
    x = np.arange(cols)[None, :]
    y = np.arange(rows)[:, None]
    mass = hires.sum()
    x_mid, y_mid = (x * hires).sum() / mass, (y * hires).sum() / mass
    u11 = (x * y * hires).sum() / mass - x_mid * y_mid
    u02 = (y**2 * hires).sum() / mass - y_mid**2
    shear = u11 / u02
    horizontal = np.array([((x + 0.5 < t + shear * (y - y_mid)) * hires).sum() for t in range(cols)]) / mass
    vertical = np.array([((y < t) * hires).sum() for t in range(rows)]) / mass
    half = config.bound_fraction / 2.0
    left, right = np.interp([half, 1.0 - half], horizontal, np.arange(cols))
    top, bottom = np.interp([half, 1.0 - half], vertical, np.arange(rows))
    return {
        "area": binary.sum() / scale**2,
        "length": float((pairs * axis).sum()) / scale,
        "thickness": 2.0 * float(distance[axis].mean()) / scale if axis.any() else nan,
        "slant": float(np.arctan(-shear)),
        "width": float(right - left) / scale,
        "height": float(bottom - top) / scale,
        "valid": True,
    }
