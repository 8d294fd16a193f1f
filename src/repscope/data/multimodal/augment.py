"""Training augmentations that make CdSprites+ attribute classifiers independent of our exact pixels.

A model's generated images are blurry and drawn by no renderer of ours, so the classifiers that judge
them are trained on CdSprites+ samples drawn with jittered geometry, blurred and noisy
(:class:`AugmentedCdSprites`), plus, for the reject option, images that hold no shape at all
(:func:`no_shape_images`: empty frames, noise, averages of many sprites, heavily blurred faint shapes,
Gaussian blobs).

Per sample ``i`` of a generator, every random number comes from
``numpy.random.default_rng([seed, i, salt])``: sample ``i`` is the same bytes in any batch, any order
and any DataLoader worker, and every epoch of a training can draw fresh samples (other indices).

Positive samples (the published recipe with these changes, each drawn per image):

* **geometry**: the shape's half-size times ``U[scale]`` (default 0.85-1.15: small 0.5 and big 1.0
  stay apart), an aspect ratio ``a`` log-uniform in ``aspect`` (the shape stretched by ``sqrt(a)``
  along a random axis and shrunk by ``1/sqrt(a)`` across it), the orientation plus ``U[-rotation,
  rotation]`` radians, the centre shifted by ``U[-shift_px, shift_px]`` pixels on each axis;
* **stroke**: the mask dilated or eroded by up to ``stroke_px`` pixels (3x3 square, each count equally
  likely), never eroded to nothing;
* the published colouring (texture x colour, min-max stretch; background pasted at level 5) and the
  generator's brightness / contrast jitter;
* **blur**: with probability ``blur_probability`` a Gaussian of ``sigma ~ U[0, blur_sigma]`` pixels
  (per channel, edges repeated);
* **noise**: with probability ``noise_probability`` uniform noise of standard deviation
  ``U[0, noise]`` grey levels (half-width ``sqrt(3)`` times it).

The result is rounded and clipped to uint8.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import ndimage

from repscope.data.dsprites import SPRITE_RADIUS_PX, inside_shape
from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES
from repscope.data.multimodal.cdsprites import CdSpritesPlus, colour_shapes, jitter_images, paste_background
from repscope.data.multimodal.textures import IMAGE_SIZE
from repscope.errors import InvalidArgumentError

NONE_CLASS = len(ATTRIBUTE_VALUES["shape"])  # the shape class "no shape" (3) of the reject option
NO_SHAPE_KINDS: tuple[str, ...] = ("empty", "noise", "average", "faint", "blob")
_SALT_POSITIVE, _SALT_NEGATIVE, _SALT_CHOICE = 11, 13, 17


@dataclass(frozen=True)
class Augmentation:
    """How far training images stray from the published recipe (module docstring).

    Parameters
    ----------
    scale : tuple of float, default=(0.85, 1.15)
        Range of the factor on the shape's half-size.
    aspect : tuple of float, default=(0.8, 1.25)
        Range of the aspect ratio (drawn log-uniformly).
    rotation : float, default=0.15
        Largest extra rotation, radians.
    shift_px : float, default=1.0
        Largest centre shift per axis, pixels.
    stroke_px : int, default=1
        Largest dilation or erosion of the mask, pixels.
    blur_sigma : float, default=2.5
        Largest Gaussian blur, pixels.
    blur_probability : float, default=0.6
        Share of images blurred.
    noise : float, default=12.0
        Largest noise standard deviation, grey levels (0-255).
    noise_probability : float, default=0.5
        Share of images with noise.
    """

    scale: tuple[float, float] = (0.85, 1.15)
    aspect: tuple[float, float] = (0.8, 1.25)
    rotation: float = 0.15
    shift_px: float = 1.0
    stroke_px: int = 1
    blur_sigma: float = 2.5
    blur_probability: float = 0.6
    noise: float = 12.0
    noise_probability: float = 0.5

    def __post_init__(self) -> None:
        for name in ("scale", "aspect"):
            low, high = getattr(self, name)
            if not 0 < low <= high:
                raise InvalidArgumentError(f"{name}: must be a range 0 < low <= high, got {(low, high)!r}")
        for name in ("rotation", "shift_px", "blur_sigma", "noise"):
            if not float(getattr(self, name)) >= 0:
                raise InvalidArgumentError(f"{name}: must be non-negative, got {getattr(self, name)!r}")
        for name in ("blur_probability", "noise_probability"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise InvalidArgumentError(f"{name}: must lie in [0, 1], got {getattr(self, name)!r}")
        if isinstance(self.stroke_px, bool) or int(self.stroke_px) != self.stroke_px or self.stroke_px < 0:
            raise InvalidArgumentError(f"stroke_px: must be a non-negative integer, got {self.stroke_px!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (recorded with the classifiers).

        Returns
        -------
        dict of str to Any
            Field name to value (ranges as lists).
        """
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _rng(seed: int, index: int, salt: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(index), salt])


def _dilate(mask: np.ndarray, steps: int) -> np.ndarray:
    """A bool mask dilated (``steps`` > 0) or eroded (< 0) by ``|steps|`` pixels with a 3x3 square."""
    if steps == 0:
        return mask
    structure = np.ones((3, 3), dtype=bool)
    if steps > 0:
        return ndimage.binary_dilation(mask, structure, iterations=steps)
    eroded = ndimage.binary_erosion(mask, structure, iterations=-steps)
    return eroded if eroded.any() else mask


def jittered_masks(
    shapes: Any, radius_px: Any, angles: Any, centre_x: Any, centre_y: Any, aspect: Any, axis: Any
) -> np.ndarray:
    """Bool masks ``(N, 64, 64)`` of shapes stretched by ``sqrt(aspect)`` along the direction ``axis``.

    A pixel is on when its centre, mapped into the shape's unit frame, lies inside the shape
    (:func:`~repscope.data.dsprites.inside_shape`): the image point relative to the centre
    (y up) is stretched by ``1 / sqrt(aspect)`` along ``axis`` and by ``sqrt(aspect)`` across it, then
    rotated by ``-angle`` and divided by ``radius_px``.

    Parameters
    ----------
    shapes : array-like of int, shape (N,)
        Shape classes (0 square, 1 ellipse, 2 heart).
    radius_px, angles, centre_x, centre_y : array-like of float, shape (N,)
        Half-size in pixels, orientation in radians, centre in pixels from the top-left corner.
    aspect : array-like of float, shape (N,)
        Positive aspect ratios (1 leaves the shape as it is).
    axis : array-like of float, shape (N,)
        Direction of the stretch, radians.

    Returns
    -------
    numpy.ndarray
        bool ``(N, 64, 64)``.
    """
    shapes = np.asarray(shapes, dtype=np.int64)
    n = len(shapes)
    cx, cy = np.asarray(centre_x, dtype=np.float64), np.asarray(centre_y, dtype=np.float64)
    # only a window around each centre is tested: it holds the shape unless the stretch or size is extreme
    reach = np.asarray(radius_px, dtype=np.float64) * np.sqrt(2.0 * np.maximum(aspect, 1.0 / np.asarray(aspect)))
    patch = int(min(IMAGE_SIZE, np.ceil(2 * reach.max()) + 4)) if n else IMAGE_SIZE
    top = np.clip(np.floor(cy - patch / 2), 0, IMAGE_SIZE - patch).astype(np.int64)
    left = np.clip(np.floor(cx - patch / 2), 0, IMAGE_SIZE - patch).astype(np.int64)
    offsets = np.arange(patch, dtype=np.float64) + 0.5
    dx = left[:, None, None] + offsets[None, None, :] - cx[:, None, None]
    dy = cy[:, None, None] - (top[:, None, None] + offsets[None, :, None])
    # undo the stretch: coordinates along / across the axis
    axis = np.asarray(axis, dtype=np.float64)[:, None, None]
    root = np.sqrt(np.asarray(aspect, dtype=np.float64))[:, None, None]
    along = (np.cos(axis) * dx + np.sin(axis) * dy) / root
    across = (-np.sin(axis) * dx + np.cos(axis) * dy) * root
    x = np.cos(axis) * along - np.sin(axis) * across
    y = np.sin(axis) * along + np.cos(axis) * across
    angle = np.asarray(angles, dtype=np.float64)[:, None, None]
    radius = np.asarray(radius_px, dtype=np.float64)[:, None, None]
    u = (np.cos(angle) * x + np.sin(angle) * y) / radius
    v = (np.cos(angle) * y - np.sin(angle) * x) / radius
    windows = np.zeros((n, patch, patch), dtype=bool)
    for shape in np.unique(shapes):
        rows = np.flatnonzero(shapes == shape)
        windows[rows] = inside_shape(int(shape), u[rows], v[rows])
    masks = np.zeros((n, IMAGE_SIZE, IMAGE_SIZE), dtype=bool)
    for k in range(n):
        masks[k, top[k] : top[k] + patch, left[k] : left[k] + patch] = windows[k]
    return masks


def blur(images: np.ndarray, sigma: Any) -> np.ndarray:
    """Each image blurred by a Gaussian of its own ``sigma`` pixels (per channel, edges repeated).

    Parameters
    ----------
    images : numpy.ndarray
        ``(N, 64, 64, 3)`` uint8 or float.
    sigma : float or array-like of float, shape (N,)
        Standard deviation of each image's Gaussian, pixels; 0 leaves the image as it is.

    Returns
    -------
    numpy.ndarray
        float32 ``(N, 64, 64, 3)`` on the scale of ``images`` (not rounded).
    """
    out = np.asarray(images, dtype=np.float32).copy()
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (len(out),))
    for k in np.flatnonzero(sigma > 0):
        out[k] = ndimage.gaussian_filter(out[k], sigma=(sigma[k], sigma[k], 0.0), mode="nearest")
    return out


def _to_uint8(images: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(images), 0, 255).astype(np.uint8)


def _colour(generator: CdSpritesPlus, factors: dict[str, np.ndarray], masks: np.ndarray) -> np.ndarray:
    """The published colouring of ``masks`` with the generator's textures, background and jitter."""
    if generator.level < 3:
        images = np.repeat((masks * np.uint8(255))[..., None], 3, axis=-1)
    else:
        bank = generator.textures
        images = colour_shapes(masks, bank.shape[factors["texture"]], factors["colour"])
        if generator.level >= 5:
            dark = factors["background"] == ATTRIBUTE_VALUES["background"].index("dark")
            backgrounds = np.where(
                dark[:, None, None], bank.dark[factors["background_texture"]], bank.light[factors["background_texture"]]
            )
            images = paste_background(images, backgrounds)
    if generator.jitter > 0:
        images = jitter_images(images, factors["contrast"], factors["brightness"])
    return images


def augmented_images(
    generator: CdSpritesPlus, indices: Any, seed: int, augmentation: Augmentation | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Samples ``indices`` of ``generator`` drawn with the augmentations of the module docstring.

    Parameters
    ----------
    generator : CdSpritesPlus
        Gives each sample's attributes, textures and nuisance factors.
    indices : array-like of int, shape (N,)
        Sample indices of ``generator``.
    seed : int
        Seed of the augmentation; sample ``i``'s draws depend on ``(seed, i)`` only.
    augmentation : Augmentation, optional
        The ranges; default :class:`Augmentation`'s.

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(N, 64, 64, 3)`` RGB.
    table : numpy.ndarray
        int64 ``(N, L)`` attribute table (the generator's).
    """
    augmentation = augmentation or Augmentation()
    a = augmentation
    indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
    factors = generator.factors(indices)
    n = len(indices)
    draws = np.empty((n, 10))
    for k, index in enumerate(indices):
        draws[k] = _rng(seed, index, _SALT_POSITIVE).random(10)
    scale_class_radius = np.where(np.asarray(factors["scale_class"]) == 0, 0.5, 1.0) * SPRITE_RADIUS_PX
    radius = scale_class_radius * (a.scale[0] + (a.scale[1] - a.scale[0]) * draws[:, 0])
    aspect = np.exp(np.log(a.aspect[0]) + (np.log(a.aspect[1]) - np.log(a.aspect[0])) * draws[:, 1])
    axis = np.pi * draws[:, 2]
    angle = factors["orientation"] + a.rotation * (2 * draws[:, 3] - 1)
    cx = factors["centre_x"] + a.shift_px * (2 * draws[:, 4] - 1)
    cy = factors["centre_y"] + a.shift_px * (2 * draws[:, 5] - 1)
    masks = jittered_masks(factors["shape"], radius, angle, cx, cy, aspect, axis)
    steps = np.minimum((draws[:, 6] * (2 * a.stroke_px + 1)).astype(np.int64), 2 * a.stroke_px) - a.stroke_px
    for k in np.flatnonzero(steps):
        masks[k] = _dilate(masks[k], int(steps[k]))
    images = _colour(generator, factors, masks).astype(np.float32)
    sigma = np.where(draws[:, 7] < a.blur_probability, a.blur_sigma * draws[:, 8], 0.0)
    images = blur(images, sigma)
    noisy = np.flatnonzero(draws[:, 9] < a.noise_probability)
    for k in noisy:
        rng = _rng(seed, indices[k], _SALT_POSITIVE + 1)
        # uniform noise of standard deviation U[0, noise]: half-width sqrt(3) times the deviation
        width = np.float32(np.sqrt(3.0) * a.noise * rng.random())
        images[k] += width * (2 * rng.random(images[k].shape, dtype=np.float32) - 1)
    table = np.stack([factors[name] for name in generator.attributes], axis=1)
    return _to_uint8(images), table


def no_shape_images(generator: CdSpritesPlus, indices: Any, seed: int) -> tuple[np.ndarray, list[str]]:
    """Images that hold no shape a person could name, one of :data:`NO_SHAPE_KINDS` each (drawn per
    index, each kind equally likely), in the level's look (black, or a background at level 5):

    * ``empty``: a frame of one random colour (at level 5 half of them a background texture alone),
      with faint noise;
    * ``noise``: uniform or Gaussian noise, blurred by ``sigma ~ U[0, 3]`` pixels;
    * ``average``: the mean of 6-24 random samples of the level (what a collapsed model draws);
    * ``faint``: a sample blurred by ``sigma ~ U[4.5, 9]`` pixels, its contrast around its mean scaled
      by ``U[0.1, 0.6]``;
    * ``blob``: an elliptic Gaussian blob (sigmas 2.5-8 pixels) of a random colour and peak 0.1-1 of
      full scale, on black or on a grey level.

    Parameters
    ----------
    generator : CdSpritesPlus
        Gives the level, its samples (for averages and faint shapes) and textures.
    indices : array-like of int, shape (N,)
        Indices; image ``i`` depends on ``(seed, i)`` only.
    seed : int
        Seed of the draws.

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(N, 64, 64, 3)``.
    kinds : list of str
        The kind of each image.
    """
    indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
    out = np.empty((len(indices), IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
    kinds = []
    size = len(generator)
    for k, index in enumerate(indices):
        rng = _rng(seed, index, _SALT_NEGATIVE)
        kind = NO_SHAPE_KINDS[int(rng.integers(len(NO_SHAPE_KINDS)))]
        kinds.append(kind)
        shape = (IMAGE_SIZE, IMAGE_SIZE, 3)
        if kind == "empty":
            if generator.level >= 5 and rng.random() < 0.5:
                bank = generator.textures
                texture = int(rng.integers(len(bank.light)))
                image = (bank.dark if rng.random() < 0.5 else bank.light)[texture].astype(np.float32)
                image = np.repeat(image[..., None], 3, axis=-1)
            else:
                image = np.broadcast_to(rng.uniform(0, 255, 3).astype(np.float32), shape).copy()
            image += rng.normal(0, 4 * rng.random(), shape)
        elif kind == "noise":
            if rng.random() < 0.5:
                image = rng.uniform(0, 255, shape)
            else:
                image = rng.normal(rng.uniform(40, 215), rng.uniform(10, 80), shape)
            image = ndimage.gaussian_filter(image, sigma=(s := 3 * rng.random(), s, 0.0), mode="nearest")
        elif kind == "average":
            picks = rng.integers(0, size, int(rng.integers(6, 25)))
            image = generator.batch(picks)[0].astype(np.float32).mean(0)
        elif kind == "faint":
            image = generator.batch([int(rng.integers(size))])[0][0].astype(np.float32)
            image = ndimage.gaussian_filter(image, sigma=(s := rng.uniform(4.5, 9.0), s, 0.0), mode="nearest")
            image = image.mean() + rng.uniform(0.1, 0.6) * (image - image.mean())
        else:
            yy, xx = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE] + 0.5
            centre = rng.uniform(12, 52, 2)
            sx, sy, theta = rng.uniform(2.5, 8.0), rng.uniform(2.5, 8.0), rng.uniform(0, np.pi)
            dx, dy = xx - centre[0], yy - centre[1]
            u, v = np.cos(theta) * dx + np.sin(theta) * dy, -np.sin(theta) * dx + np.cos(theta) * dy
            bump = np.exp(-0.5 * ((u / sx) ** 2 + (v / sy) ** 2))
            base = rng.uniform(0, 160) if rng.random() < 0.5 else 0.0
            colour = rng.uniform(0.2, 1.0, 3) * rng.uniform(0.1, 1.0) * (255 - base)
            image = base + bump[..., None] * colour[None, None, :]
        out[k] = _to_uint8(image)
    return out, kinds


class AugmentedCdSprites:
    """A CdSprites+ split drawn with the training augmentations (:func:`augmented_images`), with a
    share ``none_fraction`` of its samples replaced by :func:`no_shape_images` (shape class
    :data:`NONE_CLASS`, "no shape"; their other attribute columns are the generator's and mean nothing).

    Follows the framework's generator interface (``sample(indices, fields)``), so a
    :class:`~repscope.data.datasets.GeneratorSplit` draws it on demand, a batch at a time.

    Parameters
    ----------
    generator : CdSpritesPlus
        The split whose samples are augmented.
    seed : int, default=0
        Seed of the augmentation draws and of which samples hold no shape.
    augmentation : Augmentation, optional
        The ranges; default :class:`Augmentation`'s.
    none_fraction : float, default=0.0
        Share of samples in [0, 1) that hold no shape.
    """

    name = "cdsprites-augmented"

    def __init__(
        self,
        generator: CdSpritesPlus,
        seed: int = 0,
        augmentation: Augmentation | None = None,
        none_fraction: float = 0.0,
    ) -> None:
        if not 0.0 <= float(none_fraction) < 1.0:
            raise InvalidArgumentError(f"none_fraction: must lie in [0, 1), got {none_fraction!r}")
        if isinstance(seed, bool) or int(seed) != seed or seed < 0:
            raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
        self.generator, self.seed = generator, int(seed)
        self.augmentation = augmentation or Augmentation()
        self.none_fraction = float(none_fraction)
        self.size = len(generator)
        self.level = generator.level
        self.attributes = generator.attributes

    def __len__(self) -> int:
        return self.size

    def holds_no_shape(self, indices: Any) -> np.ndarray:
        """Which samples hold no shape (drawn per index from ``(seed, i)``).

        Parameters
        ----------
        indices : array-like of int, shape (N,)
            Sample indices.

        Returns
        -------
        numpy.ndarray
            bool ``(N,)``.
        """
        indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        if self.none_fraction == 0:
            return np.zeros(len(indices), dtype=bool)
        return np.array([_rng(self.seed, i, _SALT_CHOICE).random() < self.none_fraction for i in indices], dtype=bool)

    def sample(self, indices: Any, fields: Any = None) -> dict[str, np.ndarray]:
        """``image`` uint8 ``(N, 3, 64, 64)``, ``attributes`` int64 ``(N, L)`` (shape :data:`NONE_CLASS`
        where the sample holds no shape), one column per attribute and ``index``.

        Parameters
        ----------
        indices : array-like of int, shape (N,)
            Sample indices in ``[0, size)``.
        fields : sequence of str, optional
            Names of the fields to return; default all.

        Returns
        -------
        dict of str to numpy.ndarray
            The fields, in the order of ``fields`` when given.
        """
        indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        empty = self.holds_no_shape(indices)
        table = self.generator.attribute_table(indices)
        images = np.empty((len(indices), IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
        if (~empty).any():
            images[~empty] = augmented_images(self.generator, indices[~empty], self.seed, self.augmentation)[0]
        if empty.any():
            images[empty] = no_shape_images(self.generator, indices[empty], self.seed)[0]
            table[empty, 0] = NONE_CLASS
        out = {"image": np.ascontiguousarray(images.transpose(0, 3, 1, 2)), "attributes": table, "index": indices}
        out.update({name: table[:, k] for k, name in enumerate(self.attributes)})
        if fields is None:
            return out
        missing = [name for name in fields if name not in out]
        if missing:
            raise InvalidArgumentError(f"fields: the augmented CdSprites+ gives no {', '.join(missing)}")
        return {name: out[name] for name in fields}


__all__ = [
    "Augmentation",
    "AugmentedCdSprites",
    "augmented_images",
    "no_shape_images",
    "jittered_masks",
    "blur",
    "NONE_CLASS",
    "NO_SHAPE_KINDS",
]
