"""The judges of CdSprites+ images, attribute classifiers: the registered model ``attribute-cnn`` trained by
:func:`repscope.train.fitting.fit` on the registered dataset ``cdsprites``, one per attribute of a level,
cached under ``$REPSCOPE_HOME``.

The paper (Sejnova et al., Sec. 3.3 and A.2.3) counts a generated image as correct only when
pre-trained classifiers recognise every attribute of its level (shape, size, colour, position,
background). This module trains those judges, caches them and applies them:

* :func:`train_judges` trains one network per attribute of ``level`` on CdSprites+ samples of
  the level drawn with every procedural texture family but one (``held_out_family``, default
  ``fabric``) and with brightness / contrast jitter on the training images, each through ``fit`` with
  the attribute as the target, on the caller's trainer (``--accelerator``, ``--devices``, ...; by
  default :func:`default_trainer`); it measures each on ``val_size`` freshly generated ``val`` samples
  (the training families) and on as many samples of the held-out family, which estimate how the
  classifier judges textures it never saw (the published dataset's DTD photographs, a model's output);
* the training images are drawn on the fly with the augmentations of
  :mod:`repscope.data.multimodal.augment` (shape-geometry jitter: scale, aspect, small rotations, sub-pixel
  shifts, stroke dilation / erosion; Gaussian blur up to sigma 2.5 px; noise), fresh samples every
  epoch (the training stream holds ``train_size * epochs`` samples, seen once each), so the classifiers
  do not depend on our exact pixels; the validation and held-out images are clean renders;
* **reject option**: the shape classifier has a fourth class, "no shape" (:data:`NONE_CLASS`), trained on
  a share ``none_fraction`` (default 0.2) of images that hold no shape
  (:func:`repscope.data.multimodal.augment.no_shape_images`: empty frames, noise, averages of many sprites,
  heavily blurred faint shapes, Gaussian blobs). An image is *recognised* when that class's softmax
  probability is below :data:`REJECT_THRESHOLD` (0.5); the shape read off it is the arg-max over the
  three shapes. :meth:`AttributeJudges.judge` gives the table, the confidences and the ``recognised``
  mask; :meth:`AttributeJudges.predict_recognised` the table and the mask;
* **the package's own classifiers** (``src/repscope/judges/cdsprites-level{L}``, :func:`packaged_judges_dir`;
  ``judges/README.md`` holds the commands that trained them and what they measured): the robust training
  needs about a million draws for level 5's shape (hours on 2 CPU cores), so they come trained;
* :func:`load_judges` reads the user's cache (what ``repscope sprites train-judges`` wrote) and,
  when it is missing, incomplete, corrupt or of an earlier format, the package's; it trains once with
  the defaults only when neither is usable;
* :func:`measure_second_renderer` measures a level's classifiers on images of
  :mod:`repscope.data.multimodal.second_renderer` (shapes drawn another way, never seen in training), sharp
  and blurred by sigma 2 px; :func:`train_judges` records it in ``classifiers.json``
  (``second_renderer``);
* :meth:`AttributeJudges.predict` turns images into an attribute table ``(N, L)``;
  :func:`evaluate_judges` compares it with the true table, attribute by attribute.

Cache layout, ``judges_dir(level) = $REPSCOPE_HOME/classifiers/cdsprites-level{L}``:
``{attribute}.ckpt`` per attribute (``state_dict``, the task's ``hyper_parameters``, ``level`` and
``attribute``, readable with ``torch.load(..., weights_only=True)``) and ``classifiers.json`` (per
attribute: ``val_accuracy``, ``held_out_accuracy``, ``held_out_confidence`` (mean largest softmax
probability on the held-out family), ``meets_target`` (both accuracies >= 0.98), ``n_train``,
``n_val``, ``n_held_out``, ``epochs``, ``batch_size``, ``lr``, ``seed``, ``classes`` (the class words),
``architecture``, ``repscope_version``, ``date``, ``train_seconds``, ``blurred_accuracy`` (on the
validation images blurred by a Gaussian of sigma 2 px); and for the whole level the generator's
``recipe``, ``train_families``, ``held_out_family``, ``jitter``, ``augmentation``, ``none_fraction``,
``reject_threshold`` and ``reject`` (the shares rejected of ``no_shape`` images, of the ``clean``
validation images and of them ``blurred``)). A cache of another ``format_version`` (classifiers trained
the earlier way, without augmentation or reject option) or of an earlier recipe is refused, so it is
retrained once.

The folder is built in a temporary sibling and renamed into place only once every file is written,
and a file lock makes a second process wait for the first one's training
(:mod:`repscope.cache`). A corrupt or mismatched checkpoint (or ``classifiers.json``) counts as a
missing cache: with ``train_if_missing=True`` :func:`load_judges` says so in one line and
retrains; with ``train_if_missing=False`` it raises :class:`DataFormatError` naming the file (or
:class:`SourceNotFoundError` when files are missing).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from repscope import __version__
from repscope.cache import exclusive_lock, remove_leftovers
from repscope.data.datasets import ArraySplit, Dataset, FieldSpec, GeneratorSplit
from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, check_level, check_table, level_attributes
from repscope.data.multimodal.augment import NONE_CLASS, Augmentation, AugmentedCdSprites, blur, no_shape_images
from repscope.data.multimodal.cdsprites import RECIPE, CdSpritesPlus
from repscope.data.multimodal.datasets import generate_arrays
from repscope.data.multimodal.second_renderer import second_rendering
from repscope.data.multimodal.textures import TEXTURE_FAMILIES
from repscope.data.sources import repscope_home
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.fileio import atomic_path, atomic_write, write_json_atomic
from repscope.progress import quiet_progress
from repscope.resources import resolve_jobs
from repscope.studies.common import auxiliary_trainer
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.fitting import fit, read_checkpoint
from repscope.train.tasks.base import EVAL_BATCH, evaluating, image_batches
from repscope.train.tasks.supervised import SupervisedTask
from repscope.validation import check_images, check_positive_int

TARGET_ACCURACY = 0.98
METADATA_FILE = "classifiers.json"
# 3: trained on the published recipe's images, with a held-out texture family; 4: augmented training
# images (repscope.data.multimodal.augment) and the shape classifier's "no shape" class
FORMAT_VERSION = 4
ARCHITECTURE = "AttributeCNN"
MODEL = "attribute-cnn"  # repscope.train.registry
GENERATOR = "repscope.data.multimodal.cdsprites.CdSpritesPlus"
# the package's level-5 and level-3 recipe (src/repscope/judges/README.md): 1M augmented draws for shape
# (level 3's shape read a fresh second-renderer sample at 0.9725 after 640k draws, level 5's 0.9965 after
# 1M) and 200k for each other attribute (level 3's size: 0.983 after 100k); with 2 data-loader workers
# level 3 took 16 min on a quiet 2-core machine (2026-11-27)
DEFAULT_TRAIN_SIZE = 200_000
DEFAULT_OTHER_TRAIN_SIZE = 40_000  # never more than train_size
# augmented draws a minute on 2 CPU cores with 2 data-loader workers (level 4: 940k in 16.5 min)
DRAWS_PER_MINUTE = 55_000
DEFAULT_VAL_SIZE = 5_000
DEFAULT_EPOCHS = 5
DEFAULT_BATCH_SIZE = 64
DEFAULT_LR = 2e-3
HELD_OUT_FAMILY = "fabric"  # never seen in training: the accuracy on it stands for unseen textures
DEFAULT_JITTER = 0.2  # brightness / contrast augmentation of the training images
DEFAULT_NONE_FRACTION = 0.2  # share of "no shape" images in the shape classifier's training stream
REJECT_ATTRIBUTE = "shape"  # the classifier that holds the "no shape" class
REJECT_THRESHOLD = 0.5  # an image is rejected when P(no shape) reaches this
MEASURED_BLUR_SIGMA = 2.0  # blurred_accuracy is measured on validation images blurred this much (px)
# measured on the second, independent renderer (repscope.data.multimodal.second_renderer), the targets:
# per attribute >= 0.98 on its images and >= 0.95 on them blurred by sigma 2 px
SECOND_RENDERER_SIZE = 2_000  # at most this many images, as many as the validation images
SECOND_RENDERER_SEED = 11
RENDERER_TARGET = 0.98
BLURRED_TARGET = 0.95
# judged images whose mean confidence falls this far below the held-out family's look unlike
# anything the classifiers were measured on
CONFIDENCE_DROP = 0.10


# the classifiers that come with the package (src/repscope/judges/cdsprites-level{L}: classifiers.json and a
# checkpoint per attribute, as train_judges writes them; judges/README.md says how they were trained)
PACKAGED_DIR = Path(__file__).resolve().parents[2] / "judges"


def packaged_judges_dir(level: int) -> Path:
    """Where the judges of ``level`` that come with the package are: ``repscope/judges/cdsprites-level{L}``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.

    Returns
    -------
    pathlib.Path
        The folder (it may be missing in a package built without them).
    """
    return PACKAGED_DIR / f"cdsprites-level{check_level(level)}"


def default_trainer() -> TrainerSection:
    """Where the judges train when the caller names no trainer: Lightning's choice of accelerator
    (``auto``: a GPU when there is one), the other fields TrainerSection's defaults."""
    return TrainerSection(accelerator="auto")


def judges_dir(level: int) -> Path:
    """Where the judges of ``level`` are cached: ``$REPSCOPE_HOME/classifiers/cdsprites-level{L}``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.

    Returns
    -------
    pathlib.Path
        The cache folder (not created; ``$REPSCOPE_HOME`` defaults to ``~/.cache/repscope``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    """
    return repscope_home() / "classifiers" / f"cdsprites-level{check_level(level)}"


def check_sprite_images(images: Any, name: str = "images") -> np.ndarray:
    """``images`` as a channels-last ``(N, 64, 64, 3)`` array: uint8 (0-255) or float in [0, 1];
    channels-first ``(N, 3, 64, 64)`` (what torch decoders return) is accepted and transposed.
    Raises :class:`InvalidArgumentError` naming ``name`` otherwise.

    Parameters
    ----------
    images : array-like or torch.Tensor
        At least one 64x64 RGB image: uint8 (0-255), or float / bool with finite values in [0, 1].
    name : str, default="images"
        The argument named in error messages.

    Returns
    -------
    numpy.ndarray
        ``(N, 64, 64, 3)``, values and dtype as given (a transposed view of channels-first input).

    Raises
    ------
    InvalidArgumentError
        When ``images`` is empty, not such a batch, or breaks the pixel rule.
    """
    return check_images(images, name, image_shape=(64, 64, 3))


# ---------------------------------------------------------------------------------------------
# the trained set


class Judgement(NamedTuple):
    """What :meth:`AttributeJudges.judge` reads off ``N`` images of a level with ``L`` attributes."""

    table: np.ndarray  # int64 (N, L) predicted classes
    confidence: np.ndarray  # float64 (N, L) probability of each predicted class
    recognised: np.ndarray  # bool (N,) the image holds a shape (P(no shape) < REJECT_THRESHOLD)
    no_shape_probability: np.ndarray  # float64 (N,) the shape classifier's P(no shape)


@dataclass
class AttributeJudges:
    """The judges of one level, an attribute classifier each (tasks in eval mode) and their ``classifiers.json``."""

    level: int
    modules: dict[str, SupervisedTask]
    metadata: dict[str, Any]
    directory: Path | None = None
    attributes: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.attributes = level_attributes(self.level)
        missing = [a for a in self.attributes if a not in self.modules]
        if missing:
            raise InvalidArgumentError(f"modules: level {self.level} needs classifiers for {', '.join(missing)}")
        for module in self.modules.values():
            module.eval()

    @property
    def accuracies(self) -> dict[str, float]:
        """Validation accuracy of each attribute's classifier, as measured when it was trained."""
        entries = self.metadata.get("attributes", {})
        return {a: float(entries[a]["val_accuracy"]) for a in self.attributes if a in entries}

    def to(self, device: str | torch.device) -> AttributeJudges:
        for module in self.modules.values():
            module.to(device)
        return self

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The attribute table ``(N, L)`` int64 (columns in :func:`level_attributes` order) that the
        classifiers read off ``images``: uint8 ``(N, 64, 64, 3)`` RGB or float in [0, 1]
        (channels-first ``(N, 3, 64, 64)`` accepted).

        Runs on the device of the first classifier's parameters (move them all with :meth:`to`),
        in eval mode without gradients; each classifier's train/eval mode is restored after.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 64x64 RGB image, as :func:`check_sprite_images` accepts.
        batch_size : int, default=512
            Images per forward pass, a positive integer.

        Returns
        -------
        numpy.ndarray
            int64 ``(N, L)``, ``L = level``: per attribute the arg-max class index of its classifier's
            logits, into ``ATTRIBUTE_VALUES[attribute]``.

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not such a batch, or ``batch_size`` is not a positive integer.
        """
        return self.predict_with_confidence(images, batch_size)[0]

    def predict_with_confidence(self, images: Any, batch_size: int = EVAL_BATCH) -> tuple[np.ndarray, np.ndarray]:
        """The attribute table of :meth:`predict` and each prediction's confidence.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 64x64 RGB image, as :func:`check_sprite_images` accepts.
        batch_size : int, default=512
            Images per forward pass, a positive integer.

        Returns
        -------
        table : numpy.ndarray
            int64 ``(N, L)`` predicted classes (as :meth:`predict`).
        confidence : numpy.ndarray
            float64 ``(N, L)``: the softmax probability of each predicted class, in (0, 1].

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not such a batch, or ``batch_size`` is not a positive integer.
        """
        judgement = self.judge(images, batch_size)
        return judgement.table, judgement.confidence

    def judge(self, images: Any, batch_size: int = EVAL_BATCH) -> Judgement:
        """Everything the classifiers read off ``images``: the attribute table, each prediction's
        confidence, and whether the image is recognised as a shape at all (the reject option).

        The shape classifier's softmax over its four classes gives ``P(no shape)``; the image is
        recognised when it is below :data:`REJECT_THRESHOLD`. The shape read off an image is the arg-max
        over the three shapes, its confidence that shape's probability among the three (``p_k / (1 -
        P(no shape))``); the other attributes' are their classifier's arg-max and its softmax probability.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 64x64 RGB image, as :func:`check_sprite_images` accepts.
        batch_size : int, default=512
            Images per forward pass, a positive integer.

        Returns
        -------
        Judgement
            ``table`` int64 ``(N, L)``, ``confidence`` float64 ``(N, L)``, ``recognised`` bool ``(N,)``,
            ``no_shape_probability`` float64 ``(N,)``.

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not such a batch, or ``batch_size`` is not a positive integer.
        """
        array = check_sprite_images(images)
        batch_size = check_positive_int(batch_size, "batch_size")
        modules = [self.modules[a] for a in self.attributes]
        device = next(modules[0].parameters()).device
        probabilities: list[list[torch.Tensor]] = [[] for _ in self.attributes]
        with contextlib.ExitStack() as stack:
            for module in modules:
                stack.enter_context(evaluating(module))
            for chunk in image_batches(array, int(batch_size), device):
                for k, module in enumerate(modules):
                    probabilities[k].append(torch.softmax(module(chunk).double(), dim=1).cpu())
        columns, confidences = [], []
        no_shape = np.zeros(len(array))
        for attribute, parts in zip(self.attributes, probabilities):
            p = torch.cat(parts).numpy()
            classes = len(ATTRIBUTE_VALUES[attribute])
            if attribute == REJECT_ATTRIBUTE and p.shape[1] > classes:
                no_shape = p[:, NONE_CLASS]
                p = p[:, :classes] / np.maximum(p[:, :classes].sum(1, keepdims=True), 1e-300)
            columns.append(p.argmax(1))
            confidences.append(p.max(1))
        return Judgement(
            table=np.stack(columns, axis=1).astype(np.int64),
            confidence=np.stack(confidences, axis=1).astype(np.float64),
            recognised=no_shape < REJECT_THRESHOLD,
            no_shape_probability=no_shape.astype(np.float64),
        )

    def predict_recognised(self, images: Any, batch_size: int = EVAL_BATCH) -> tuple[np.ndarray, np.ndarray]:
        """The attribute table of :meth:`predict` and which images are recognised as a shape.

        What coherency needs: an image counts as right only when it is recognised and every attribute
        matches.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 64x64 RGB image, as :func:`check_sprite_images` accepts.
        batch_size : int, default=512
            Images per forward pass, a positive integer.

        Returns
        -------
        table : numpy.ndarray
            int64 ``(N, L)`` predicted classes.
        recognised : numpy.ndarray
            bool ``(N,)``: False where the shape classifier says "no shape" (:meth:`judge`).

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not such a batch, or ``batch_size`` is not a positive integer.
        """
        judgement = self.judge(images, batch_size)
        return judgement.table, judgement.recognised

    def familiarity(self, confidence: Any) -> dict[str, Any]:
        """Do the judged images look like those the classifiers were measured on?

        Compares the mean confidence of each attribute's predictions with the mean confidence the
        classifier had on the held-out texture family when it was trained (``held_out_confidence`` in
        ``classifiers.json``): a drop of more than :data:`CONFIDENCE_DROP` means the images are unlike
        anything the accuracy was measured on (another renderer, blurred or broken model output), so the
        coherency judged with them is less certain than the recorded accuracy says.

        Parameters
        ----------
        confidence : array-like of float, shape (N, L)
            Confidences from :meth:`predict_with_confidence`.

        Returns
        -------
        dict of str to Any
            ``mean_confidence`` and ``reference_confidence`` (per attribute; the reference is None for
            a cache without one), ``unfamiliar`` (the attributes that dropped) and ``warning`` (a
            sentence, or None).
        """
        confidence = np.asarray(confidence, dtype=np.float64)
        entries = self.metadata.get("attributes", {})
        mean = {a: float(confidence[:, k].mean()) for k, a in enumerate(self.attributes)}
        reference = {a: entries.get(a, {}).get("held_out_confidence") for a in self.attributes}
        unfamiliar = [
            a for a in self.attributes if reference[a] is not None and mean[a] < reference[a] - CONFIDENCE_DROP
        ]
        warning = None
        if unfamiliar:
            detail = ", ".join(f"{a} {mean[a]:.2f} (held-out family {reference[a]:.2f})" for a in unfamiliar)
            warning = (
                f"the classifiers are unsure of these images (mean confidence {detail}): they look unlike the "
                "images the classifiers were measured on, so the scores judged with them are less reliable"
            )
        return {
            "mean_confidence": mean,
            "reference_confidence": reference,
            "unfamiliar": unfamiliar,
            "warning": warning,
        }


def measure_second_renderer(
    classifiers: AttributeJudges, size: int = SECOND_RENDERER_SIZE, seed: int = SECOND_RENDERER_SEED
) -> dict[str, Any]:
    """How the classifiers judge images they were never trained on: ``size`` samples of their level drawn
    by :func:`repscope.data.multimodal.second_renderer.second_rendering` (other shape geometry, anti-aliased
    edges, other textures), sharp and blurred by a Gaussian of sigma :data:`MEASURED_BLUR_SIGMA` (2 px).

    An attribute is right on an image when the judge recognises a shape in it (the reject option) and
    reads the attribute's true class, as coherency counts it.

    Parameters
    ----------
    classifiers : AttributeJudges
        The classifiers of one level.
    size : int, default=2000
        Images drawn (each way), positive.
    seed : int, default=11
        Seed of the drawn samples' attributes and nuisance factors.

    Returns
    -------
    dict of str to Any
        ``size``, ``seed``, ``blur_sigma``; per attribute ``accuracy`` and ``blurred_accuracy``; the shares
        ``recognised`` and ``blurred_recognised``; ``targets`` (``accuracy`` 0.98, ``blurred_accuracy`` 0.95)
        and ``meets_target`` (every attribute meets both).
    """
    size = check_positive_int(size, "size")
    result: dict[str, Any] = {"size": size, "seed": int(seed), "blur_sigma": MEASURED_BLUR_SIGMA}
    for prefix, sigma in (("", 0.0), ("blurred_", MEASURED_BLUR_SIGMA)):
        drawn = second_rendering(classifiers.level, size, seed=int(seed), blur_sigma=sigma)
        judgement = classifiers.judge(drawn["images"])
        right = (judgement.table == drawn["table"]) & judgement.recognised[:, None]
        result[f"{prefix}accuracy"] = {
            a: round(float(right[:, k].mean()), 6) for k, a in enumerate(classifiers.attributes)
        }
        result[f"{prefix}recognised"] = round(float(judgement.recognised.mean()), 6)
    result["targets"] = {"accuracy": RENDERER_TARGET, "blurred_accuracy": BLURRED_TARGET}
    result["meets_target"] = all(
        result["accuracy"][a] >= RENDERER_TARGET and result["blurred_accuracy"][a] >= BLURRED_TARGET
        for a in classifiers.attributes
    )
    return result


def evaluate_judges(classifiers: AttributeJudges, images: Any, table: Any) -> dict[str, float]:
    """Accuracy of each attribute's classifier on ``images`` against the true attribute ``table``
    ``(N, L)``: the fraction of images whose predicted class equals the table's.

    Parameters
    ----------
    classifiers : AttributeJudges
        The classifiers of one level ``L``.
    images : array-like or torch.Tensor
        ``N`` 64x64 RGB images, as :func:`check_sprite_images` accepts.
    table : array-like of int, shape (N, L)
        The true class indices, columns in :func:`level_attributes` order (``(N,)`` accepted at level 1).

    Returns
    -------
    dict of str to float
        Per attribute of the level, the accuracy in [0, 1].

    Raises
    ------
    InvalidArgumentError
        When ``table`` is not a valid attribute table of the level, ``images`` not such a batch, or
        their numbers of rows differ.
    """
    truth = check_table(classifiers.level, table, "table")
    array = check_sprite_images(images)
    if len(truth) != len(array):
        raise InvalidArgumentError(f"table: {len(truth)} rows for {len(array)} images")
    predicted = classifiers.predict(array)
    return {a: float(np.mean(predicted[:, k] == truth[:, k])) for k, a in enumerate(classifiers.attributes)}


# ---------------------------------------------------------------------------------------------
# training


def attribute_config(
    level: int,
    attribute: str,
    train_size: int,
    val_size: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    held_out_family: str | None = HELD_OUT_FAMILY,
    jitter: float = DEFAULT_JITTER,
    trainer: TrainerSection | None = None,
    workers: int = 1,
) -> Any:
    """The training config of one attribute's classifier: ``attribute-cnn`` on ``cdsprites``.

    Its ``data`` section records the generator's parameters; :func:`train_judges` hands ``fit`` the
    dataset itself (the augmented training stream of ``train_size * epochs`` samples, seen once, and the
    clean validation and held-out images), so the trainer runs one epoch.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    attribute : str
        The attribute learnt (the dataset's target), one of :func:`level_attributes` of ``level``.
    train_size, val_size : int
        Generated training and validation samples (no test split).
    epochs : int
        Passes of ``train_size`` fresh augmented samples (the stream holds ``train_size * epochs``;
        ``trainer.max_epochs`` is 1).
    batch_size : int
        Samples per training batch.
    lr : float
        Adam learning rate.
    seed : int
        Seed of the generated data and of the training.
    held_out_family : str or None, default="fabric"
        The texture family left out of ``train`` and ``val`` and used alone in ``test`` (``val_size``
        samples); None draws every family everywhere.
    jitter : float, default=0.2
        Brightness / contrast augmentation of the training images.
    trainer : TrainerSection, optional
        Where and how it trains (accelerator, devices, precision, ...); default :func:`default_trainer`.
        Its ``max_epochs`` is 1 (see ``epochs``) and it keeps no log (the training run is temporary).
    workers : int, default=1
        Processes that draw the training stream: 1 draws it in the training process, ``k > 1`` in
        ``k`` data-loader workers (the same images: each sample is seeded by its index).

    Returns
    -------
    TrainConfig
        ``trainer``'s settings, no logger, data held in memory. Values are not checked here beyond
        the config's own field constraints (the caller checks them).
    """
    families = [name for name in TEXTURE_FAMILIES if name != held_out_family]
    data = {
        "level": level,
        "target": attribute,
        "train_size": train_size,
        "val_size": val_size,
        "test_size": val_size,
        "seed": seed,
        "in_memory": True,
        "texture_families": families if held_out_family is not None else None,
        "test_texture_families": [held_out_family] if held_out_family is not None else None,
        "jitter": jitter,
    }
    return TrainConfig(
        # cosine-annealed to 0 over the stream: with a constant rate the level-1 shape classifier read the
        # second renderer's blurred images at 0.929 after 320k draws (0.987 sharp); annealed, 0.985
        model=Named(name=MODEL, params={"lr": lr, "schedule": "cosine"}),
        data=Named(name="cdsprites", params=data),
        # one pass over the training stream, which holds a fresh set of train_size samples per epoch
        trainer=auxiliary_trainer(trainer if trainer is not None else default_trainer(), max_epochs=1, logger="none"),
        batch_size=batch_size,
        seed=seed,
        num_workers=workers if workers > 1 else 0,
    )


def _level_dataset(level: int, attribute: str, settings: Settings, val: dict, test: dict) -> Dataset:
    """The dataset one attribute's classifier trains on: the augmented training stream
    (``train_size * epochs`` samples drawn on the fly, with "no shape" images for the shape classifier)
    and the clean ``val`` and held-out ``test`` arrays shared by the attributes."""
    s = settings
    textured = level >= 3 and s.held_out_family is not None
    stream = CdSpritesPlus(
        level,
        size=s.train_size_of(attribute) * s.epochs,
        seed=s.seed,
        split="train",
        texture_families=s.train_families if textured else None,
        jitter=s.jitter,
    )
    none_fraction = s.none_fraction if attribute == REJECT_ATTRIBUTE else 0.0
    augmented = AugmentedCdSprites(stream, seed=s.seed, augmentation=Augmentation(), none_fraction=none_fraction)
    classes = list(ATTRIBUTE_VALUES[attribute]) + (["none"] if attribute == REJECT_ATTRIBUTE else [])
    fields = {
        "image": FieldSpec("image", (3, 64, 64), "uint8", description="RGB sprite, 0-255"),
        attribute: FieldSpec("categorical", (), "int64", len(classes), tuple(classes), f"{attribute} class"),
    }
    splits = {
        "train": GeneratorSplit(augmented),
        "val": ArraySplit({"image": val["image"], attribute: val[attribute]}),
        "test": ArraySplit({"image": test["image"], attribute: test[attribute]}),
    }
    description = f"CdSprites+ level {level} augmented: {len(augmented)} train, {len(val['image'])} val, seed {s.seed}"
    return Dataset("cdsprites", splits, fields, attribute, description)


def _shape_probabilities(task: SupervisedTask, images: np.ndarray) -> np.ndarray:
    """Softmax probabilities of a classifier on uint8 ``(N, 3, 64, 64)`` images."""
    return torch.softmax(task.outputs(images).double(), dim=1).numpy()


def _fit_attribute(
    level: int, attribute: str, dataset: Any, config: Any, runs: Path, description: str
) -> tuple[SupervisedTask, dict[str, float], float]:
    """Train one attribute's classifier through ``fit``; its accuracy on the dataset's ``val`` split
    (the training families), on the same images blurred by sigma 2 px, and its accuracy and mean
    confidence on ``test`` (the held-out family). Predictions are the arg-max over the attribute's own
    classes (the shape classifier's "no shape" class aside)."""
    # the caller's global random state is left as it was; the initial weights depend on the seed only
    with torch.random.fork_rng(devices=[]):
        outcome = fit(
            config,
            out=runs / attribute,
            dataset=dataset,
            kind="classifier",
            description=description,
            report=False,
        )
    task = outcome.task.cpu().eval()
    classes = len(ATTRIBUTE_VALUES[attribute])
    scores: dict[str, float] = {}
    for split, name in (("val", "val"), ("test", "held_out")):
        arrays = dataset.arrays(split, ["image", attribute])
        p = _shape_probabilities(task, arrays["image"])[:, :classes]
        p = p / p.sum(1, keepdims=True)
        scores[f"{name}_accuracy"] = float(np.mean(p.argmax(1) == arrays[attribute]))
        scores[f"{name}_confidence"] = float(p.max(1).mean())
        if split == "val":
            blurred = blur(arrays["image"].transpose(0, 2, 3, 1), MEASURED_BLUR_SIGMA)
            blurred = np.clip(np.rint(blurred), 0, 255).astype(np.uint8).transpose(0, 3, 1, 2)
            predicted = _shape_probabilities(task, blurred)[:, :classes].argmax(1)
            scores["blurred_accuracy"] = float(np.mean(predicted == arrays[attribute]))
    return task, scores, float(outcome.metrics["fit_seconds"])


def _reject_shares(task: SupervisedTask, level: int, settings: Settings, val: dict) -> dict[str, float]:
    """Shares the shape classifier rejects: of ``val_size`` "no shape" images (a stream of their own,
    seed + 1), of the clean validation images and of them blurred by sigma 2 px."""
    s = settings
    textured = level >= 3 and s.held_out_family is not None
    source = CdSpritesPlus(
        level, size=s.val_size, seed=s.seed + 1, split="val", texture_families=s.train_families if textured else None
    )
    negatives = no_shape_images(source, np.arange(s.val_size), s.seed + 1)[0].transpose(0, 3, 1, 2)
    blurred = blur(val["image"].transpose(0, 2, 3, 1), MEASURED_BLUR_SIGMA)
    blurred = np.clip(np.rint(blurred), 0, 255).astype(np.uint8).transpose(0, 3, 1, 2)
    shares = {}
    for name, images in (("no_shape", negatives), ("clean", val["image"]), ("blurred", blurred)):
        shares[name] = round(float(np.mean(_shape_probabilities(task, images)[:, NONE_CLASS] >= REJECT_THRESHOLD)), 6)
    return shares


def train_judges(
    level: int,
    *,
    train_size: int = DEFAULT_TRAIN_SIZE,
    val_size: int = DEFAULT_VAL_SIZE,
    epochs: int = DEFAULT_EPOCHS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    lr: float = DEFAULT_LR,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    progress: bool = True,
    held_out_family: str | None = HELD_OUT_FAMILY,
    jitter: float = DEFAULT_JITTER,
    trainer: TrainerSection | None = None,
    none_fraction: float = DEFAULT_NONE_FRACTION,
    workers: int = 1,
    other_train_size: int | None = None,
) -> dict[str, Any]:
    """Train one judge (an attribute classifier) per attribute of ``level`` and write them to ``out`` (default
    :func:`judges_dir`), replacing what was there once every file is written.

    Returns the ``classifiers.json`` content plus ``directory``. An attribute below
    ``TARGET_ACCURACY`` (0.98) on the validation samples or on the held-out texture family is recorded
    with ``meets_target: false`` and a warning; its classifier is still saved. ``progress`` False keeps
    the training silent.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; one classifier per attribute of :func:`level_attributes`.
    train_size : int, default=200000
        Augmented training images per epoch of the shape classifier, positive; every epoch draws fresh
        ones (the training stream holds ``train_size * epochs`` samples, each seen once).
    val_size : int, default=5000
        Generated validation images (the accuracy is measured on them), positive.
    epochs : int, default=5
        Passes of ``train_size`` images per classifier, positive.
    batch_size : int, default=64
        Training batch size, positive.
    lr : float, default=2e-3
        Adam learning rate, positive.
    seed : int, default=0
        Seed of the generated data, of the augmentation and of the training, non-negative.
    out : str or os.PathLike, optional
        The folder written (``~`` expanded); default :func:`judges_dir` of ``level``.
    progress : bool, default=True
        Report the data generation and training progress.
    held_out_family : str or None, default="fabric"
        The procedural texture family kept out of training and measured alone (``val_size``
        samples); None trains on every family (the held-out accuracy is then on fresh samples of all).
    jitter : float, default=0.2
        Brightness / contrast augmentation of the training images, in [0, 1).
    trainer : TrainerSection, optional
        Where and how every classifier trains (accelerator, devices, precision, ...: a study's trainer or
        a command's flags); default :func:`default_trainer`. Epochs and the logger are the classifiers'.
    none_fraction : float, default=0.2
        Share of "no shape" images in the shape classifier's training stream, in (0, 1).
    workers : int, default=1
        Processes that draw the augmented training images (:func:`repscope.resources.resolve_jobs`: -1
        every core); the images, so the classifiers, do not depend on it. Drawing costs about as much
        CPU as training the network on 2 CPU cores, so a GPU's training waits on it without workers.
    other_train_size : int, optional
        Training images per epoch of the classifiers other than shape's; default the smaller of
        ``DEFAULT_OTHER_TRAIN_SIZE`` (40000) and ``train_size``. Shape
        is the attribute that needs the long stream (measured: level 5's shape read a second renderer's
        images at 0.62 after 80k draws and 1.000 after 1M); size, colour, position and background are
        read off much coarser cues.

    Returns
    -------
    dict of str to Any
        ``format_version``, ``level``, ``generator``, ``recipe``, ``model``, ``target_accuracy``,
        ``train_families``, ``held_out_family``, ``jitter``, ``augmentation``, ``none_fraction``,
        ``reject_threshold``, ``reject``, ``attributes`` (per attribute the entry described in the module
        docstring: ``val_accuracy``, ``held_out_accuracy``, ``blurred_accuracy``, ``meets_target``, ...)
        and ``directory`` (str).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, a size, ``epochs`` or ``batch_size`` is not a positive integer,
        ``seed`` is not a non-negative integer, ``lr`` is not positive, ``held_out_family`` is not a
        texture family, ``jitter`` not in [0, 1) or ``none_fraction`` not in (0, 1).

    Warns
    -----
    RuntimeWarning
        For each attribute whose validation or held-out accuracy is below ``TARGET_ACCURACY``.
    """
    level = check_level(level)
    train_size, val_size = check_positive_int(train_size, "train_size"), check_positive_int(val_size, "val_size")
    if other_train_size is None:
        other_train_size = min(DEFAULT_OTHER_TRAIN_SIZE, train_size)
    other_train_size = check_positive_int(other_train_size, "other_train_size")
    epochs, batch_size = check_positive_int(epochs, "epochs"), check_positive_int(batch_size, "batch_size")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
    if not float(lr) > 0:
        raise InvalidArgumentError(f"lr: must be positive, got {lr!r}")
    if held_out_family is not None and held_out_family not in TEXTURE_FAMILIES:
        raise InvalidArgumentError(
            f"held_out_family: must be one of {', '.join(TEXTURE_FAMILIES)} or None, got {held_out_family!r}"
        )
    if not 0.0 <= float(jitter) < 1.0:
        raise InvalidArgumentError(f"jitter: must lie in [0, 1), got {jitter!r}")
    if not 0.0 < float(none_fraction) < 1.0:
        raise InvalidArgumentError(f"none_fraction: must lie in (0, 1), got {none_fraction!r}")
    workers = resolve_jobs(workers, "workers")
    directory = Path(out).expanduser() if out is not None else judges_dir(level)
    settings = Settings(
        train_size, val_size, epochs, batch_size, float(lr), int(seed), held_out_family, float(jitter),
        float(none_fraction), other_train_size,
    )  # fmt: skip
    with exclusive_lock(directory):
        return _train_locked(level, directory, settings, progress, trainer, workers)


@dataclass(frozen=True)
class Settings:
    """How the judges of a level are trained (checked by :func:`train_judges`)."""

    train_size: int = DEFAULT_TRAIN_SIZE
    val_size: int = DEFAULT_VAL_SIZE
    epochs: int = DEFAULT_EPOCHS
    batch_size: int = DEFAULT_BATCH_SIZE
    lr: float = DEFAULT_LR
    seed: int = 0
    held_out_family: str | None = HELD_OUT_FAMILY
    jitter: float = DEFAULT_JITTER
    none_fraction: float = DEFAULT_NONE_FRACTION
    other_train_size: int | None = None  # per epoch, the attributes other than shape; None: train_size

    def train_size_of(self, attribute: str) -> int:
        """Training images per epoch of ``attribute``'s classifier."""
        if attribute == REJECT_ATTRIBUTE or self.other_train_size is None:
            return self.train_size
        return self.other_train_size

    @property
    def train_families(self) -> list[str]:
        return [name for name in TEXTURE_FAMILIES if name != self.held_out_family]


def _train_locked(
    level: int,
    directory: Path,
    settings: Settings,
    progress: bool,
    trainer: TrainerSection | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """Train the judges of ``level`` into a new folder that takes the place of ``directory`` once every file
    is written (the caller holds the directory's lock): a checkpoint per attribute, then ``classifiers.json``.

    Returns
    -------
    dict
        What :func:`train_judges` returns.
    """
    remove_leftovers(directory)
    with atomic_path(directory, directory=True) as built:
        with quiet_progress(not progress):
            tasks, entries, reject = _train_attributes(level, built, settings, trainer, workers)
        metadata = _judges_metadata(level, settings, reject, entries)
        trained = AttributeJudges(level, tasks, metadata)
        metadata["second_renderer"] = measure_second_renderer(trained, min(SECOND_RENDERER_SIZE, settings.val_size))
        # written last: a folder holding it has every checkpoint
        write_json_atomic(built / METADATA_FILE, metadata)
    return {**metadata, "directory": str(directory)}


def _train_attributes(
    level: int, built: Path, settings: Settings, trainer: TrainerSection | None, workers: int
) -> tuple[dict[str, SupervisedTask], dict[str, dict[str, Any]], dict[str, float]]:
    """Train the judge of each attribute in turn and save its checkpoint into ``built``.

    Returns
    -------
    (dict, dict, dict)
        The trained tasks and their ``classifiers.json`` entries by attribute, and the shape judge's
        reject shares (:func:`_reject_shares`).
    """
    s = settings
    val, test = _clean_images(level, s)
    attributes = level_attributes(level)
    tasks: dict[str, SupervisedTask] = {}
    entries: dict[str, dict[str, Any]] = {}
    reject: dict[str, float] = {}
    # the training runs' own folders; their weights are in {attribute}.ckpt once trained
    with tempfile.TemporaryDirectory(prefix="runs-", dir=built) as runs:
        for k, attribute in enumerate(attributes):
            config = attribute_config(
                level, attribute, s.train_size_of(attribute), s.val_size, s.epochs, s.batch_size, s.lr, s.seed,
                s.held_out_family, s.jitter, trainer, workers,
            )  # fmt: skip
            dataset = _level_dataset(level, attribute, s, val, test)
            description = f"level-{level} {attribute} classifier ({k + 1} of {len(attributes)})"
            task, scores, seconds = _fit_attribute(level, attribute, dataset, config, Path(runs), description)
            tasks[attribute] = task
            if attribute == REJECT_ATTRIBUTE:
                reject = _reject_shares(task, level, s, val)
            meets = _meets_target(level, attribute, scores, s)
            with atomic_write(built / f"{attribute}.ckpt") as handle:
                torch.save(_judge_checkpoint(task, level, attribute), handle)
            entries[attribute] = _judge_entry(attribute, scores, seconds, meets, s)
    return tasks, entries, reject


def _clean_images(level: int, settings: Settings) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The clean validation images (the training families) and the held-out ones (the held-out family),
    generated once and shared by the attributes."""
    s = settings
    textured = level >= 3 and s.held_out_family is not None
    val = generate_arrays(
        CdSpritesPlus(
            level, size=s.val_size, seed=s.seed, split="val", texture_families=s.train_families if textured else None
        )
    )
    test = generate_arrays(
        CdSpritesPlus(
            level,
            size=s.val_size,
            seed=s.seed,
            split="test",
            texture_families=[s.held_out_family] if textured else None,
        )
    )
    return val, test


def _meets_target(level: int, attribute: str, scores: dict[str, float], settings: Settings) -> bool:
    """Whether a judge reaches :data:`TARGET_ACCURACY` on the validation and the held-out images; a
    RuntimeWarning, to the caller of :func:`train_judges`, when it does not."""
    s = settings
    if min(scores["val_accuracy"], scores["held_out_accuracy"]) >= TARGET_ACCURACY:
        return True
    measured = (
        f"{scores['val_accuracy']:.4f} on the training families, {scores['held_out_accuracy']:.4f} "
        f"on the held-out family {s.held_out_family}"
        if level >= 3 and s.held_out_family
        else f"{scores['val_accuracy']:.4f} and {scores['held_out_accuracy']:.4f} on fresh samples"
    )
    warnings.warn(
        f"CdSprites+ level {level} classifier of {attribute}: accuracy {measured}, below the target "
        f"{TARGET_ACCURACY} (train_size={s.train_size_of(attribute)}, epochs={s.epochs}); coherency "
        "judged with it will be off by that much",
        RuntimeWarning,
        # _meets_target, _train_attributes, _train_locked, train_judges or load_judges: their caller
        stacklevel=5,
    )
    return False


def _judge_checkpoint(task: SupervisedTask, level: int, attribute: str) -> dict[str, Any]:
    """What ``{attribute}.ckpt`` holds: the weights, the hyper-parameters and what they judge."""
    return {
        "state_dict": task.state_dict(),
        "hyper_parameters": dict(task.hparams),
        "level": level,
        "attribute": attribute,
        "architecture": ARCHITECTURE,
        "format_version": FORMAT_VERSION,
    }


def _judge_entry(
    attribute: str, scores: dict[str, float], seconds: float, meets: bool, settings: Settings
) -> dict[str, Any]:
    """A judge's entry in ``classifiers.json``: its accuracies and how it was trained."""
    s = settings
    return {
        "val_accuracy": round(scores["val_accuracy"], 6),
        "held_out_accuracy": round(scores["held_out_accuracy"], 6),
        "held_out_confidence": round(scores["held_out_confidence"], 6),
        "blurred_accuracy": round(scores["blurred_accuracy"], 6),
        "meets_target": meets,
        "n_train": s.train_size_of(attribute),
        "n_val": s.val_size,
        "n_held_out": s.val_size,
        "epochs": s.epochs,
        "batch_size": s.batch_size,
        "lr": s.lr,
        "seed": s.seed,
        "classes": list(ATTRIBUTE_VALUES[attribute]),
        "architecture": ARCHITECTURE,
        "repscope_version": __version__,
        "train_seconds": round(seconds, 2),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _judges_metadata(
    level: int, settings: Settings, reject: dict[str, float], entries: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``classifiers.json`` but the second renderer's measurement: the recipe and every judge's entry."""
    s = settings
    return {
        "format_version": FORMAT_VERSION,
        "level": level,
        "generator": GENERATOR,
        "recipe": RECIPE,
        "model": MODEL,
        "target_accuracy": TARGET_ACCURACY,
        # levels 1-2 are untextured: their "held-out" samples are fresh samples of the same images
        "train_families": (s.train_families if s.held_out_family else list(TEXTURE_FAMILIES)) if level >= 3 else [],
        "held_out_family": s.held_out_family if level >= 3 else None,
        "jitter": s.jitter,
        "augmentation": Augmentation().to_dict(),
        "none_fraction": s.none_fraction,
        "reject_threshold": REJECT_THRESHOLD,
        "reject": reject,
        "attributes": entries,
    }


# ---------------------------------------------------------------------------------------------
# loading


def _task_of_checkpoint(checkpoint: dict[str, Any], path: Path, level: int, attribute: str) -> SupervisedTask:
    hyper_parameters = dict(checkpoint.get("hyper_parameters", {}))
    stored = (checkpoint.get("level"), checkpoint.get("attribute"))
    if stored != (level, attribute):
        raise DataFormatError(
            f"checkpoint {path}: holds the classifier of {stored[1]!r} at level {stored[0]!r}, "
            f"not {attribute} at level {level}"
        )
    outputs = len(ATTRIBUTE_VALUES[attribute]) + (1 if attribute == REJECT_ATTRIBUTE else 0)
    if hyper_parameters.get("network") != "attribute-cnn" or hyper_parameters.get("num_outputs") != outputs:
        raise DataFormatError(f"checkpoint {path}: not an {ARCHITECTURE} with {outputs} classes of {attribute}")
    try:
        module = SupervisedTask(**hyper_parameters)
        module.load_state_dict(checkpoint["state_dict"], strict=True)
    except (TypeError, RuntimeError, InvalidArgumentError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataFormatError(f"checkpoint {path}: does not fit {ARCHITECTURE} ({detail[:200]})") from None
    return module.eval()


def read_judges(directory: str | os.PathLike, level: int) -> AttributeJudges:
    """The judges cached in ``directory``; :class:`SourceNotFoundError` when files are missing,
    :class:`DataFormatError` naming the file when one is corrupt or belongs to something else.

    Nothing is trained (see :func:`load_judges`). A cache trained on images of an earlier
    generator recipe (``recipe`` in ``classifiers.json`` other than the current one) or of another
    ``format_version`` than :data:`FORMAT_VERSION` (trained without augmentation and reject option) is
    refused.

    Parameters
    ----------
    directory : str or os.PathLike
        A cache folder as :func:`train_judges` writes it.
    level : int
        CdSprites+ level 1-5 the classifiers must be of.

    Returns
    -------
    AttributeJudges
        The level's classifiers, on the CPU in eval mode, with the ``classifiers.json`` content as
        ``metadata``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    SourceNotFoundError
        When ``classifiers.json`` or an attribute's ``{attribute}.ckpt`` (or its entry) is missing.
    DataFormatError
        When ``classifiers.json`` or a checkpoint is unreadable, of another level, attribute, recipe or
        ``format_version`` (classifiers trained the earlier way), or does not fit the attribute CNN.
    """
    level, directory = check_level(level), Path(directory)
    metadata_path = directory / METADATA_FILE
    if not metadata_path.is_file():
        raise SourceNotFoundError(f"{directory}: no {METADATA_FILE}; not a complete classifier cache")
    try:
        metadata = json.loads(metadata_path.read_text())
        entries = metadata["attributes"]
        stored_level = metadata["level"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise DataFormatError(
            f"{metadata_path}: not a readable classifiers.json ({type(exc).__name__}: {exc})"
        ) from None
    if stored_level != level or not isinstance(entries, dict):
        raise DataFormatError(f"{metadata_path}: holds level {stored_level!r} classifiers, expected level {level}")
    if metadata.get("recipe") != RECIPE:
        raise DataFormatError(
            f"{metadata_path}: classifiers trained on CdSprites+ images of an earlier recipe "
            f"(format {metadata.get('format_version')!r}), not the {RECIPE} one"
        )
    if metadata.get("format_version") != FORMAT_VERSION:
        raise DataFormatError(
            f"{metadata_path}: classifiers of format {metadata.get('format_version')!r}, trained the earlier way "
            f"(this version trains format {FORMAT_VERSION}: augmented images and a 'no shape' class)"
        )
    modules: dict[str, SupervisedTask] = {}
    for attribute in level_attributes(level):
        path = directory / f"{attribute}.ckpt"
        if attribute not in entries or not path.is_file():
            raise SourceNotFoundError(f"{directory}: no classifier of {attribute} ({path.name})")
        modules[attribute] = _task_of_checkpoint(read_checkpoint(path), path, level, attribute)
    return AttributeJudges(level, modules, metadata, directory)


def load_judges(
    level: int,
    train_if_missing: bool = True,
    *,
    directory: str | os.PathLike | None = None,
    progress: bool = True,
    trainer: TrainerSection | None = None,
    packaged: bool = True,
) -> AttributeJudges:
    """The judges of ``level``: the user's cache (``directory``, default :func:`judges_dir`) when
    it is usable, else those that come with the package, else trained once.

    A cache the user trained (``repscope sprites train-judges``) wins. When there is none, or it is
    incomplete, corrupt or of an earlier format, the package's own classifiers
    (:func:`packaged_judges_dir`; trained as ``src/repscope/judges/README.md`` says, with their
    accuracy on a second renderer in ``classifiers.json``) are used, with a line on stderr when a cache
    was there but unusable. Only without those (``packaged`` False, an explicit ``directory``, or a
    package built without them): with ``train_if_missing`` they are trained once with the defaults (a
    line on stderr says so and how long it takes) and cached, other processes waiting on the lock
    meanwhile; without it the error is raised (:class:`SourceNotFoundError` or :class:`DataFormatError`,
    naming the file).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    train_if_missing : bool, default=True
        Train (with the ``DEFAULT_*`` settings, seed 0) and cache the classifiers when the cache is not
        usable, instead of raising.
    directory : str or os.PathLike, optional
        The cache folder (``~`` expanded); default :func:`judges_dir` of ``level``.
    progress : bool, default=True
        Report the training progress, if training happens.
    trainer : TrainerSection, optional
        Where they train, if training happens (as :func:`train_judges`); default
        :func:`default_trainer`.
    packaged : bool, default=True
        Fall back on the package's classifiers when the default cache is not usable (not with an
        explicit ``directory``).

    Returns
    -------
    AttributeJudges
        The level's classifiers, on the CPU in eval mode.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    SourceNotFoundError, DataFormatError
        Without ``train_if_missing``, when the cache is missing, incomplete or corrupt (see
        :func:`read_judges`).

    Warns
    -----
    RuntimeWarning
        When a loaded classifier was below ``TARGET_ACCURACY`` when trained (and, while training, as
        :func:`train_judges` warns).
    """
    level = check_level(level)
    folder = Path(directory).expanduser() if directory is not None else judges_dir(level)
    try:
        return _loaded(folder, level)
    except (SourceNotFoundError, DataFormatError) as exc:
        shipped = packaged_judges_dir(level)
        if packaged and directory is None and (shipped / METADATA_FILE).is_file():
            if folder.exists():
                print(
                    f"CdSprites+ level {level} attribute classifiers: {exc}; using those that come with repscope "
                    f"(remove {folder} or retrain it with repscope sprites train-judges --level {level})",
                    file=sys.stderr,
                    flush=True,
                )
            return _loaded(shipped, level)
        if not train_if_missing:
            raise
    with exclusive_lock(folder):
        try:  # another process may have trained them while this one waited
            return _loaded(folder, level)
        except (SourceNotFoundError, DataFormatError) as exc:
            other = min(DEFAULT_OTHER_TRAIN_SIZE, DEFAULT_TRAIN_SIZE)
            draws = (DEFAULT_TRAIN_SIZE + (level - 1) * other) * DEFAULT_EPOCHS
            minutes = max(1, round(draws / DRAWS_PER_MINUTE))
            print(
                f"CdSprites+ level {level} attribute classifiers: {exc}; training them once with the defaults "
                f"into {folder} (about {minutes} min on 2 CPU cores, once for this machine)",
                file=sys.stderr,
                flush=True,
            )
            # the defaults as they are now (read at call time, not when Settings was defined)
            defaults = Settings(
                DEFAULT_TRAIN_SIZE, DEFAULT_VAL_SIZE, DEFAULT_EPOCHS, DEFAULT_BATCH_SIZE, DEFAULT_LR,
                none_fraction=DEFAULT_NONE_FRACTION, other_train_size=other,
            )  # fmt: skip
            _train_locked(level, folder, defaults, progress, trainer)
    return _loaded(folder, level)


def _loaded(folder: Path, level: int) -> AttributeJudges:
    classifiers = read_judges(folder, level)
    below = [a for a, entry in classifiers.metadata["attributes"].items() if not entry.get("meets_target", True)]
    if below:
        warnings.warn(
            f"{folder}: the classifiers of {', '.join(below)} were below {TARGET_ACCURACY} validation "
            "accuracy when trained",
            RuntimeWarning,
            stacklevel=3,
        )
    return classifiers


__all__ = [
    "AttributeJudges",
    "judges_dir",
    "train_judges",
    "read_judges",
    "load_judges",
    "evaluate_judges",
    "check_sprite_images",
    "attribute_config",
    "default_trainer",
    "TARGET_ACCURACY",
    "Judgement",
    "measure_second_renderer",
    "packaged_judges_dir",
    "NONE_CLASS",
    "REJECT_THRESHOLD",
]
