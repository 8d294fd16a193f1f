"""Textures of CdSprites+: shape colours (levels 3-5) and dark / light backgrounds (level 5).

A texture is a pattern ``p`` (float, zero mean, unit standard deviation) tinted by a base colour:
``rgb = clip(base + amplitude * p, 0, 255)``, so the colour names stay what a classifier (and a
person) reads while no two samples look the same. Patterns are

* procedural (default): seeded multi-octave value noise, ``p = sum_o w_o * upsample(noise_o)`` over
  grids of 3 to 24 cells, with per-texture random octave weights and an anisotropic stretch, so the
  bank holds many visibly distinct textures (smooth blotches, fine grain, streaks);
* or taken from a folder of photographs (``texture_dir``): random 96x96 crops of their luminance,
  standardised, so real material textures (wood, fabric, stone) tint the shapes instead.

Each texture is ``TEXTURE_SIZE`` (96) pixels square; a sample takes a random 64x64 window of one, so
the bank of ``per_colour`` textures gives ``per_colour * 33^2`` distinct windows per colour.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError
from scipy import ndimage

from repscope.data.sprites.attributes import ATTRIBUTE_VALUES, COLOUR_RGB
from repscope.errors import DataFormatError, SourceNotFoundError

TEXTURE_SIZE = 96
IMAGE_SIZE = 64
COLOUR_AMPLITUDE = 18.0  # grey levels a texture swings around a shape colour (more turns dark yellow red)
BACKGROUND_BASE = {"dark": (45.0, 42.0, 48.0), "light": (205.0, 200.0, 195.0)}
BACKGROUND_AMPLITUDE = 22.0
PHOTO_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


def noise_patterns(count: int, rng: np.random.Generator, size: int = TEXTURE_SIZE) -> np.ndarray:
    """``count`` standardised multi-octave value-noise patterns ``(count, size, size)`` float32.

    Each pattern is the sum of four octaves of Gaussian noise on grids of 3, 6, 12 and 24 columns (and
    0.5 to 2 times as many rows, at random, for streaks), each upsampled by cubic splines with
    wrap-around and weighted by a random weight in [0.1, 1]; the sum is then standardised.

    Parameters
    ----------
    count : int
        Number of patterns.
    rng : numpy.random.Generator
        Source of randomness (advanced by the call).
    size : int, default=96
        Side of each pattern, in pixels (:data:`TEXTURE_SIZE`).

    Returns
    -------
    numpy.ndarray
        float32 ``(count, size, size)``, each pattern with mean 0 and standard deviation 1 (unitless).
    """
    out = np.empty((count, size, size), dtype=np.float32)
    for k in range(count):
        pattern = np.zeros((size, size))
        for cells in (3, 6, 12, 24):
            # anisotropic grids give streaks; random weights decide which scale dominates
            cells_y = max(2, int(round(cells * rng.uniform(0.5, 2.0))))
            grid = rng.standard_normal((cells_y, cells))
            pattern += (
                rng.uniform(0.1, 1.0)
                * ndimage.zoom(grid, (size / cells_y, size / cells), order=3, mode="grid-wrap", grid_mode=True)[
                    :size, :size
                ]
            )
        out[k] = (pattern - pattern.mean()) / (pattern.std() + 1e-9)
    return out


def photo_patterns(
    texture_dir: str | Path, count: int, rng: np.random.Generator, size: int = TEXTURE_SIZE
) -> np.ndarray:
    """``count`` standardised luminance crops ``(count, size, size)`` from the photographs in ``texture_dir``.

    Photographs (sorted by name) are used in turn; each crop is a random ``size x size`` window of the
    photograph's luminance, mirrored left-right with probability 1/2, then standardised. A photograph
    smaller than ``size`` on its short side is first enlarged (bilinear) to that side.

    Parameters
    ----------
    texture_dir : str or pathlib.Path
        Folder of images with a suffix in :data:`PHOTO_SUFFIXES` (subfolders are not read).
    count : int
        Number of patterns.
    rng : numpy.random.Generator
        Source of randomness (advanced by the call).
    size : int, default=96
        Side of each pattern, in pixels.

    Returns
    -------
    numpy.ndarray
        float32 ``(count, size, size)``, each crop with mean 0 and standard deviation 1 (a flat crop
        stays all zero).

    Raises
    ------
    SourceNotFoundError
        When ``texture_dir`` is not a folder.
    DataFormatError
        When it holds no images or an image cannot be read.
    """
    folder = Path(texture_dir)
    if not folder.is_dir():
        raise SourceNotFoundError(f"texture_dir: {folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
    if not files:
        raise DataFormatError(f"texture_dir: {folder} holds no images ({', '.join(PHOTO_SUFFIXES)})")
    photos = []
    for path in files:
        try:
            with Image.open(path) as image:
                gray = np.asarray(image.convert("L"), dtype=np.float32)
        except (UnidentifiedImageError, OSError) as exc:
            raise DataFormatError(f"texture_dir: {path} is not a readable image ({exc})") from None
        if min(gray.shape) < size:  # small photographs are enlarged to one texture
            gray = ndimage.zoom(gray, size / min(gray.shape), order=1)
        photos.append(gray)
    out = np.empty((count, size, size), dtype=np.float32)
    for k in range(count):
        photo = photos[k % len(photos)]
        top = int(rng.integers(0, photo.shape[0] - size + 1))
        left = int(rng.integers(0, photo.shape[1] - size + 1))
        crop = photo[top : top + size, left : left + size]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        out[k] = (crop - crop.mean()) / (crop.std() + 1e-6)  # a flat crop stays flat (zero pattern)
    return out


def tint(patterns: np.ndarray, base: tuple[float, float, float], amplitude: float) -> np.ndarray:
    """uint8 ``(count, size, size, 3)`` textures: ``clip(round(base + amplitude * pattern), 0, 255)``.

    Parameters
    ----------
    patterns : numpy.ndarray
        float ``(count, size, size)`` standardised patterns (:func:`noise_patterns`,
        :func:`photo_patterns`).
    base : tuple of 3 floats
        RGB base colour, grey levels 0-255.
    amplitude : float
        Grey levels per unit of pattern.

    Returns
    -------
    numpy.ndarray
        uint8 ``(count, size, size, 3)`` RGB textures.
    """
    rgb = np.asarray(base, dtype=np.float32)[None, None, None, :] + amplitude * patterns[..., None]
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


class TextureBank:
    """Tinted textures for every colour and background, built once from ``seed`` (or photographs).

    Parameters
    ----------
    seed : int, default=0
        Seed of the patterns; the same seed (and photographs) gives the same bank.
    per_colour : int, default=48
        Textures per shape colour and per background.
    texture_dir : str or pathlib.Path, optional
        Folder of photographs to take the patterns from (:func:`photo_patterns`); default procedural
        noise (:func:`noise_patterns`).

    Attributes
    ----------
    colours : numpy.ndarray
        uint8 ``(5, per_colour, 96, 96, 3)`` RGB: ``colours[c]`` are the textures of colour class ``c``
        (order of ``ATTRIBUTE_VALUES["colour"]``), tinted around :data:`COLOUR_RGB` by
        :data:`COLOUR_AMPLITUDE` grey levels per unit of pattern.
    backgrounds : numpy.ndarray
        uint8 ``(2, per_colour, 96, 96, 3)``: the same for background class ``b`` (0 dark, 1 light),
        around :data:`BACKGROUND_BASE` by :data:`BACKGROUND_AMPLITUDE`.
    seed, per_colour, texture_dir
        The arguments (``texture_dir`` as a string or None).

    Raises
    ------
    SourceNotFoundError, DataFormatError
        When ``texture_dir`` is given and unusable (see :func:`photo_patterns`).
    """

    def __init__(self, seed: int = 0, per_colour: int = 48, texture_dir: str | Path | None = None) -> None:
        self.seed, self.per_colour = int(seed), int(per_colour)
        self.texture_dir = None if texture_dir is None else str(texture_dir)
        rng = np.random.default_rng([self.seed, 7331])
        colours = ATTRIBUTE_VALUES["colour"]
        backgrounds = ATTRIBUTE_VALUES["background"]
        total = self.per_colour * (len(colours) + len(backgrounds))
        if self.texture_dir is None:
            patterns = noise_patterns(total, rng)
        else:
            patterns = photo_patterns(self.texture_dir, total, rng)
        patterns = patterns.reshape(len(colours) + len(backgrounds), self.per_colour, TEXTURE_SIZE, TEXTURE_SIZE)
        self.colours = np.stack(
            [tint(patterns[c], COLOUR_RGB[name], COLOUR_AMPLITUDE) for c, name in enumerate(colours)]
        )
        self.backgrounds = np.stack(
            [
                tint(patterns[len(colours) + b], BACKGROUND_BASE[name], BACKGROUND_AMPLITUDE)
                for b, name in enumerate(backgrounds)
            ]
        )


@lru_cache(maxsize=4)
def texture_bank(seed: int = 0, per_colour: int = 48, texture_dir: str | None = None) -> TextureBank:
    """A process-wide cached :class:`TextureBank` (DataLoader workers build theirs once each).

    Parameters
    ----------
    seed : int, default=0
        Seed of the patterns.
    per_colour : int, default=48
        Textures per colour and background.
    texture_dir : str, optional
        Folder of photographs (a string, so the call can be cached).

    Returns
    -------
    TextureBank
        The bank of these arguments, shared by later calls with the same ones (up to 4 are kept).

    Raises
    ------
    SourceNotFoundError, DataFormatError
        When ``texture_dir`` is given and unusable.
    """
    return TextureBank(seed, per_colour, texture_dir)
