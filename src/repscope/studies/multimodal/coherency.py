"""CdSprites+ coherency of a model's generated outputs (Sejnova et al., Sec. 3.3, Table 4): the study
behind ``repscope sprites evaluate FOLDER --level L``.

The model's outputs are laid out as :data:`OUTPUT_LAYOUT`; images are judged by the level's attribute
classifiers (:mod:`repscope.studies.multimodal.judges`, trained once on first use, on the config's
``trainer``: ``--accelerator``, ``--devices``, ...), captions are
parsed, and :mod:`repscope.metrics.multimodal.coherency` scores text->image, image->text and joint coherency
(Strict / Features / Letters). The run directory holds ``metrics.json`` (every score),
``tables/coherency.csv`` (one row per direction and rules) and ``report.html``.

``compat`` chooses the rules: ``ours`` (the paper's printed definitions, strictly:
:mod:`repscope.metrics.multimodal.coherency`), ``toolkit`` (the rules of the authors' evaluation script
exactly, :func:`repscope.metrics.multimodal.toolkit_coherency.toolkit_coherency`;
``multimodal_compare/eval/eval_cdsprites.py`` of gabinsane/multimodal-vae-comparison) or ``both`` (the
default: the two side by side, ours under each direction's key, the toolkit's under ``toolkit``). The
toolkit's rules read captions more leniently: a generated caption that starts with the true one is
Strict-right whatever follows it; an attribute is read as a substring of fixed space-separated tokens; a joint
pair needs no well-formed caption. """

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.config import Section
from repscope.data.multimodal.attributes import (
    ATTRIBUTE_VALUES,
    check_level,
    level_attributes,
    parse_caption,
)
from repscope.data.npzfile import check_array_file
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError, shown
from repscope.metrics.multimodal import coherency
from repscope.metrics.multimodal.toolkit_coherency import (  # noqa: F401 -- importable from the study too
    TOOLKIT_SOURCE,
    toolkit_caption_scores,
    toolkit_coherency,
    toolkit_image_scores,
    toolkit_joint_scores,
    toolkit_read_caption,
)
from repscope.report import Report
from repscope.run_directory import RunDirectory
from repscope.studies.multimodal.judges import default_trainer, load_classifiers
from repscope.train.config import TrainerSection
from repscope.validation import check_images, to_uint8

# a direction whose images the judge rejects this often gets a warning: the model draws no shapes there
REJECTED_WARNING_PERCENT = 5.0


class CoherencyConfig(Section):
    """What to score: the folder of a model's outputs and the CdSprites+ level of its captions; where the
    level's attribute classifiers train if they are not cached yet (``trainer``: accelerator, devices,
    precision, ...; their epochs and log are the classifiers' own); ``compat``: which rules score it
    (``both``, ``ours``, ``toolkit``; module docstring)."""

    folder: str
    level: int = Field(ge=1, le=5)
    compat: Literal["both", "ours", "toolkit"] = "both"
    trainer: TrainerSection = Field(default_factory=default_trainer)


def run_coherency(
    config: CoherencyConfig, out: Path | None = None, root: Path = Path("runs"), source: str = "config"
) -> Path:
    """Score the outputs in ``config.folder`` and write a run directory.

    Parameters
    ----------
    config : CoherencyConfig
        The folder, its level, the rules (``compat``) and where classifiers train if not cached.
    out : pathlib.Path, optional
        The run directory (default a new one under ``root``).
    root : pathlib.Path, default=Path("runs")
        Where a run directory without ``out`` goes.
    source : str, default="config"
        Where the config came from (for messages).

    Returns
    -------
    pathlib.Path
        The run's ``report.html``.
    """
    folder = Path(config.folder)
    # scored before anything is written
    results = evaluate_outputs(folder, config.level, trainer=config.trainer, compat=config.compat)
    run = RunDirectory.create("sprites-evaluate", out=out, root=root)
    run.write_config(
        {"study": "sprites evaluate", "folder": str(folder.resolve()), "level": config.level, "compat": config.compat}
    )
    run.write_metrics(results)
    table = coherency_table(results)
    run.write_table("coherency", table)
    report = Report("CdSprites+ coherency", subtitle=f"{folder}, level {config.level}")
    for warning in results.get("warnings", []):
        report.add_warning(warning)
        print(f"warning: {warning}", file=sys.stderr)
    report.add_paragraph(
        "Strict: % of samples with every attribute right. Features: mean number of right "
        "attributes per sample (of the level's). Letters: % of caption characters right, "
        "position by position. Images are judged by the level's attribute classifiers; Rejected: % of "
        "images in which they recognise no shape (a blob, noise, an empty frame). Rules 'ours': "
        "the paper's definitions, strictly (a caption is right when it equals the true one; a rejected "
        "image is wrong on every attribute). Rules "
        "'toolkit': those of the authors' script multimodal_compare/eval/eval_cdsprites.py (a caption is "
        "right when it starts with the true one; words are read as substrings of fixed tokens)."
    )
    report.add_table(table, title="Coherency")
    return run.write_report(report)


# --------------------------------------------------------------------------------------------
# scoring a model's generated outputs

OUTPUT_LAYOUT = """\
FOLDER/text_to_image/truth.txt     captions given to the model, one per line
FOLDER/text_to_image/images.npy    the images it generated from them: (N, 64, 64, 3) RGB, uint8 or float in [0, 1]
FOLDER/image_to_text/truth.txt     the true captions of the images given to the model
FOLDER/image_to_text/captions.txt  the captions it generated from them
FOLDER/joint/images.npy            images and captions generated together, pair by pair
FOLDER/joint/captions.txt
FOLDER/joint_traversal/...         (optional) the same for latents traversed dimension by dimension
FOLDER/*/captions_raw.txt          (optional) the decoder's whole output, untrimmed: the toolkit's rules read it"""


def read_captions(path: Path) -> list[str]:
    """Captions of ``path``, one per line, exactly as written: an empty line is an empty caption, spaces
    (leading, trailing, doubled) and any character other than the newline are kept; the newline after the
    last caption is optional.

    Parameters
    ----------
    path : pathlib.Path
        A UTF-8 text file.

    Returns
    -------
    list of str
        One caption per line (``"a\\n\\nb\\n"`` gives ``["a", "", "b"]``).

    Raises
    ------
    SourceNotFoundError
        When the file is missing.
    DataFormatError
        When it is not UTF-8 text.
    """
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
    ``(N, 3, 64, 64)`` is transposed.

    Parameters
    ----------
    path : pathlib.Path
        A ``.npy`` array of images.

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, 64, 64, 3)``.

    Raises
    ------
    SourceNotFoundError, DataFormatError
        When the file is missing, unreadable or not images of that shape in range.
    """
    check_array_file(path, in_memory=False)  # a header declaring more than the file holds: refused unread
    try:
        images = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise SourceNotFoundError(f"{path}: missing") from None
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable .npy array ({exc})") from None
    images = check_images(images, str(path), image_shape=(64, 64, 3), error=DataFormatError)
    return np.asarray(images) if images.dtype == np.uint8 else to_uint8(images)


def _truth_table(level: int, captions: list[str], path: Path) -> np.ndarray:
    rows = []
    for k, caption in enumerate(captions):
        parsed = parse_caption(level, caption)
        if parsed is None:
            raise DataFormatError(f"{path}: line {k + 1} {shown(caption)} is not a level-{level} caption")
        rows.append(parsed)
    if not rows:
        raise DataFormatError(f"{path}: no captions")
    return np.stack(rows)


def _same_length(first: Path, n_first: int, second: Path, n_second: int) -> None:
    if n_first != n_second:
        raise DataFormatError(f"{first} holds {n_first} samples but {second} holds {n_second}")


def evaluate_outputs(
    folder: str | Path, level: int, trainer: TrainerSection | None = None, compat: str = "both"
) -> dict[str, Any]:
    """Cross- and joint-coherency (Strict / Features / Letters) of a model's outputs laid out as
    :data:`OUTPUT_LAYOUT` (any of the parts may be missing, not all).

    Parameters
    ----------
    folder : str or pathlib.Path
        The outputs (:data:`OUTPUT_LAYOUT`).
    level : int
        CdSprites+ level 1-5 of the captions.
    trainer : TrainerSection, optional
        Where the level's attribute classifiers train if they are not cached yet (default
        :func:`repscope.studies.multimodal.judges.default_trainer`).
    compat : {"both", "ours", "toolkit"}, default="both"
        The rules (module docstring). The toolkit's rules read a part's ``captions_raw.txt`` where there is
        one (the decoder's whole output, as the toolkit scores it), else its ``captions.txt``.

    Returns
    -------
    dict
        ``level``, ``compat``, ``counts`` (samples per part); with ours, per part (``text_to_image``,
        ``image_to_text``, ``joint``, ``joint_traversal``) the scores of :mod:`repscope.metrics.multimodal.coherency`;
        with the toolkit's, ``toolkit``: ``{part: toolkit_coherency(...)}`` (each with ``captions_file``
        where captions were read); ``classifier_confidence``, ``rejected`` (per part, % of images the judge
        recognises no shape in: by our rules they count wrong on every attribute; the toolkit's rules, whose
        classifiers have no reject option, read them as they are), ``classifier_validation_accuracy`` and
        ``warnings`` where images were judged.

    Raises
    ------
    InvalidArgumentError
        When ``level`` or ``compat`` is not one of theirs.
    SourceNotFoundError, DataFormatError
        When the folder holds no part, a file is missing or unreadable, or counts differ.
    """
    level = check_level(level, "--level")
    if compat not in COMPAT:
        raise InvalidArgumentError(f"--compat: must be one of {', '.join(COMPAT)}, got {compat!r}")
    ours, toolkit = compat in ("both", "ours"), compat in ("both", "toolkit")
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceNotFoundError(f"{folder}: not a folder")
    parts = {name: folder / name for name in ("text_to_image", "image_to_text", "joint", "joint_traversal")}
    present = {name: path for name, path in parts.items() if path.is_dir()}
    if not present:
        evaluated = folder / "evaluation" / "outputs"
        if evaluated.is_dir():  # the run directory of an evaluated MMVAE: its outputs are one level down
            raise SourceNotFoundError(
                f"{folder}: a run directory, not a folder of outputs; its evaluation's outputs are in {evaluated}"
            )
        raise SourceNotFoundError(
            f"{folder}: holds none of text_to_image/, image_to_text/, joint/ (layout:\n{OUTPUT_LAYOUT})"
        )
    classifiers = None
    results: dict[str, Any] = {"level": level, "compat": compat, "counts": {}}
    by_toolkit: dict[str, Any] = {}
    if "text_to_image" in present:
        base = present["text_to_image"]
        truth_captions = read_captions(base / "truth.txt")
        truth = _truth_table(level, truth_captions, base / "truth.txt")
        images = read_output_images(base / "images.npy")
        _same_length(base / "truth.txt", len(truth), base / "images.npy", len(images))
        classifiers = classifiers or _judges(level, trainer)
        judgement = classifiers.judge(images)
        predicted, confidence = judgement.table, judgement.confidence
        if ours:
            results["text_to_image"] = coherency.text_to_image(level, truth, predicted, judgement.recognised)
        if toolkit:
            by_toolkit["text_to_image"] = toolkit_coherency(
                level, "text_to_image", truth=truth_captions, predicted=predicted
            )
        _note_familiarity(results, "text_to_image", classifiers.familiarity(confidence), judgement.recognised)
        results["counts"]["text_to_image"] = len(truth)
    if "image_to_text" in present:
        base = present["image_to_text"]
        truth_captions = read_captions(base / "truth.txt")
        truth = _truth_table(level, truth_captions, base / "truth.txt")
        captions = read_captions(base / "captions.txt")
        _same_length(base / "truth.txt", len(truth), base / "captions.txt", len(captions))
        if ours:
            results["image_to_text"] = coherency.image_to_text(level, truth, captions)
        if toolkit:
            raw, source = _toolkit_captions(base, captions)
            scores = toolkit_coherency(level, "image_to_text", truth=truth_captions, captions=raw)
            by_toolkit["image_to_text"] = {**scores, "captions_file": source}
        results["counts"]["image_to_text"] = len(truth)
    for part in ("joint", "joint_traversal"):
        if part not in present:
            continue
        base = present[part]
        images = read_output_images(base / "images.npy")
        captions = read_captions(base / "captions.txt")
        _same_length(base / "images.npy", len(images), base / "captions.txt", len(captions))
        classifiers = classifiers or _judges(level, trainer)
        judgement = classifiers.judge(images)
        predicted, confidence = judgement.table, judgement.confidence
        if ours:
            results[part] = coherency.joint(level, captions, predicted, judgement.recognised)
        if toolkit:
            raw, source = _toolkit_captions(base, captions)
            by_toolkit[part] = {
                **toolkit_coherency(level, "joint", captions=raw, predicted=predicted),
                "captions_file": source,
            }
        _note_familiarity(results, part, classifiers.familiarity(confidence), judgement.recognised)
        results["counts"][part] = len(captions)
    if toolkit:
        results["toolkit"] = by_toolkit
    if classifiers is not None:
        results["classifier_validation_accuracy"] = {k: float(v) for k, v in classifiers.accuracies.items()}
    return results


def _toolkit_captions(base: Path, captions: list[str]) -> tuple[list[str], str]:
    """The captions the toolkit's rules read: ``captions_raw.txt`` where there is one (as many lines as
    ``captions.txt``), else ``captions.txt``; and the file's name."""
    raw_path = base / "captions_raw.txt"
    if not raw_path.exists():
        return captions, "captions.txt"
    raw = read_captions(raw_path)
    _same_length(base / "captions.txt", len(captions), raw_path, len(raw))
    return raw, "captions_raw.txt"


def _judges(level: int, trainer: TrainerSection | None) -> Any:
    # no trainer: the level alone, the classifiers' default (what a stand-in for load_classifiers takes)
    return load_classifiers(level) if trainer is None else load_classifiers(level, trainer=trainer)


def _note_familiarity(
    results: dict[str, Any], direction: str, familiarity: dict[str, Any], recognised: np.ndarray
) -> None:
    """Record the classifiers' mean confidence on a direction's images and the share of images the judge
    does not recognise as a shape (``rejected``, %); a warning when they are unsure or reject many."""
    name = direction.replace("_", " ")
    results.setdefault("classifier_confidence", {})[direction] = familiarity["mean_confidence"]
    rejected = 100.0 * float(np.mean(~np.asarray(recognised, dtype=bool)))
    results.setdefault("rejected", {})[direction] = rejected
    if familiarity["warning"]:
        results.setdefault("warnings", []).append(f"{name} images: {familiarity['warning']}")
    if rejected >= REJECTED_WARNING_PERCENT:
        results.setdefault("warnings", []).append(
            f"{name} images: the judge recognises no shape in {rejected:.1f}% of them (faint blobs, noise, empty "
            "frames); they count wrong on every attribute by our rules (the toolkit's rules read them as they are)"
        )


def coherency_table(results: dict[str, Any]) -> pd.DataFrame:
    """One row per direction and rules (``ours``, ``toolkit``): Strict %, Features (x/level), Letters % —
    the paper's Table 4 columns — and the per-attribute % right.

    Parameters
    ----------
    results : dict
        What :func:`evaluate_outputs` returns.

    Returns
    -------
    pandas.DataFrame
        Columns ``direction``, ``rules``, ``samples``, ``strict_percent``, ``features``, ``letters_percent``,
        ``rejected_percent`` (images with no recognised shape, our rules' rows of judged images),
        ``<attribute>_percent``.
    """
    level = results["level"]
    rows = []
    for direction in ("text_to_image", "image_to_text", "joint", "joint_traversal"):
        for rules, scores in (("ours", results.get(direction)), ("toolkit", results.get("toolkit", {}).get(direction))):
            if not isinstance(scores, dict):
                continue
            rows.append(
                {
                    "direction": direction.replace("_", " "),
                    "rules": rules,
                    "samples": results["counts"][direction],
                    "strict_percent": round(float(scores["strict"]), 2),
                    "features": f"{scores['features']:.2f}/{level}",
                    "letters_percent": round(float(scores["letters"]), 2) if "letters" in scores else None,
                    # images the judge recognises no shape in: wrong by our rules, read as they are by the toolkit's
                    "rejected_percent": round(float(scores["rejected"]), 2) if "rejected" in scores else None,
                    **{f"{name}_percent": round(float(value), 2) for name, value in scores["per_attribute"].items()},
                }
            )
    return pd.DataFrame(rows)


def attribute_words(level: int) -> dict[str, tuple[str, ...]]:
    return {name: ATTRIBUTE_VALUES[name] for name in level_attributes(level)}


COMPAT = ("both", "ours", "toolkit")
