"""CdSprites+ (Sejnova et al., Sec. 3 and A.1): captioned 64x64x3 sprites over 5 levels, generated
on demand from ``(level, seed, split, index)``.

Level L varies the first L attributes of :data:`~repscope.data.sprites.attributes.ATTRIBUTES`:

1. shape (square, ellipse, heart), white, big, anywhere, on black;
2. + size: big = dSprites scale 1.0, small = 0.5 (half-sizes 9 and 4.5 px);
3. + colour: the shape is textured in red, green, blue, yellow or pink (RGB 192,64,0 / 10,107,60 /
   0,127,200 / 228,217,111 / 255,0,255);
4. + position: the whole shape lies inside the named quadrant (top/bottom, left/right);
5. + background: a dark or light textured background instead of black.

Nuisance factors, drawn per sample: orientation uniform on [0, 2 pi) (shapes rotate freely),
centre uniform over where the whole shape fits (the image, or its quadrant from level 4), texture
(one of the bank's per-colour textures and a random 64x64 window of it). Shapes are drawn like
dSprites (a pixel is on when its centre lies inside the shape, no anti-aliasing).

Balance: sample ``i`` belongs to block ``i // K`` of ``K`` consecutive samples (``K`` = the level's
attribute combinations: 3, 6, 30, 120, 240); each block holds every combination once, in a seeded
random order. Any set of whole blocks is exactly balanced, and any prefix is balanced to within one
block.

Determinism: every random number of sample ``i`` is a counter-based hash (SplitMix64) of
``(seed, level, split, i, k)``: sample ``i`` is the same bytes whether drawn alone, in a batch, in any
order or in any DataLoader worker. The splits ``train``, ``val`` and ``test`` are independent streams.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.sprites.attributes import (
    ATTRIBUTE_VALUES,
    ATTRIBUTES,
    DEFAULT_SIZES,
    VALIDATION_FRACTION,
    check_level,
    combination_count,
    combinations_to_table,
    compose_caption,
    level_attributes,
)
from repscope.data.sprites.captions import encode_captions
from repscope.data.sprites.dsprites import SPRITE_RADIUS_PX, extent_px, shape_masks
from repscope.data.sprites.textures import IMAGE_SIZE, TEXTURE_SIZE, texture_bank
from repscope.errors import InvalidArgumentError

SPLITS: tuple[str, ...] = ("train", "val", "test")
SIZE_SCALES: tuple[float, ...] = (1.0, 0.5)  # big, small (the ends of the dSprites scale range)
TEST_SIZE = 10_000  # the paper's coherency test sets (A.2.3)
PATCH_PX = int(np.ceil(2 * extent_px(SPRITE_RADIUS_PX))) + 2
SHAPE_WHITE = 255
_DRAWS = 9  # uniforms per sample: angle, x, y, texture, texture window y/x, background, window y/x


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


class CdSpritesPlus:
    """One split of one CdSprites+ level: ``gen[i] -> (image uint8 (64, 64, 3) RGB, caption, attributes (L,))``.

    ``size`` defaults to the paper's (``default_size``); ``textures`` are procedural from
    ``texture_seed`` unless ``texture_dir`` names a folder of photographs.

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
        :func:`~repscope.data.sprites.textures.photo_patterns`).

    Attributes
    ----------
    attributes : tuple of str
        The level's attributes, the columns of attribute tables.
    combinations : int
        Distinct attribute combinations of the level (the balance block length ``K``).

    Raises
    ------
    InvalidArgumentError
        When ``level``, ``split``, ``size`` or ``seed`` is invalid.
    """

    def __init__(
        self,
        level: int,
        size: int | None = None,
        seed: int = 0,
        split: str = "train",
        texture_seed: int = 0,
        texture_dir: str | Path | None = None,
    ) -> None:
        self.level = check_level(level)
        if split not in SPLITS:
            raise InvalidArgumentError(f"split: must be one of {', '.join(SPLITS)}, got {split!r}")
        self.split = split
        self.size = default_size(self.level, split) if size is None else int(size)
        if self.size < 1 or self.size != size and size is not None:
            raise InvalidArgumentError(f"size: must be a positive integer, got {size!r}")
        self.seed, self.texture_seed = int(seed), int(texture_seed)
        if self.seed < 0:
            raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
        self.texture_dir = None if texture_dir is None else str(Path(texture_dir).resolve())
        self.attributes = level_attributes(self.level)
        self.combinations = combination_count(self.level)
        self._key = stream_key(self.seed, self.level, SPLITS.index(split))
        self._order_key = stream_key(self.seed, self.level, SPLITS.index(split), 1)
        self._textures = None

    @property
    def params(self) -> dict[str, Any]:
        """The arguments that decide every sample: ``level``, ``size``, ``seed``, ``split``,
        ``texture_seed`` and ``texture_dir`` (an absolute path or None)."""
        return {
            "level": self.level,
            "size": self.size,
            "seed": self.seed,
            "split": self.split,
            "texture_seed": self.texture_seed,
            "texture_dir": self.texture_dir,
        }

    @property
    def textures(self):
        """The :class:`~repscope.data.sprites.textures.TextureBank` (96x96 RGB uint8 textures), built on
        first use."""
        if self._textures is None:  # built on first use, once per process (workers included)
            self._textures = texture_bank(self.texture_seed, texture_dir=self.texture_dir)
        return self._textures

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[np.ndarray, str, np.ndarray]:
        images, captions, table = self.batch([index])
        return images[0], captions[0], table[0]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_textures"] = None  # workers rebuild the bank from its seed instead of pickling it
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
        """Every factor of the samples: attribute classes (named as ``ATTRIBUTES``) and the nuisance
        factors ``orientation`` (radians), ``centre_x`` / ``centre_y`` (pixels from the top-left
        corner), ``texture`` / ``background_texture`` (bank index, -1 when untextured) and the
        texture windows' offsets.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Sample indices in ``[0, size)``.

        Returns
        -------
        dict of str to numpy.ndarray
            ``(N,)`` arrays: one int64 class column per attribute of the level; ``orientation`` float64
            in [0, 2 pi) radians; ``centre_x``, ``centre_y`` float64 pixels of the 64x64 image (x to the
            right, y down); ``texture`` and ``background_texture`` int64 index into the bank's textures of
            the colour or background (-1 below level 3, resp. 5); ``texture_top``, ``texture_left``,
            ``background_top``, ``background_left`` int64 offsets in pixels (0-32) of the 64x64 window of
            the 96x96 texture (0 when untextured).

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        indices = self._check_indices(indices)
        table = self.attribute_table(indices)
        n = len(indices)
        column = dict(zip(self.attributes, table.T))
        size = column.get("size", np.zeros(n, dtype=np.int64))
        u = counter_uniforms(self._key, indices, _DRAWS)
        radius = np.asarray(SIZE_SCALES)[size] * SPRITE_RADIUS_PX
        reach = extent_px(radius)
        if "position" in column:  # the whole shape inside its quadrant
            vertical, horizontal = np.divmod(column["position"], 2)  # top left, top right, bottom left, bottom right
            low_x, low_y = horizontal * (IMAGE_SIZE / 2), vertical * (IMAGE_SIZE / 2)
            span = IMAGE_SIZE / 2
        else:
            low_x = low_y = np.zeros(n)
            span = IMAGE_SIZE
        centre_x = low_x + reach + u[:, 1] * (span - 2 * reach)
        centre_y = low_y + reach + u[:, 2] * (span - 2 * reach)
        per_colour = self.textures.per_colour if self.level >= 3 else 0
        windows = TEXTURE_SIZE - IMAGE_SIZE + 1
        textured = self.level >= 3
        backed = self.level >= 5
        out = {name: column[name] for name in self.attributes}
        out.update(
            {
                "orientation": 2 * np.pi * u[:, 0],
                "centre_x": centre_x,
                "centre_y": centre_y,
                "texture": np.floor(u[:, 3] * per_colour).astype(np.int64) if textured else np.full(n, -1),
                "texture_top": np.floor(u[:, 4] * windows).astype(np.int64)
                if textured
                else np.zeros(n, dtype=np.int64),
                "texture_left": np.floor(u[:, 5] * windows).astype(np.int64)
                if textured
                else np.zeros(n, dtype=np.int64),
                "background_texture": np.floor(u[:, 6] * self.textures.per_colour).astype(np.int64)
                if backed
                else np.full(n, -1),
                "background_top": np.floor(u[:, 7] * windows).astype(np.int64)
                if backed
                else np.zeros(n, dtype=np.int64),
                "background_left": np.floor(u[:, 8] * windows).astype(np.int64)
                if backed
                else np.zeros(n, dtype=np.int64),
            }
        )
        return out

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
            black (3-4) or on a textured background (5).
        """
        n = len(factors["shape"])
        size = factors.get("size", np.zeros(n, dtype=np.int64))
        radius = np.asarray(SIZE_SCALES)[size] * SPRITE_RADIUS_PX
        masks, top, left = shape_masks(
            factors["shape"], radius, factors["orientation"], factors["centre_x"], factors["centre_y"], PATCH_PX
        )
        images = np.zeros((n, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
        p = PATCH_PX
        if self.level < 3:
            for k in range(n):
                images[k, top[k] : top[k] + p, left[k] : left[k] + p][masks[k]] = SHAPE_WHITE
            return images
        bank = self.textures
        colour, texture = factors["colour"], factors["texture"]
        t_top, t_left = factors["texture_top"], factors["texture_left"]
        for k in range(n):
            if self.level >= 5:
                b_top, b_left = factors["background_top"][k], factors["background_left"][k]
                images[k] = bank.backgrounds[
                    factors["background"][k],
                    factors["background_texture"][k],
                    b_top : b_top + IMAGE_SIZE,
                    b_left : b_left + IMAGE_SIZE,
                ]
            r, c = top[k], left[k]
            rows, cols = t_top[k] + r, t_left[k] + c
            fill = bank.colours[colour[k], texture[k], rows : rows + p, cols : cols + p]
            images[k, r : r + p, c : c + p][masks[k]] = fill[masks[k]]
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


ATTRIBUTE_COLUMNS = ATTRIBUTES  # attribute class columns of a factors table, in level order
