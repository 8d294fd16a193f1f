"""The Morpho-MNIST processing pipeline, steps 1-4: upscale, binarise, distance transform, skeleton.

Castro et al., "Morpho-MNIST: Quantitative Assessment and Diagnostics for Representation
Learning", section 2.1. Every step is a parameter of :class:`PipelineConfig` with the paper's
default. Two implementations give the same numbers:

* ``method="fast"`` (default), :func:`analyse_batch`: the whole batch is upscaled with matrix
  products; each binarised digit is cropped to its bounding box and the crops are tiled into one
  canvas with a background gap between them; one distance transform and one medial-axis pass
  serve the whole canvas (both are local, so the digits do not interact; see ``skeleton``).
* ``method="reference"``, :func:`analyse_reference`: the plain per-image procedure with
  scikit-image and SciPy (``pyramid_expand``, ``distance_transform_edt``, ``medial_axis``),
  kept as the baseline the fast path is tested and benchmarked against.

Conventions: a digit is taken as surrounded by background (a stroke touching the image border
has its distance measured to the border), and the medial axis breaks ties with
``default_rng(skeleton_seed)`` per digit, exactly as ``medial_axis(binary, rng=skeleton_seed)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import edt
import numpy as np
from scipy import ndimage
from skimage.morphology import medial_axis
from skimage.transform import pyramid_expand

from repscope.data.morpho import resample, skeleton
from repscope.errors import InvalidArgumentError
from repscope.validation import as_array, check_image, check_images, check_positive_int, to_float01

Method = Literal["fast", "reference"]
METHODS: tuple[str, ...] = ("fast", "reference")


@dataclass(frozen=True)
class PipelineConfig:
    """Parameters of the processing pipeline (defaults: the paper's).

    Parameters
    ----------
    scale : int, default=4
        Upscaling factor f (hi-res pixels per image pixel, along each axis), >= 1.
    threshold : float, default=0.5
        Binarisation threshold as a fraction of the intensity range [0, 1], in (0, 1) (a hi-res pixel
        is foreground when its intensity >= threshold).
    sigma : float, optional
        Gaussian smoothing bandwidth after bicubic upscaling, in hi-res pixels, >= 0; None means
        scikit-image's ``2 f / 6``.
    order : int, default=3
        Spline order of the upscaling interpolation, 0-5 (3: bicubic).
    skeleton_seed : int, default=0
        Seed of the medial axis' tie-breaking.
    bound_fraction : float, default=0.02
        Image mass left outside the width/height bounds (half on each side), in [0, 1).

    Raises
    ------
    InvalidArgumentError
        When a parameter is outside the ranges above.
    """

    scale: int = 4
    threshold: float = 0.5
    sigma: float | None = None
    order: int = 3
    skeleton_seed: int = 0
    bound_fraction: float = 0.02

    def __post_init__(self) -> None:
        check_positive_int(self.scale, "scale")
        if not 0.0 < float(self.threshold) < 1.0:
            raise InvalidArgumentError(f"threshold: must lie in (0, 1), got {self.threshold!r}")
        if self.sigma is not None and self.sigma < 0:
            raise InvalidArgumentError(f"sigma: must be >= 0, got {self.sigma!r}")
        if self.order not in range(6):
            raise InvalidArgumentError(f"order: must be 0..5, got {self.order!r}")
        if not 0.0 <= float(self.bound_fraction) < 1.0:
            raise InvalidArgumentError(f"bound_fraction: must lie in [0, 1), got {self.bound_fraction!r}")

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict, e.g. for a ``config.yaml``.

        Returns
        -------
        dict
            Field name -> value (``scale``, ``threshold``, ``sigma``, ``order``, ``skeleton_seed``,
            ``bound_fraction``).
        """
        return dataclasses.asdict(self)

    @property
    def effective_sigma(self) -> float:
        """The smoothing bandwidth used, in hi-res pixels: ``sigma``, or ``2 scale / 6`` when None."""
        return resample.default_sigma(self.scale) if self.sigma is None else float(self.sigma)


@dataclass
class DigitMorphology:
    """Steps 1-4 of the pipeline for one digit, stored cropped to the binary bounding box.

    ``binary``, ``distance`` (Euclidean distance to the background, hi-res pixels) and
    ``skeleton`` are crops whose top-left corner sits at ``origin`` in the hi-res image of shape
    ``shape``. An image without foreground has empty (0 x 0) crops and ``valid`` False.

    Parameters
    ----------
    shape : tuple of 2 ints
        ``(f H, f W)``, the hi-res image's shape.
    origin : tuple of 2 ints
        Hi-res (row, column) of the crops' top-left pixel.
    binary : numpy.ndarray
        bool ``(h, w)`` foreground (hi-res intensity >= threshold).
    distance : numpy.ndarray
        float64 ``(h, w)`` Euclidean distance of each pixel to the nearest background pixel, in hi-res
        pixels (0 on the background).
    skeleton : numpy.ndarray
        bool ``(h, w)`` medial axis.
    config : PipelineConfig
        The parameters that made it.
    """

    shape: tuple[int, int]
    origin: tuple[int, int]
    binary: np.ndarray
    distance: np.ndarray
    skeleton: np.ndarray
    config: PipelineConfig

    @property
    def valid(self) -> bool:
        """Whether the digit has foreground (its morphometrics are defined)."""
        return bool(self.binary.any())

    @property
    def scale(self) -> int:
        """The upscaling factor f (hi-res pixels per image pixel)."""
        return self.config.scale

    def embed(self, crop: np.ndarray, fill: Any = 0) -> np.ndarray:
        """The crop placed into a full hi-res image.

        Parameters
        ----------
        crop : numpy.ndarray
            ``(h, w)`` array of the crop's shape (``binary``, ``distance`` or ``skeleton``).
        fill : scalar, default=0
            Value outside the crop.

        Returns
        -------
        numpy.ndarray
            ``shape``-sized array of ``crop``'s dtype.
        """
        full = np.full(self.shape, fill, dtype=crop.dtype)
        r0, c0 = self.origin
        full[r0 : r0 + crop.shape[0], c0 : c0 + crop.shape[1]] = crop
        return full

    @property
    def binary_image(self) -> np.ndarray:
        """bool ``(f H, f W)`` foreground of the whole hi-res image."""
        return self.embed(self.binary, False)

    @property
    def distance_map(self) -> np.ndarray:
        """float64 ``(f H, f W)`` distance to the background, in hi-res pixels."""
        return self.embed(self.distance, 0.0)

    @property
    def skeleton_image(self) -> np.ndarray:
        """bool ``(f H, f W)`` medial axis of the whole hi-res image."""
        return self.embed(self.skeleton, False)

    def skeleton_points(self) -> np.ndarray:
        """(K, 2) hi-res (row, col) coordinates of the skeleton pixels, in raster order.

        Returns
        -------
        numpy.ndarray
            int ``(K, 2)``, in pixels of the hi-res image (``K = 0`` for an empty digit).
        """
        rows, cols = np.nonzero(self.skeleton)
        return np.stack([rows + self.origin[0], cols + self.origin[1]], axis=1)

    @property
    def mean_thickness(self) -> float:
        """Stroke thickness in image pixels: 2 x mean distance on the skeleton / scale."""
        if not self.skeleton.any():
            return float("nan")
        return float(2.0 * self.distance[self.skeleton].mean() / self.scale)


def _bounding_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


@dataclass
class TiledCanvas:
    """Cropped binary digits packed into one canvas, each surrounded by background.

    Parameters
    ----------
    binary : numpy.ndarray
        bool ``(canvas height, canvas width)`` foreground of all digits.
    labels : numpy.ndarray
        int32, the same shape: per canvas pixel, the index of the digit whose crop covers it (-1 in
        the gaps).
    placements : list of (int, int, int, int) or None
        ``placements[k]`` is (canvas row, canvas col, height, width) of digit k's crop, in hi-res
        pixels, or None when digit k has no foreground.
    origins : list of (int, int)
        ``origins[k]`` is the crop's top-left (row, col) in its hi-res image ((0, 0) when empty).
    """

    binary: np.ndarray
    labels: np.ndarray
    placements: list[tuple[int, int, int, int] | None]
    origins: list[tuple[int, int]]


def tile_crops(binaries: np.ndarray, gap: int = 1, canvas_width: int = 2048) -> TiledCanvas:
    """Shelf-pack the bounding-box crops of a batch of binary images with ``gap`` pixels apart.

    Crops are placed left to right in rows (shelves) as tall as their tallest crop; the canvas has
    ``gap`` background pixels around every crop, including at its border.

    Parameters
    ----------
    binaries : numpy.ndarray
        bool ``(N, H, W)`` binary images (e.g. hi-res foreground).
    gap : int, default=1
        Background pixels between crops and around the canvas.
    canvas_width : int, default=2048
        Canvas width in pixels, widened when the widest crop needs more.

    Returns
    -------
    TiledCanvas
        The canvas, its labels and each digit's placement and origin.
    """
    crops: list[np.ndarray | None] = []
    origins: list[tuple[int, int]] = []
    for image in binaries:
        box = _bounding_box(image)
        if box is None:
            crops.append(None)
            origins.append((0, 0))
            continue
        r0, r1, c0, c1 = box
        crops.append(image[r0:r1, c0:c1])
        origins.append((r0, c0))
    widest = max((c.shape[1] for c in crops if c is not None), default=1)
    canvas_width = max(canvas_width, widest + 2 * gap)
    placements: list[tuple[int, int, int, int] | None] = []
    row, col, shelf_height = gap, gap, 0
    for crop in crops:
        if crop is None:
            placements.append(None)
            continue
        height, width = crop.shape
        if col + width + gap > canvas_width:
            row += shelf_height + gap
            col, shelf_height = gap, 0
        placements.append((row, col, height, width))
        col += width + gap
        shelf_height = max(shelf_height, height)
    canvas_height = row + shelf_height + gap
    canvas = np.zeros((canvas_height, canvas_width), dtype=bool)
    labels = np.full((canvas_height, canvas_width), -1, dtype=np.int32)
    for index, (crop, place) in enumerate(zip(crops, placements)):
        if crop is None or place is None:
            continue
        r, c, h, w = place
        canvas[r : r + h, c : c + w] = crop
        labels[r : r + h, c : c + w] = index
    return TiledCanvas(canvas, labels, placements, origins)


@dataclass
class MorphologyBatch:
    """Steps 1-4 for a batch of digits: hi-res grey images plus the tiled binary analysis.

    Parameters
    ----------
    hires : numpy.ndarray
        float64 ``(N, f H, f W)`` upscaled grey levels in [0, 1].
    canvas : TiledCanvas
        The binarised digits, cropped and tiled.
    distance : numpy.ndarray
        float64, the canvas' shape: Euclidean distance to the background, in hi-res pixels.
    skeleton : numpy.ndarray
        bool, the canvas' shape: medial axis.
    config : PipelineConfig
        The parameters that made it.
    """

    hires: np.ndarray  # (N, fH, fW) float64 grey levels in [0, 1]
    canvas: TiledCanvas
    distance: np.ndarray  # canvas distance to background
    skeleton: np.ndarray  # canvas medial axis
    config: PipelineConfig

    def __len__(self) -> int:
        return self.hires.shape[0]

    @property
    def valid(self) -> np.ndarray:
        """bool ``(N,)``: whether each digit has foreground."""
        return np.array([p is not None for p in self.canvas.placements], dtype=bool)

    def digit(self, index: int) -> DigitMorphology:
        """Digit ``index`` as a :class:`DigitMorphology` (copies of its crops).

        Parameters
        ----------
        index : int
            Position in the batch, 0 to N-1.

        Returns
        -------
        DigitMorphology
            Its crops and origin in the ``(f H, f W)`` hi-res image; empty (0 x 0) crops when it has no
            foreground.
        """
        shape = self.hires.shape[1:]
        place = self.canvas.placements[index]
        if place is None:
            empty = np.zeros((0, 0), dtype=bool)
            return DigitMorphology(shape, (0, 0), empty, np.zeros((0, 0)), empty, self.config)
        r, c, h, w = place
        window = (slice(r, r + h), slice(c, c + w))
        return DigitMorphology(
            shape=shape,
            origin=self.canvas.origins[index],
            binary=self.canvas.binary[window].copy(),
            distance=self.distance[window].copy(),
            skeleton=self.skeleton[window].copy(),
            config=self.config,
        )

    def digits(self) -> list[DigitMorphology]:
        """Every digit as a :class:`DigitMorphology`, in batch order.

        Returns
        -------
        list of DigitMorphology
            ``N`` digits, as :meth:`digit` gives them.
        """
        return [self.digit(k) for k in range(len(self))]


def check_digits(images: np.ndarray, name: str = "images", min_count: int = 1) -> np.ndarray:
    """A batch (N, H, W) of digits (one (H, W) digit is a batch of one) that follows the rules
    of :func:`repscope.validation.check_images`: no zero-size image, no channel axis.

    Parameters
    ----------
    images : array-like of shape (N, H, W) or (H, W)
        uint8 (0-255), or float / bool in [0, 1] without NaN or infinity.
    name : str, default="images"
        What to call the argument in error messages.
    min_count : int, default=1
        The least number of digits accepted.

    Returns
    -------
    numpy.ndarray
        ``(N, H, W)``, values not converted.

    Raises
    ------
    InvalidArgumentError
        When the images break those rules or are fewer than ``min_count``.
    """
    images = as_array(images, name)
    if images.ndim == 2:
        images = images[None]
    return check_images(images, name, min_count=min_count)


def analyse_batch(images: np.ndarray, config: PipelineConfig | None = None) -> MorphologyBatch:
    """Steps 1-4 for a batch ``(N, H, W)`` (uint8 0-255 or float 0-1), the fast way.

    Upscale by ``f = config.scale`` (bicubic + Gaussian, :func:`repscope.data.morpho.resample.upscale`),
    binarise at ``config.threshold``, tile the crops (:func:`tile_crops`), then one Euclidean distance
    transform and one medial-axis pass over the canvas.

    Parameters
    ----------
    images : array-like of shape (N, H, W) or (H, W)
        uint8 (0-255), or float / bool in [0, 1]; ``N = 0`` is allowed.
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.

    Returns
    -------
    MorphologyBatch
        Hi-res grey images ``(N, f H, f W)`` and the canvas analysis.

    Raises
    ------
    InvalidArgumentError
        When ``images`` breaks the rules of :func:`check_digits`.
    """
    config = config or PipelineConfig()
    images = check_digits(images, min_count=0)
    hires = resample.upscale(images, config.scale, config.order, config.effective_sigma)
    canvas = tile_crops(hires >= config.threshold)
    distance_sq = edt.edtsq(canvas.binary, black_border=True, parallel=1)
    medial = skeleton.medial_axis_tiled(canvas.binary, distance_sq, canvas.labels, config.skeleton_seed)
    return MorphologyBatch(hires, canvas, np.sqrt(distance_sq, dtype=np.float64), medial, config)


def analyse_reference(image: np.ndarray, config: PipelineConfig | None = None) -> tuple[np.ndarray, DigitMorphology]:
    """Steps 1-4 for one image with the plain per-image scikit-image / SciPy procedure.

    Parameters
    ----------
    image : array-like of shape (H, W)
        uint8 (0-255), or float / bool in [0, 1] without NaN or infinity.
    config : PipelineConfig, optional
        Pipeline parameters; default the paper's.

    Returns
    -------
    hires : numpy.ndarray
        float64 ``(f H, f W)`` upscaled grey levels in [0, 1].
    morphology : DigitMorphology
        Binary image, distance transform and skeleton of the digit.

    Raises
    ------
    InvalidArgumentError
        When ``image`` is not one valid grey image.
    """
    config = config or PipelineConfig()
    # the same rules as the fast path: NaN, infinity, integers and zero-size images are refused
    image = to_float01(check_image(image, "image"), dtype=np.float64)
    if config.scale > 1:
        hires = pyramid_expand(image, upscale=config.scale, sigma=config.effective_sigma, order=config.order)
    else:
        hires = image.astype(np.float64)
    binary = hires >= config.threshold
    box = _bounding_box(binary)
    if box is None:
        empty = np.zeros((0, 0), dtype=bool)
        return hires, DigitMorphology(hires.shape, (0, 0), empty, np.zeros((0, 0)), empty, config)
    # pad one background pixel: the digit is surrounded by background
    padded = np.pad(binary, 1)
    distance = ndimage.distance_transform_edt(padded)[1:-1, 1:-1]
    medial = medial_axis(padded, rng=config.skeleton_seed)[1:-1, 1:-1]
    r0, r1, c0, c1 = box
    window = (slice(r0, r1), slice(c0, c1))
    morph = DigitMorphology(
        shape=hires.shape,
        origin=(r0, c0),
        binary=binary[window].copy(),
        distance=distance[window].copy(),
        skeleton=medial[window].copy(),
        config=config,
    )
    return hires, morph
