"""Textures of CdSprites+ as the published dataset makes them (Sejnova et al., Sec. 3 and A.1).

The reference generator (``data_proc/cdSprites.py`` of the reference toolkit) takes grey-scale DTD
photographs and turns each one into a shape texture or a background in a fixed chain of steps, all
reproduced here as pure functions on arrays:

1. grey-scale and min-max stretch: ``stretch(photo)`` maps the photograph's darkest pixel to 0 and its
   brightest to 255 (``cv2.normalize(..., NORM_MINMAX, CV_8U)``; rounding half to even);
2. brightness in HSV value (a grey pixel's value is its grey level):
   ``brighten``, the shapes' and the ``light`` backgrounds' rule: ``v > 130 -> 255``, else ``v + 125``;
   ``darken``, the ``dark`` backgrounds' rule: ``v < 200 -> 0``, then ``v <= 200 -> v - 200`` in uint8,
   which wraps: a pixel below 200 ends at 56, a pixel of exactly 200 at 0, brighter ones unchanged;
3. ``resize``: the whole (brightened) photograph to 64x64 by bilinear interpolation with half-pixel
   centres and no anti-aliasing (``cv2.resize`` with ``INTER_LINEAR``), so a large photograph is
   point-sampled, not averaged. Shape textures stay float after the resize; backgrounds are rounded to
   uint8 as ``cv2.resize`` rounds a uint8 image.

DTD is not shipped here, so by default the photographs are procedural stand-ins, drawn at
``PHOTO_SIZE`` (192) pixels, a side between DTD's 300-640 and the 64-pixel output, in six families of
visibly different structure (:data:`TEXTURE_FAMILIES`): ``noise`` (multi-octave value noise),
``stripes`` (waved stripes at any angle), ``dots`` (a rotated lattice of soft dots), ``checks``
(rotated soft checkerboards), ``blotches`` (thresholded low-frequency noise) and ``fabric`` (a plain
weave of threads of random brightness). Every stand-in gets film grain and a random gamma, so its
histogram after the stretch is that of a photograph (continuous tones, a few percent of the pixels
above 200), not of a drawing. With
``texture_dir`` the textures are the user's own photographs, each used whole as the reference uses
DTD's.

A :class:`TextureBank` precomputes, per texture, the three 64x64 forms a sample needs: the shape
texture (float), the ``light`` and the ``dark`` background (uint8).

Drawing the procedural bank takes seconds, so :func:`texture_bank` keeps it twice: once per process,
and on disk under ``$REPSCOPE_HOME/textures/`` (:func:`bank_cache_path`), keyed by the seed, the
textures per family and :data:`BANK_CACHE_VERSION` (raised whenever the drawing changes). A cached
file is trusted only when its stored key matches and the SHA-256 of its arrays matches the digest
stored beside them; anything else (truncated, corrupt, another version) is drawn again and replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import zipfile
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from repscope.data.imagefile import read_image
from repscope.errors import DataFormatError, InvalidArgumentError, RepscopeError, SourceNotFoundError
from repscope.validation import check_positive_int

IMAGE_SIZE = 64
PHOTO_SIZE = 192
TEXTURE_FAMILIES: tuple[str, ...] = ("noise", "stripes", "dots", "checks", "blotches", "fabric")
PHOTO_FAMILY = "photo"  # the family name of textures made from a texture_dir
DEFAULT_PER_FAMILY = 64
# the reference's HSV value rules (change_brightness(img, 125) and change_brightness(img, 200, False))
BRIGHTEN_BY = 125
DARKEN_BELOW = 200
PHOTO_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
# most pixels of one photograph read from a texture_dir (or a PolyMNIST background): DTD's photographs
# are 300-640 pixels a side and a 16-megapixel camera's (4928x3264) still fits; more is a corrupt file
# or a decompression bomb (a few kilobytes declaring gigabytes of pixels), refused from the header
MAX_PHOTO_PIXELS = 4096 * 4096
# raise when anything that changes the procedural textures' pixels changes: older cache files are redrawn
BANK_CACHE_VERSION = 1
BANK_ARRAYS = ("shape", "light", "dark", "family")


# --------------------------------------------------------------------------------------------
# the reference's steps, as pure functions


def stretch(image: np.ndarray) -> np.ndarray:
    """Min-max stretch to uint8 0-255: ``rint(255 (x - min) / (max - min))``.

    The reference's ``cv2.normalize(x, None, 0, 255, NORM_MINMAX, CV_8U)`` over every element of the
    array (all channels together); ``cv2`` rounds half to even, as :func:`numpy.rint` does. A constant
    array becomes all 0 (``cv2`` gives 0 too).

    Parameters
    ----------
    image : numpy.ndarray
        Any real array (grey levels, or a colour image as ``(..., 3)``).

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``image``, with minimum 0 and maximum 255 unless ``image`` is constant.

    Raises
    ------
    InvalidArgumentError
        When ``image`` is empty or holds NaN or infinity.
    """
    values = np.asarray(image, dtype=np.float64)
    if values.size == 0 or not np.isfinite(values).all():
        raise InvalidArgumentError(f"image: must be a non-empty finite array, got shape {values.shape}")
    low, high = values.min(), values.max()
    if high == low:
        return np.zeros(values.shape, dtype=np.uint8)
    return np.rint((values - low) * (255.0 / (high - low))).astype(np.uint8)


def brighten(grey: np.ndarray) -> np.ndarray:
    """The shapes' and ``light`` backgrounds' brightening: ``v > 130 -> 255``, else ``v + 125``.

    The reference's ``change_brightness(img, value=125)`` on the HSV value of a grey image (whose value
    is its grey level, so the image stays grey).

    Parameters
    ----------
    grey : numpy.ndarray
        uint8 grey levels, any shape.

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``grey``, every value in 125-255.
    """
    grey = np.asarray(grey, dtype=np.uint8)
    return np.where(grey > 255 - BRIGHTEN_BY, np.uint8(255), grey + np.uint8(BRIGHTEN_BY)).astype(np.uint8)


def darken(grey: np.ndarray) -> np.ndarray:
    """The ``dark`` backgrounds' rule, with the reference's uint8 wrap-around.

    The reference's ``change_brightness(img, value=200, increase=False)`` sets values below 200 to 0,
    then subtracts 200 from every value <= 200 in uint8 arithmetic, which wraps: ``0 - 200 = 56``. So a
    pixel below 200 ends at 56, a pixel of exactly 200 at 0, and brighter pixels (201-255) are kept.

    Parameters
    ----------
    grey : numpy.ndarray
        uint8 grey levels, any shape.

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``grey``: 56, 0 or the original 201-255.
    """
    grey = np.asarray(grey, dtype=np.uint8)
    out = np.where(grey < DARKEN_BELOW, np.uint8(0), grey).astype(np.uint8)
    low = out <= DARKEN_BELOW
    out[low] = (out[low].astype(np.int64) - DARKEN_BELOW) % 256  # what uint8 subtraction does
    return out


@lru_cache(maxsize=16)
def _resize_matrix(source: int, target: int) -> np.ndarray:
    """``(target, source)`` bilinear weights of ``cv2.resize`` (INTER_LINEAR) along one axis."""
    weights = np.zeros((target, source), dtype=np.float64)
    position = (np.arange(target) + 0.5) * (source / target) - 0.5  # half-pixel centres
    position = np.clip(position, 0.0, source - 1.0)  # cv2 clamps at the borders
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, source - 1)
    fraction = position - low
    rows = np.arange(target)
    np.add.at(weights, (rows, low), 1.0 - fraction)
    np.add.at(weights, (rows, high), fraction)
    return weights


def resize(image: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """Bilinear resize of a grey image to ``size x size`` as ``cv2.resize(..., INTER_LINEAR)`` does.

    Output pixel ``i`` samples the input at ``(i + 0.5) * in / out - 0.5`` (clamped to the image),
    interpolating its two neighbours on each axis; there is no anti-aliasing, so shrinking a large
    photograph point-samples it, as the reference does with DTD photographs. Computed in float64 as two
    matrix products (``cv2`` uses 11-bit fixed-point weights for uint8 input: at most one grey level
    apart after rounding).

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` grey levels, any real dtype; ``H, W >= 1``.
    size : int, default=64
        Side of the output, in pixels.

    Returns
    -------
    numpy.ndarray
        float64 ``(size, size)``, not rounded.

    Raises
    ------
    InvalidArgumentError
        When ``image`` is not a non-empty 2-d array.
    """
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2 or image.size == 0:
        raise InvalidArgumentError(f"image: must be a non-empty (H, W) array, got shape {image.shape}")
    return _resize_matrix(image.shape[0], size) @ image @ _resize_matrix(image.shape[1], size).T


# --------------------------------------------------------------------------------------------
# procedural stand-ins for DTD photographs


def _rotated(size: int, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (in pixels, centred) rotated by ``angle``."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float64) - (size - 1) / 2
    cos, sin = np.cos(angle), np.sin(angle)
    return cos * x + sin * y, -sin * x + cos * y


def _value_noise(rng: np.random.Generator, size: int, cells: tuple[int, ...], stretch_range=(0.5, 2.0)) -> np.ndarray:
    """Standardised sum of octaves of smooth Gaussian noise on grids of ``cells`` columns."""
    from scipy import ndimage  # noqa: PLC0415 -- only when drawing a bank, not when it is read from its cache

    pattern = np.zeros((size, size))
    for count in cells:
        # anisotropic grids give streaks; random weights decide which scale dominates
        rows = max(2, int(round(count * rng.uniform(*stretch_range))))
        grid = rng.standard_normal((rows, count))
        smooth = ndimage.zoom(grid, (size / rows, size / count), order=3, mode="grid-wrap", grid_mode=True)
        pattern += rng.uniform(0.1, 1.0) * smooth[:size, :size]
    return (pattern - pattern.mean()) / (pattern.std() + 1e-9)


def _soft(values: np.ndarray, sharpness: float) -> np.ndarray:
    """A profile between a sine (sharpness ~0) and a square wave (large sharpness), in [-1, 1]."""
    return np.tanh(sharpness * values) / np.tanh(sharpness)


def _noise(rng: np.random.Generator, size: int) -> np.ndarray:
    return _value_noise(rng, size, (3, 6, 12, 24, 48))


def _stripes(rng: np.random.Generator, size: int) -> np.ndarray:
    u, v = _rotated(size, rng.uniform(0, np.pi))
    period = rng.uniform(6.0, 40.0)  # pixels of the photograph
    wave = rng.uniform(0.0, 0.6) * period * np.sin(2 * np.pi * v / rng.uniform(40.0, 200.0) + rng.uniform(0, 6.3))
    return _soft(np.sin(2 * np.pi * (u + wave) / period + rng.uniform(0, 6.3)), rng.uniform(0.3, 4.0))


def _dots(rng: np.random.Generator, size: int) -> np.ndarray:
    u, v = _rotated(size, rng.uniform(0, np.pi))
    spacing = rng.uniform(10.0, 36.0)
    shift = (np.floor(v / spacing) % 2) * rng.choice([0.0, 0.5])  # square or hexagonal lattice
    du = (u / spacing + shift) % 1.0 - 0.5
    dv = (v / spacing) % 1.0 - 0.5
    distance = np.hypot(du, dv)
    radius = rng.uniform(0.15, 0.42)
    dots = 1.0 / (1.0 + np.exp((distance - radius) / rng.uniform(0.01, 0.08)))
    return dots if rng.random() < 0.5 else -dots


def _checks(rng: np.random.Generator, size: int) -> np.ndarray:
    u, v = _rotated(size, rng.uniform(0, np.pi / 2))
    cell = rng.uniform(8.0, 48.0)
    sharpness = rng.uniform(1.0, 8.0)
    return _soft(np.sin(np.pi * u / cell), sharpness) * _soft(np.sin(np.pi * v / cell), sharpness)


def _blotches(rng: np.random.Generator, size: int) -> np.ndarray:
    field = _value_noise(rng, size, (3, 5, 8), stretch_range=(0.7, 1.4))
    threshold = np.quantile(field, rng.uniform(0.3, 0.75))
    return 1.0 / (1.0 + np.exp(-(field - threshold) * rng.uniform(2.0, 12.0)))


def _fabric(rng: np.random.Generator, size: int) -> np.ndarray:
    u, v = _rotated(size, rng.uniform(-0.3, 0.3) + rng.choice([0.0, np.pi / 4]))
    pitch = rng.uniform(3.0, 12.0)  # pixels per thread
    warp, weft = np.abs(np.sin(np.pi * u / pitch)), np.abs(np.sin(np.pi * v / pitch))
    over = (np.floor(u / pitch) + np.floor(v / pitch)) % 2 == 0  # plain weave: threads alternate on top
    # each thread has its own brightness (yarn of uneven dye)
    warp_tone = rng.normal(0, rng.uniform(0.1, 0.5), int(2 * size / pitch) + 4)
    weft_tone = rng.normal(0, rng.uniform(0.1, 0.5), int(2 * size / pitch) + 4)
    warp_index = np.clip((u / pitch + size / pitch).astype(np.int64), 0, len(warp_tone) - 1)
    weft_index = np.clip((v / pitch + size / pitch).astype(np.int64), 0, len(weft_tone) - 1)
    return np.where(over, warp + warp_tone[warp_index], weft + weft_tone[weft_index])


_FAMILY_DRAWERS = {
    "noise": _noise,
    "stripes": _stripes,
    "dots": _dots,
    "checks": _checks,
    "blotches": _blotches,
    "fabric": _fabric,
}


def procedural_photo(family: str, rng: np.random.Generator, size: int = PHOTO_SIZE) -> np.ndarray:
    """One grey stand-in photograph of ``family``, stretched to uint8 0-255.

    The family's pattern (standardised) gets film grain (Gaussian, 0.25-0.6 of the pattern's standard
    deviation) and a random gamma (0.8-1.8) before the min-max stretch, so that its histogram is a
    photograph's: continuous tones, the extremes set by a few pixels. Calibrated on real texture
    photographs (scikit-image's brick, grass and gravel: 17-60% of the stretched pixels above 130,
    1-4% above 200); the six families give 27-48% and 1-6%.

    Parameters
    ----------
    family : str
        One of :data:`TEXTURE_FAMILIES`.
    rng : numpy.random.Generator
        Source of randomness (advanced by the call).
    size : int, default=192
        Side of the photograph, in pixels.

    Returns
    -------
    numpy.ndarray
        uint8 ``(size, size)``, minimum 0 and maximum 255.

    Raises
    ------
    InvalidArgumentError
        When ``family`` is not a texture family.
    """
    if family not in _FAMILY_DRAWERS:
        raise InvalidArgumentError(f"family: must be one of {', '.join(TEXTURE_FAMILIES)}, got {family!r}")
    pattern = _FAMILY_DRAWERS[family](rng, size)
    pattern = (pattern - pattern.mean()) / (pattern.std() + 1e-9)
    pattern = pattern + rng.uniform(0.25, 0.6) * rng.standard_normal(pattern.shape)
    unit = (pattern - pattern.min()) / (pattern.max() - pattern.min() + 1e-12)
    return stretch(unit ** rng.uniform(0.8, 1.8))


def load_photos(texture_dir: str | Path) -> list[np.ndarray]:
    """The photographs of ``texture_dir`` (sorted by name) as grey uint8 arrays, each min-max stretched.

    Grey-scale as the reference's ``cv2.cvtColor(..., COLOR_BGR2GRAY)`` (ITU-R 601 luma, PIL's ``"L"``
    mode), then :func:`stretch`. Subfolders are not read.

    Parameters
    ----------
    texture_dir : str or pathlib.Path
        Folder of images with a suffix in :data:`PHOTO_SUFFIXES`.

    Returns
    -------
    list of numpy.ndarray
        uint8 ``(H, W)`` grey photographs, at their own sizes.

    Raises
    ------
    SourceNotFoundError
        When ``texture_dir`` is not a folder.
    DataFormatError
        When it holds no images, or an image (named) cannot be read (truncated, corrupt, not an image)
        or its header declares more than :data:`MAX_PHOTO_PIXELS` pixels (refused before decoding).
    """
    folder = Path(texture_dir)
    if not folder.is_dir():
        raise SourceNotFoundError(f"texture_dir: {folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
    if not files:
        raise DataFormatError(f"texture_dir: {folder} holds no images ({', '.join(PHOTO_SUFFIXES)})")
    # each file's header is checked before its pixels are decoded (read_image)
    return [stretch(read_image(path, "L", MAX_PHOTO_PIXELS, "texture_dir: ")) for path in files]


class TextureBank:
    """Every texture a CdSprites+ sample can take, in the three 64x64 forms the recipe needs.

    Procedural (default): ``per_family`` stand-in photographs of each of :data:`TEXTURE_FAMILIES`;
    texture ``k`` of a family depends on ``(seed, family, k)`` only, so banks of different sizes share
    their first textures. With ``texture_dir``: one texture per photograph, family ``"photo"``.

    Parameters
    ----------
    seed : int, default=0
        Seed of the procedural photographs.
    per_family : int, default=64
        Procedural textures per family (ignored with ``texture_dir``).
    texture_dir : str or pathlib.Path, optional
        Folder of photographs (:func:`load_photos`).

    Attributes
    ----------
    shape : numpy.ndarray
        float32 ``(T, 64, 64)``: ``resize(brighten(photo))``, the grey texture that tints a shape
        (125-255 before the resize).
    light, dark : numpy.ndarray
        uint8 ``(T, 64, 64)``: ``rint(resize(brighten(photo)))`` and ``rint(resize(darken(photo)))``,
        the ``light`` and ``dark`` backgrounds.
    family : numpy.ndarray
        int64 ``(T,)``: each texture's family, an index into :attr:`family_names`.
    family_names : tuple of str
        :data:`TEXTURE_FAMILIES`, or ``("photo",)`` with ``texture_dir``.

    Raises
    ------
    SourceNotFoundError, DataFormatError
        When ``texture_dir`` is given and unusable (see :func:`load_photos`).
    InvalidArgumentError
        When ``per_family`` is not a positive integer.
    """

    def __init__(self, seed: int = 0, per_family: int = DEFAULT_PER_FAMILY, texture_dir: str | Path | None = None):
        per_family = check_positive_int(per_family, "per_family")
        self.seed, self.per_family = int(seed), per_family
        self.texture_dir = None if texture_dir is None else str(texture_dir)
        if self.texture_dir is None:
            from repscope.progress import progress_bar  # noqa: PLC0415

            self.family_names = TEXTURE_FAMILIES
            photos, family = [], []
            count = len(TEXTURE_FAMILIES) * self.per_family
            # seconds on 2 cores, once per cache (cached_procedural_bank): the first call says what it waits for
            with progress_bar(f"drawing the texture bank ({count} procedural textures)", total=count) as update:
                for index, name in enumerate(TEXTURE_FAMILIES):
                    for k in range(self.per_family):
                        photos.append(procedural_photo(name, np.random.default_rng([self.seed, 7331, index, k])))
                        family.append(index)
                        update(len(photos))
        else:
            self.family_names = (PHOTO_FAMILY,)
            photos = load_photos(self.texture_dir)
            family = [0] * len(photos)
        self.family = np.asarray(family, dtype=np.int64)
        bright = [resize(brighten(photo)) for photo in photos]
        self.shape = np.stack(bright).astype(np.float32)
        self.light = np.clip(np.rint(np.stack(bright)), 0, 255).astype(np.uint8)
        self.dark = np.stack([np.clip(np.rint(resize(darken(photo))), 0, 255) for photo in photos]).astype(np.uint8)

    @classmethod
    def from_arrays(cls, seed: int, per_family: int, arrays: dict[str, np.ndarray]) -> TextureBank:
        """A procedural bank made of arrays drawn before (a cache file), without drawing again.

        Parameters
        ----------
        seed : int
            Seed the arrays were drawn with.
        per_family : int
            Procedural textures per family they hold.
        arrays : dict of str to numpy.ndarray
            ``shape`` float32, ``light`` and ``dark`` uint8 ``(T, 64, 64)`` and ``family`` int64 ``(T,)``,
            ``T = 6 * per_family``.

        Returns
        -------
        TextureBank
            The bank (its arrays are the ones given).

        Raises
        ------
        DataFormatError
            When a shape or dtype is not that of a procedural bank of ``per_family`` textures per family.
        """
        count = len(TEXTURE_FAMILIES) * int(per_family)
        expected = {
            "shape": ((count, IMAGE_SIZE, IMAGE_SIZE), np.float32),
            "light": ((count, IMAGE_SIZE, IMAGE_SIZE), np.uint8),
            "dark": ((count, IMAGE_SIZE, IMAGE_SIZE), np.uint8),
            "family": ((count,), np.int64),
        }
        for name, (shape, dtype) in expected.items():
            array = arrays.get(name)
            if array is None or array.shape != shape or array.dtype != dtype:
                found = "missing" if array is None else f"{array.dtype} {array.shape}"
                raise DataFormatError(f"texture bank: {name} must be {np.dtype(dtype)} {shape}, got {found}")
        bank = cls.__new__(cls)
        bank.seed, bank.per_family, bank.texture_dir = int(seed), int(per_family), None
        bank.family_names = TEXTURE_FAMILIES
        bank.family, bank.shape, bank.light, bank.dark = (arrays[name] for name in ("family", "shape", "light", "dark"))
        return bank

    def __len__(self) -> int:
        return len(self.family)

    def indices(self, families: tuple[str, ...] | None = None) -> np.ndarray:
        """The bank indices of the textures of ``families`` (default every texture), in bank order.

        Parameters
        ----------
        families : tuple of str, optional
            Names among :attr:`family_names`.

        Returns
        -------
        numpy.ndarray
            int64 indices into the bank's arrays, non-empty.

        Raises
        ------
        InvalidArgumentError
            When a name is not one of the bank's families, or ``families`` is empty.
        """
        if families is None:
            return np.arange(len(self), dtype=np.int64)
        unknown = [name for name in families if name not in self.family_names]
        if unknown or not families:
            raise InvalidArgumentError(
                f"texture_families: must be a non-empty choice of {', '.join(self.family_names)}, got {families!r}"
            )
        wanted = [self.family_names.index(name) for name in families]
        return np.flatnonzero(np.isin(self.family, wanted)).astype(np.int64)


@lru_cache(maxsize=4)
def texture_bank(seed: int = 0, per_family: int = DEFAULT_PER_FAMILY, texture_dir: str | None = None) -> TextureBank:
    """A process-wide cached :class:`TextureBank` (DataLoader workers build theirs once each).

    Parameters
    ----------
    seed : int, default=0
        Seed of the procedural photographs.
    per_family : int, default=64
        Procedural textures per family.
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
    if texture_dir is not None:
        return TextureBank(seed, per_family, texture_dir)  # the user's photographs may change: never cached on disk
    return cached_procedural_bank(seed, per_family)


@lru_cache(maxsize=1)
def _source_digest() -> str:
    try:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    except OSError:  # no source beside the compiled module: the version alone keys the cache
        return ""


def bank_cache_key(seed: int, per_family: int) -> dict[str, object]:
    """What a cached procedural bank is drawn from: stored in the cache file and compared when read.

    Parameters
    ----------
    seed : int
        Seed of the procedural photographs.
    per_family : int
        Procedural textures per family.

    Returns
    -------
    dict
        ``version`` (:data:`BANK_CACHE_VERSION`), ``seed``, ``per_family``, ``families``,
        ``photo_size``, ``image_size`` and ``source`` (the SHA-256 of this module's code, which draws the
        textures: an edited recipe never reads a bank drawn by the old one).
    """
    return {
        "version": BANK_CACHE_VERSION,
        "seed": int(seed),
        "per_family": int(per_family),
        "families": list(TEXTURE_FAMILIES),
        "photo_size": PHOTO_SIZE,
        "image_size": IMAGE_SIZE,
        "source": _source_digest(),
    }


def bank_cache_path(seed: int, per_family: int, home: str | Path | None = None) -> Path:
    """The cache file of a procedural bank: ``$REPSCOPE_HOME/textures/procedural-v{V}-seed{S}-per{P}.npz``.

    Parameters
    ----------
    seed : int
        Seed of the procedural photographs.
    per_family : int
        Procedural textures per family.
    home : str or pathlib.Path, optional
        Cache root (default ``$REPSCOPE_HOME``, see :func:`repscope.data.sources.repscope_home`).

    Returns
    -------
    pathlib.Path
        The file (it may not exist).
    """
    if home is None:
        from repscope.data.sources import repscope_home  # noqa: PLC0415 -- pandas only when a bank is cached

        home = repscope_home()
    name = f"procedural-v{BANK_CACHE_VERSION}-seed{int(seed)}-per{int(per_family)}.npz"
    return Path(home) / "textures" / name


def _arrays_digest(key: dict[str, object], arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode())
    for name in BANK_ARRAYS:
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.data)
    return digest.hexdigest()


def read_bank_cache(path: str | Path, seed: int, per_family: int) -> TextureBank | None:
    """The bank stored in cache file ``path``, or None when it is missing, unreadable or not the one asked for.

    A file is used only when its stored key equals :func:`bank_cache_key` of ``(seed, per_family)`` and
    the SHA-256 of its arrays equals the stored digest (a truncated or altered file is not trusted).

    Parameters
    ----------
    path : str or pathlib.Path
        The cache file.
    seed : int
        Seed of the procedural photographs.
    per_family : int
        Procedural textures per family.

    Returns
    -------
    TextureBank or None
        The bank, or None (then draw it again).
    """
    key = bank_cache_key(seed, per_family)
    try:
        with np.load(Path(path), allow_pickle=False) as archive:
            meta = json.loads(bytes(archive["meta"]).decode("utf-8"))
            arrays = {name: archive[name] for name in BANK_ARRAYS}
        if not isinstance(meta, dict) or meta.get("key") != key:
            return None
        if meta.get("sha256") != _arrays_digest(key, arrays):
            return None
        return TextureBank.from_arrays(seed, per_family, arrays)
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile, zlib.error, DataFormatError):
        return None


def write_bank_cache(path: str | Path, bank: TextureBank) -> Path:
    """Store a procedural bank in cache file ``path`` (atomically), with its key and the digest of its arrays.

    Parameters
    ----------
    path : str or pathlib.Path
        The cache file (replaced when it exists).
    bank : TextureBank
        A procedural bank (no ``texture_dir``).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    InvalidArgumentError
        When ``bank`` was made from a ``texture_dir``.
    """
    from repscope.fileio import atomic_write  # noqa: PLC0415

    if bank.texture_dir is not None:
        raise InvalidArgumentError("bank: only procedural banks are cached (this one holds photographs)")
    key = bank_cache_key(bank.seed, bank.per_family)
    arrays = {name: getattr(bank, name) for name in BANK_ARRAYS}
    meta = json.dumps({"key": key, "sha256": _arrays_digest(key, arrays)}).encode("utf-8")
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(meta, dtype=np.uint8), **arrays)
    with atomic_write(Path(path), "wb") as handle:
        handle.write(buffer.getvalue())
    return Path(path)


def cached_procedural_bank(
    seed: int = 0, per_family: int = DEFAULT_PER_FAMILY, home: str | Path | None = None
) -> TextureBank:
    """The procedural bank of ``(seed, per_family)``, read from its cache file or drawn and stored there.

    Processes that ask at once wait for one another (a file lock beside the cache file): the bank is
    drawn once. A cache folder that cannot be written only costs the drawing, every time.

    Parameters
    ----------
    seed : int, default=0
        Seed of the procedural photographs.
    per_family : int, default=64
        Procedural textures per family.
    home : str or pathlib.Path, optional
        Cache root (default ``$REPSCOPE_HOME``).

    Returns
    -------
    TextureBank
        Identical to ``TextureBank(seed, per_family)``.
    """
    per_family = check_positive_int(per_family, "per_family")
    path = bank_cache_path(seed, per_family, home)
    bank = read_bank_cache(path, seed, per_family)
    if bank is not None:
        return bank
    from repscope.cache import exclusive_lock  # noqa: PLC0415

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(path))
        except OSError:  # no writable cache: draw it here
            return TextureBank(seed, per_family)
        bank = read_bank_cache(path, seed, per_family)  # another process may have stored it meanwhile
        if bank is None:
            bank = TextureBank(seed, per_family)
            with contextlib.suppress(OSError, RepscopeError):
                write_bank_cache(path, bank)
        return bank
