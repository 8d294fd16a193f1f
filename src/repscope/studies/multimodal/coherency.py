"""CdSprites+ coherency of a model's generated outputs (Sejnova et al., Sec. 3.3, Table 4): the study
behind ``repscope sprites evaluate FOLDER --level L``.

The model's outputs are laid out as :data:`OUTPUT_LAYOUT`; images are judged by the level's judges (attribute
classifiers, :mod:`repscope.studies.multimodal.judges`, trained once on first use, on the config's
``trainer``: ``--accelerator``, ``--devices``, ...), captions are
parsed, and :mod:`repscope.metrics.multimodal.coherency` scores text->image, image->text and joint coherency
(Strict / Features / Letters). The run directory holds ``metrics.json`` (every score),
``tables/coherency.csv`` (one row per direction and rules) and ``report.html``.

The study is three steps: :func:`read_output_parts` reads the folder, :func:`compute_coherency` scores the
outputs (a :class:`CoherencyResult`; nothing is written), :func:`write_coherency` and
:func:`coherency_report` write the run directory.

``compat`` chooses the rules: ``ours`` (the paper's printed definitions, strictly:
:mod:`repscope.metrics.multimodal.coherency`), ``toolkit`` (the rules of the authors' evaluation script
exactly, :func:`repscope.metrics.multimodal.toolkit_coherency.toolkit_coherency`;
``multimodal_compare/eval/eval_cdsprites.py`` of gabinsane/multimodal-vae-comparison) or ``both`` (the
default: the two side by side, ours under each direction's key, the toolkit's under ``toolkit``). The
toolkit's rules read captions more leniently: a generated caption that starts with the true one is
Strict-right whatever follows it; an attribute is read as a substring of fixed space-separated tokens; a joint
pair needs no well-formed caption."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
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
from repscope.studies.multimodal.judges import default_trainer, load_judges
from repscope.train.config import TrainerSection
from repscope.validation import check_images, to_uint8

# a direction whose images the judge rejects this often gets a warning: the model draws no shapes there
REJECTED_WARNING_PERCENT = 5.0


class CoherencyConfig(Section):
    """What to score: the folder of a model's outputs and the CdSprites+ level of its captions; where the
    level's judges train if they are not cached yet (``trainer``: accelerator, devices,
    precision, ...; their epochs and log are the judges' own); ``compat``: which rules score it
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
        The folder, its level, the rules (``compat``) and where the judges train if not cached.
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
    result = compute_coherency(
        read_output_parts(folder, raw_captions=config.compat != "ours", level=config.level),
        config.level,
        trainer=config.trainer,
        compat=config.compat,
    )
    run = RunDirectory.create("sprites-evaluate", out=out, root=root)
    write_coherency(result, run, folder)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return run.write_report(coherency_report(result, folder))


def write_coherency(result: CoherencyResult, run: RunDirectory, folder: Path) -> None:
    """Write the scores of :func:`compute_coherency` into ``run``: ``config.yaml``, ``metrics.json`` (every
    score, :meth:`CoherencyResult.as_dict`) and ``tables/coherency.csv``.

    Parameters
    ----------
    result : CoherencyResult
        The scores.
    run : repscope.run_directory.RunDirectory
        Where they go.
    folder : pathlib.Path
        The folder of outputs that was scored (recorded in the config).
    """
    run.write_config(
        {"study": "sprites evaluate", "folder": str(folder.resolve()), "level": result.level, "compat": result.compat}
    )
    run.write_metrics(result.as_dict())
    run.write_table("coherency", result.table())


def coherency_report(result: CoherencyResult, folder: Path) -> Report:
    """The page of ``repscope sprites evaluate``: the warnings, what each column means and the scores.

    Parameters
    ----------
    result : CoherencyResult
        The scores.
    folder : pathlib.Path
        The folder of outputs that was scored (the page's subtitle).

    Returns
    -------
    repscope.report.Report
    """
    report = Report("CdSprites+ coherency", subtitle=f"{folder}, level {result.level}")
    for warning in result.warnings:
        report.add_warning(warning)
    report.add_paragraph(
        "Strict: % of samples with every attribute right. Features: mean number of right "
        "attributes per sample (of the level's). Letters: % of caption characters right, "
        "position by position. Images are judged by the level's judges (attribute classifiers); Rejected: % of "
        "images in which they recognise no shape (a blob, noise, an empty frame). Rules 'ours': "
        "the paper's definitions, strictly (a caption is right when it equals the true one; a rejected "
        "image is wrong on every attribute). Rules "
        "'toolkit': those of the authors' script multimodal_compare/eval/eval_cdsprites.py (a caption is "
        "right when it starts with the true one; words are read as substrings of fixed tokens)."
    )
    report.add_table(result.table(), title="Coherency")
    return report


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


PARTS = ("text_to_image", "image_to_text", "joint", "joint_traversal")
JUDGED_PARTS = ("text_to_image", "joint", "joint_traversal")  # the parts with generated images


@dataclass(frozen=True)
class OutputPart:
    """One part of a model's outputs (:data:`OUTPUT_LAYOUT`), in memory.

    Attributes
    ----------
    where : pathlib.Path
        The part's folder (``FOLDER/text_to_image``, ...): the files of :data:`OUTPUT_LAYOUT` in it are
        named in the messages, whether the outputs were read from there or not.
    truth : list of str, optional
        ``truth.txt``: the captions given (text -> image) or the true captions of the images given
        (image -> text).
    images : numpy.ndarray, optional
        ``images.npy``: the generated images, uint8 ``(N, 64, 64, 3)``.
    captions : list of str, optional
        ``captions.txt``: the generated captions up to their end mark.
    raw_captions : list of str, optional
        ``captions_raw.txt``: the decoder's whole captions, which the toolkit's rules read where given.
    """

    where: Path
    truth: list[str] | None = None
    images: np.ndarray | None = None
    captions: list[str] | None = None
    raw_captions: list[str] | None = None


@dataclass(frozen=True)
class CoherencyResult:
    """The coherency of a model's outputs (:func:`compute_coherency`).

    Attributes
    ----------
    level : int
        CdSprites+ level of the captions.
    compat : {"both", "ours", "toolkit"}
        The rules that scored them.
    counts : dict of str to int
        Samples per part, in the order of :data:`PARTS`.
    ours : dict of str to dict
        Per part, the scores of :mod:`repscope.metrics.multimodal.coherency` (our rules; empty without them).
    toolkit : dict of str to dict or None
        Per part, :func:`toolkit_coherency` (each with ``captions_file`` where captions were read); None
        without the toolkit's rules.
    judge_confidence : dict of str to float
        Per judged part, the judges' mean confidence on its images.
    rejected : dict of str to float
        Per judged part, % of images the judge recognises no shape in (by our rules they count wrong on
        every attribute; the toolkit's rules, whose classifiers have no reject option, read them as they are).
    part_warnings : dict of str to tuple of str
        Per judged part, what the judges' confidence and rejections warn of.
    judge_validation_accuracy : dict of str to float or None
        The judges' validation accuracy per attribute; None when no image was judged.
    """

    level: int
    compat: str
    counts: dict[str, int]
    ours: dict[str, dict[str, Any]]
    toolkit: dict[str, dict[str, Any]] | None
    judge_confidence: dict[str, float]
    rejected: dict[str, float]
    part_warnings: dict[str, tuple[str, ...]]
    judge_validation_accuracy: dict[str, float] | None

    @property
    def warnings(self) -> list[str]:
        """Every warning, part by part."""
        return [warning for part in self.counts for warning in self.part_warnings.get(part, ())]

    def as_dict(self) -> dict[str, Any]:
        """The scores as :func:`evaluate_outputs` returns them (and ``metrics.json`` holds them): ``level``,
        ``compat``, ``counts``, per part its scores by our rules, ``classifier_confidence``, ``rejected`` and
        ``warnings`` where images were judged, ``toolkit`` and ``classifier_validation_accuracy``; the keys in
        the order in which the parts were scored."""
        scores: dict[str, Any] = {"level": self.level, "compat": self.compat, "counts": dict(self.counts)}
        for part in self.counts:
            if part in self.ours:
                scores[part] = self.ours[part]
            if part in self.rejected:
                scores.setdefault("classifier_confidence", {})[part] = self.judge_confidence[part]
                scores.setdefault("rejected", {})[part] = self.rejected[part]
                for warning in self.part_warnings.get(part, ()):
                    scores.setdefault("warnings", []).append(warning)
        if self.toolkit is not None:
            scores["toolkit"] = dict(self.toolkit)
        if self.judge_validation_accuracy is not None:
            scores["classifier_validation_accuracy"] = dict(self.judge_validation_accuracy)
        return scores

    def table(self) -> pd.DataFrame:
        """One row per part and rules (:func:`coherency_table`)."""
        return coherency_table(self.as_dict())


def read_output_parts(folder: str | Path, raw_captions: bool = True, level: int | None = None) -> dict[str, OutputPart]:
    """Read the parts of a model's outputs laid out as :data:`OUTPUT_LAYOUT` (any may be missing, not all).

    Parameters
    ----------
    folder : str or pathlib.Path
        The outputs.
    raw_captions : bool, default=True
        Also read each part's ``captions_raw.txt`` where there is one (what the toolkit's rules read).
    level : int, optional
        CdSprites+ level of the captions: when given, each part's ``truth.txt`` is checked against it as
        soon as it is read, so that a bad caption is named before a later file is opened.

    Returns
    -------
    dict of str to OutputPart
        The parts present, in the order of :data:`PARTS`.

    Raises
    ------
    SourceNotFoundError, DataFormatError
        When the folder holds no part, or a file is missing or unreadable.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceNotFoundError(f"{folder}: not a folder")
    present = {name: folder / name for name in PARTS if (folder / name).is_dir()}
    if not present:
        evaluated = folder / "evaluation" / "outputs"
        if evaluated.is_dir():  # the run directory of an evaluated MMVAE: its outputs are one level down
            raise SourceNotFoundError(
                f"{folder}: a run directory, not a folder of outputs; its evaluation's outputs are in {evaluated}"
            )
        raise SourceNotFoundError(
            f"{folder}: holds none of text_to_image/, image_to_text/, joint/ (layout:\n{OUTPUT_LAYOUT})"
        )
    return {name: _read_part(name, where, raw_captions, level) for name, where in present.items()}


def _read_part(name: str, where: Path, raw_captions: bool, level: int | None) -> OutputPart:
    truth = read_captions(where / "truth.txt") if name in ("text_to_image", "image_to_text") else None
    if truth is not None and level is not None:
        _truth_table(level, truth, where / "truth.txt")  # the captions' own error first, as a reader expects
    images = read_output_images(where / "images.npy") if name in JUDGED_PARTS else None
    captions = read_captions(where / "captions.txt") if name != "text_to_image" else None
    raw = None
    if raw_captions and captions is not None and (where / "captions_raw.txt").exists():
        raw = read_captions(where / "captions_raw.txt")
    return OutputPart(where, truth=truth, images=images, captions=captions, raw_captions=raw)


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
    :data:`OUTPUT_LAYOUT` (any of the parts may be missing, not all): :func:`read_output_parts`, then
    :func:`compute_coherency`.

    Parameters
    ----------
    folder : str or pathlib.Path
        The outputs (:data:`OUTPUT_LAYOUT`).
    level : int
        CdSprites+ level 1-5 of the captions.
    trainer : TrainerSection, optional
        Where the level's judges train if they are not cached yet (default
        :func:`repscope.studies.multimodal.judges.default_trainer`).
    compat : {"both", "ours", "toolkit"}, default="both"
        The rules (module docstring). The toolkit's rules read a part's ``captions_raw.txt`` where there is
        one (the decoder's whole output, as the toolkit scores it), else its ``captions.txt``.

    Returns
    -------
    dict
        :meth:`CoherencyResult.as_dict`.

    Raises
    ------
    InvalidArgumentError
        When ``level`` or ``compat`` is not one of theirs.
    SourceNotFoundError, DataFormatError
        When the folder holds no part, a file is missing or unreadable, or counts differ.
    """
    level, compat = _check_rules(level, compat)
    parts = read_output_parts(folder, raw_captions=compat != "ours", level=level)
    return compute_coherency(parts, level, trainer=trainer, compat=compat).as_dict()


def _check_rules(level: Any, compat: str) -> tuple[int, str]:
    level = check_level(level, "--level")
    if compat not in COMPAT:
        raise InvalidArgumentError(f"--compat: must be one of {', '.join(COMPAT)}, got {compat!r}")
    return level, compat


def compute_coherency(
    parts: Mapping[str, OutputPart],
    level: int,
    *,
    trainer: TrainerSection | None = None,
    compat: str = "both",
    judges: Any = None,
) -> CoherencyResult:
    """Score a model's outputs by our rules and (or) the toolkit's; nothing is written.

    Parameters
    ----------
    parts : mapping of str to OutputPart
        The outputs by part (:data:`PARTS`; :func:`read_output_parts` reads them from a folder).
    level : int
        CdSprites+ level 1-5 of the captions.
    trainer : TrainerSection, optional
        Where the level's judges train if they are not cached yet (default
        :func:`repscope.studies.multimodal.judges.default_trainer`); unused when ``judges`` is given.
    compat : {"both", "ours", "toolkit"}, default="both"
        The rules (module docstring).
    judges : AttributeJudges, optional
        The level's judges (default: loaded, or trained once, when a part holds images).

    Returns
    -------
    CoherencyResult

    Raises
    ------
    InvalidArgumentError
        When ``level`` or ``compat`` is not one of theirs.
    DataFormatError
        When a truth caption is not one of the level's, or the counts of a part differ.
    """
    level, compat = _check_rules(level, compat)
    scoring = _Scoring(level, compat, trainer, judges)
    for name in PARTS:
        if name in parts:
            scoring.score(name, parts[name])
    return scoring.result()


class _Scoring:
    """The scores of one part after another, and the judges, loaded on the first part with images."""

    def __init__(self, level: int, compat: str, trainer: TrainerSection | None, judges: Any) -> None:
        self.level, self.compat, self.trainer, self.judges = level, compat, trainer, judges
        self.ours_rules, self.toolkit_rules = compat in ("both", "ours"), compat in ("both", "toolkit")
        self.counts: dict[str, int] = {}
        self.ours: dict[str, dict[str, Any]] = {}
        self.toolkit: dict[str, dict[str, Any]] = {}
        self.confidence: dict[str, float] = {}
        self.rejected: dict[str, float] = {}
        self.warnings: dict[str, tuple[str, ...]] = {}
        self.judged = False

    def score(self, name: str, part: OutputPart) -> None:
        if name == "text_to_image":
            self._text_to_image(part)
        elif name == "image_to_text":
            self._image_to_text(part)
        else:
            self._joint(name, part)

    def _text_to_image(self, part: OutputPart) -> None:
        truth = _truth_table(self.level, part.truth, part.where / "truth.txt")
        _same_length(part.where / "truth.txt", len(truth), part.where / "images.npy", len(part.images))
        judgement = self._judge("text_to_image", part.images)
        if self.ours_rules:
            self.ours["text_to_image"] = coherency.text_to_image(
                self.level, truth, judgement.table, judgement.recognised
            )
        if self.toolkit_rules:
            self.toolkit["text_to_image"] = toolkit_coherency(
                self.level, "text_to_image", truth=part.truth, predicted=judgement.table
            )
        self.counts["text_to_image"] = len(truth)

    def _image_to_text(self, part: OutputPart) -> None:
        truth = _truth_table(self.level, part.truth, part.where / "truth.txt")
        _same_length(part.where / "truth.txt", len(truth), part.where / "captions.txt", len(part.captions))
        if self.ours_rules:
            self.ours["image_to_text"] = coherency.image_to_text(self.level, truth, part.captions)
        if self.toolkit_rules:
            raw, source = _toolkit_captions(part)
            scores = toolkit_coherency(self.level, "image_to_text", truth=part.truth, captions=raw)
            self.toolkit["image_to_text"] = {**scores, "captions_file": source}
        self.counts["image_to_text"] = len(truth)

    def _joint(self, name: str, part: OutputPart) -> None:
        _same_length(part.where / "images.npy", len(part.images), part.where / "captions.txt", len(part.captions))
        judgement = self._judge(name, part.images)
        if self.ours_rules:
            self.ours[name] = coherency.joint(self.level, part.captions, judgement.table, judgement.recognised)
        if self.toolkit_rules:
            raw, source = _toolkit_captions(part)
            self.toolkit[name] = {
                **toolkit_coherency(self.level, "joint", captions=raw, predicted=judgement.table),
                "captions_file": source,
            }
        self.counts[name] = len(part.captions)

    def _judge(self, name: str, images: np.ndarray) -> Any:
        """The judges' reading of a part's images; their confidence, rejections and warnings noted."""
        if self.judges is None:
            self.judges = _judges(self.level, self.trainer)
        self.judged = True
        judgement = self.judges.judge(images)
        familiarity = self.judges.familiarity(judgement.confidence)
        self.confidence[name] = familiarity["mean_confidence"]
        self.rejected[name] = 100.0 * float(np.mean(~np.asarray(judgement.recognised, dtype=bool)))
        self.warnings[name] = _judge_warnings(name, familiarity, self.rejected[name])
        return judgement

    def result(self) -> CoherencyResult:
        accuracy = None
        if self.judged:
            accuracy = {k: float(v) for k, v in self.judges.accuracies.items()}
        return CoherencyResult(
            level=self.level,
            compat=self.compat,
            counts=self.counts,
            ours=self.ours,
            toolkit=self.toolkit if self.toolkit_rules else None,
            judge_confidence=self.confidence,
            rejected=self.rejected,
            part_warnings=self.warnings,
            judge_validation_accuracy=accuracy,
        )


def _toolkit_captions(part: OutputPart) -> tuple[list[str], str]:
    """The captions the toolkit's rules read: ``captions_raw.txt`` where there is one (as many lines as
    ``captions.txt``), else ``captions.txt``; and the file's name."""
    if part.raw_captions is None:
        return part.captions, "captions.txt"
    raw_path = part.where / "captions_raw.txt"
    _same_length(part.where / "captions.txt", len(part.captions), raw_path, len(part.raw_captions))
    return part.raw_captions, "captions_raw.txt"


def _judges(level: int, trainer: TrainerSection | None) -> Any:
    # no trainer: the level alone, the judges' default (what a stand-in for load_judges takes)
    return load_judges(level) if trainer is None else load_judges(level, trainer=trainer)


def _judge_warnings(part: str, familiarity: dict[str, Any], rejected: float) -> tuple[str, ...]:
    """The warnings on a part's images: the judges are unsure of them (``familiarity``), or recognise no
    shape in many (``rejected``, %)."""
    name = part.replace("_", " ")
    warnings = []
    if familiarity["warning"]:
        warnings.append(f"{name} images: {familiarity['warning']}")
    if rejected >= REJECTED_WARNING_PERCENT:
        warnings.append(
            f"{name} images: the judge recognises no shape in {rejected:.1f}% of them (faint blobs, noise, empty "
            "frames); they count wrong on every attribute by our rules (the toolkit's rules read them as they are)"
        )
    return tuple(warnings)


def coherency_table(results: dict[str, Any]) -> pd.DataFrame:
    """One row per direction and rules (``ours``, ``toolkit``): Strict %, Features (x/level), Letters % —
    the paper's Table 4 columns — and the per-attribute % right.

    Parameters
    ----------
    results : dict
        What :func:`evaluate_outputs` returns (:meth:`CoherencyResult.as_dict`).

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
