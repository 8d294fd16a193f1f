"""CdSprites+ coherency of a model's generated outputs (Sejnova et al., Sec. 3.3, Table 4): the study
behind ``repscope sprites evaluate FOLDER --level L``.

The model's outputs are laid out as :data:`OUTPUT_LAYOUT`; images are judged by the level's attribute
classifiers (:mod:`repscope.studies.sprites.classifiers`, trained once on first use, on the config's
``trainer``: ``--accelerator``, ``--devices``, ...), captions are
parsed, and :mod:`repscope.metrics.coherency` scores text->image, image->text and joint coherency
(Strict / Features / Letters). The run directory holds ``metrics.json`` (every score),
``tables/coherency.csv`` (one row per direction and rules) and ``report.html``.

``compat`` chooses the rules: ``ours`` (the paper's printed definitions, strictly:
:mod:`repscope.metrics.coherency`), ``toolkit`` (the rules of the authors' evaluation script exactly,
:func:`toolkit_coherency`; ``multimodal_compare/eval/eval_cdsprites.py`` of
gabinsane/multimodal-vae-comparison) or ``both`` (the default: the two side by side, ours under each
direction's key, the toolkit's under ``toolkit``). The toolkit's rules read captions more leniently: a
generated caption that starts with the true one is Strict-right whatever follows it; an attribute is read
as a substring of fixed space-separated tokens; a joint pair needs no well-formed caption.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.config import Section
from repscope.data.sprites.attributes import (
    ATTRIBUTE_VALUES,
    CONNECTIVES,
    check_level,
    check_table,
    level_attributes,
    parse_caption,
)
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.metrics import coherency
from repscope.report import Report
from repscope.runs import RunDirectory
from repscope.studies.sprites.classifiers import default_trainer, load_classifiers
from repscope.train.config import TrainerSection
from repscope.validation import check_images, to_uint8


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
        "position by position. Images are judged by the level's attribute classifiers. Rules 'ours': "
        "the paper's definitions, strictly (a caption is right when it equals the true one). Rules "
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
            raise DataFormatError(f"{path}: line {k + 1} {caption!r} is not a level-{level} caption")
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
        :func:`repscope.studies.sprites.classifiers.default_trainer`).
    compat : {"both", "ours", "toolkit"}, default="both"
        The rules (module docstring). The toolkit's rules read a part's ``captions_raw.txt`` where there is
        one (the decoder's whole output, as the toolkit scores it), else its ``captions.txt``.

    Returns
    -------
    dict
        ``level``, ``compat``, ``counts`` (samples per part); with ours, per part (``text_to_image``,
        ``image_to_text``, ``joint``, ``joint_traversal``) the scores of :mod:`repscope.metrics.coherency`;
        with the toolkit's, ``toolkit``: ``{part: toolkit_coherency(...)}`` (each with ``captions_file``
        where captions were read); ``classifier_confidence``, ``classifier_validation_accuracy`` and
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
        predicted, confidence = classifiers.predict_with_confidence(images)
        if ours:
            results["text_to_image"] = coherency.text_to_image(level, truth, predicted)
        if toolkit:
            by_toolkit["text_to_image"] = toolkit_coherency(
                level, "text_to_image", truth=truth_captions, predicted=predicted
            )
        _note_familiarity(results, "text_to_image", classifiers.familiarity(confidence))
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
        predicted, confidence = classifiers.predict_with_confidence(images)
        if ours:
            results[part] = coherency.joint(level, captions, predicted)
        if toolkit:
            raw, source = _toolkit_captions(base, captions)
            by_toolkit[part] = {
                **toolkit_coherency(level, "joint", captions=raw, predicted=predicted),
                "captions_file": source,
            }
        _note_familiarity(results, part, classifiers.familiarity(confidence))
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


def _note_familiarity(results: dict[str, Any], direction: str, familiarity: dict[str, Any]) -> None:
    """Record the classifiers' mean confidence on a direction's images, and a warning when they are unsure."""
    results.setdefault("classifier_confidence", {})[direction] = familiarity["mean_confidence"]
    if familiarity["warning"]:
        results.setdefault("warnings", []).append(f"{direction.replace('_', ' ')} images: {familiarity['warning']}")


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
                    **{f"{name}_percent": round(float(value), 2) for name, value in scores["per_attribute"].items()},
                }
            )
    return pd.DataFrame(rows)


def attribute_words(level: int) -> dict[str, tuple[str, ...]]:
    return {name: ATTRIBUTE_VALUES[name] for name in level_attributes(level)}


# --------------------------------------------------------------------------------------------
# the authors' toolkit's rules (compat: toolkit)

COMPAT = ("both", "ours", "toolkit")
TOOLKIT_SOURCE = (
    "gabinsane/multimodal-vae-comparison, multimodal_compare/eval/eval_cdsprites.py (commit 2ade08e, 2023-06-15)"
)
# the toolkit's word lists in its search order (eval_cdsprites.py, module constant ``sources``): a caption
# is searched for these words first to last, and the first one found wins; its colours include "white"
_TOOLKIT_SEARCH: dict[str, tuple[str, ...]] = {
    "shape": ("heart", "ellipse", "square"),
    "size": ("small", "big"),
    "colour": ("white", "red", "yellow", "green", "blue", "pink"),
    "position": ("at top left", "at top right", "at bottom right", "at bottom left"),
    "background": ("on light", "on dark"),
}


def _toolkit_tokens(attribute: str, level: int) -> int | tuple[int, ...]:
    """Which space-separated tokens of a generated caption an attribute is read from
    (eval_cdsprites.py, get_attribute_from_recon): one token, or tokens joined by one space."""
    if attribute == "shape":
        return {1: 0, 2: 1}.get(level, 2)
    return {"size": 0, "colour": 1, "position": (3, 4, 5, 6), "background": (-2, -1)}[attribute]


def _toolkit_word(attribute: str, value: int) -> str:
    """The toolkit's name of class ``value`` (eval_cdsprites.py ``class_mappings``: position and background
    carry their connective)."""
    word = ATTRIBUTE_VALUES[attribute][int(value)]
    connective = CONNECTIVES.get(attribute)
    return f"{connective} {word}" if connective else word


def _first_contained(words: tuple[str, ...], text: str) -> str | None:
    # eval_cdsprites.py, find_in_list: the first word that occurs anywhere in the text (a substring, any case)
    for word in words:
        if word.lower() in text.lower():
            return word.lower()
    return None


def toolkit_read_caption(level: int, caption: Any) -> dict[str, str | None]:
    """Each attribute's word as the authors' toolkit reads it from a generated caption.

    The rules of ``get_attribute_from_recon`` and ``search_att`` in
    ``multimodal_compare/eval/eval_cdsprites.py`` (gabinsane/multimodal-vae-comparison): the caption is split
    on single spaces (``caption.split(" ")``: two spaces make an empty token, every token keeps its place)
    and each attribute is looked for in fixed tokens, ``size`` in token 0, ``colour`` in token 1, ``shape``
    in token 0 (level 1), 1 (level 2) or 2 (levels 3-5), ``position`` in tokens 3-6 joined by single spaces,
    ``background`` in the last two tokens joined. The attribute's word is the first of the toolkit's list
    (:data:`_TOOLKIT_SEARCH`, e.g. heart, ellipse, square; the colours include ``white``) that occurs in that
    text as a substring, case ignored (``smallx`` reads as ``small``). A token that does not exist (a caption
    with fewer tokens; at level 4 a caption of exactly six words has no token 6, so its position is never
    read) gives ``None``, as does a word found nowhere.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        A generated caption, exactly as generated (a non-``str`` reads as nothing).

    Returns
    -------
    dict of str to str or None
        ``{attribute: word}`` for the level's attributes (position ``at top left``, background ``on dark``, as
        the toolkit names them), ``None`` where nothing is read.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    level = check_level(level)
    tokens = caption.split(" ") if isinstance(caption, str) else None
    read: dict[str, str | None] = {}
    for attribute in level_attributes(level):
        where = _toolkit_tokens(attribute, level)
        text = None
        if tokens is not None:
            try:
                text = tokens[where] if isinstance(where, int) else " ".join(tokens[k] for k in where)
            except IndexError:  # the toolkit catches it and reads nothing
                text = None
        read[attribute] = None if text is None else _first_contained(_TOOLKIT_SEARCH[attribute], text)
    return read


def toolkit_caption_scores(level: int, true_caption: str, caption: Any) -> dict[str, Any]:
    """One generated caption scored against the true one by the authors' toolkit's rules.

    ``check_cross_sample_correct(..., recontext=caption)`` of ``multimodal_compare/eval/eval_cdsprites.py``:
    attribute ``a`` is right when the word :func:`toolkit_read_caption` reads for it occurs in the true
    caption (a substring test); ``letters`` is ``count_same_letters``: both strings cut to the shorter
    one's length, equal characters counted position by position, divided by the true caption's length;
    the caption is Strict-right when ``letters == 1``, i.e. it *starts with* the true caption (trailing
    text of any kind passes; the features play no part in Strict).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    true_caption : str
        The true caption of the image given to the model.
    caption : str
        The generated caption, exactly as generated (non-``str``: wrong in every score).

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, right attributes, 0 to ``level``), ``letters`` (float in [0, 1]),
        ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``true_caption`` is not a non-empty string.
    """
    if not isinstance(true_caption, str) or not true_caption:
        raise InvalidArgumentError(f"true_caption: expected a non-empty caption, got {true_caption!r}")
    read = toolkit_read_caption(level, caption)
    right = {name: word is not None and word in true_caption for name, word in read.items()}
    if isinstance(caption, str):
        letters = sum(a == b for a, b in zip(caption, true_caption)) / len(true_caption)
    else:
        letters = 0.0
    return {"strict": letters == 1, "features": sum(right.values()), "letters": letters, "per_attribute": right}


def toolkit_image_scores(level: int, caption: str, predicted: Any) -> dict[str, Any]:
    """One image's classifier verdicts scored against a caption by the authors' toolkit's rules.

    ``check_cross_sample_correct(..., reconimage=image)`` of ``multimodal_compare/eval/eval_cdsprites.py``:
    the caption's word for attribute ``a`` is ``get_attribute``, the first word of the toolkit's list for ``a``
    (:data:`_TOOLKIT_SEARCH`) found anywhere in the caption (a substring, case ignored); ``a`` is right when
    that word is the classifier's class for ``a`` (a word found nowhere is wrong). Strict: every attribute
    right.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        The caption the image should show (text -> image: the true caption; joint: the caption the toolkit
        rebuilds from the generated one, :func:`toolkit_joint_scores`).
    predicted : array-like of int, shape (L,)
        The classifiers' classes of the image, in :func:`~repscope.data.sprites.attributes.level_attributes` order.

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, 0 to ``level``), ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``predicted`` is not one valid row of classes.
    """
    level = check_level(level)
    row = check_table(level, np.asarray(predicted).reshape(1, -1), name="predicted")[0]
    text = caption if isinstance(caption, str) else ""
    right = {}
    for column, name in enumerate(level_attributes(level)):
        word = _first_contained(_TOOLKIT_SEARCH[name], text)
        right[name] = word is not None and word == _toolkit_word(name, row[column])
    return {"strict": all(right.values()), "features": sum(right.values()), "per_attribute": right}


def toolkit_joint_scores(level: int, caption: Any, predicted: Any) -> dict[str, Any]:
    """One jointly generated caption/image pair scored by the authors' toolkit's rules.

    ``calculate_joint_coherency`` of ``multimodal_compare/eval/eval_cdsprites.py``: ``try_retrieve_atts`` reads
    every attribute from the caption (:func:`toolkit_read_caption`) and joins the words, ``Unknown`` for one
    not read, in the toolkit's order (size, colour, shape, position, background); that text is scored against
    the image as in text -> image (:func:`toolkit_image_scores`). A caption need not be well formed: extra
    words, extra text inside a token and missing trailing tokens only matter where they change what is read.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        The generated caption, exactly as generated.
    predicted : array-like of int, shape (L,)
        The classifiers' classes of the generated image.

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, 0 to ``level``), ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``predicted`` is not one valid row of classes.
    """
    read = toolkit_read_caption(level, caption)
    order = [name for name in ("size", "colour", "shape", "position", "background") if name in read]
    return toolkit_image_scores(level, " ".join(read[name] or "Unknown" for name in order), predicted)


def toolkit_coherency(
    level: int, direction: str, *, truth: Any = None, captions: Any = None, predicted: Any = None
) -> dict[str, Any]:
    """Coherency of one direction scored by the authors' toolkit's rules, averaged as the toolkit averages.

    ``calculate_cross_coherency`` / ``calculate_joint_coherency`` of ``multimodal_compare/eval/eval_cdsprites.py``
    per sample (:func:`toolkit_image_scores`, :func:`toolkit_caption_scores`, :func:`toolkit_joint_scores`),
    then ``get_mean_stats``: ``strict = 100 / N * #right``, ``letters = 100 / N * sum letters_n``. The
    toolkit prints Features as the mean share of right attributes in %; here it is the mean number of
    right attributes (0 to ``L``), the unit of our Features (toolkit % = 100 * features / L).

    What is reproduced is the scoring of given outputs. Not reproduced, since they are how outputs are
    made, not scored: the toolkit's own classifier weights (images are judged by ours), its sample counts
    (250 test samples for the cross directions, 64 joint samples) and its joint sampler, which draws the
    image's and the caption's latents from the prior separately (``models/trainer.py``,
    ``save_joint_samples``: each modality's ``generate_samples``); our joint pairs share one latent.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    direction : {"text_to_image", "image_to_text", "joint"}
        What is scored: images against the true captions, captions against the true captions, or
        generated captions against the images generated with them.
    truth : sequence of str, optional
        The true captions (the cross directions).
    captions : sequence of str, optional
        The generated captions, exactly as generated (``image_to_text``, ``joint``).
    predicted : array-like of int, shape (N, L), optional
        The classifiers' classes of the generated images (``text_to_image``, ``joint``).

    Returns
    -------
    dict
        ``strict`` (%), ``features`` (0 to ``L``), ``letters`` (%, ``image_to_text`` only),
        ``per_attribute`` (``{attribute: %}``), ``level``, ``samples``, ``rules`` (``"toolkit"``).

    Raises
    ------
    InvalidArgumentError
        When the direction is unknown, an input it needs is missing or empty, or the inputs differ in length.
    """
    level = check_level(level)
    needs = {"text_to_image": ("truth", "predicted"), "image_to_text": ("truth", "captions"), "joint": ("captions",)}
    if direction not in needs:
        raise InvalidArgumentError(f"direction: must be one of {', '.join(needs)}, got {direction!r}")
    given = {"truth": truth, "captions": captions, "predicted": predicted}
    for name in needs[direction] + (("predicted",) if direction == "joint" else ()):
        value = given[name]
        if value is None or isinstance(value, (str, bytes)) or len(value) == 0:
            raise InvalidArgumentError(f"{name}: {direction} needs a non-empty sequence, got {value!r:.60}")
    lengths = {name: len(given[name]) for name in given if given[name] is not None}
    if len(set(lengths.values())) > 1:
        raise InvalidArgumentError(f"{' and '.join(lengths)}: need one row per sample, got {lengths}")
    if direction == "text_to_image":
        rows = [toolkit_image_scores(level, t, p) for t, p in zip(truth, np.asarray(predicted))]
    elif direction == "image_to_text":
        rows = [toolkit_caption_scores(level, t, c) for t, c in zip(truth, captions)]
    else:
        rows = [toolkit_joint_scores(level, c, p) for c, p in zip(captions, np.asarray(predicted))]
    result: dict[str, Any] = {
        "strict": 100.0 * float(np.mean([row["strict"] for row in rows])),
        "features": float(np.mean([row["features"] for row in rows])),
        "per_attribute": {
            name: 100.0 * float(np.mean([row["per_attribute"][name] for row in rows]))
            for name in level_attributes(level)
        },
        "level": level,
        "samples": len(rows),
        "rules": "toolkit",
    }
    if direction == "image_to_text":
        result["letters"] = 100.0 * float(np.mean([row["letters"] for row in rows]))
    return result
