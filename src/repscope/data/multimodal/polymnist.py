"""PolyMNIST (Sutter et al. 2021, "Generalized Multimodal ELBO", Sec. 5): five image modalities that
share only the digit class, generated on demand from ``(parameters, seed, split, index)``.

A tuple has ``M`` modalities ``m0 .. m{M-1}`` (5 in the paper), each a 28x28 RGB image. Modality ``m``
has its own background image; tuple ``i`` of a split is made as the reference script
(``make_polymnist_dataset.py`` of the paper's code) makes one:

1. the class ``c``: the class of a uniformly drawn digit of the source split (so the classes keep the
   source's frequencies);
2. per modality, its own digit of class ``c``: the ``M`` digits of a tuple are ``M`` distinct images of
   that class, drawn uniformly without replacement (the reference pairs ``M`` random permutations of
   the digits by class, which rarely repeats a digit in a tuple on full MNIST; here it never does);
3. per modality, a random 28x28 crop of that modality's background, its top-left corner uniform over
   every position where the crop fits (``0 .. H - 28`` rows, ``0 .. W - 28`` columns);
4. the digit is binarised (pixel on where its grey level is at least 128, the reference's ``> 0.5``
   after ``ToTensor``) and its pixels drawn in the inverted background colour: ``255 - crop`` where the
   digit is on, ``crop`` elsewhere, in every channel.

Backgrounds: the paper used five photographs. None are shipped here, so by default each modality's
background is a procedural texture of the CdSprites+ texture generator
(:func:`~repscope.data.multimodal.textures.procedural_photo`, 256x256 pixels), modality ``m`` of family
``TEXTURE_FAMILIES[m % 6]`` (noise, stripes, dots, checks, blotches for the five), coloured as a
duotone: grey level ``g`` becomes ``low + g / 255 (high - low)`` per channel, ``low`` drawn in 0-115
and ``high`` in 140-255 per channel; background ``m`` depends on ``(seed, m)`` only. With
``background_dir`` the backgrounds are the user's images, as in the paper: the first ``M`` image files
of the folder sorted by name, read as RGB with Pillow, each at least 28x28.

Sizes and streaming: the splits are :class:`~repscope.data.datasets.GeneratorSplit` s over a
:class:`PolyMNIST` generator, which holds the source digits and the backgrounds (about 1 MB for
``mnist-sample``, 55 MB for Fashion-MNIST) and composes a batch of tuples per call from counter-based
random numbers (:func:`~repscope.data.multimodal.cdsprites.counter_uniforms`): tuple ``i`` is the same
bytes in any batch, any order and any DataLoader worker, and a split may hold more tuples than its
source has digits. ``train`` draws from the source's training digits, ``test`` from its test digits,
``val`` (when ``val_size`` is given) from the training digits as an independent stream.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.datasets import Dataset, FieldSpec, GeneratorSplit
from repscope.data.datasets import _check_indices as check_indices
from repscope.data.imagefile import read_image
from repscope.data.morpho.training_sets import load_digits
from repscope.data.multimodal.cdsprites import counter_uniforms, stream_key
from repscope.data.multimodal.textures import MAX_PHOTO_PIXELS, PHOTO_SUFFIXES, TEXTURE_FAMILIES, procedural_photo
from repscope.errors import InvalidArgumentError, SourceNotFoundError
from repscope.validation import check_positive_int

SIDE = 28  # pixels of a digit and of a modality's image
DIGIT_THRESHOLD = 128  # a digit pixel is on at this grey level or above
BACKGROUND_SIZE = 256  # side of a procedural background, pixels
DEFAULT_MODALITIES = 5
SPLIT_CODES = {"train": 0, "val": 1, "test": 2}
_DUOTONE_LOW = (0, 115)  # grey level 0 maps to a colour with channels in this range
_DUOTONE_HIGH = (140, 255)  # grey level 255 maps to one in this range


def modality_names(modalities: int) -> tuple[str, ...]:
    """The field names of the modalities: ``m0``, ``m1``, ...

    Parameters
    ----------
    modalities : int
        Number of modalities.

    Returns
    -------
    tuple of str
        ``("m0", ..., "m{modalities-1}")``.
    """
    return tuple(f"m{k}" for k in range(int(modalities)))


# --------------------------------------------------------------------------------------------
# backgrounds


def procedural_background(index: int, seed: int = 0, size: int = BACKGROUND_SIZE) -> np.ndarray:
    """Background ``index`` of the procedural set: a CdSprites+ texture coloured as a duotone.

    The grey texture is :func:`~repscope.data.multimodal.textures.procedural_photo` of family
    ``TEXTURE_FAMILIES[index % 6]``; grey level ``g`` becomes ``rint(low + g / 255 (high - low))`` per
    channel, with ``low`` uniform in 0-115 and ``high`` in 140-255 per channel, so the digit's inverted
    colour always differs from the background's. Depends on ``(seed, index, size)`` only.

    Parameters
    ----------
    index : int
        The modality (>= 0).
    seed : int, default=0
        Seed of the texture and its colours.
    size : int, default=256
        Side of the background, in pixels (>= 28).

    Returns
    -------
    numpy.ndarray
        uint8 ``(size, size, 3)`` RGB.

    Raises
    ------
    InvalidArgumentError
        When ``index`` is negative or ``size`` is below 28.
    """
    if int(index) < 0:
        raise InvalidArgumentError(f"index: must be >= 0, got {index!r}")
    if int(size) < SIDE:
        raise InvalidArgumentError(f"size: a background needs at least {SIDE} pixels a side, got {size!r}")
    rng = np.random.default_rng([int(seed), 28_561, int(index)])
    grey = procedural_photo(TEXTURE_FAMILIES[int(index) % len(TEXTURE_FAMILIES)], rng, int(size))
    low = rng.uniform(*_DUOTONE_LOW, size=3)
    high = rng.uniform(*_DUOTONE_HIGH, size=3)
    colour = low + (grey[..., None].astype(np.float64) / 255.0) * (high - low)
    return np.clip(np.rint(colour), 0, 255).astype(np.uint8)


@lru_cache(maxsize=8)
def _procedural_backgrounds(modalities: int, seed: int) -> tuple[np.ndarray, ...]:
    backgrounds = tuple(procedural_background(m, seed) for m in range(modalities))
    for background in backgrounds:
        background.flags.writeable = False  # shared by every dataset of these arguments
    return backgrounds


def load_backgrounds(background_dir: str | Path, modalities: int = DEFAULT_MODALITIES) -> list[np.ndarray]:
    """The first ``modalities`` images of ``background_dir`` (sorted by file name) as RGB arrays.

    Files with a suffix in :data:`~repscope.data.multimodal.textures.PHOTO_SUFFIXES` count as images
    (subfolders are not read); each is read with Pillow and converted to RGB.

    Parameters
    ----------
    background_dir : str or pathlib.Path
        Folder of background images.
    modalities : int, default=5
        How many backgrounds to read.

    Returns
    -------
    list of numpy.ndarray
        ``modalities`` uint8 ``(H, W, 3)`` arrays, each at its own size (at least 28x28).

    Raises
    ------
    SourceNotFoundError
        When ``background_dir`` is not a folder.
    InvalidArgumentError
        When it holds fewer than ``modalities`` images, or an image is smaller than 28x28 (the file named).
    DataFormatError
        When an image file cannot be read (truncated, corrupt, not an image) or its header declares more
        than :data:`~repscope.data.multimodal.textures.MAX_PHOTO_PIXELS` pixels (refused before decoding;
        the file named).
    """
    folder = Path(background_dir)
    if not folder.is_dir():
        raise SourceNotFoundError(f"background_dir: {folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in PHOTO_SUFFIXES)
    if len(files) < modalities:
        raise InvalidArgumentError(
            f"background_dir: {folder} holds {len(files)} images ({', '.join(PHOTO_SUFFIXES)}); "
            f"{modalities} modalities need {modalities}"
        )
    backgrounds = []
    for path in files[:modalities]:
        background = read_image(path, "RGB", MAX_PHOTO_PIXELS, "background_dir: ")
        if background.shape[0] < SIDE or background.shape[1] < SIDE:
            raise InvalidArgumentError(
                f"background_dir: {path} is {background.shape[1]}x{background.shape[0]} pixels; "
                f"a background needs at least {SIDE}x{SIDE}"
            )
        backgrounds.append(background)
    return backgrounds


# --------------------------------------------------------------------------------------------
# the generator


def compose(digits: np.ndarray, crops: np.ndarray) -> np.ndarray:
    """Digits drawn on background crops in the inverted colour: ``255 - crop`` where the digit is on.

    Parameters
    ----------
    digits : numpy.ndarray
        uint8 ``(N, 28, 28)`` grey digits; a pixel is on at grey level 128 or above.
    crops : numpy.ndarray
        uint8 ``(N, 28, 28, 3)`` RGB background crops.

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, 3, 28, 28)`` RGB images, channels first.
    """
    on = np.asarray(digits)[..., None] >= DIGIT_THRESHOLD
    crops = np.asarray(crops, dtype=np.uint8)
    return np.ascontiguousarray(np.where(on, 255 - crops, crops).transpose(0, 3, 1, 2))


class PolyMNIST:
    """A stream of PolyMNIST tuples over given digits and backgrounds (module docstring).

    Tuple ``i`` draws ``1 + 3 M`` uniforms hashed from ``(seed, split, i)``: the class, then per
    modality its digit, then per modality the crop's top row and left column.

    Parameters
    ----------
    digits : numpy.ndarray
        uint8 ``(D, 28, 28)`` grey digits (0-255).
    labels : numpy.ndarray
        int ``(D,)`` their classes, in ``0 .. classes - 1``.
    backgrounds : sequence of numpy.ndarray
        One uint8 ``(H, W, 3)`` RGB background per modality (``M >= 2`` of them), each at least 28x28.
    size : int
        Number of tuples.
    seed : int, default=0
        Seed of the tuples.
    split : {"train", "val", "test"}, default="train"
        Which stream (independent streams of the same seed).
    classes : int, optional
        Number of classes (default: largest label + 1).

    Attributes
    ----------
    modalities : tuple of str
        The modality field names ``m0 .. m{M-1}``.

    Raises
    ------
    InvalidArgumentError
        When the arrays have wrong shapes or dtypes, there are fewer than 2 backgrounds, ``size`` is not a
        positive integer, ``split`` is unknown, or a class present has fewer than ``M`` digits.
    """

    name = "polymnist"

    def __init__(
        self,
        digits: np.ndarray,
        labels: np.ndarray,
        backgrounds: Any,
        size: int,
        seed: int = 0,
        split: str = "train",
        classes: int | None = None,
    ) -> None:
        digits, labels = np.asarray(digits), np.asarray(labels)
        if digits.dtype != np.uint8 or digits.ndim != 3 or digits.shape[1:] != (SIDE, SIDE) or not len(digits):
            raise InvalidArgumentError(f"digits: must be uint8 (D, 28, 28), got {digits.dtype} {digits.shape}")
        if labels.shape != (len(digits),) or labels.dtype.kind not in "iu" or labels.min() < 0:
            raise InvalidArgumentError(f"labels: must be {len(digits)} non-negative integers, got shape {labels.shape}")
        backgrounds = [np.asarray(b) for b in backgrounds]
        if len(backgrounds) < 2:
            raise InvalidArgumentError(f"modalities: must be at least 2, got {len(backgrounds)} backgrounds")
        for k, background in enumerate(backgrounds):
            if background.dtype != np.uint8 or background.ndim != 3 or background.shape[2] != 3:
                raise InvalidArgumentError(f"backgrounds[{k}]: must be uint8 (H, W, 3), got {background.shape}")
            if min(background.shape[:2]) < SIDE:
                raise InvalidArgumentError(f"backgrounds[{k}]: must be at least 28x28, got {background.shape[:2]}")
        if split not in SPLIT_CODES:
            raise InvalidArgumentError(f"split: must be one of {', '.join(SPLIT_CODES)}, got {split!r}")
        self.size = check_positive_int(size, "size")
        self.seed, self.split = int(seed), split
        if self.seed < 0:
            raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
        self.digits, self.labels = digits, labels.astype(np.int64)
        self.backgrounds = backgrounds
        self.modalities = modality_names(len(backgrounds))
        self.classes = int(self.labels.max()) + 1 if classes is None else int(classes)
        if self.labels.max() >= self.classes:
            raise InvalidArgumentError(f"labels: must lie in 0..{self.classes - 1}, got {self.labels.max()}")
        counts = np.bincount(self.labels, minlength=self.classes)
        short = [c for c in range(self.classes) if 0 < counts[c] < len(backgrounds)]
        if short:
            raise InvalidArgumentError(
                f"modalities: class {short[0]} has {counts[short[0]]} digits, fewer than the {len(backgrounds)} "
                "distinct digits a tuple needs (use fewer modalities or more digits)"
            )
        self._by_class = np.argsort(self.labels, kind="stable")  # digit indices grouped by class
        self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self._counts = counts.astype(np.int64)
        self._key = stream_key(self.seed, 28_561, SPLIT_CODES[split])

    @property
    def factor_names(self) -> tuple[str, ...]:
        """``("label",)``: the one factor the modalities share."""
        return ("label",)

    @property
    def factor_sizes(self) -> tuple[int, ...]:
        """``(classes,)``."""
        return (self.classes,)

    def __len__(self) -> int:
        return self.size

    def _check_indices(self, indices: Any) -> np.ndarray:
        return check_indices(np.atleast_1d(np.asarray(indices)), self.size)

    def factors(self, indices: Any) -> dict[str, np.ndarray]:
        """What makes each tuple: its class, each modality's digit and crop corner.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Tuple indices in ``[0, size)``.

        Returns
        -------
        dict of str to numpy.ndarray
            ``label`` int64 ``(N,)``; ``digit`` int64 ``(N, M)``, the index of each modality's digit in
            :attr:`digits` (distinct within a row, all of class ``label``); ``top`` and ``left`` int64
            ``(N, M)``, the crop's corner in each modality's background, in pixels.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        indices = self._check_indices(indices)
        count = len(self.modalities)
        uniforms = counter_uniforms(self._key, indices, 1 + 3 * count)
        anchor = np.minimum((uniforms[:, 0] * len(self.labels)).astype(np.int64), len(self.labels) - 1)
        label = self.labels[anchor]
        available = self._counts[label]
        ranks = np.empty((len(indices), count), dtype=np.int64)
        for m in range(count):
            # the k-th of the class's digits not drawn yet: skip the drawn ranks, smallest first
            rank = np.minimum((uniforms[:, 1 + m] * (available - m)).astype(np.int64), available - m - 1)
            for taken in np.sort(ranks[:, :m], axis=1).T:
                rank += rank >= taken
            ranks[:, m] = rank
        digit = self._by_class[self._starts[label][:, None] + ranks]
        heights = np.array([b.shape[0] - SIDE + 1 for b in self.backgrounds], dtype=np.int64)
        widths = np.array([b.shape[1] - SIDE + 1 for b in self.backgrounds], dtype=np.int64)
        top = np.minimum((uniforms[:, 1 + count : 1 + 2 * count] * heights).astype(np.int64), heights - 1)
        left = np.minimum((uniforms[:, 1 + 2 * count :] * widths).astype(np.int64), widths - 1)
        return {"label": label, "digit": digit, "top": top, "left": left}

    def render(self, factors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The modalities' images of tuples given by their :meth:`factors`.

        Parameters
        ----------
        factors : dict of str to numpy.ndarray
            ``digit``, ``top`` and ``left``, int ``(N, M)``, as :meth:`factors` returns them.

        Returns
        -------
        dict of str to numpy.ndarray
            Modality name (``m0`` ..) to uint8 ``(N, 3, 28, 28)`` RGB images.
        """
        offsets = np.arange(SIDE)
        images = {}
        for m, (name, background) in enumerate(zip(self.modalities, self.backgrounds)):
            rows = (factors["top"][:, m, None] + offsets)[:, :, None]
            columns = (factors["left"][:, m, None] + offsets)[:, None, :]
            images[name] = compose(self.digits[factors["digit"][:, m]], background[rows, columns])
        return images

    def sample(self, indices: Any) -> dict[str, np.ndarray]:
        """The fields of tuples ``indices``.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Tuple indices in ``[0, size)``.

        Returns
        -------
        dict of str to numpy.ndarray
            ``m0 .. m{M-1}`` uint8 ``(N, 3, 28, 28)`` RGB; ``image``, the same array as ``m0`` (for tools
            that show one image per sample); ``label`` int64 ``(N,)``; ``digit`` int64 ``(N, M)`` (each
            modality's digit, an index into the source split); ``index`` int64 ``(N,)``.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range.
        """
        indices = self._check_indices(indices)
        factors = self.factors(indices)
        images = self.render(factors)
        return {
            **images,
            "image": images[self.modalities[0]],
            "label": factors["label"],
            "digit": factors["digit"],
            "index": indices,
        }


# --------------------------------------------------------------------------------------------
# the registered dataset


def polymnist_dataset(
    source: str = "mnist-sample",
    modalities: int = DEFAULT_MODALITIES,
    train_size: int | None = None,
    val_size: int | None = None,
    test_size: int | None = None,
    seed: int = 0,
    background_dir: str | None = None,
    data_dir: str | None = None,
) -> Dataset:
    """PolyMNIST (Sutter et al. 2021): ``modalities`` RGB images per tuple sharing only the digit class.

    Each modality's image is a 28x28 random crop of that modality's background with a digit of the
    tuple's class drawn in the inverted background colour; the modalities of a tuple show different
    digit images of the same class (module docstring). Tuples are generated on demand (streamed): a
    batch costs a gather of crops and digits, no image is held in memory.

    Parameters
    ----------
    source : str, default="mnist-sample"
        The digits: ``mnist-sample`` (5,000 real MNIST digits, split 4,000 / 1,000 by ``seed``),
        ``fashion-mnist``, ``mnist`` or any source of :func:`repscope.data.sources.load_splits`
        (via :func:`~repscope.data.morpho.training_sets.load_digits`); it needs labels.
    modalities : int, default=5
        Number of modalities ``M`` (>= 2); the paper uses 5.
    train_size : int, optional
        Training tuples (>= 1); default as many as the source has training digits (the paper: 60,000).
    val_size : int, optional
        Tuples of a ``val`` split drawn from the training digits (an independent stream); default no
        ``val`` split (training then holds out a seeded share of ``train``).
    test_size : int, optional
        Test tuples, drawn from the source's test digits; default as many as there are (10,000).
    seed : int, default=0
        Seed of the tuples, of the procedural backgrounds and of the split of a one-split source.
    background_dir : str, optional
        A folder of at least ``modalities`` images; the first ``modalities`` by file name become the
        backgrounds (each at least 28x28). Default: procedural textured colour backgrounds.
    data_dir : str, optional
        Folder to look for a named source in.

    Returns
    -------
    Dataset
        Named ``polymnist``; splits ``train``, ``test`` and ``val`` when ``val_size`` is given, each a
        :class:`~repscope.data.datasets.GeneratorSplit` over a :class:`PolyMNIST`; fields ``m0`` ..
        ``m{M-1}`` (uint8 ``(3, 28, 28)``, RGB 0-255), ``image`` (the same images as ``m0``),
        ``label`` (the shared class, categorical, 10 classes), ``digit`` (int64 ``(M,)``, each
        modality's digit as an index into the source split) and ``index``; no target.
        ``extras["backgrounds"]`` holds the backgrounds (uint8 ``(H, W, 3)`` each).

    Raises
    ------
    InvalidArgumentError
        When ``modalities`` is below 2, a size is not a positive integer, ``seed`` is negative,
        ``background_dir`` holds fewer than ``modalities`` images or one smaller than 28x28, or a class of
        the source has fewer than ``modalities`` digits.
    DataFormatError
        When a background image cannot be read (the file is named), or the source's files are corrupt.
    SourceNotFoundError
        When ``background_dir`` is not a folder or the source is not available.

    References
    ----------
    T. M. Sutter, I. Daunhawer, J. E. Vogt, "Generalized Multimodal ELBO", ICLR 2021.
    """
    if isinstance(modalities, bool) or not isinstance(modalities, int | np.integer) or modalities < 2:
        raise InvalidArgumentError(f"modalities: must be an integer >= 2, got {modalities!r}")
    modalities = int(modalities)
    sizes = {
        "train": check_positive_int(train_size, "train_size", allow_none=True),
        "val": check_positive_int(val_size, "val_size", allow_none=True),
        "test": check_positive_int(test_size, "test_size", allow_none=True),
    }
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
    if background_dir is None:
        backgrounds = list(_procedural_backgrounds(modalities, int(seed)))
        where = f"procedural backgrounds (seed {seed})"
    else:
        backgrounds = load_backgrounds(background_dir, modalities)
        where = f"backgrounds from {background_dir}"
    digits = load_digits(source, data_dir=data_dir, seed=int(seed))
    pools = {
        "train": (digits.train_images, digits.train_labels),
        "val": (digits.train_images, digits.train_labels),
        "test": (digits.test_images, digits.test_labels),
    }
    classes = max(10, int(max(digits.train_labels.max(), digits.test_labels.max())) + 1)
    splits = {}
    for split, size in sizes.items():
        if split == "val" and size is None:
            continue
        images, labels = pools[split]
        generator = PolyMNIST(images, labels, backgrounds, size or len(images), int(seed), split, classes)
        splits[split] = GeneratorSplit(generator)
    names = modality_names(modalities)
    fields = {
        name: FieldSpec(
            "image",
            (3, SIDE, SIDE),
            "uint8",
            description=f"digit on a crop of background {k}, in the inverted colour; RGB 0-255",
        )
        for k, name in enumerate(names)
    }
    fields["image"] = FieldSpec("image", (3, SIDE, SIDE), "uint8", description=f"the {names[0]} images")
    fields["label"] = FieldSpec("categorical", (), "int64", classes, description="class shared by the modalities")
    fields["digit"] = FieldSpec(
        "index", (modalities,), "int64", description="each modality's digit, an index into the source split"
    )
    fields["index"] = FieldSpec("index", (), "int64", description="tuple index in its split")
    counts = ", ".join(f"{len(part)} {split}" for split, part in splits.items())
    return Dataset(
        "polymnist",
        splits,
        fields,
        None,
        f"PolyMNIST, {modalities} modalities of {source} digits on {where}: {counts} tuples (seed {seed})",
        {"backgrounds": backgrounds, "training_set": digits},
    )


__all__ = [
    "PolyMNIST",
    "polymnist_dataset",
    "procedural_background",
    "load_backgrounds",
    "compose",
    "modality_names",
    "DEFAULT_MODALITIES",
]
