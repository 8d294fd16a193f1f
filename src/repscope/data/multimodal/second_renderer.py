"""A second, independent drawing of CdSprites+ images, to measure attribute classifiers on a renderer
they never saw (for tests and measurement only; datasets and training never use it).

The attributes are those of :class:`~repscope.data.multimodal.cdsprites.CdSpritesPlus` (its attribute
table, orientations and the centres near the named corner), the drawing shares no geometry code with it:

* shapes are **polygons** filled at ``supersample`` times the resolution (default 4: 256x256) by
  :func:`skimage.draw.polygon`, then averaged over ``supersample`` x ``supersample`` blocks, so edges
  are anti-aliased (coverage in [0, 1]) where the published recipe draws binary pixels;
* **square**: the 4 corners at half-side ``r``; **ellipse**: 96 vertices on semi-axes ``r`` and
  ``r / 2``; **heart**: the parametric curve ``x = 16 sin^3 t``, ``y = 13 cos t - 5 cos 2t - 2 cos 3t -
  cos 4t`` (another heart than the implicit sextic of the published drawing), centred on its bounding
  box and scaled so its larger half-extent is ``1.05 r``;
* ``r = 9 px`` for big and 4.5 px for small (dSprites' scales 1 and 0.5), rotated by the sample's
  orientation, centred on the sample's centre;
* **colour** (level 3+): coverage times a texture of another bank (``texture_seed``, default 1, so
  other textures than the training's seed 0) times the colour's RGB, stretched so the brightest
  channel reaches 255; levels 1-2 white coverage on black;
* **background** (level 5): the ``light`` or ``dark`` texture blended in by ``1 - coverage``, then
  the image min-max stretched;
* optionally blurred by a Gaussian of ``blur_sigma`` pixels (per channel, edges repeated).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage
from skimage.draw import polygon

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, COLOUR_RGB, check_level
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.data.multimodal.textures import IMAGE_SIZE
from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

RADIUS_PX = {0: 9.0, 1: 4.5}  # size class -> half-size (big, small)
HEART_FIT = 1.05  # the heart's larger half-extent, in half-sizes


def _outline(shape: int) -> np.ndarray:
    """Vertices ``(K, 2)`` (x, y up) of a shape of half-size 1."""
    if shape == 0:
        return np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    t = np.linspace(0.0, 2 * np.pi, 96, endpoint=False)
    if shape == 1:
        return np.stack([np.cos(t), 0.5 * np.sin(t)], axis=1)
    x = 16 * np.sin(t) ** 3
    y = 13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t)
    x, y = x - (x.max() + x.min()) / 2, y - (y.max() + y.min()) / 2
    scale = HEART_FIT / max(x.max(), y.max())
    return np.stack([x * scale, y * scale], axis=1)


def coverage(shapes: Any, sizes: Any, angles: Any, centre_x: Any, centre_y: Any, supersample: int = 4) -> np.ndarray:
    """How much of each pixel the shape covers, ``(N, 64, 64)`` float32 in [0, 1].

    Parameters
    ----------
    shapes : array-like of int, shape (N,)
        Shape classes (0 square, 1 ellipse, 2 heart).
    sizes : array-like of int, shape (N,)
        Size classes (0 big, 1 small).
    angles : array-like of float, shape (N,)
        Orientation, radians, counter-clockwise on screen.
    centre_x, centre_y : array-like of float, shape (N,)
        Centre in pixels from the top-left corner (y down).
    supersample : int, default=4
        Sub-pixels per pixel and axis (a positive integer).

    Returns
    -------
    numpy.ndarray
        float32 ``(N, 64, 64)``.

    Raises
    ------
    InvalidArgumentError
        When ``supersample`` is not a positive integer.
    """
    s = check_positive_int(supersample, "supersample")
    shapes, sizes = np.asarray(shapes, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    out = np.zeros((len(shapes), IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)
    fine = IMAGE_SIZE * s
    for k in range(len(shapes)):
        vertices = _outline(int(shapes[k])) * RADIUS_PX[int(sizes[k])]
        c, n = np.cos(angles[k]), np.sin(angles[k])
        x = c * vertices[:, 0] - n * vertices[:, 1] + centre_x[k]
        y = centre_y[k] - (n * vertices[:, 0] + c * vertices[:, 1])
        canvas = np.zeros((fine, fine), dtype=np.float32)
        rows, cols = polygon(y * s - 0.5, x * s - 0.5, shape=canvas.shape)  # sub-pixel centres
        canvas[rows, cols] = 1.0
        out[k] = canvas.reshape(IMAGE_SIZE, s, IMAGE_SIZE, s).mean(axis=(1, 3))
    return out


def _stretch(images: np.ndarray) -> np.ndarray:
    flat = images.reshape(len(images), -1)
    low, high = flat.min(1), flat.max(1)
    span = np.where(high > low, high - low, 1.0)
    return (images - low[:, None, None, None]) * (255.0 / span)[:, None, None, None]


def second_rendering(
    level: int,
    size: int,
    seed: int = 0,
    split: str = "test",
    texture_seed: int = 1,
    blur_sigma: float = 0.0,
    supersample: int = 4,
) -> dict[str, np.ndarray]:
    """``size`` CdSprites+ samples of ``level`` drawn the second way (module docstring).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    size : int
        Number of samples, positive.
    seed : int, default=0
        Seed of the attributes and nuisance factors (those of ``CdSpritesPlus(level, size, seed, split)``).
    split : {"train", "val", "test"}, default="test"
        The generator stream the attributes come from.
    texture_seed : int, default=1
        Seed of the procedural textures (levels 3-5).
    blur_sigma : float, default=0.0
        Gaussian blur of every image, pixels (non-negative).
    supersample : int, default=4
        Sub-pixels per pixel and axis.

    Returns
    -------
    dict of str to numpy.ndarray
        ``images`` uint8 ``(N, 64, 64, 3)`` RGB, ``table`` int64 ``(N, L)`` attribute table,
        ``coverage`` float32 ``(N, 64, 64)`` (the shape's share of each pixel), ``centre_x`` and
        ``centre_y`` float64 ``(N,)`` pixels.

    Raises
    ------
    InvalidArgumentError
        When an argument is out of range (named).
    """
    level = check_level(level)
    if not float(blur_sigma) >= 0:
        raise InvalidArgumentError(f"blur_sigma: must be non-negative, got {blur_sigma!r}")
    generator = CdSpritesPlus(level, size=size, seed=seed, split=split, texture_seed=texture_seed)
    factors = generator.factors(np.arange(len(generator)))
    n = len(generator)
    sizes = factors.get("size", np.zeros(n, dtype=np.int64))
    cover = coverage(
        factors["shape"], sizes, factors["orientation"], factors["centre_x"], factors["centre_y"], supersample
    )
    if level < 3:
        images = np.repeat(255.0 * cover[..., None], 3, axis=-1)
    else:
        bank = generator.textures
        rgb = np.array([COLOUR_RGB[name] for name in ATTRIBUTE_VALUES["colour"]], dtype=np.float32)[factors["colour"]]
        shade = bank.shape[factors["texture"]] / 255.0
        shape_rgb = (cover * shade)[..., None] * rgb[:, None, None, :]
        peak = shape_rgb.reshape(n, -1).max(1)
        images = shape_rgb * (255.0 / np.maximum(peak, 1e-6))[:, None, None, None]
        if level >= 5:
            dark = factors["background"] == ATTRIBUTE_VALUES["background"].index("dark")
            texture = factors["background_texture"]
            ground = np.where(dark[:, None, None], bank.dark[texture], bank.light[texture]).astype(np.float32)
            images = images + (1.0 - cover)[..., None] * ground[..., None]
            images = _stretch(images)
    if blur_sigma > 0:
        images = np.stack(
            [ndimage.gaussian_filter(image, sigma=(blur_sigma, blur_sigma, 0.0), mode="nearest") for image in images]
        )
    table = np.stack([factors[name] for name in generator.attributes], axis=1)
    return {
        "images": np.clip(np.rint(images), 0, 255).astype(np.uint8),
        "table": table,
        "coverage": cover,
        "centre_x": np.asarray(factors["centre_x"], dtype=np.float64),
        "centre_y": np.asarray(factors["centre_y"], dtype=np.float64),
    }


__all__ = ["second_rendering", "coverage", "RADIUS_PX"]
