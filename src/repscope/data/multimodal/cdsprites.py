"""CdSprites+ (Sejnova et al., Sec. 3 and A.1): captioned 64x64x3 sprites over 5 levels, generated
on demand from ``(level, seed, split, index)`` by the published dataset's recipe.

The reference generator (``data_proc/cdSprites.py`` and ``config_level{1-5}.json`` of the reference
toolkit) filters the real dSprites grid and colours the chosen images; this module draws the same
grid points (with :mod:`repscope.data.dsprites`) and applies the same steps:

* **shape**: square, ellipse, heart (dSprites shape classes 0, 1, 2);
* **size** (level 2+): big = dSprites scale class 5 (1.0), small = class 0 (0.5); level 1 is big;
* **orientation**: any of dSprites' 40 orientation classes, uniformly (``linspace(0, 2 pi, 40)``);
* **centre**: levels 1-3 any dSprites position class 5-29 on each axis (the middle of the image);
  from level 4 the position word picks classes 1-3 and 5-9 (left / top; class 4 is not used) or 26-31
  (right / bottom) on each axis, so shapes sit near the named corner;
* **levels 1-2**: a white shape (255) on black, untextured;
* **colour** (level 3+): the shape's texture (:func:`~repscope.data.multimodal.textures.brighten` of a
  grey photograph, resized to 64x64) times the colour's RGB / 255 (red 192,64,0; green 10,107,60;
  blue 0,127,200; yellow 228,217,111; pink 255,0,255), times the shape mask, then min-max stretched to
  0-255 over the whole image (so the brightest channel of the shape reaches 255), on black;
* **background** (level 5): another texture, ``light`` (brightened as the shape's) or ``dark``
  (:func:`~repscope.data.multimodal.textures.darken`), pasted where the shape image is black (grey level
  0 by ``cv2``'s BGR-to-grey rule on the reference's channel order), then the whole image min-max
  stretched again.

Textures come from a :class:`~repscope.data.multimodal.textures.TextureBank`: procedural stand-ins for
the DTD photographs in six families (``texture_families`` picks some, e.g. to hold one out of a
classifier's training), or the user's photographs (``texture_dir``). ``jitter`` adds a
brightness / contrast change per image (an augmentation for training classifiers; off by default).

Balance: sample ``i`` belongs to block ``i // K`` of ``K`` consecutive samples (``K`` = the level's
attribute combinations: 3, 6, 30, 120, 240); each block holds every combination once, in a seeded
random order. Any set of whole blocks is exactly balanced, and any prefix is balanced to within one
block. (The reference draws a fixed number of images per combination, so it is balanced too.)

Determinism: every random number of sample ``i`` is a counter-based hash (SplitMix64) of
``(seed, level, split, i, k)``: sample ``i`` is the same bytes whether drawn alone, in a batch, in any
order or in any DataLoader worker. The splits ``train``, ``val`` and ``test`` are independent streams.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.dsprites import FACTOR_VALUES, MARGIN_PX
from repscope.data.dsprites import render as render_dsprites
from repscope.data.multimodal.attributes import (
    ATTRIBUTE_VALUES,
    COLOUR_RGB,
    DEFAULT_SIZES,
    VALIDATION_FRACTION,
    check_level,
    combination_count,
    combinations_to_table,
    compose_caption,
    level_attributes,
)
from repscope.data.multimodal.captions import encode_captions
from repscope.data.multimodal.textures import (
    DEFAULT_PER_FAMILY,
    IMAGE_SIZE,
    PHOTO_FAMILY,
    TEXTURE_FAMILIES,
    texture_bank,
)
from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

SPLITS: tuple[str, ...] = ("train", "val", "test")
TEST_SIZE = 10_000  # the paper's coherency test sets (A.2.3)
# the reference's mappings of words to dSprites classes (data_proc/cdSprites.py)
SIZE_SCALE_CLASSES: tuple[int, ...] = (5, 0)  # big = scale 1.0, small = scale 0.5
ORIENTATION_CLASSES = 40  # every orientation class of the grid
CENTRE_CLASSES: tuple[int, ...] = tuple(range(5, 30))  # no position word (levels 1-3)
NEAR_CLASSES: tuple[int, ...] = (1, 2, 3, 5, 6, 7, 8, 9)  # left (x) / top (y); the reference skips 4
FAR_CLASSES: tuple[int, ...] = tuple(range(26, 32))  # right (x) / bottom (y)
SHAPE_WHITE = 255
# cv2's BGR -> grey in 14-bit fixed point; the reference's arrays hold our R in cv2's "B" slot
_GREY_WEIGHTS = (1868, 9617, 4899)  # applied to our R, G, B
_DRAWS = 9  # uniforms per sample: orientation, x, y, texture family, texture, background family,
#             background texture, contrast, brightness


def default_size(level: int, split: str) -> int:
    """The paper's sizes (Table 5): 90% of 75k/120k/300k/600k/960k to train, 10% to validate;
    10,000 test samples.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    split : str
        ``"train"``, ``"val"`` or ``"test"`` (any other name is treated as ``"test"``).

    Returns
    -------
    int
        Number of samples.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    total = DEFAULT_SIZES[check_level(level)]
    if split == "train":
        return int(round(total * (1 - VALIDATION_FRACTION)))
    if split == "val":
        return int(round(total * VALIDATION_FRACTION))
    return TEST_SIZE


# --------------------------------------------------------------------------------------------
# counter-based random numbers: sample i's numbers depend on (key, i) only

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def stream_key(*parts: int) -> np.uint64:
    """One 64-bit key of a tuple of non-negative ints (numpy's SeedSequence mixing).

    Parameters
    ----------
    *parts : int
        Non-negative integers, e.g. ``(seed, level, split index)``.

    Returns
    -------
    numpy.uint64
        The key; equal parts give equal keys on every platform.
    """
    return np.uint64(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, np.uint64)[0])


def counter_uniforms(key: np.uint64, counters: np.ndarray, draws: int) -> np.ndarray:
    """``(N, draws)`` uniforms in [0, 1): a hash of ``(key, counter, k)``, 53 random bits each.

    ``base = splitmix64(splitmix64(counter XOR key))``, then draw ``k`` is
    ``splitmix64(base + k * 0x9E3779B97F4A7C15) >> 11`` divided by ``2**53``. Sample ``counter``'s
    numbers depend on ``(key, counter)`` only, not on the other counters of the call.

    Parameters
    ----------
    key : numpy.uint64
        Stream key (:func:`stream_key`).
    counters : array-like of int, shape (N,)
        Non-negative counters, e.g. sample indices.
    draws : int
        Uniforms per counter.

    Returns
    -------
    numpy.ndarray
        float64 ``(N, draws)`` in [0, 1).
    """
    counters = np.asarray(counters, dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = _splitmix64(_splitmix64(counters ^ key))
        words = _splitmix64(base[:, None] + np.arange(draws, dtype=np.uint64)[None, :] * _GOLDEN)
    return (words >> np.uint64(11)).astype(np.float64) * (1.0 / 2.0**53)


# --------------------------------------------------------------------------------------------


RECIPE = "published"  # the reference generator's recipe (module docstring); recorded in dataset.json


def _check_families(families: Any, texture_dir: str | None) -> tuple[str, ...] | None:
    if families is None:
        return None
    if isinstance(families, str):
        families = (families,)
    names = tuple(str(name) for name in families)
    allowed = (PHOTO_FAMILY,) if texture_dir is not None else TEXTURE_FAMILIES
    if not names or any(name not in allowed for name in names) or len(set(names)) != len(names):
        raise InvalidArgumentError(
            f"texture_families: must be distinct names among {', '.join(allowed)}, got {list(names)!r}"
        )
    return names


def _choose(options: Any, draw: np.ndarray) -> np.ndarray:
    """One of ``options`` per uniform ``draw`` in [0, 1), each option equally likely."""
    options = np.asarray(options)
    return options[np.minimum((draw * len(options)).astype(np.int64), len(options) - 1)]


def _pick(far: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """dSprites position classes near the named edge: NEAR_CLASSES where ``far`` is 0, FAR_CLASSES where 1."""
    return np.where(far == 1, _choose(FAR_CLASSES, draw), _choose(NEAR_CLASSES, draw))


def colour_shapes(masks: np.ndarray, textures: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Textured, coloured shapes on black, min-max stretched: the reference's ``make_textured_shape``.

    ``image = stretch(mask * texture * rgb / 255)`` per image, over all three channels together; the
    minimum is the black outside the shape, so ``image = rint(x * 255 / max(x))`` and the shape's
    brightest channel reaches 255. Computed in float32 (the reference: float64; rounding may differ by
    one grey level in rare pixels).

    Parameters
    ----------
    masks : numpy.ndarray
        bool ``(N, 64, 64)``, True on the shape.
    textures : numpy.ndarray
        float ``(N, 64, 64)`` grey shape textures, 125-255 (:attr:`TextureBank.shape`).
    colours : numpy.ndarray
        int ``(N,)`` colour classes (``ATTRIBUTE_VALUES["colour"]`` order).

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, 64, 64, 3)`` RGB.
    """
    rgb = np.asarray([COLOUR_RGB[name] for name in ATTRIBUTE_VALUES["colour"]], dtype=np.float32) / 255.0
    shaded = np.where(masks, textures, 0.0).astype(np.float32)[..., None] * rgb[np.asarray(colours)][:, None, None, :]
    peak = shaded.reshape(len(shaded), -1).max(1)
    scale = np.where(peak > 0, 255.0 / np.maximum(peak, 1e-12), 0.0).astype(np.float32)
    return np.rint(shaded * scale[:, None, None, None]).astype(np.uint8)


def paste_background(shapes: np.ndarray, backgrounds: np.ndarray) -> np.ndarray:
    """Grey backgrounds where the shape image is black, then each image min-max stretched.

    The reference's ``colorize_background``: a pixel is background when its grey level is 0 by
    ``cv2.cvtColor(..., COLOR_BGR2GRAY)`` applied to the reference's array, whose first channel holds
    our red (fixed point: ``(1868 R + 9617 G + 4899 B + 8192) >> 14``); then
    :func:`~repscope.data.multimodal.textures.stretch` of the whole image (every channel together).

    Parameters
    ----------
    shapes : numpy.ndarray
        uint8 ``(N, 64, 64, 3)`` RGB shapes on black (:func:`colour_shapes`).
    backgrounds : numpy.ndarray
        uint8 ``(N, 64, 64)`` grey backgrounds.

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, 64, 64, 3)`` RGB, each image stretched to 0-255.
    """
    grey = sum(shapes[..., k].astype(np.int32) * weight for k, weight in enumerate(_GREY_WEIGHTS))
    images = np.where(((grey + 8192) >> 14 == 0)[..., None], backgrounds[..., None], shapes)
    flat = images.reshape(len(images), -1)
    low = flat.min(1).astype(np.float32)
    span = flat.max(1).astype(np.float32) - low
    scale = np.where(span > 0, 255.0 / np.maximum(span, 1.0), 0.0).astype(np.float32)
    # per image, a table of the 256 stretched levels (the same rint as stretching every pixel)
    tables = np.clip(np.rint((np.arange(256, dtype=np.float32)[None, :] - low[:, None]) * scale[:, None]), 0, 255)
    stretched = np.take_along_axis(tables.astype(np.uint8), flat.astype(np.intp), axis=1)
    return stretched.reshape(images.shape)


def jitter_images(images: np.ndarray, contrast: np.ndarray, brightness: np.ndarray) -> np.ndarray:
    """``clip(rint(contrast (x - 127.5) + 127.5 + brightness), 0, 255)`` per image.

    Parameters
    ----------
    images : numpy.ndarray
        uint8 ``(N, H, W, C)``.
    contrast, brightness : numpy.ndarray
        float ``(N,)``: the factor around mid-grey and the shift, in grey levels.

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``images``.
    """
    factor = np.asarray(contrast, dtype=np.float32)[:, None, None, None]
    shift = np.asarray(brightness, dtype=np.float32)[:, None, None, None]
    return np.clip(np.rint(factor * (images.astype(np.float32) - 127.5) + 127.5 + shift), 0, 255).astype(np.uint8)


class CdSpritesPlus:
    """One split of one CdSprites+ level: ``gen[i] -> (image uint8 (64, 64, 3) RGB, caption, attributes (L,))``.

    ``size`` defaults to the paper's (``default_size``); textures are procedural from ``texture_seed``
    (all six families, or ``texture_families``) unless ``texture_dir`` names a folder of photographs.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; ``L = level`` attributes vary.
    size : int, optional
        Number of samples (>= 1); default :func:`default_size` of the level and split.
    seed : int, default=0
        Non-negative seed of the samples; with ``level`` and ``split`` it decides every sample.
    split : {"train", "val", "test"}, default="train"
        Independent streams of samples.
    texture_seed : int, default=0
        Seed of the procedural texture bank (levels 3-5).
    texture_dir : str or pathlib.Path, optional
        Folder of photographs to make the textures from (see
        :func:`~repscope.data.multimodal.textures.load_photos`), each used whole, as the reference uses DTD.
    texture_families : sequence of str, optional
        The procedural families to draw textures from (names of
        :data:`~repscope.data.multimodal.textures.TEXTURE_FAMILIES`); default all. Each sample picks a
        family uniformly, then one of its textures.
    jitter : float, default=0.0
        Brightness / contrast augmentation in [0, 1): each image becomes
        ``clip(rint(c (x - 127.5) + 127.5 + b), 0, 255)`` with ``c ~ U[1 - jitter, 1 + jitter]`` and
        ``b ~ U[-64 jitter, 64 jitter]`` grey levels. 0 gives the published recipe's images.

    Attributes
    ----------
    attributes : tuple of str
        The level's attributes, the columns of attribute tables.
    combinations : int
        Distinct attribute combinations of the level (the balance block length ``K``).

    Raises
    ------
    InvalidArgumentError
        When ``level``, ``split``, ``size``, ``seed``, ``texture_families`` or ``jitter`` is invalid.
    """

    def __init__(
        self,
        level: int,
        size: int | None = None,
        seed: int = 0,
        split: str = "train",
        texture_seed: int = 0,
        texture_dir: str | Path | None = None,
        texture_families: Any = None,
        jitter: float = 0.0,
    ) -> None:
        self.level = check_level(level)
        if split not in SPLITS:
            raise InvalidArgumentError(f"split: must be one of {', '.join(SPLITS)}, got {split!r}")
        self.split = split
        self.size = default_size(self.level, split) if size is None else check_positive_int(size, "size")
        self.seed, self.texture_seed = int(seed), int(texture_seed)
        if self.seed < 0:
            raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
        self.texture_dir = None if texture_dir is None else str(Path(texture_dir).resolve())
        self.texture_families = _check_families(texture_families, self.texture_dir)
        if not 0.0 <= float(jitter) < 1.0:
            raise InvalidArgumentError(f"jitter: must lie in [0, 1), got {jitter!r}")
        self.jitter = float(jitter)
        self.attributes = level_attributes(self.level)
        self.combinations = combination_count(self.level)
        self._key = stream_key(self.seed, self.level, SPLITS.index(split))
        self._order_key = stream_key(self.seed, self.level, SPLITS.index(split), 1)
        self._textures = None
        self._choices: list[np.ndarray] | None = None

    @property
    def params(self) -> dict[str, Any]:
        """The arguments that decide every sample: ``level``, ``size``, ``seed``, ``split``,
        ``texture_seed``, ``texture_dir`` (an absolute path or None), ``texture_families`` (a list or
        None), ``textures_per_family``, ``jitter`` and the ``recipe`` followed."""
        return {
            "level": self.level,
            "size": self.size,
            "seed": self.seed,
            "split": self.split,
            "texture_seed": self.texture_seed,
            "texture_dir": self.texture_dir,
            "texture_families": None if self.texture_families is None else list(self.texture_families),
            "textures_per_family": DEFAULT_PER_FAMILY,
            "jitter": self.jitter,
            "recipe": RECIPE,
        }

    @property
    def textures(self):
        """The :class:`~repscope.data.multimodal.textures.TextureBank`, built on first use."""
        if self._textures is None:  # built on first use, once per process (workers included)
            self._textures = texture_bank(self.texture_seed, texture_dir=self.texture_dir)
        return self._textures

    def _texture_choices(self) -> list[np.ndarray]:
        """Per usable family, the bank indices of its textures."""
        if self._choices is None:
            bank = self.textures
            names = self.texture_families or bank.family_names
            self._choices = [bank.indices((name,)) for name in names]
        return self._choices

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[np.ndarray, str, np.ndarray]:
        images, captions, table = self.batch([index])
        return images[0], captions[0], table[0]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_textures"] = None  # workers rebuild the bank from its seed instead of pickling it
        state["_choices"] = None
        return state

    def _check_indices(self, indices: Any) -> np.ndarray:
        indices = np.atleast_1d(np.asarray(indices))
        if indices.dtype.kind not in "iu":
            raise InvalidArgumentError(f"indices: must be integers, got dtype {indices.dtype}")
        indices = indices.astype(np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= self.size):
            raise InvalidArgumentError(f"indices: must lie in [0, {self.size}), got {indices.min()}..{indices.max()}")
        return indices

    def attribute_table(self, indices: Any) -> np.ndarray:
        """Attribute classes ``(N, L)`` of samples: the block's seeded permutation of combinations.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Sample indices in ``[0, size)``.

        Returns
        -------
        numpy.ndarray
            int64 ``(N, L)`` attribute table (columns :attr:`attributes`).

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        indices = self._check_indices(indices)
        k = self.combinations
        blocks, slots = np.divmod(indices, k)
        combos = np.empty(len(indices), dtype=np.int64)
        for block in np.unique(blocks):
            order = np.argsort(counter_uniforms(self._order_key, block * k + np.arange(k), 1)[:, 0], kind="stable")
            rows = blocks == block
            combos[rows] = order[slots[rows]]
        return combinations_to_table(self.level, combos)

    def factors(self, indices: Any) -> dict[str, np.ndarray]:
        """Every factor of the samples: the attribute classes and the nuisance factors.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Sample indices in ``[0, size)``.

        Returns
        -------
        dict of str to numpy.ndarray
            ``(N,)`` arrays: one int64 class column per attribute of the level (named as
            ``ATTRIBUTES``); the dSprites grid point drawn, ``scale_class``, ``orientation_class``
            (0-39), ``posX_class`` and ``posY_class`` (0-31; y grows downwards); the same as values,
            ``orientation`` float64 radians, ``centre_x`` and ``centre_y`` float64 pixels of the 64x64
            image from its top-left corner; ``texture`` and ``background_texture`` int64 bank indices
            (-1 below level 3, resp. 5) with their ``texture_family`` and ``background_family`` (index
            into the bank's family names, -1 when untextured); ``contrast`` and ``brightness`` float64
            (1 and 0 without jitter).

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        indices = self._check_indices(indices)
        table = self.attribute_table(indices)
        n = len(indices)
        column = dict(zip(self.attributes, table.T))
        u = counter_uniforms(self._key, indices, _DRAWS)
        size = column.get("size", np.zeros(n, dtype=np.int64))
        scale_class = np.asarray(SIZE_SCALE_CLASSES)[size]
        orientation_class = _choose(np.arange(ORIENTATION_CLASSES), u[:, 0])
        if "position" in column:  # near the named corner
            vertical, horizontal = np.divmod(column["position"], 2)  # top left, top right, bottom left, bottom right
            pos_x = _pick(horizontal, u[:, 1])
            pos_y = _pick(vertical, u[:, 2])
        else:
            pos_x, pos_y = _choose(CENTRE_CLASSES, u[:, 1]), _choose(CENTRE_CLASSES, u[:, 2])
        span = IMAGE_SIZE - 2.0 * MARGIN_PX
        none = np.full(n, -1, dtype=np.int64)
        texture, texture_family = self._draw_textures(u[:, 3], u[:, 4]) if self.level >= 3 else (none, none)
        background, background_family = (
            self._draw_textures(u[:, 5], u[:, 6]) if self.level >= 5 else (none.copy(), none.copy())
        )
        out = {name: column[name] for name in self.attributes}
        out.update(
            {
                "scale_class": scale_class,
                "orientation_class": orientation_class,
                "posX_class": pos_x,
                "posY_class": pos_y,
                "orientation": FACTOR_VALUES["orientation"][orientation_class],
                "centre_x": MARGIN_PX + FACTOR_VALUES["posX"][pos_x] * span,
                "centre_y": MARGIN_PX + FACTOR_VALUES["posY"][pos_y] * span,
                "texture": texture,
                "texture_family": texture_family,
                "background_texture": background,
                "background_family": background_family,
                "contrast": 1.0 + self.jitter * (2.0 * u[:, 7] - 1.0),
                "brightness": 64.0 * self.jitter * (2.0 * u[:, 8] - 1.0),
            }
        )
        return out

    def _draw_textures(self, family_draw: np.ndarray, texture_draw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A family uniformly, then one of its textures uniformly: (bank index, family index)."""
        choices = self._texture_choices()
        family = _choose(np.arange(len(choices)), family_draw)
        index = np.empty(len(family), dtype=np.int64)
        for k, options in enumerate(choices):
            rows = family == k
            index[rows] = _choose(options, texture_draw[rows])
        return index, self.textures.family[index]

    def render(self, factors: dict[str, np.ndarray]) -> np.ndarray:
        """uint8 RGB images ``(N, 64, 64, 3)`` of a factors table (as :meth:`factors` returns).

        Parameters
        ----------
        factors : dict of str to numpy.ndarray
            ``(N,)`` factor columns as :meth:`factors` returns them for this level.

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, 64, 64, 3)`` RGB, 0-255: a white shape on black (levels 1-2), a textured shape on
            black (3-4) or on a textured background (5), by the recipe of the module docstring.
        """
        n = len(factors["shape"])
        grid = np.stack(
            [
                np.zeros(n, dtype=np.int64),
                factors["shape"],
                factors["scale_class"],
                factors["orientation_class"],
                factors["posX_class"],
                factors["posY_class"],
            ],
            axis=1,
        )
        masks = render_dsprites(grid).astype(bool)  # (N, 64, 64): the dSprites images the reference filters
        if self.level < 3:
            images = np.repeat((masks * np.uint8(SHAPE_WHITE))[..., None], 3, axis=-1)
        else:
            images = colour_shapes(masks, self.textures.shape[factors["texture"]], factors["colour"])
            if self.level >= 5:
                bank = self.textures
                backgrounds = np.where(
                    (factors["background"] == ATTRIBUTE_VALUES["background"].index("dark"))[:, None, None],
                    bank.dark[factors["background_texture"]],
                    bank.light[factors["background_texture"]],
                )
                images = paste_background(images, backgrounds)
        if self.jitter > 0:
            images = jitter_images(images, factors["contrast"], factors["brightness"])
        return images

    def batch(self, indices: Any) -> tuple[np.ndarray, list[str], np.ndarray]:
        """``(images uint8 (N, 64, 64, 3), captions, attribute table (N, L))`` of ``indices``.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Sample indices in ``[0, size)``.

        Returns
        -------
        images : numpy.ndarray
            uint8 ``(N, 64, 64, 3)`` RGB, 0-255 (channels last).
        captions : list of str
            ``N`` captions, e.g. ``"small pink heart at bottom left on dark"``.
        table : numpy.ndarray
            int64 ``(N, L)`` attribute table.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        factors = self.factors(indices)
        table = np.stack([factors[name] for name in self.attributes], axis=1)
        captions = [compose_caption(self.level, row) for row in table.tolist()]
        return self.render(factors), captions, table

    # -- the framework's generator interface (repscope.data.datasets.SampleGenerator) --------------

    name = "cdsprites"

    @property
    def factor_names(self) -> tuple[str, ...]:
        return self.attributes

    @property
    def factor_sizes(self) -> tuple[int, ...]:
        return tuple(len(ATTRIBUTE_VALUES[name]) for name in self.attributes)

    def sample(self, indices: Any, fields: Any = None) -> dict[str, np.ndarray]:
        """The fields of samples ``indices``: ``image`` uint8 ``(N, 3, 64, 64)`` RGB, ``text`` float32
        ``(N, 45, 27)`` one-hot caption, ``mask`` bool ``(N, 45)``, ``attributes`` int64 ``(N, L)``,
        one int64 column per attribute, ``index``; ``fields`` picks some (the others are not made).

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Sample indices in ``[0, size)``.
        fields : sequence of str, optional
            Names among ``image``, ``text``, ``mask``, ``attributes``, ``index`` and the level's
            attributes (:attr:`attributes`); default all.

        Returns
        -------
        dict of str to numpy.ndarray
            ``image`` uint8 ``(N, 3, 64, 64)`` RGB 0-255 (channels first), ``text`` float32 ``(N, 45, 27)``
            one-hot caption characters, ``mask`` bool ``(N, 45)`` (True on characters), ``attributes`` int64
            ``(N, L)``, ``index`` int64 ``(N,)`` and one int64 ``(N,)`` class column per attribute; in the
            order of ``fields`` when given.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range, or ``fields`` names a field the level lacks.
        """
        indices = self._check_indices(indices)
        wanted = set(fields) if fields is not None else None
        factors = self.factors(indices)
        table = np.stack([factors[name] for name in self.attributes], axis=1)
        out: dict[str, np.ndarray] = {"attributes": table, "index": indices}
        out.update({name: table[:, k] for k, name in enumerate(self.attributes)})
        if wanted is None or "image" in wanted:
            out["image"] = np.ascontiguousarray(self.render(factors).transpose(0, 3, 1, 2))
        if wanted is None or wanted & {"text", "mask"}:
            out["text"], out["mask"] = encode_captions([compose_caption(self.level, row) for row in table.tolist()])
        if wanted is None:
            return out
        missing = sorted(wanted - set(out))
        if missing:
            raise InvalidArgumentError(f"fields: CdSprites+ level {self.level} has no {', '.join(missing)}")
        return {name: out[name] for name in fields}

    def batches(self, batch_size: int = 2048, start: int = 0, stop: int | None = None):
        """``(indices, images, captions, table, factors)`` in index order, ``batch_size`` at a time.

        Parameters
        ----------
        batch_size : int, default=2048
            Samples per batch.
        start : int, default=0
            First index.
        stop : int, optional
            One past the last index; default (and at most) :attr:`size`.

        Yields
        ------
        indices : numpy.ndarray
            int64 ``(B,)``.
        images : numpy.ndarray
            uint8 ``(B, 64, 64, 3)`` RGB.
        captions : list of str
            ``B`` captions.
        table : numpy.ndarray
            int64 ``(B, L)`` attribute table.
        factors : dict of str to numpy.ndarray
            As :meth:`factors` returns.
        """
        stop = self.size if stop is None else min(int(stop), self.size)
        for first in range(int(start), stop, int(batch_size)):
            indices = np.arange(first, min(first + int(batch_size), stop))
            factors = self.factors(indices)
            table = np.stack([factors[name] for name in self.attributes], axis=1)
            captions = [compose_caption(self.level, row) for row in table.tolist()]
            yield indices, self.render(factors), captions, table, factors
