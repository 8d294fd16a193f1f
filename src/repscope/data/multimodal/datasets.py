"""dSprites and CdSprites+ as registered datasets (:mod:`repscope.data.registry`).

Configs say ``data: {name: dsprites, params: {train_size: 50000}}`` or
``data: {name: cdsprites, params: {level: 5, target: shape}}``. Both are drawn on demand from their
generators (sample ``i`` is the same bytes in any batch and any DataLoader worker), or generated once
into memory with ``in_memory: true`` when a model trains for several epochs on a small set.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from repscope.data import dsprites
from repscope.data.boxes import BOX_NAMES
from repscope.data.datasets import ArraySplit, Dataset, FieldSpec, GeneratorSplit
from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, ATTRIBUTES, check_level, level_attributes
from repscope.data.multimodal.captions import MAX_CAPTION_LENGTH, VOCABULARY_SIZE
from repscope.data.multimodal.cdsprites import TEST_SIZE, CdSpritesPlus, default_size
from repscope.errors import InvalidArgumentError
from repscope.progress import progress_bar
from repscope.validation import check_positive_int

GENERATE_CHUNK = 2_048


def dsprites_dataset(
    train_size: int | None = None,
    test_size: int = 10_000,
    seed: int = 0,
    target: Literal["shape", "scale", "orientation", "posX", "posY"] | None = None,
) -> Dataset:
    """dSprites (Matthey et al., 2017) drawn on demand: 64x64 binary images of the full factor grid.

    Parameters
    ----------
    train_size : int, optional
        Training images: a seeded random subset of the grid (default: every image not in ``test``,
        737,280 - ``test_size``).
    test_size : int
        Test images, a seeded random subset disjoint from the training images.
    seed : int
        Seed of the choice of images.
    target : str, optional
        A factor a supervised model learns (its class index).

    Returns
    -------
    Dataset
        Splits ``train`` and ``test``; fields ``image`` (uint8 ``(1, 64, 64)``, 0 or 255), ``factors``
        (int64 ``(6,)`` classes, :data:`~repscope.data.dsprites.FACTOR_NAMES`), one
        categorical field per factor, ``index`` (the grid index) and ``box`` (float32 ``(4,)``, the
        sprite's bounding box in pixels, :mod:`repscope.data.boxes`).
    """
    test_size = check_positive_int(test_size, "test_size", allow_none=True)
    train_size = check_positive_int(train_size, "train_size", allow_none=True)
    train_size = dsprites.TOTAL - test_size if train_size is None else train_size
    if train_size + test_size > dsprites.TOTAL:
        raise InvalidArgumentError(
            f"train_size: {train_size} training + {test_size} test images exceed the {dsprites.TOTAL} of the grid"
        )
    order = np.random.default_rng([seed, 23]).permutation(dsprites.TOTAL)
    generator = dsprites.DSprites()
    splits = {
        "train": GeneratorSplit(generator, np.sort(order[:train_size])),
        "test": GeneratorSplit(generator, np.sort(order[-test_size:])),
    }
    fields = {
        "image": FieldSpec(
            "image", (1, dsprites.IMAGE_SIZE, dsprites.IMAGE_SIZE), "uint8", description="binary sprite, 0 or 255"
        ),
        "factors": FieldSpec(
            "categorical",
            (len(dsprites.FACTOR_NAMES),),
            "int64",
            max(dsprites.FACTOR_SIZES),
            dsprites.FACTOR_NAMES,
            "factor classes",
        ),
        "index": FieldSpec("index", (), "int64", description="index in the dSprites grid"),
        "box": FieldSpec(
            "continuous", (4,), "float32", names=BOX_NAMES, description="sprite's bounding box, pixels, ends exclusive"
        ),
    }
    for name, count in zip(dsprites.FACTOR_NAMES, dsprites.FACTOR_SIZES):
        fields[name] = FieldSpec("categorical", (), "int64", count, description=f"{name} class")
    return Dataset(
        "dsprites",
        splits,
        fields,
        target,
        f"dSprites: {train_size} training and {test_size} test images of the grid (seed {seed})",
    )


def cdsprites_dataset(
    level: int = 5,
    target: Literal["shape", "size", "colour", "position", "background"] | None = None,
    train_size: int | None = None,
    val_size: int | None = None,
    test_size: int | None = None,
    seed: int = 0,
    texture_seed: int = 0,
    texture_dir: str | None = None,
    in_memory: bool = False,
    texture_families: list[str] | None = None,
    test_texture_families: list[str] | None = None,
    jitter: float = 0.0,
) -> Dataset:
    """CdSprites+ (Sejnova et al., Sec. 3): captioned 64x64 RGB sprites of one level.

    Parameters
    ----------
    level : int
        1-5.
    target : str, optional
        The attribute a supervised model learns (one of the level's attributes).
    train_size, val_size, test_size : int, optional
        Samples per split; default the paper's sizes (90% / 10% of the level's total, 10,000 test);
        ``test_size=0`` makes no test split.
    seed, texture_seed, texture_dir
        As :class:`~repscope.data.multimodal.cdsprites.CdSpritesPlus`; the splits are independent streams.
    in_memory : bool
        Generate the images and attributes of every split once (uint8, 12 KB a sample) instead of
        drawing batches on demand (which also gives the caption fields).
    texture_families : list of str, optional
        Procedural texture families of the ``train`` and ``val`` splits (default all).
    test_texture_families : list of str, optional
        Those of the ``test`` split (default: ``texture_families``); a family held out of training
        measures how the model does on textures it never saw.
    jitter : float, default=0.0
        Brightness / contrast augmentation of the ``train`` split only, in [0, 1) (see
        :class:`~repscope.data.multimodal.cdsprites.CdSpritesPlus`).

    Returns
    -------
    Dataset
        Splits ``train``, ``val`` and ``test``; fields ``image`` (uint8 ``(3, 64, 64)``), ``attributes``
        (int64 ``(L,)``), one categorical field per attribute, and when not ``in_memory`` ``text``
        (float32 one-hot ``(45, 27)``), ``mask`` (bool ``(45,)``) and ``index``.
    """
    level = check_level(level)
    attributes = level_attributes(level)
    if target is not None and target not in attributes:
        raise InvalidArgumentError(f"target: level {level} has the attributes {', '.join(attributes)}, not {target!r}")
    sizes = {
        "train": check_positive_int(train_size, "train_size", allow_none=True),
        "val": check_positive_int(val_size, "val_size", allow_none=True),
    }
    if test_size != 0:  # 0: no test split (the attribute classifiers are measured on val)
        sizes["test"] = check_positive_int(test_size, "test_size", allow_none=True)
    generators = {
        split: CdSpritesPlus(
            level,
            size=sizes[split],
            seed=seed,
            split=split,
            texture_seed=texture_seed,
            texture_dir=texture_dir,
            texture_families=(test_texture_families or texture_families) if split == "test" else texture_families,
            jitter=jitter if split == "train" else 0.0,
        )
        for split in sizes
    }
    fields = {
        "image": FieldSpec("image", (3, 64, 64), "uint8", description="RGB sprite, 0-255"),
        "attributes": FieldSpec(
            "categorical",
            (level,),
            "int64",
            max(len(ATTRIBUTE_VALUES[a]) for a in attributes),
            attributes,
            "attribute classes",
        ),
    }
    for name in attributes:
        fields[name] = FieldSpec(
            "categorical", (), "int64", len(ATTRIBUTE_VALUES[name]), ATTRIBUTE_VALUES[name], f"{name} class"
        )
    if in_memory:
        splits = {split: ArraySplit(generate_arrays(generator)) for split, generator in generators.items()}
    else:
        splits = {split: GeneratorSplit(generator) for split, generator in generators.items()}
        fields["text"] = FieldSpec(
            "text", (MAX_CAPTION_LENGTH, VOCABULARY_SIZE), "float32", description="one-hot caption characters"
        )
        fields["mask"] = FieldSpec("mask", (MAX_CAPTION_LENGTH,), "bool", description="True on caption characters")
        fields["index"] = FieldSpec("index", (), "int64", description="sample index in its split")
    counts = ", ".join(f"{len(g)} {split}" for split, g in generators.items())
    return Dataset("cdsprites", splits, fields, target, f"CdSprites+ level {level}: {counts} (seed {seed})")


def generate_arrays(generator: CdSpritesPlus) -> dict[str, np.ndarray]:
    """Every sample of ``generator`` in memory: ``image`` uint8 ``(N, 3, 64, 64)``, ``attributes``
    int64 ``(N, L)`` and one column per attribute, generated a chunk at a time with progress.

    Parameters
    ----------
    generator : CdSpritesPlus
        One split of one level; its ``N = len(generator)`` samples are drawn 2,048 at a time.

    Returns
    -------
    dict of str to numpy.ndarray
        ``image`` uint8 ``(N, 3, 64, 64)`` RGB 0-255 (about 12 KB a sample), ``attributes`` int64
        ``(N, L)``, and one int64 ``(N,)`` column (a view of ``attributes``) per attribute of the level.
    """
    size = len(generator)
    images = np.empty((size, 3, 64, 64), dtype=np.uint8)
    table = np.empty((size, generator.level), dtype=np.int64)
    with progress_bar(f"generating CdSprites+ level {generator.level} {generator.split}", total=size) as update:
        for start in range(0, size, GENERATE_CHUNK):
            stop = min(size, start + GENERATE_CHUNK)
            chunk = generator.sample(np.arange(start, stop), fields=("image", "attributes"))
            images[start:stop], table[start:stop] = chunk["image"], chunk["attributes"]
            update(stop)
    return {"image": images, "attributes": table, **{name: table[:, k] for k, name in enumerate(generator.attributes)}}


__all__ = ["dsprites_dataset", "cdsprites_dataset", "generate_arrays", "ATTRIBUTES", "TEST_SIZE", "default_size"]
