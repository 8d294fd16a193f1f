"""Morphological perturbations of digits: thinning, thickening, swelling and fractures.

Castro et al., "Morpho-MNIST", section 3. A perturbation is step 5 of the processing pipeline
(see :mod:`repscope.data.morpho.pipeline`): it takes the analysed hi-res digit (binary image,
distance transform, medial-axis skeleton at scale ``f``) and returns a perturbed hi-res image,
which :func:`apply_batch` downscales (step 6) for a whole batch at once.

Definitions implemented (lengths given in image pixels are multiplied by ``f`` in hi-res):

* **Thinning / thickening** (3.1): erosion / dilation of the hi-res binary image by a disk of
  radius ``r = amount * thickness / 2`` (``thickness``: the digit's mean stroke thickness). With a
  disk holding the offsets ``dx^2 + dy^2 <= r^2``, dilation keeps the pixels whose Euclidean
  distance to the foreground is ``<= r`` and erosion the pixels whose distance to the background
  is ``> r`` (the outside of the image counting as background), both computed exactly from
  squared distance transforms instead of sliding a structuring element. A thinning that would
  erase the whole digit, or leave no stroke at least one image pixel across (the largest
  distance to the background minus ``r`` is under ``f / 2``: nothing would survive
  downscaling), keeps instead the digit's medial axis drawn one image pixel wide, and says so
  (``"clamped": True``).
* **Swelling** (3.2, eq. 2): a centre ``r0`` drawn uniformly among the skeleton pixels, radius
  ``R = radius * sqrt(thickness) / 2``; every pixel ``r`` with ``|r - r0| < R`` takes the value
  of the binary image at ``r0 + (r - r0) (|r - r0| / R) ** (strength - 1)`` (bicubic spline
  interpolation, clipped to [0, 1]); pixels farther than ``R`` are unchanged. Since the source
  lies closer to ``r0`` than the pixel for ``strength > 1``, the neighbourhood is magnified.
* **Fractures** (3.3): centres drawn among the skeleton pixels farther than ``prune`` from every
  tip (a skeleton pixel with one 8-neighbour on the skeleton; isolated pixels count too) and fork
  (more than two). The stroke direction is the principal axis of the second-order moments of
  the skeleton pixels within the ``window x window`` box around the centre that are 8-connected
  to it there; the fracture is the segment along the normal through the centre, of half-length
  ``distance(centre) + extension``, erased with a disk brush of diameter ``thickness``. Centres
  are drawn without replacement and, so that each fracture is its own break, candidates closer
  than ``window / 2 + thickness`` to an earlier centre are dropped. A digit with too few
  candidates gets fewer fractures, never an error.

Coordinates in ``params`` are (row, col) in image pixels: hi-res pixel ``i`` has its centre at
image coordinate ``(i + 0.5) / f - 0.5`` (the convention of the bicubic up/downscaling, where
image pixel ``k`` covers hi-res pixels ``f k .. f k + f - 1``); ``*_hires`` keys hold the hi-res
pixel indices. Lengths are in image pixels (hi-res / f).

Every random choice comes from the ``numpy.random.Generator`` passed in: same generator state,
same bytes. A digit without foreground is returned unchanged with ``{"skipped": "no foreground"}``.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import edt
import numpy as np
from scipy import ndimage

from repscope.data.morpho import resample
from repscope.data.morpho.pipeline import DigitMorphology, PipelineConfig, analyse_batch
from repscope.errors import InvalidArgumentError
from repscope.validation import as_array, check_image, check_images, to_uint8

SKIPPED_NO_FOREGROUND = "no foreground"


# --------------------------------------------------------------------------------------------
# exact morphology with distance transforms


def _bounding_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


def dilate(binary: np.ndarray, radius: float) -> np.ndarray:
    """Dilation of a binary image by the disk ``{(dy, dx): dy^2 + dx^2 <= radius^2}``.

    The pixels whose Euclidean distance to the foreground is ``<= radius`` (exact: squared
    integer distances against ``radius^2``). Equal to ``skimage.morphology.binary_dilation(
    binary, disk(radius))`` for integer radii; pixels beyond the image border are dropped.

    Parameters
    ----------
    binary : array-like of shape (H, W)
        Foreground (converted to bool).
    radius : float
        Disk radius, in pixels of ``binary`` (hi-res pixels in the pipeline); ``<= 0`` returns a copy.

    Returns
    -------
    numpy.ndarray
        bool ``(H, W)``.
    """
    binary = np.asarray(binary, dtype=bool)
    box = _bounding_box(binary)
    if box is None or radius <= 0:
        return binary.copy()
    pad = int(math.ceil(radius)) + 1
    r0, r1, c0, c1 = box
    crop = np.pad(binary[r0:r1, c0:c1], pad)
    # distance of every background pixel to the nearest foreground pixel (the zeros of ~crop)
    distance_sq = edt.edtsq((~crop).astype(np.uint8), black_border=False, parallel=1)
    grown = distance_sq <= radius * radius
    out = np.zeros_like(binary)
    height, width = binary.shape
    top, left = r0 - pad, c0 - pad
    rs, re = max(top, 0), min(top + crop.shape[0], height)
    cs, ce = max(left, 0), min(left + crop.shape[1], width)
    out[rs:re, cs:ce] = grown[rs - top : re - top, cs - left : ce - left]
    return out


def erode(binary: np.ndarray, radius: float) -> np.ndarray:
    """Erosion by the same disk: pixels whose distance to the background is ``> radius``.

    The outside of the image counts as background (as in the pipeline's distance transform).

    Parameters
    ----------
    binary : array-like of shape (H, W)
        Foreground (converted to bool).
    radius : float
        Disk radius, in pixels of ``binary``; ``<= 0`` returns a copy.

    Returns
    -------
    numpy.ndarray
        bool ``(H, W)``.
    """
    binary = np.asarray(binary, dtype=bool)
    box = _bounding_box(binary)
    if box is None or radius <= 0:
        return binary.copy()
    r0, r1, c0, c1 = box
    crop = np.pad(binary[r0:r1, c0:c1], 1)
    distance_sq = edt.edtsq(crop.astype(np.uint8), black_border=True, parallel=1)
    out = np.zeros_like(binary)
    out[r0:r1, c0:c1] = (distance_sq > radius * radius)[1:-1, 1:-1]
    return out


def skeleton_stroke(morph: DigitMorphology) -> np.ndarray:
    """The digit's medial axis drawn one image pixel wide (radius f/2), inside its binary image.

    The thinnest rendering of a digit that still survives downscaling; thinning falls back to it.

    Parameters
    ----------
    morph : DigitMorphology
        The analysed digit.

    Returns
    -------
    numpy.ndarray
        bool ``(f H, f W)`` hi-res image: the skeleton dilated by ``f / 2`` hi-res pixels, within the
        digit's foreground, plus the skeleton itself.
    """
    stroke = dilate(morph.skeleton_image, morph.scale / 2.0) & morph.binary_image
    return stroke | morph.skeleton_image


def hires_to_image(points: Any, scale: int) -> np.ndarray:
    """Hi-res pixel coordinates to image pixel coordinates: ``(i + 0.5) / f - 0.5``.

    Parameters
    ----------
    points : array-like
        Hi-res coordinates (pixel indices or fractional positions), any shape.
    scale : int
        Upscaling factor f.

    Returns
    -------
    numpy.ndarray
        float64 of the same shape, in pixels of the original image (pixel ``k``'s centre at ``k``).
    """
    return (np.asarray(points, dtype=np.float64) + 0.5) / scale - 0.5


def _point(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values).ravel()]


def skeleton_neighbours(skeleton: np.ndarray) -> np.ndarray:
    """Number of 8-neighbours on the skeleton of every pixel (any value off the skeleton).

    Parameters
    ----------
    skeleton : numpy.ndarray
        bool ``(H, W)``; outside the array counts as off the skeleton.

    Returns
    -------
    numpy.ndarray
        int8 ``(H, W)``, 0-8.
    """
    padded = np.pad(skeleton.astype(np.int8), 1)
    height, width = skeleton.shape
    total = np.zeros(skeleton.shape, dtype=np.int8)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if dr == 1 and dc == 1:
                continue
            total += padded[dr : dr + height, dc : dc + width]
    return total


# --------------------------------------------------------------------------------------------
# the perturbations


@dataclass
class PerturbationResult:
    """A perturbed digit at hi-res.

    Parameters
    ----------
    hires : numpy.ndarray
        float64 ``(f H, f W)`` in [0, 1] (binary for thin/thick/frac, grey after swelling).
    params : dict
        JSON-serialisable ground truth of what was done (locations in image pixels as (row, col),
        radii, counts; see the module docstring).
    """

    hires: np.ndarray
    params: dict[str, Any]


def _check_number(owner: str, name: str, value: Any, low: float, inclusive: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{owner}.{name}: must be a number, got {value!r}") from None
    bad = not math.isfinite(number) or (number < low if inclusive else number <= low)
    if bad:
        relation = ">=" if inclusive else ">"
        raise InvalidArgumentError(f"{owner}.{name}: must be finite and {relation} {low}, got {value!r}")
    return number


class Perturbation(abc.ABC):
    """A parametrised perturbation of an analysed digit (pipeline step 5).

    ``perturbation(morph, rng)`` returns a :class:`PerturbationResult`; a digit without foreground
    or skeleton gives an all-zero image with ``{"skipped": "no foreground"}``. Subclasses are frozen
    dataclasses whose fields are the parameters and implement ``_perturb``.

    Attributes
    ----------
    name : str
        Canonical name (``"thin"``, ``"thick"``, ``"swel"``, ``"frac"``).
    code : int
        Label code in the perturbed datasets (1-4; 0 is the plain digit).
    """

    name: ClassVar[str]
    code: ClassVar[int]

    def __call__(self, morph: DigitMorphology, rng: np.random.Generator) -> PerturbationResult:
        if not morph.valid or not morph.skeleton.any():
            return PerturbationResult(np.zeros(morph.shape), {"skipped": SKIPPED_NO_FOREGROUND})
        return self._perturb(morph, rng)

    @abc.abstractmethod
    def _perturb(self, morph: DigitMorphology, rng: np.random.Generator) -> PerturbationResult:
        """Perturb a digit with foreground."""

    def describe(self) -> dict[str, Any]:
        """Name, label code and parameters, for ``dataset.json``.

        Returns
        -------
        dict
            ``{"name": ..., "code": ..., <parameter>: <value>, ...}``.
        """
        return {"name": self.name, "code": self.code, **dataclasses.asdict(self)}  # type: ignore[call-overload]


def _thickness(morph: DigitMorphology) -> float:
    thickness = morph.mean_thickness
    return thickness if math.isfinite(thickness) else 0.0


@dataclass(frozen=True)
class Thinning(Perturbation):
    """Erosion by a disk of radius ``amount * thickness / 2`` (paper: thickness -70%).

    Parameters
    ----------
    amount : float, default=0.7
        Fraction of the digit's mean stroke thickness removed (> 0); the disk radius is
        ``amount * thickness / 2`` image pixels (times f in hi-res).

    Raises
    ------
    InvalidArgumentError
        When ``amount`` is not a finite number > 0.
    """

    amount: float = 0.7
    name: ClassVar[str] = "thin"
    code: ClassVar[int] = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount", _check_number("thin", "amount", self.amount, 0.0))

    def _perturb(self, morph, rng):
        thickness = _thickness(morph)
        radius = self.amount * thickness / 2.0
        radius_hires = radius * morph.scale
        params: dict[str, Any] = {
            "radius": radius,
            "radius_hires": radius_hires,
            "thickness": thickness,
            "clamped": False,
        }
        # the eroded strokes are max(distance) - r deep; under half an image pixel, nothing of
        # the digit would survive downscaling: keep its medial axis one image pixel wide instead
        if float(morph.distance.max()) - radius_hires < morph.scale / 2.0:
            thinned = skeleton_stroke(morph)
            params["clamped"] = True
        else:
            thinned = erode(morph.binary_image, radius_hires)
        return PerturbationResult(thinned.astype(np.float64), params)


@dataclass(frozen=True)
class Thickening(Perturbation):
    """Dilation by a disk of radius ``amount * thickness / 2`` (paper: thickness +100%).

    Parameters
    ----------
    amount : float, default=1.0
        Fraction of the digit's mean stroke thickness added (> 0); the disk radius is
        ``amount * thickness / 2`` image pixels (times f in hi-res).

    Raises
    ------
    InvalidArgumentError
        When ``amount`` is not a finite number > 0.
    """

    amount: float = 1.0
    name: ClassVar[str] = "thick"
    code: ClassVar[int] = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount", _check_number("thick", "amount", self.amount, 0.0))

    def _perturb(self, morph, rng):
        thickness = _thickness(morph)
        radius = self.amount * thickness / 2.0
        radius_hires = radius * morph.scale
        thickened = dilate(morph.binary_image, radius_hires)
        params = {"radius": radius, "radius_hires": radius_hires, "thickness": thickness}
        return PerturbationResult(thickened.astype(np.float64), params)


@dataclass(frozen=True)
class Swelling(Perturbation):
    """Radial power warp around a random skeleton pixel (paper eq. 2).

    ``R = radius * sqrt(thickness) / 2`` image pixels; ``strength`` is the exponent gamma > 1.

    Parameters
    ----------
    strength : float, default=3.0
        Exponent gamma of the warp (> 1; larger magnifies more).
    radius : float, default=7.0
        Radius factor (> 0): ``R = radius * sqrt(thickness) / 2`` image pixels, ``thickness`` the
        digit's mean stroke thickness in image pixels.

    Raises
    ------
    InvalidArgumentError
        When a parameter is not a finite number in its range.
    """

    strength: float = 3.0
    radius: float = 7.0
    name: ClassVar[str] = "swel"
    code: ClassVar[int] = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "strength", _check_number("swel", "strength", self.strength, 1.0))
        object.__setattr__(self, "radius", _check_number("swel", "radius", self.radius, 0.0))

    def _perturb(self, morph, rng):
        scale = morph.scale
        binary = morph.binary_image.astype(np.float64)
        points = morph.skeleton_points()
        thickness = _thickness(morph)
        centre = points[int(rng.integers(len(points)))]
        radius = self.radius * math.sqrt(thickness) / 2.0
        radius_hires = radius * scale
        height, width = morph.shape
        r0, c0 = float(centre[0]), float(centre[1])
        top = max(int(math.floor(r0 - radius_hires)), 0)
        bottom = min(int(math.ceil(r0 + radius_hires)) + 1, height)
        left = max(int(math.floor(c0 - radius_hires)), 0)
        right = min(int(math.ceil(c0 + radius_hires)) + 1, width)
        rows, cols = np.mgrid[top:bottom, left:right].astype(np.float64)
        dr, dc = rows - r0, cols - c0
        distance = np.hypot(dr, dc)
        inside = distance < radius_hires
        out = binary.copy()
        if radius_hires > 0 and inside.any():
            weight = (distance[inside] / radius_hires) ** (self.strength - 1.0)
            source = np.stack([r0 + dr[inside] * weight, c0 + dc[inside] * weight])
            values = ndimage.map_coordinates(binary, source, order=3, mode="nearest")
            window = out[top:bottom, left:right]
            window[inside] = np.clip(values, 0.0, 1.0)
        params = {
            "centre": _point(hires_to_image(centre, scale)),
            "centre_hires": [int(centre[0]), int(centre[1])],
            "radius": radius,
            "radius_hires": radius_hires,
            "strength": self.strength,
            "thickness": thickness,
        }
        return PerturbationResult(out, params)


@dataclass(frozen=True)
class Fracturing(Perturbation):
    """Breaks across the strokes, erased with a circular brush (paper section 3.3).

    All lengths in image pixels: ``thickness`` the brush diameter, ``prune`` the minimum
    distance of a centre to tips and forks, ``window`` the side of the orientation box,
    ``extension`` how far the break reaches past the stroke on each side.

    Parameters
    ----------
    num_fractures : int, default=3
        Fractures asked for (>= 0); fewer are drawn when the digit has too few candidate centres.
    thickness : float, default=1.5
        Brush diameter, image pixels (> 0).
    prune : float, default=2.0
        Minimum distance of a centre to skeleton tips and forks, image pixels (>= 0).
    window : float, default=5.0
        Side of the box the stroke direction is measured in, image pixels (> 0).
    extension : float, default=0.5
        How far the break reaches past the stroke on each side, image pixels (>= 0).

    Raises
    ------
    InvalidArgumentError
        When a parameter is not a finite number in its range (``num_fractures``: an integer).
    """

    num_fractures: int = 3
    thickness: float = 1.5
    prune: float = 2.0
    window: float = 5.0
    extension: float = 0.5
    name: ClassVar[str] = "frac"
    code: ClassVar[int] = 4

    def __post_init__(self) -> None:
        count = self.num_fractures
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise InvalidArgumentError(f"frac.num_fractures: must be an integer >= 0, got {count!r}")
        object.__setattr__(self, "num_fractures", int(count))
        object.__setattr__(self, "thickness", _check_number("frac", "thickness", self.thickness, 0.0))
        object.__setattr__(self, "prune", _check_number("frac", "prune", self.prune, 0.0, inclusive=True))
        object.__setattr__(self, "window", _check_number("frac", "window", self.window, 0.0))
        object.__setattr__(self, "extension", _check_number("frac", "extension", self.extension, 0.0, inclusive=True))

    def candidates(self, morph: DigitMorphology) -> tuple[np.ndarray, np.ndarray]:
        """Crop coordinates (K, 2) of all skeleton pixels and the mask of allowed centres.

        Parameters
        ----------
        morph : DigitMorphology
            The analysed digit.

        Returns
        -------
        points : numpy.ndarray
            int ``(K, 2)`` (row, col) of the skeleton pixels in the crop (hi-res pixels from
            ``morph.origin``), raster order.
        allowed : numpy.ndarray
            bool ``(K,)``: farther than ``prune * f`` hi-res pixels from every tip and fork.
        """
        skeleton = morph.skeleton
        points = np.argwhere(skeleton)
        neighbours = skeleton_neighbours(skeleton)[skeleton]
        special = points[(neighbours <= 1) | (neighbours > 2)]
        allowed = np.ones(len(points), dtype=bool)
        if len(special):
            gaps = points[:, None, :] - special[None, :, :]
            nearest_sq = np.min(np.einsum("ksd,ksd->ks", gaps, gaps), axis=1)
            allowed = nearest_sq > (self.prune * morph.scale) ** 2
        return points, allowed

    def stroke_direction(self, skeleton: np.ndarray, centre: np.ndarray, half: float) -> np.ndarray:
        """Unit (row, col) principal axis of the skeleton pixels near ``centre`` (crop coords).

        Parameters
        ----------
        skeleton : numpy.ndarray
            bool ``(h, w)`` cropped skeleton.
        centre : numpy.ndarray
            int ``(2,)`` (row, col) of a skeleton pixel in the crop.
        half : float
            Half-side of the box, in hi-res pixels; only the skeleton pixels in the box that are
            8-connected to ``centre`` inside it count.

        Returns
        -------
        numpy.ndarray
            float64 ``(2,)`` unit vector (its sign is arbitrary).
        """
        reach = int(math.floor(half))
        top, left = max(centre[0] - reach, 0), max(centre[1] - reach, 0)
        box = skeleton[top : centre[0] + reach + 1, left : centre[1] + reach + 1]
        # only the stroke through the centre: another stroke crossing the box would bias the axis
        labels, _ = ndimage.label(box, structure=np.ones((3, 3), dtype=bool))
        own = np.argwhere(labels == labels[centre[0] - top, centre[1] - left]).astype(np.float64)
        own -= own.mean(axis=0)
        moments = own.T @ own
        eigenvalues, eigenvectors = np.linalg.eigh(moments)
        return eigenvectors[:, int(np.argmax(eigenvalues))]

    def _perturb(self, morph, rng):
        scale = morph.scale
        out = morph.binary_image.copy()
        points, allowed = self.candidates(morph)
        candidate_count = int(np.count_nonzero(allowed))
        brush_radius = self.thickness * scale / 2.0
        exclusion = (self.window / 2.0 + self.thickness) * scale
        origin = np.asarray(morph.origin)
        fractures: list[dict[str, Any]] = []
        for _ in range(self.num_fractures):
            available = np.flatnonzero(allowed)
            if available.size == 0:
                break
            chosen = int(available[int(rng.integers(available.size))])
            centre = points[chosen]
            offsets = points - centre
            allowed &= np.einsum("kd,kd->k", offsets, offsets) >= exclusion**2
            allowed[chosen] = False

            direction = self.stroke_direction(morph.skeleton, centre, self.window * scale / 2.0)
            normal = np.array([-direction[1], direction[0]])
            half_length = float(morph.distance[centre[0], centre[1]]) + self.extension * scale
            centre_hires = (centre + origin).astype(np.float64)
            start = centre_hires - half_length * normal
            end = centre_hires + half_length * normal
            _erase_segment(out, start, end, brush_radius)
            fractures.append(
                {
                    "centre": _point(hires_to_image(centre_hires, scale)),
                    "start": _point(hires_to_image(start, scale)),
                    "end": _point(hires_to_image(end, scale)),
                    "centre_hires": [int(centre_hires[0]), int(centre_hires[1])],
                    "start_hires": _point(start),
                    "end_hires": _point(end),
                }
            )
        params = {
            "fractures": fractures,
            "requested": self.num_fractures,
            "drawn": len(fractures),
            "candidates": candidate_count,
        }
        return PerturbationResult(out.astype(np.float64), params)


def _erase_segment(image: np.ndarray, start: np.ndarray, end: np.ndarray, radius: float) -> None:
    """Set to False every pixel within ``radius`` of the segment [start, end] (a swept disk)."""
    height, width = image.shape
    low = np.floor(np.minimum(start, end) - radius).astype(int)
    high = np.ceil(np.maximum(start, end) + radius).astype(int) + 1
    top, left = max(low[0], 0), max(low[1], 0)
    bottom, right = min(high[0], height), min(high[1], width)
    if top >= bottom or left >= right:
        return
    rows, cols = np.mgrid[top:bottom, left:right].astype(np.float64)
    axis = end - start
    length_sq = float(axis @ axis)
    rel_r, rel_c = rows - start[0], cols - start[1]
    if length_sq > 0:
        t = np.clip((rel_r * axis[0] + rel_c * axis[1]) / length_sq, 0.0, 1.0)
    else:
        t = np.zeros_like(rel_r)
    gap_r, gap_c = rel_r - t * axis[0], rel_c - t * axis[1]
    image[top:bottom, left:right][gap_r**2 + gap_c**2 <= radius * radius] = False


# --------------------------------------------------------------------------------------------
# registry and batch application

PERTURBATIONS: dict[str, type[Perturbation]] = {cls.name: cls for cls in (Thinning, Thickening, Swelling, Fracturing)}

# The one vocabulary of perturbation names. Each perturbation has a canonical name (the keys of
# PERTURBATIONS, written into params and dataset.json) and the name of the published dataset
# made of it (Castro et al. publish the thickened set as "thic"). Every function taking a
# perturbation name or a set name accepts either spelling, and the long English names.
PERTURBATION_SET_NAMES: dict[str, str] = {"thin": "thin", "thick": "thic", "swel": "swel", "frac": "frac"}
PERTURBATION_ALIASES: dict[str, str] = {
    **{name: name for name in PERTURBATIONS},
    **{set_name: name for name, set_name in PERTURBATION_SET_NAMES.items()},
    "thinning": "thin",
    "thickening": "thick",
    "swelling": "swel",
    "fracture": "frac",
    "fractures": "frac",
    "fracturing": "frac",
}


def canonical_perturbation(name: Any, argument: str = "perturbation") -> str:
    """The canonical name ("thin", "thick", "swel", "frac") of a perturbation name.

    Accepts the canonical names, the published set names ("thic" for "thick") and the long
    names ("thickening"), in any case.

    Parameters
    ----------
    name : str
        A perturbation name (surrounding whitespace ignored).
    argument : str, default="perturbation"
        What to call the argument in the error message.

    Returns
    -------
    str
        ``"thin"``, ``"thick"``, ``"swel"`` or ``"frac"``.

    Raises
    ------
    InvalidArgumentError
        Naming ``argument`` and the valid names, when ``name`` is not one of them.
    """
    canonical = PERTURBATION_ALIASES.get(name.strip().lower()) if isinstance(name, str) else None
    if canonical is None:
        raise InvalidArgumentError(
            f"{argument}: unknown perturbation {name!r}; valid names: {', '.join(PERTURBATIONS)} "
            f"(or the set names {', '.join(PERTURBATION_SET_NAMES.values())})"
        )
    return canonical


def perturbation_set_name(name: Any) -> str:
    """The published dataset name of a perturbation ("thic" for "thick" or "thic").

    Parameters
    ----------
    name : str
        Any spelling :func:`canonical_perturbation` accepts.

    Returns
    -------
    str
        ``"thin"``, ``"thic"``, ``"swel"`` or ``"frac"``.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is unknown.
    """
    return PERTURBATION_SET_NAMES[canonical_perturbation(name)]


def perturbation_from_name(name: str, **params: Any) -> Perturbation:
    """The perturbation called ``name`` with ``params``.

    Parameters
    ----------
    name : str
        Any spelling :func:`canonical_perturbation` accepts ("thick" or "thic", ...).
    **params
        Parameters of that perturbation (e.g. ``amount=0.7`` for ``"thin"``; lengths in image pixels).

    Returns
    -------
    Perturbation
        A :class:`Thinning`, :class:`Thickening`, :class:`Swelling` or :class:`Fracturing`.

    Raises
    ------
    InvalidArgumentError
        Naming an unknown perturbation or parameter, with the valid ones, or a parameter out of range.
    """
    cls = PERTURBATIONS[canonical_perturbation(name)]
    valid = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = [key for key in params if key not in valid]
    if unknown:
        raise InvalidArgumentError(
            f"perturbation {name!r}: unknown parameter {unknown[0]!r}; valid parameters: {', '.join(valid)}"
        )
    return cls(**params)


def _check_batch(images: Any, name: str = "images") -> np.ndarray:
    """A batch (N, H, W) of digits, the rules of :func:`repscope.validation.check_images`
    (an empty batch is allowed: it gives an empty result)."""
    images = as_array(images, name)
    if images.ndim != 3:
        if images.ndim == 4:  # let check_images explain a channel axis
            check_images(images, name, min_count=0)
        raise InvalidArgumentError(f"{name}: expected an (N, H, W) array, got shape {images.shape}")
    return check_images(images, name, min_count=0)


def apply_batch(
    images: np.ndarray,
    perturbations: Sequence[Perturbation | None],
    rngs: Sequence[np.random.Generator],
    config: PipelineConfig | None = None,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Perturb digit ``k`` of ``images`` with ``perturbations[k]`` drawing from ``rngs[k]``.

    Steps 1-4 run once for the batch (:func:`analyse_batch`), the hi-res results are
    downscaled together (step 6). ``None`` leaves a digit as it is (params ``{}``), as does a
    perturbation of a digit without foreground (params ``{"skipped": ...}``). Every other
    digit's params hold ``"perturbation"``: its name.

    Parameters
    ----------
    images : array-like of shape (N, H, W)
        uint8 (0-255), or float / bool in [0, 1]; ``N = 0`` is allowed.
    perturbations : sequence of Perturbation or None
        One per image.
    rngs : sequence of numpy.random.Generator
        One per image (the same generator may serve several, drawn from in image order).
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's (scale f = 4).

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(N, H, W)`` perturbed images (unperturbed ones are the input as uint8, bytes unchanged).
    params : list of dict
        One per image, as above.

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not such a batch, or ``perturbations`` or ``rngs`` has the wrong length or
        type.
    """
    images = _check_batch(images)
    n = images.shape[0]
    if len(perturbations) != n:
        raise InvalidArgumentError(f"perturbations: expected one per image ({n}), got {len(perturbations)}")
    if len(rngs) != n:
        raise InvalidArgumentError(f"rngs: expected one generator per image ({n}), got {len(rngs)}")
    for k, perturbation in enumerate(perturbations):
        if perturbation is not None and not isinstance(perturbation, Perturbation):
            raise InvalidArgumentError(
                f"perturbations[{k}]: expected a Perturbation or None, got {type(perturbation).__name__}"
            )
    config = config or PipelineConfig()
    unchanged = to_uint8(images).copy()
    if n == 0:
        return unchanged, []
    batch = analyse_batch(images, config)
    hires = np.zeros_like(batch.hires)
    params_list: list[dict[str, Any]] = []
    keep = np.zeros(n, dtype=bool)
    for k, perturbation in enumerate(perturbations):
        if perturbation is None:
            keep[k] = True
            params_list.append({})
            continue
        result = perturbation(batch.digit(k), rngs[k])
        keep[k] = "skipped" in result.params
        hires[k] = result.hires
        params_list.append({"perturbation": perturbation.name, **result.params})
    out = resample.to_uint8(resample.downscale(hires, config.scale))
    out[keep] = unchanged[keep]
    return out, params_list


def perturb(
    image_or_images: np.ndarray,
    perturbation: str | Perturbation,
    rng: np.random.Generator | int | None = None,
    config: PipelineConfig | None = None,
    **params: Any,
) -> tuple[np.ndarray, dict[str, Any] | list[dict[str, Any]]]:
    """Perturb one image (H, W) or a batch (N, H, W); one generator serves the digits in order.

    ``perturbation`` is a name (with ``params``; "thick" and the set name "thic" are one
    perturbation, see :func:`canonical_perturbation`) or an instance. Images are uint8 or float
    in [0, 1] (:mod:`repscope.validation`; zero-size images, object or string dtypes, NaN and
    channel axes are refused with InvalidArgumentError). Returns the uint8 image(s) and the
    params (a dict for one image, a list for a batch), whose ``"perturbation"`` is the
    canonical name.

    Parameters
    ----------
    image_or_images : array-like of shape (H, W) or (N, H, W)
        uint8 (0-255), or float / bool in [0, 1].
    perturbation : str or Perturbation
        A name (see :func:`perturbation_from_name`) or an instance.
    rng : numpy.random.Generator or int, optional
        Generator or seed; None draws fresh entropy (not reproducible).
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.
    **params
        Parameters of a perturbation given by name; not allowed with an instance.

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(H, W)`` or ``(N, H, W)``, the shape of the input.
    params : dict or list of dict
        Ground truth of what was done (see the module docstring), in image pixels.

    Raises
    ------
    InvalidArgumentError
        On invalid images, an unknown perturbation or parameter, or ``params`` with an instance.
    """
    if isinstance(perturbation, Perturbation):
        if params:
            raise InvalidArgumentError(
                f"params: {', '.join(params)} given with a Perturbation instance; pass a name to set parameters"
            )
        instance = perturbation
    else:
        instance = perturbation_from_name(perturbation, **params)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    images = as_array(image_or_images, "image")
    single = images.ndim == 2
    batch = check_image(images, "image")[None] if single else _check_batch(images, "images")
    out, params_list = apply_batch(batch, [instance] * len(batch), [generator] * len(batch), config)
    if single:
        return out[0], params_list[0]
    return out, params_list


__all__ = [
    "PERTURBATIONS",
    "Fracturing",
    "Perturbation",
    "PerturbationResult",
    "Swelling",
    "Thickening",
    "Thinning",
    "PERTURBATION_ALIASES",
    "PERTURBATION_SET_NAMES",
    "apply_batch",
    "canonical_perturbation",
    "dilate",
    "erode",
    "hires_to_image",
    "perturb",
    "perturbation_from_name",
    "perturbation_set_name",
]
