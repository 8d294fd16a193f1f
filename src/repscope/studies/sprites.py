"""Sprite datasets from the command line: generate, show, classify, score generated outputs.

Each function is what one ``repscope sprites`` verb runs; they take plain values so that scripts
can call them too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.data.sprites import dsprites
from repscope.data.sprites.attributes import ATTRIBUTE_VALUES, LEVELS, check_level, level_attributes
from repscope.data.sprites.cdsprites import CdSpritesPlus
from repscope.data.sprites.store import read_dataset, write_dataset
from repscope.errors import DataFormatError, InvalidArgumentError, OutputExistsError, SourceNotFoundError

GENERATE_BATCH = 4096
Progress = Callable[[int], None]


def generate_cdsprites(out: str | Path, level: int, n: int | None = None, seed: int = 0, split: str = "train",
                       texture_seed: int = 0, texture_dir: str | Path | None = None, caption_edits: int = 0,
                       progress: Progress | None = None) -> Path:
    """Write ``n`` CdSprites+ samples of ``level`` (the paper's size of ``split`` when None) as a
    dataset directory (``images.npy``, ``captions.txt``, ``factors.csv``, ``dataset.json``).

    ``caption_edits`` > 0 misspells every caption with that many letter edits (swap, drop, substitute,
    repeat; seeded by ``seed`` and the sample index) for robustness tests; the attributes stay true.
    """
    from repscope.data.sprites.captions import corrupt_caption

    if caption_edits < 0:
        raise InvalidArgumentError(f"--caption-edits: must be >= 0, got {caption_edits}")
    generator = CdSpritesPlus(level, size=n, seed=seed, split=split, texture_seed=texture_seed,
                              texture_dir=texture_dir)

    def batches():
        for indices, images, captions, _, factors in generator.batches(GENERATE_BATCH):
            if caption_edits:
                captions = [corrupt_caption(c, np.random.default_rng([seed, 99, int(i)]), caption_edits)
                            for c, i in zip(captions, indices)]
            yield images, captions, pd.DataFrame({"index": indices, **factors})

    params = {**generator.params, "caption_edits": int(caption_edits)}
    return write_dataset(out, batches(), len(generator), generator="cdsprites", level=generator.level,
                         seed=generator.seed, params=params, image_shape=(64, 64, 3), progress=progress)


def generate_dsprites(out: str | Path, n: int | None = None, seed: int = 0,
                      progress: Progress | None = None) -> Path:
    """Write dSprites images: the whole grid in its order (``n`` None) or ``n`` distinct images drawn
    with ``seed``. ``out`` ending in ``.npz`` writes the original single-file layout instead of a
    dataset directory."""
    if n is not None and not 1 <= int(n) <= dsprites.TOTAL:
        raise InvalidArgumentError(f"--n: must lie in 1..{dsprites.TOTAL} for dsprites, got {n}")
    indices = (np.arange(dsprites.TOTAL) if n is None
               else np.random.default_rng(seed).choice(dsprites.TOTAL, size=int(n), replace=False))
    out = Path(out)
    if out.suffix == ".npz":
        if out.exists():
            raise OutputExistsError(f"--out {out}: exists; choose a new file")
        return dsprites.write_npz(out, indices)

    def batches():
        for start in range(0, len(indices), GENERATE_BATCH):
            chunk = indices[start:start + GENERATE_BATCH]
            classes = dsprites.index_to_classes(chunk)
            values = dsprites.classes_to_values(classes)
            factors = {"index": chunk}
            factors.update({name: classes[:, k] for k, name in enumerate(dsprites.FACTOR_NAMES)})
            factors.update({f"{name}_value": values[:, k] for k, name in enumerate(dsprites.FACTOR_NAMES)})
            yield dsprites.render(classes), None, pd.DataFrame(factors)

    params = {"n": None if n is None else int(n), "order": "grid" if n is None else "random"}
    return write_dataset(out, batches(), len(indices), generator="dsprites", level=None, seed=seed,
                         params=params, image_shape=(64, 64), progress=progress)


def show_dataset(dataset_dir: str | Path, out: str | Path, count: int = 32, ncols: int = 8, seed: int = 0) -> Path:
    """A PNG grid of ``count`` random samples of a dataset directory, titled with their captions
    (or their factor classes for dSprites)."""
    from repscope.fileio import write_bytes_atomic
    from repscope.report.figures import save_png_bytes
    from repscope.report.sprite_figures import captioned_grid

    data = read_dataset(dataset_dir)
    if count < 1:
        raise InvalidArgumentError(f"--count: must be at least 1, got {count}")
    out = Path(out)
    if out.exists():
        raise OutputExistsError(f"--out {out}: exists; choose a new file")
    chosen = np.sort(np.random.default_rng(seed).choice(len(data), size=min(count, len(data)), replace=False))
    if data.captions is not None:
        titles = [data.captions[k] for k in chosen]
    else:
        titles = [" ".join(f"{name[:3]}{data.factors[name].iloc[k]}" for name in dsprites.FACTOR_NAMES[1:4])
                  for k in chosen]
    fig = captioned_grid(np.asarray(data.images[chosen]), titles, ncols=ncols)
    return write_bytes_atomic(out, save_png_bytes(fig))


def cdsprites_panel(seed: int = 0, per_level: int = 8) -> Any:
    """A grid of ``per_level`` samples of every level (one row each), titled with their captions."""
    from repscope.report.sprite_figures import captioned_grid

    images, captions = [], []
    for level in LEVELS:
        batch_images, batch_captions, _ = CdSpritesPlus(level, size=per_level, seed=seed, split="test").batch(
            np.arange(per_level))
        images.append(batch_images)
        captions += batch_captions
    return captioned_grid(np.concatenate(images), captions, ncols=per_level,
                          row_labels=[f"level {level}" for level in LEVELS])


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


def classify_dataset(dataset_dir: str | Path, level: int | None = None, out: str | Path | None = None,
                     batch_size: int = 1024, progress: Progress | None = None) -> dict[str, Any]:
    """Predict every attribute of every image of a CdSprites+ dataset directory with the level's
    classifiers (trained and cached on first use) and compare with the stored attributes.

    Writes ``predictions.csv`` (``index`` then one predicted class per attribute) and
    ``classification.json`` (per-attribute accuracy, the classifiers' own validation accuracy) into
    ``out`` (default: the dataset directory). Returns the JSON's content.
    """
    from repscope.fileio import write_bytes_atomic, write_json_atomic
    from repscope.train.attribute_classifiers import load_classifiers

    data = read_dataset(dataset_dir)
    level = _dataset_level(data, level, str(dataset_dir))
    out = Path(dataset_dir) if out is None else Path(out)
    targets = [out / "predictions.csv", out / "classification.json"]
    taken = [str(p) for p in targets if p.exists()]
    if taken:
        raise OutputExistsError(f"{', '.join(taken)}: exists; pass another --out")
    classifiers = load_classifiers(level)
    predicted = np.empty((len(data), level), dtype=np.int64)
    for start in range(0, len(data), batch_size):
        predicted[start:start + batch_size] = classifiers.predict(np.asarray(data.images[start:start + batch_size]))
        if progress is not None:
            progress(min(start + batch_size, len(data)))
    truth = data.attribute_table()
    attributes = level_attributes(level)
    table = pd.DataFrame({"index": np.arange(len(data)), **{name: predicted[:, k] for k, name in enumerate(attributes)}})
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(targets[0], table.to_csv(index=False, lineterminator="\n").encode())
    result = {
        "dataset": str(dataset_dir),
        "level": level,
        "count": len(data),
        "accuracy": {name: float((predicted[:, k] == truth[:, k]).mean()) for k, name in enumerate(attributes)},
        "all_attributes_right": float((predicted == truth).all(axis=1).mean()),
        "classifier_validation_accuracy": {name: float(value) for name, value in classifiers.accuracies.items()},
    }
    write_json_atomic(targets[1], result)
    return result


# --------------------------------------------------------------------------------------------
# scoring a model's generated outputs

OUTPUT_LAYOUT = """\
FOLDER/text_to_image/truth.txt     captions given to the model, one per line
FOLDER/text_to_image/images.npy    the images it generated from them: (N, 64, 64, 3) RGB, uint8 or float in [0, 1]
FOLDER/image_to_text/truth.txt     the true captions of the images given to the model
FOLDER/image_to_text/captions.txt  the captions it generated from them
FOLDER/joint/images.npy            images and captions generated together, pair by pair
FOLDER/joint/captions.txt"""


def read_captions(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceNotFoundError(f"{path}: missing") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last caption
    return lines


def read_output_images(path: Path) -> np.ndarray:
    """Generated images as uint8 ``(N, 64, 64, 3)`` RGB; float images in [0, 1] are scaled by 255 and
    ``(N, 3, 64, 64)`` is transposed."""
    from repscope.validation import check_images, to_uint8

    try:
        images = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise SourceNotFoundError(f"{path}: missing") from None
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable .npy array ({exc})") from None
    images = check_images(images, str(path), image_shape=(64, 64, 3), error=DataFormatError)
    return np.asarray(images) if images.dtype == np.uint8 else to_uint8(images)


def _truth_table(level: int, captions: list[str], path: Path) -> np.ndarray:
    from repscope.data.sprites.attributes import parse_caption

    rows = []
    for k, caption in enumerate(captions):
        parsed = parse_caption(level, caption)
        if parsed is None:
            raise DataFormatError(f"{path}: line {k + 1} {caption!r} is not a level-{level} caption")
        rows.append(parsed)
    if not rows:
        raise DataFormatError(f"{path}: no captions")
    return np.stack(rows)


def _same_length(first: Path, n_first: int, second: Path, n_second: int) -> None:
    if n_first != n_second:
        raise DataFormatError(f"{first} holds {n_first} samples but {second} holds {n_second}")


def evaluate_outputs(folder: str | Path, level: int) -> dict[str, Any]:
    """Cross- and joint-coherency (Strict / Features / Letters) of a model's outputs laid out as
    :data:`OUTPUT_LAYOUT` (any of the three parts may be missing, not all). Images are judged by
    the level's attribute classifiers."""
    from repscope.metrics import coherency
    from repscope.train.attribute_classifiers import load_classifiers

    level = check_level(level, "--level")
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceNotFoundError(f"{folder}: not a folder")
    parts = {name: folder / name for name in ("text_to_image", "image_to_text", "joint")}
    present = {name: path for name, path in parts.items() if path.is_dir()}
    if not present:
        raise SourceNotFoundError(f"{folder}: holds none of text_to_image/, image_to_text/, joint/ (layout:\n{OUTPUT_LAYOUT})")
    classifiers = None
    results: dict[str, Any] = {"level": level, "counts": {}}
    if "text_to_image" in present:
        base = present["text_to_image"]
        truth = _truth_table(level, read_captions(base / "truth.txt"), base / "truth.txt")
        images = read_output_images(base / "images.npy")
        _same_length(base / "truth.txt", len(truth), base / "images.npy", len(images))
        classifiers = classifiers or load_classifiers(level)
        results["text_to_image"] = coherency.text_to_image(level, truth, classifiers.predict(images))
        results["counts"]["text_to_image"] = len(truth)
    if "image_to_text" in present:
        base = present["image_to_text"]
        truth = _truth_table(level, read_captions(base / "truth.txt"), base / "truth.txt")
        captions = read_captions(base / "captions.txt")
        _same_length(base / "truth.txt", len(truth), base / "captions.txt", len(captions))
        results["image_to_text"] = coherency.image_to_text(level, truth, captions)
        results["counts"]["image_to_text"] = len(truth)
    if "joint" in present:
        base = present["joint"]
        images = read_output_images(base / "images.npy")
        captions = read_captions(base / "captions.txt")
        _same_length(base / "images.npy", len(images), base / "captions.txt", len(captions))
        classifiers = classifiers or load_classifiers(level)
        results["joint"] = coherency.joint(level, captions, classifiers.predict(images))
        results["counts"]["joint"] = len(captions)
    if classifiers is not None:
        results["classifier_validation_accuracy"] = {k: float(v) for k, v in classifiers.accuracies.items()}
    return results


def coherency_table(results: dict[str, Any]) -> pd.DataFrame:
    """One row per direction: Strict %, Features (x/level), Letters % — the paper's Table 4 columns."""
    level = results["level"]
    rows = []
    for direction in ("text_to_image", "image_to_text", "joint"):
        if direction in results:
            scores = results[direction]
            rows.append({
                "direction": direction.replace("_", " "),
                "samples": results["counts"][direction],
                "strict_percent": round(float(scores["strict"]), 2),
                "features": f"{scores['features']:.2f}/{level}",
                "letters_percent": round(float(scores["letters"]), 2) if "letters" in scores else None,
                **{f"{name}_percent": round(float(value), 2) for name, value in scores["per_attribute"].items()},
            })
    return pd.DataFrame(rows)


def attribute_words(level: int) -> dict[str, tuple[str, ...]]:
    return {name: ATTRIBUTE_VALUES[name] for name in level_attributes(level)}
