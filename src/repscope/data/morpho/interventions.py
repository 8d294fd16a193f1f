"""Interventions on one morphometric: set a digit's thickness, slant or width to a target value.

Each intervention transforms the hi-res binary image of the digit (pipeline steps 1-4, see
:mod:`repscope.data.morpho.pipeline`), downscales it, and measures the result with the very
pipeline of :func:`repscope.data.morpho.measure`; since downscaling and re-measuring do not
respond exactly as the continuous transform predicts, a few corrections are made, each one
re-applying the corrected transform to the original hi-res binary (never compounding
resampling).

* :func:`set_thickness`: dilation (thicker) or erosion (thinner) by a disk of radius
  ``|target - current| / 2``, drawn with sub-pixel precision (:func:`offset_boundary`: binary
  dilation / erosion move a boundary by whole hi-res pixels, i.e. the measured thickness in
  steps of 0.5 image pixel); up to 3 corrections of the radius from the re-measured thickness
  (closing a loop or losing a thin part makes the response uneven), until within 2%.
* :func:`set_slant`: horizontal shear about the centroid row, ``c -> c + k (r - r_mean)``. With
  ``tan(slant) = -mu_rc / mu_rr`` the shear changes ``tan(slant)`` by ``-k``, so
  ``k = tan(current) - tan(target)``; up to 3 corrections until ``|measured - target| < 0.01``.
* :func:`set_width`: scaling by ``a`` of the sheared horizontal coordinate ``c' = c - s (r -
  r_mean)`` about the centroid (``s = mu_rc / mu_rr``: deslant, scale, reslant), which keeps the
  slant; the stroke thickness the scaling changed is then restored with set_thickness's
  operation; up to 3 corrections of ``a`` (and a small shear for the slant that resampling
  and the thickness restoration moved).

Each function returns ``(image uint8, params)``; params hold ``target``, ``original`` and
``achieved`` (measured), the transform applied and the number of ``iterations``.
"""

from __future__ import annotations

import math
from typing import Any

import edt
import numpy as np
from scipy import ndimage

from repscope.data.morpho import resample
from repscope.data.morpho.morphometrics import measure_batch
from repscope.data.morpho.pipeline import PipelineConfig, analyse_batch
from repscope.errors import InvalidArgumentError
from repscope.validation import check_image, to_uint8

SLANT_TOLERANCE = 0.01  # radians
WIDTH_TOLERANCE = 0.01  # relative
MAX_CORRECTIONS = 3
THICKNESS_TOLERANCE = 0.02  # relative


# --------------------------------------------------------------------------------------------
# helpers


def _check_image(image: Any) -> np.ndarray:
    # one 2-D digit, uint8 or float in [0, 1]: zero-size, object / string dtypes, NaN and a
    # channel axis are refused here, before any array is allocated from the image's size
    return check_image(image, "image")


def _check_target(
    target: Any, low: float | None = None, bound: float | None = None, high: float | None = None, why: str = ""
) -> float:
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"target: must be a number, got {target!r}") from None
    if not math.isfinite(value):
        raise InvalidArgumentError(f"target: must be finite, got {target!r}")
    if low is not None and value <= low:
        raise InvalidArgumentError(f"target: must be > {low}, got {target!r}")
    if high is not None and value > high:
        raise InvalidArgumentError(f"target: must be at most {high:.6g}{why}, got {target!r}")
    if bound is not None and abs(value) >= bound:
        raise InvalidArgumentError(f"target: must lie strictly within (-{bound:.6g}, {bound:.6g}), got {target!r}")
    return value


class _Digit:
    """A digit with its pipeline analysis and morphometrics."""

    def __init__(self, image: np.ndarray, config: PipelineConfig):
        batch = analyse_batch(image[None], config)
        self.hires = batch.hires[0]
        self.morph = batch.digit(0)
        self.measures = measure_batch(batch).iloc[0]

    @property
    def valid(self) -> bool:
        return bool(self.measures["valid"])

    def __getitem__(self, name: str) -> float:
        return float(self.measures[name])


def _analyse(image: np.ndarray, config: PipelineConfig) -> _Digit:
    digit = _Digit(image, config)
    if not digit.valid:
        raise InvalidArgumentError("image: has no foreground (nothing above the binarisation threshold)")
    return digit


def _render(binary: np.ndarray, config: PipelineConfig) -> np.ndarray:
    """Hi-res binary to a uint8 image (pipeline step 6)."""
    low = resample.downscale(binary.astype(np.float64)[None], config.scale)
    return resample.to_uint8(low)[0]


def _measure(image: np.ndarray, config: PipelineConfig) -> _Digit:
    return _Digit(image, config)


def offset_boundary(binary: np.ndarray, radius_hires: float) -> tuple[np.ndarray, bool]:
    """Move the boundary of a binary image outwards (radius > 0) or inwards (< 0), sub-pixel.

    The dilation / erosion by a disk of radius ``|radius|``, drawn with partial coverage: with
    the signed distance to the boundary ``sd = d_in - 1/2`` inside and ``1/2 - d_out`` outside
    (``d_in``, ``d_out``: Euclidean distance to the nearest background / foreground pixel), a
    pixel's value is ``clip(sd + radius + 1/2, 0, 1)``. Radius 0 gives the binary image back;
    whole-pixel radii give the binary dilation / erosion plus a one-pixel anti-aliased rim, so
    the stroke width, once downscaled, follows the radius continuously instead of in steps of
    two hi-res pixels. An erosion deeper than the strokes is clamped so that their deepest
    pixels stay at >= 1/2 (the second value returned says whether it was).

    Parameters
    ----------
    binary : array-like of shape (H, W)
        Hi-res foreground (converted to bool).
    radius_hires : float
        Signed offset in hi-res pixels: > 0 dilation, < 0 erosion; dilations beyond
        :func:`max_dilation` give the same image as that.

    Returns
    -------
    values : numpy.ndarray
        float64 ``(H, W)`` coverage in [0, 1].
    clamped : bool
        Whether the erosion was limited to the strokes' depth.

    Raises
    ------
    InvalidArgumentError
        When ``radius_hires`` is not finite.
    """
    binary = np.asarray(binary, dtype=bool)
    radius_hires = float(radius_hires)
    if not math.isfinite(radius_hires):
        raise InvalidArgumentError(f"radius_hires: must be finite, got {radius_hires!r}")
    rows = np.flatnonzero(binary.any(axis=1))
    if rows.size == 0 or radius_hires == 0:
        return binary.astype(np.float64), False
    # every pixel of the image lies within its diagonal of any foreground pixel: a larger
    # dilation gives the same (all-foreground) image, so the padding, hence the memory, is
    # bounded by the image size whatever the radius asked
    radius_hires = min(radius_hires, max_dilation(binary.shape))
    cols = np.flatnonzero(binary.any(axis=0))
    pad = int(math.ceil(max(radius_hires, 0.0))) + 2
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    crop = np.pad(binary[r0:r1, c0:c1], pad)
    inside = np.sqrt(edt.edtsq(crop.astype(np.uint8), black_border=True, parallel=1))
    outside = np.sqrt(edt.edtsq((~crop).astype(np.uint8), black_border=False, parallel=1))
    signed = np.where(crop, inside - 0.5, 0.5 - outside)
    clamped = False
    deepest = float(signed.max())
    if radius_hires < -deepest:
        radius_hires, clamped = -deepest, True
    values = np.clip(signed + radius_hires + 0.5, 0.0, 1.0)
    out = np.zeros(binary.shape)
    height, width = binary.shape
    top, left = r0 - pad, c0 - pad
    rs, re = max(top, 0), min(top + crop.shape[0], height)
    cs, ce = max(left, 0), min(left + crop.shape[1], width)
    out[rs:re, cs:ce] = values[rs - top : re - top, cs - left : ce - left]
    return out, clamped


def max_dilation(shape: tuple[int, ...]) -> float:
    """The largest boundary offset that still changes an image of ``shape`` (its diagonal + 1).

    Parameters
    ----------
    shape : tuple of int
        ``(H, W, ...)``; only the first two sizes count.

    Returns
    -------
    float
        ``hypot(H, W) + 1``, in the pixels of that image.
    """
    return float(math.hypot(*shape[:2])) + 1.0


def max_thickness(shape: tuple[int, ...]) -> float:
    """The largest stroke thickness an image of ``shape`` (image pixels) can be measured with.

    Thickness is twice the mean distance to the background on the skeleton, and the outside of
    the image counts as background: no pixel is farther than half the shorter side from it.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W, ...)`` of the image (not the hi-res one); only the first two sizes count.

    Returns
    -------
    float
        ``min(H, W)``, in image pixels.
    """
    return float(min(shape[:2]))


def _secant(x0: float, y0: float, x1: float, y1: float, target: float) -> float:
    """The x where the line through (x0, y0), (x1, y1) reaches target (x1 if it is flat)."""
    if not math.isfinite(y1) or abs(y1 - y0) < 1e-9:
        return x1
    return x1 + (target - y1) * (x1 - x0) / (y1 - y0)


# --------------------------------------------------------------------------------------------
# thickness


def _thickness_to(
    binary: np.ndarray,
    current: float,
    target: float,
    config: PipelineConfig,
    corrections: int = MAX_CORRECTIONS,
) -> tuple[np.ndarray, _Digit, float, int]:
    """Move the boundary of ``binary`` (thickness ``current``) until the thickness is ``target``.

    First radius ``(target - current) / 2``; then up to ``corrections`` steps: interpolation
    between the two closest measurements on either side of the target once it is bracketed,
    secant through the last two before that (filling a loop or losing a thin part makes the
    response uneven), until within 2% of the target. Returns the best image, its measures,
    the signed radius (image px) and the number of radii tried.
    """
    tried: list[tuple[float, float]] = [(0.0, current)]
    # a dilation past the image diagonal changes nothing more (see offset_boundary): radii are
    # kept within it, so a secant step on a flat response cannot run away
    limit = max_dilation(binary.shape) / config.scale
    radius = float(np.clip((target - current) / 2.0, -limit, limit))
    best: tuple[float, np.ndarray, _Digit, float] | None = None
    iterations = 0
    for iterations in range(1, corrections + 2):  # noqa: B007 -- the count is reported after the loop
        image = _render(offset_boundary(binary, radius * config.scale)[0], config)
        result = _measure(image, config)
        achieved = result["thickness"] if result.valid else float("nan")
        if math.isfinite(achieved):
            tried.append((radius, achieved))
            if best is None or abs(achieved - target) < best[0]:
                best = (abs(achieved - target), image, result, radius)
            if abs(achieved - target) <= THICKNESS_TOLERANCE * target:
                break
        else:  # the erosion left nothing measurable: back off
            radius /= 2.0
            continue
        below = [point for point in tried if point[1] < target]
        above = [point for point in tried if point[1] > target]
        if below and above:
            # the tightest bracket in radius (thickness grows with the radius, if unevenly)
            low, high = max(below, key=lambda p: p[0]), min(above, key=lambda p: p[0])
            if low[0] >= high[0]:
                low, high = max(below, key=lambda p: p[1]), min(above, key=lambda p: p[1])
            proposal = _secant(low[0], low[1], high[0], high[1], target)
            if any(abs(proposal - r) < 1e-6 for r, _ in tried):
                proposal = 0.5 * (low[0] + high[0])
        else:
            proposal = _secant(*tried[-2], *tried[-1], target)
            if proposal == radius:  # no response yet: the plain step
                proposal = radius + (target - achieved) / 2.0
        if not math.isfinite(proposal):
            break
        proposal = float(np.clip(proposal, -limit, limit))
        if any(abs(proposal - r) < 1e-6 for r, _ in tried):
            break
        radius = proposal
    if best is None:
        image = _render(binary, config)
        return image, _measure(image, config), 0.0, iterations
    _, image, result, radius = best
    return image, result, radius, iterations


def set_thickness(
    image: np.ndarray, target: float, config: PipelineConfig | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Set the mean stroke thickness (image pixels) to ``target`` by dilation or erosion.

    Parameters
    ----------
    image : array-like of shape (H, W)
        One digit, uint8 (0-255) or float in [0, 1], with foreground.
    target : float
        Thickness in image pixels, > 0 and at most ``min(H, W)`` (no stroke of the image can be
        thicker: see :func:`max_thickness`).
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.

    Returns
    -------
    image : numpy.ndarray
        uint8 ``(H, W)``.
    params : dict
        ``{"target", "original", "achieved", "reached", "radius", "iterations"}``: thicknesses in
        image pixels; ``reached`` whether ``achieved`` is within 2% of ``target``; ``radius`` (image
        pixels) is the signed disk radius: > 0 dilation, < 0 erosion, bounded by the image diagonal;
        ``iterations`` the number of radii tried. A target within the bound that the digit cannot
        reach (thicker than its frame lets it grow, thinner than its strokes can be eroded and
        still measured) gives the closest result found and ``reached`` False; ``achieved`` is
        always a measured, finite thickness. When no radius tried leaves a measurable digit (a
        one-pixel digit, whose re-rendered binary image falls under the threshold), the digit is
        returned as it was (radius 0, ``achieved`` = ``original``, ``reached`` False).

    Raises
    ------
    InvalidArgumentError
        A bad image (see :func:`repscope.validation.check_image`), an image without foreground,
        or a target that is not a finite number in ``(0, min(H, W)]``.
    """
    image = _check_image(image)
    target = _check_target(
        target,
        low=0.0,
        high=max_thickness(image.shape),
        why=f" (the shorter side of the {image.shape[0]}x{image.shape[1]} image)",
    )
    config = config or PipelineConfig()
    digit = _analyse(image, config)
    original = digit["thickness"]
    out, result, radius, iterations = _thickness_to(digit.morph.binary_image, original, target, config)
    achieved = result["thickness"] if result.valid else float("nan")
    if not math.isfinite(achieved):
        out, achieved, radius = to_uint8(image).copy(), original, 0.0
    return out, {
        "target": target,
        "original": original,
        "achieved": achieved,
        "reached": bool(abs(achieved - target) <= THICKNESS_TOLERANCE * target),
        "radius": float(radius),
        "iterations": iterations,
    }


# --------------------------------------------------------------------------------------------
# slant


def _centroid_and_shear(hires: np.ndarray) -> tuple[float, float, float]:
    """(row mean, column mean, mu_rc / mu_rr) of a hi-res grey image."""
    rows = np.arange(hires.shape[0], dtype=np.float64)
    cols = np.arange(hires.shape[1], dtype=np.float64)
    mass = hires.sum()
    row_mean = float(hires.sum(axis=1) @ rows / mass)
    col_mean = float(hires.sum(axis=0) @ cols / mass)
    dr = rows - row_mean
    mu_rr = float(hires.sum(axis=1) @ dr**2)
    mu_rc = float(dr @ hires @ (cols - col_mean))
    return row_mean, col_mean, mu_rc / mu_rr


def _warp_columns(binary: np.ndarray, source_col: np.ndarray) -> np.ndarray:
    """Resample each pixel (r, c) of a binary image from (r, source_col[r, c]), bilinear, >= 0.5."""
    rows = np.broadcast_to(np.arange(binary.shape[0], dtype=np.float64)[:, None], source_col.shape)
    values = ndimage.map_coordinates(binary.astype(np.float64), [rows, source_col], order=1, mode="constant", cval=0.0)
    return values >= 0.5


def _shear(binary: np.ndarray, k: float, row_mean: float) -> np.ndarray:
    """Horizontal shear c -> c + k (r - row_mean) of a binary image."""
    rows, cols = np.indices(binary.shape, dtype=np.float64)
    return _warp_columns(binary, cols - k * (rows - row_mean))


def set_slant(
    image: np.ndarray, target: float, config: PipelineConfig | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Set the slant (radians, positive = leaning right) to ``target`` by a horizontal shear.

    The shear ``c -> c + k (r - r_mean)`` about the centroid row of the hi-res grey image turns
    ``tan(slant)`` into ``tan(slant) - k``. Up to 3 corrections, ``k += tan(measured) -
    tan(target)``, until the measured slant is within 0.01 rad of the target.

    Returns the uint8 image and params ``{"target", "original", "achieved", "reached", "shear",
    "iterations"}`` (``shear``: k, hi-res columns per row, the same in image pixels; ``reached``:
    within the tolerance). A shear that pushes the digit out of the image keeps the best result
    measured, or the digit as it was, with ``reached`` False.

    Parameters
    ----------
    image : array-like of shape (H, W)
        One digit, uint8 (0-255) or float in [0, 1], with foreground.
    target : float
        Slant in radians, strictly within (-pi/2, pi/2).
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.

    Returns
    -------
    image : numpy.ndarray
        uint8 ``(H, W)``.
    params : dict
        As above; ``target``, ``original`` and ``achieved`` in radians.
    Raises
    ------
    InvalidArgumentError
        A bad image (see :func:`repscope.validation.check_image`), an image without foreground,
        or a target that is not a finite number strictly within (-pi/2, pi/2).
    """
    target = _check_target(target, bound=math.pi / 2)
    config = config or PipelineConfig()
    digit = _analyse(_check_image(image), config)
    original = digit["slant"]
    binary = digit.morph.binary_image
    row_mean, _, _ = _centroid_and_shear(digit.hires)
    shear = math.tan(original) - math.tan(target)
    best: tuple[float, np.ndarray, float] | None = None
    iterations = 0
    for iterations in range(1, MAX_CORRECTIONS + 2):  # noqa: B007 -- the count is reported after the loop
        out = _render(_shear(binary, shear, row_mean), config)
        achieved = _measure(out, config)["slant"]
        if math.isfinite(achieved) and (best is None or abs(achieved - target) < abs(best[0] - target)):
            best = (achieved, out, shear)
        if not math.isfinite(achieved) or abs(achieved - target) < SLANT_TOLERANCE:
            break
        shear += math.tan(achieved) - math.tan(target)
    if best is None:  # the shear pushed everything out of the image: keep the digit as it was
        best = (original, _render(binary, config), 0.0)
    achieved, out, shear = best
    return out, {
        "target": target,
        "original": original,
        "achieved": achieved,
        "reached": bool(abs(achieved - target) < SLANT_TOLERANCE),
        "shear": float(shear),
        "iterations": iterations,
    }


# --------------------------------------------------------------------------------------------
# width


def _scale_width(
    binary: np.ndarray, factor: float, row_mean: float, col_mean: float, shear: float, extra_shear: float = 0.0
) -> np.ndarray:
    """Scale the sheared horizontal coordinate c' = c - shear (r - row_mean) by ``factor``.

    The output pixel (r, c) reads the input at the same row and at the column whose sheared
    coordinate, scaled by ``factor`` about ``col_mean``, lands on c's; ``extra_shear`` k then
    shears the result, c -> c + k (r - row_mean) (a slant correction).
    """
    rows, cols = np.indices(binary.shape, dtype=np.float64)
    lean = shear * (rows - row_mean)
    unsheared = cols - extra_shear * (rows - row_mean)
    source = col_mean + (unsheared - lean - col_mean) / factor + lean
    return _warp_columns(binary, source)


def _width_attempt(
    binary: np.ndarray,
    factor: float,
    shear: tuple[float, float, float, float],
    thickness: float,
    config: PipelineConfig,
) -> tuple[np.ndarray, _Digit, float]:
    """One try of :func:`set_width`: the hi-res digit's sheared width scaled by ``factor``, rendered, and
    its thickness restored to ``thickness``; the image, its measurement and the restoration's radius.

    ``shear`` is ``(row_mean, col_mean, shear, extra_shear)`` (:func:`_scale_width`).
    """
    scaled = _scale_width(binary, factor, *shear)
    if not scaled.any():  # narrower than a hi-res pixel
        scaled = binary.copy()
    scaled_image = _render(scaled, config)
    scaled_digit = _measure(scaled_image, config)
    if not scaled_digit.valid:
        return scaled_image, scaled_digit, 0.0
    # one correction is enough here: the width loop corrects again
    out, result, radius, _ = _thickness_to(scaled, scaled_digit["thickness"], thickness, config, corrections=1)
    return out, result, radius


def _width_score(width: float, new_slant: float, target: float, slant: float) -> tuple[bool, float]:
    """How far a try of :func:`set_width` is from its goal, lower is better: ``(False, width error)`` while
    the slant is within twice its tolerance, else ``(True, slant error)`` (errors in tolerances)."""
    # keeping the slant comes first: among results within twice its tolerance, the
    # closest width wins (an unreachable width must not be bought with a changed slant)
    slant_error = abs(new_slant - slant) / SLANT_TOLERANCE
    width_error = abs(width - target) / (WIDTH_TOLERANCE * target)
    if slant_error <= 2.0:
        return (False, width_error)
    return (True, slant_error)


def set_width(
    image: np.ndarray, target: float, config: PipelineConfig | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Set the width (image pixels, along the slanted axis) to ``target``, keeping the slant.

    The sheared horizontal coordinate ``c' = c - s (r - r_mean)`` (``s = mu_rc / mu_rr``) is
    scaled by ``a = target / current`` about the centroid (deslant, scale, reslant: the moments
    keep ``mu_rc / mu_rr``); the stroke thickness, which horizontal scaling changes, is then
    restored to the original by moving the boundary (as :func:`set_thickness`). Up to 3
    corrections, each a secant step on ``a`` from the measured width and a shear
    ``k += tan(measured slant) - tan(original slant)`` for the slant that resampling, clipping
    at the image border and the thickness restoration moved, until the width is within 1% and
    the slant within 0.01 rad. Targets the image cannot hold (wider than its frame) are
    approached as far as the frame allows, and so are the widths of a digit that is one
    straight stroke (most '1's): its width is about its stroke thickness / cos(slant), which
    the thickness restoration keeps; ``achieved`` says how far it went.

    The scale factor is kept within ``[1 / (2 n), 2 n]`` (``n``: the longer side of the image, so
    that no factor can do more than squeeze the digit into one column or stretch one column past
    the frame), and the thickness restoration's radius within the image diagonal.

    Returns the uint8 image and params ``{"target", "original", "achieved", "reached", "scale",
    "shear", "thickness_radius", "slant_original", "slant_achieved", "iterations"}``;
    ``reached``: the width within 1% of the target.

    Parameters
    ----------
    image : array-like of shape (H, W)
        One digit, uint8 (0-255) or float in [0, 1], with foreground.
    target : float
        Width in image pixels, > 0.
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.

    Returns
    -------
    image : numpy.ndarray
        uint8 ``(H, W)``.
    params : dict
        As above: widths in image pixels, slants in radians, ``scale`` the factor ``a``, ``shear``
        the slant-correcting shear (columns per row), ``thickness_radius`` the signed radius of the
        thickness restoration in image pixels.

    Raises
    ------
    InvalidArgumentError
        A bad image (see :func:`repscope.validation.check_image`), an image without foreground, a
        target that is not a finite number > 0, or a target that leaves nothing of the digit in the
        image.
    """
    target = _check_target(target, low=0.0)
    config = config or PipelineConfig()
    digit = _analyse(_check_image(image), config)
    original = digit["width"]
    slant = digit["slant"]
    thickness = digit["thickness"]
    binary = digit.morph.binary_image
    row_mean, col_mean, shear = _centroid_and_shear(digit.hires)

    previous = (1.0, original)
    longest = float(max(binary.shape)) / config.scale
    factor_low, factor_high = 1.0 / (2.0 * longest), 2.0 * longest
    first_factor = float(np.clip(target / original, factor_low, factor_high))
    factor, extra_shear = first_factor, 0.0
    best: tuple[tuple[bool, float], float, float, np.ndarray, _Digit, float] | None = None
    iterations = 0
    for iterations in range(1, MAX_CORRECTIONS + 2):  # noqa: B007 -- the count is reported after the loop
        out, result, radius = _width_attempt(
            binary, factor, (row_mean, col_mean, shear, extra_shear), thickness, config
        )
        if not result.valid:
            break
        achieved, new_slant = result["width"], result["slant"]
        score = _width_score(achieved, new_slant, target, slant)
        if best is None or score < best[0]:
            best = (score, factor, extra_shear, out, result, radius)
        if max(abs(new_slant - slant) / SLANT_TOLERANCE, score[1]) < 1.0:
            break
        proposal = _secant(previous[0], previous[1], factor, achieved, target)
        if not (math.isfinite(proposal) and proposal > 0):
            proposal = factor * target / achieved
        previous = (factor, achieved)
        # an unreachable width (a '1', the image frame) must not drive the scale to extremes
        factor = float(np.clip(proposal, max(first_factor / 2.0, factor_low), min(first_factor * 2.0, factor_high)))
        extra_shear += math.tan(new_slant) - math.tan(slant)
    if best is None:
        raise InvalidArgumentError(f"target: a width of {target} leaves nothing of the digit in the image")
    _, factor, extra_shear, out, result, radius = best
    return out, {
        "target": target,
        "original": original,
        "achieved": result["width"],
        "reached": bool(abs(result["width"] - target) <= WIDTH_TOLERANCE * target),
        "scale": float(factor),
        "shear": float(extra_shear),
        "thickness_radius": float(radius),
        "slant_original": slant,
        "slant_achieved": result["slant"],
        "iterations": iterations,
    }


__all__ = ["offset_boundary", "set_slant", "set_thickness", "set_width"]
