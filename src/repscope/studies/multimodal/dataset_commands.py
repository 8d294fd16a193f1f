"""Sprite datasets from the command line: generate, show, classify, score generated outputs.

Each function is what one ``repscope sprites`` verb runs; they take plain values so that scripts
can call them too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from repscope.data import dsprites
from repscope.data.multimodal.attributes import LEVELS, check_level, level_attributes
from repscope.data.multimodal.captions import corrupt_caption
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.data.store import read_dataset, write_dataset
from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.fileio import rename, write_bytes_atomic, write_json_atomic
from repscope.outputs import CommandInput, prepare_output
from repscope.validation import check_positive_int

# `sprites generate` needs neither torch, Lightning nor matplotlib: the verbs that do import them
# inside (start-up of a generate call: benchmarks/startup.py)
if TYPE_CHECKING:
    from repscope.train.config import TrainerSection

GENERATE_BATCH = 4096
Progress = Callable[[int], None]


def generate_cdsprites(
    out: str | Path,
    level: int,
    n: int | None = None,
    seed: int = 0,
    split: str = "train",
    texture_seed: int = 0,
    texture_dir: str | Path | None = None,
    caption_edits: int = 0,
    progress: Progress | None = None,
    texture_families: Any = None,
) -> Path:
    """Write ``n`` CdSprites+ samples of ``level`` (the paper's size of ``split`` when None) as a
    dataset directory (``images.npy``, ``captions.txt``, ``factors.csv``, ``dataset.json``).

    ``texture_families`` (names of the procedural families) restricts the textures drawn, e.g. to
    make a set of one family held out of the classifiers' training.

    ``caption_edits`` > 0 misspells every caption with that many letter edits (swap, drop, substitute,
    repeat; seeded by ``seed`` and the sample index) for robustness tests; the attributes stay true.
    """
    if caption_edits < 0:
        raise InvalidArgumentError(f"--caption-edits: must be >= 0, got {caption_edits}")
    generator = CdSpritesPlus(
        level,
        size=n,
        seed=seed,
        split=split,
        texture_seed=texture_seed,
        texture_dir=texture_dir,
        texture_families=texture_families,
    )

    def batches():
        for indices, images, captions, _, factors in generator.batches(GENERATE_BATCH):
            if caption_edits:
                captions = [
                    corrupt_caption(c, np.random.default_rng([seed, 99, int(i)]), caption_edits)
                    for c, i in zip(captions, indices)
                ]
            yield images, captions, pd.DataFrame({"index": indices, **factors})

    params = {**generator.params, "caption_edits": int(caption_edits)}
    return write_dataset(
        out,
        batches(),
        len(generator),
        generator="cdsprites",
        level=generator.level,
        seed=generator.seed,
        params=params,
        image_shape=(64, 64, 3),
        progress=progress,
    )


def generate_dsprites(
    out: str | Path, n: int | None = None, seed: int = 0, progress: Progress | None = None, show_progress: bool = False
) -> Path:
    """Write dSprites images: the whole grid in its order (``n`` None) or ``n`` distinct images drawn
    with ``seed``. ``out`` ending in ``.npz`` writes the original single-file layout instead of a
    dataset directory.

    ``progress(done)`` is called after each batch written to a dataset directory; ``show_progress``
    shows the ``.npz`` layout's two steps (drawing, compressing) as two bars of their own."""
    if n is not None and not 1 <= int(n) <= dsprites.TOTAL:
        raise InvalidArgumentError(f"--n: must lie in 1..{dsprites.TOTAL} for dsprites, got {n}")
    indices = (
        np.arange(dsprites.TOTAL)
        if n is None
        else np.random.default_rng(seed).choice(dsprites.TOTAL, size=int(n), replace=False)
    )
    out = Path(out)
    if out.suffix == ".npz":
        if out.exists():
            raise OutputExistsError(f"--out {out}: exists; choose a new file")
        return dsprites.write_npz(out, indices, progress=show_progress)

    def batches():
        for start in range(0, len(indices), GENERATE_BATCH):
            chunk = indices[start : start + GENERATE_BATCH]
            classes = dsprites.index_to_classes(chunk)
            values = dsprites.classes_to_values(classes)
            factors = {"index": chunk}
            factors.update({name: classes[:, k] for k, name in enumerate(dsprites.FACTOR_NAMES)})
            factors.update({f"{name}_value": values[:, k] for k, name in enumerate(dsprites.FACTOR_NAMES)})
            yield dsprites.render(classes), None, pd.DataFrame(factors)

    params = {"n": None if n is None else int(n), "order": "grid" if n is None else "random"}
    return write_dataset(
        out,
        batches(),
        len(indices),
        generator="dsprites",
        level=None,
        seed=seed,
        params=params,
        image_shape=(64, 64),
        progress=progress,
    )


def show_dataset(dataset_dir: str | Path, out: str | Path, count: int = 32, ncols: int = 8, seed: int = 0) -> Path:
    """A PNG grid of ``count`` random samples of a dataset directory, titled with their captions
    (or their factor classes for dSprites)."""
    data = read_dataset(dataset_dir)
    count = check_positive_int(count, "--count")
    out = Path(out)
    if out.exists():
        raise OutputExistsError(f"--out {out}: exists; choose a new file")
    from repscope.report.cdsprites_figures import captioned_grid  # noqa: PLC0415
    from repscope.report.figures import save_png_bytes  # noqa: PLC0415 -- matplotlib only when drawing

    chosen = np.sort(np.random.default_rng(seed).choice(len(data), size=min(count, len(data)), replace=False))
    if data.captions is not None:
        titles = [data.captions[k] for k in chosen]
    else:
        titles = [
            " ".join(f"{name[:3]}{data.factors[name].iloc[k]}" for name in dsprites.FACTOR_NAMES[1:4]) for k in chosen
        ]
    fig = captioned_grid(np.asarray(data.images[chosen]), titles, ncols=ncols)
    return write_bytes_atomic(out, save_png_bytes(fig))


def cdsprites_panel(seed: int = 0, per_level: int = 8) -> Any:
    """A grid of ``per_level`` samples of every level (one row each), titled with their captions."""
    from repscope.report.cdsprites_figures import captioned_grid  # noqa: PLC0415 -- matplotlib only when drawing

    images, captions = [], []
    for level in LEVELS:
        batch_images, batch_captions, _ = CdSpritesPlus(level, size=per_level, seed=seed, split="test").batch(
            np.arange(per_level)
        )
        images.append(batch_images)
        captions += batch_captions
    return captioned_grid(
        np.concatenate(images), captions, ncols=per_level, row_labels=[f"level {level}" for level in LEVELS]
    )


# --------------------------------------------------------------------------------------------
# judging images with the attribute classifiers


def _dataset_level(data: Any, level: int | None, where: str) -> int:
    if data.generator != "cdsprites":
        raise InvalidArgumentError(f"{where}: a {data.generator} dataset has no CdSprites+ attributes to classify")
    if level is None:
        return int(data.level)
    level = check_level(level, "--level")
    if level != data.level:
        raise InvalidArgumentError(f"--level {level}: {where} holds level {data.level} samples")
    return level


CLASSIFICATION_FILES = ("predictions.csv", "classification.json")


def classify_dataset(
    dataset_dir: str | Path,
    level: int | None = None,
    out: str | Path | None = None,
    batch_size: int = 1024,
    progress: Progress | None = None,
    overwrite: bool = False,
    trainer: TrainerSection | None = None,
) -> dict[str, Any]:
    """Predict every attribute of every image of a CdSprites+ dataset directory with the level's
    classifiers (trained and cached on first use, on ``trainer``: default
    :func:`~repscope.studies.multimodal.judges.default_trainer`) and compare with the stored attributes.

    Writes ``predictions.csv`` (``index``, one predicted class per attribute, then ``recognised``: 0 where
    the judge recognises no shape in the image) and ``classification.json`` (per-attribute accuracy and
    ``all_attributes_right``, an unrecognised image counting wrong as in coherency; ``rejected``, the share
    of unrecognised images; the classifiers' own validation accuracy, their
    mean confidence on these images and a ``warning`` when it is well below the confidence they had on
    the held-out texture family) into ``out`` (default: the dataset directory; a folder that may hold
    other files). Returns the JSON's content.

    Existing result files are refused unless ``overwrite``; then the new ones are written into a scratch
    folder beside ``out`` and moved in only once both are complete, so a failed or interrupted run
    leaves the earlier results as they were.
    """
    folder = Path(dataset_dir) if out is None else Path(out)
    if out is not None:
        prepare_output(folder, resume=True, kind="directory")
    # the result files go beside whatever out holds: they are the outputs, and their default place is the
    # dataset's own folder
    dataset = CommandInput(dataset_dir, "DATASET_DIR", "the dataset", room=CLASSIFICATION_FILES)
    for name in CLASSIFICATION_FILES:
        prepare_output(folder / name, overwrite=overwrite, inputs=[dataset])
    if not any((folder / name).exists() for name in CLASSIFICATION_FILES):
        return _classify_into(dataset_dir, level, folder, batch_size, progress, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    scratch_dir = tempfile.TemporaryDirectory(
        prefix=f".tmp-{folder.name}.classify-", dir=folder.resolve().parent, ignore_cleanup_errors=True
    )
    with scratch_dir as scratch:
        result = _classify_into(dataset_dir, level, Path(scratch), batch_size, progress, trainer)
        for name in CLASSIFICATION_FILES:
            rename(Path(scratch) / name, folder / name)
    return result


def _classify_into(
    dataset_dir: str | Path,
    level: int | None,
    out: Path,
    batch_size: int,
    progress: Progress | None,
    trainer: TrainerSection | None = None,
) -> dict[str, Any]:
    data = read_dataset(dataset_dir)
    level = _dataset_level(data, level, str(dataset_dir))
    targets = [out / name for name in CLASSIFICATION_FILES]
    taken = [str(p) for p in targets if p.exists()]
    if taken:
        raise OutputExistsError(f"{', '.join(taken)}: exists; pass another --out")
    from repscope.studies.multimodal.judges import load_judges  # noqa: PLC0415 -- torch only here

    classifiers = load_judges(level, trainer=trainer)
    predicted = np.empty((len(data), level), dtype=np.int64)
    confidence = np.empty((len(data), level), dtype=np.float64)
    recognised = np.empty(len(data), dtype=bool)
    for start in range(0, len(data), batch_size):
        rows = slice(start, start + batch_size)
        judgement = classifiers.judge(np.asarray(data.images[rows]))
        predicted[rows], confidence[rows], recognised[rows] = (
            judgement.table,
            judgement.confidence,
            judgement.recognised,
        )
        if progress is not None:
            progress(min(start + batch_size, len(data)))
    familiarity = classifiers.familiarity(confidence)
    truth = data.attribute_table()
    attributes = level_attributes(level)
    table = pd.DataFrame(
        {
            "index": np.arange(len(data)),
            **{name: predicted[:, k] for k, name in enumerate(attributes)},
            "recognised": recognised.astype(int),  # 0: the judge recognises no shape in the image
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(targets[0], table.to_csv(index=False, lineterminator="\n").encode())
    result = {
        "dataset": str(dataset_dir),
        "level": level,
        "count": len(data),
        # as coherency counts it: an image the judge recognises no shape in is wrong on every attribute
        "accuracy": {
            name: float(((predicted[:, k] == truth[:, k]) & recognised).mean()) for k, name in enumerate(attributes)
        },
        "all_attributes_right": float(((predicted == truth).all(axis=1) & recognised).mean()),
        "rejected": float(np.mean(~recognised)),  # share of images the judge recognises no shape in
        "classifier_validation_accuracy": {name: float(value) for name, value in classifiers.accuracies.items()},
        "classifier_confidence": familiarity["mean_confidence"],
        "warning": familiarity["warning"],
    }
    write_json_atomic(targets[1], result)
    return result
