"""Attribute classifiers that judge CdSprites+ images: the registered model ``attribute-cnn`` trained by
:func:`repscope.train.run.fit` on the registered dataset ``cdsprites``, one per attribute of a level,
cached under ``$REPSCOPE_HOME``.

The paper (Sejnova et al., Sec. 3.3 and A.2.3) counts a generated image as correct only when
pre-trained classifiers recognise every attribute of its level (shape, size, colour, position,
background). This module trains those classifiers, caches them and applies them:

* :func:`train_classifiers` trains one network per attribute of ``level`` on
  ``cdsprites(level, train_size, val_size, seed, in_memory=True)`` (generated once, shared by the
  attributes), each through ``fit`` with the attribute as the target, and measures each on the
  dataset's freshly generated ``val`` samples;
* :func:`load_classifiers` reads the cache, training it once with the defaults when it is missing,
  incomplete or corrupt;
* :meth:`AttributeClassifiers.predict` turns images into an attribute table ``(N, L)``;
  :func:`evaluate_classifiers` compares it with the true table, attribute by attribute.

Cache layout, ``classifiers_dir(level) = $REPSCOPE_HOME/classifiers/cdsprites-level{L}``:
``{attribute}.ckpt`` per attribute (``state_dict``, the task's ``hyper_parameters``, ``level`` and
``attribute``, readable with ``torch.load(..., weights_only=True)``) and ``classifiers.json`` (per
attribute: ``val_accuracy``, ``meets_target``, ``n_train``, ``n_val``, ``epochs``, ``batch_size``,
``lr``, ``seed``, ``classes`` (the class words), ``architecture``, ``repscope_version``, ``date``,
``train_seconds``). Caches written before the framework (format 1) are read as they are.

The folder is built in a temporary sibling and renamed into place only once every file is written,
and a file lock makes a second process wait for the first one's training
(:mod:`repscope.cache`). A corrupt or mismatched checkpoint (or ``classifiers.json``) counts as a
missing cache: with ``train_if_missing=True`` :func:`load_classifiers` says so in one line and
retrains; with ``train_if_missing=False`` it raises :class:`DataFormatError` naming the file (or
:class:`SourceNotFoundError` when files are missing).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from repscope import __version__
from repscope.cache import exclusive_lock, remove_leftovers, replace_directory, temporary_sibling
from repscope.data.sources import repscope_home
from repscope.data.sprites.attributes import ATTRIBUTE_VALUES, check_level, check_table, level_attributes
from repscope.data.sprites.datasets import cdsprites_dataset
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.fileio import atomic_write, write_json_atomic
from repscope.progress import quiet_progress
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.run import fit, read_checkpoint
from repscope.train.tasks.base import EVAL_BATCH, evaluating, image_batches
from repscope.train.tasks.supervised import SupervisedTask
from repscope.validation import check_images

TARGET_ACCURACY = 0.98
METADATA_FILE = "classifiers.json"
FORMAT_VERSION = 2
ARCHITECTURE = "AttributeCNN"
MODEL = "attribute-cnn"  # repscope.models.registry
GENERATOR = "repscope.data.sprites.cdsprites.CdSpritesPlus"
SPRITE_SHAPE = (3, 64, 64)
# measured on 2 CPU cores: every attribute of levels 1-5 reached >= 0.997 validation accuracy (seeds
# 0-2), about 24 s per attribute (2 min for level 5's five) on an unloaded machine
DEFAULT_TRAIN_SIZE = 20_000
DEFAULT_VAL_SIZE = 5_000
DEFAULT_EPOCHS = 3
DEFAULT_BATCH_SIZE = 64
DEFAULT_LR = 2e-3


def classifiers_dir(level: int) -> Path:
    """Where the classifiers of ``level`` are cached: ``$REPSCOPE_HOME/classifiers/cdsprites-level{L}``.

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


@dataclass
class AttributeClassifiers:
    """The attribute classifiers of one level (tasks in eval mode) and their ``classifiers.json``."""

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

    def to(self, device: str | torch.device) -> AttributeClassifiers:
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
        array = check_sprite_images(images)
        if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
            raise InvalidArgumentError(f"batch_size: must be a positive integer, got {batch_size!r}")
        modules = [self.modules[a] for a in self.attributes]
        device = next(modules[0].parameters()).device
        columns: list[list[torch.Tensor]] = [[] for _ in self.attributes]
        with contextlib.ExitStack() as stack:
            for module in modules:
                stack.enter_context(evaluating(module))
            for chunk in image_batches(array, int(batch_size), device):
                for k, module in enumerate(modules):
                    columns[k].append(module(chunk).argmax(1).cpu())
        return torch.stack([torch.cat(c) for c in columns], dim=1).numpy().astype(np.int64)


SpriteClassifiers = AttributeClassifiers  # the name used before the framework


def evaluate_classifiers(classifiers: AttributeClassifiers, images: Any, table: Any) -> dict[str, float]:
    """Accuracy of each attribute's classifier on ``images`` against the true attribute ``table``
    ``(N, L)``: the fraction of images whose predicted class equals the table's.

    Parameters
    ----------
    classifiers : AttributeClassifiers
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


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise InvalidArgumentError(f"{name}: must be a positive integer, got {value!r}")
    return int(value)


def attribute_config(
    level: int, attribute: str, train_size: int, val_size: int, epochs: int, batch_size: int, lr: float, seed: int
) -> Any:
    """The training config of one attribute's classifier: ``attribute-cnn`` on ``cdsprites``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    attribute : str
        The attribute learnt (the dataset's target), one of :func:`level_attributes` of ``level``.
    train_size, val_size : int
        Generated training and validation samples (no test split).
    epochs : int
        ``trainer.max_epochs``.
    batch_size : int
        Samples per training batch.
    lr : float
        Adam learning rate.
    seed : int
        Seed of the generated data and of the training.

    Returns
    -------
    TrainConfig
        ``accelerator="auto"``, no logger, data held in memory. Values are not checked here beyond
        the config's own field constraints (the caller checks them).
    """
    data = {
        "level": level,
        "target": attribute,
        "train_size": train_size,
        "val_size": val_size,
        "test_size": 0,
        "seed": seed,
        "in_memory": True,
    }
    return TrainConfig(
        model=Named(name=MODEL, params={"lr": lr}),
        data=Named(name="cdsprites", params=data),
        trainer=TrainerSection(accelerator="auto", max_epochs=epochs, logger="none"),
        batch_size=batch_size,
        seed=seed,
    )


def _fit_attribute(
    level: int, attribute: str, dataset: Any, config: Any, runs: Path, description: str
) -> tuple[SupervisedTask, float, float]:
    """Train one attribute's classifier through ``fit``; its accuracy on the dataset's ``val`` split."""
    # the caller's global random state is left as it was; the initial weights depend on the seed only
    with torch.random.fork_rng(devices=[]):
        outcome = fit(
            config,
            out=runs / attribute,
            dataset=dataset.with_target(attribute),
            kind="classifier",
            description=description,
            report=False,
        )
    task = outcome.task.cpu().eval()
    val = dataset.arrays("val", ["image", attribute])
    accuracy = float(np.mean(task.predict(val["image"]) == val[attribute]))
    return task, accuracy, float(outcome.metrics["fit_seconds"])


def train_classifiers(
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
) -> dict[str, Any]:
    """Train one classifier per attribute of ``level`` and write them to ``out`` (default
    :func:`classifiers_dir`), replacing what was there once every file is written.

    Returns the ``classifiers.json`` content plus ``directory``. An attribute below
    ``TARGET_ACCURACY`` (0.98) on the validation samples is recorded with ``meets_target: false`` and
    a warning; its classifier is still saved. ``progress`` False keeps the training silent.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; one classifier per attribute of :func:`level_attributes`.
    train_size : int, default=20000
        Generated training images, positive.
    val_size : int, default=5000
        Generated validation images (the accuracy is measured on them), positive.
    epochs : int, default=3
        Training epochs per classifier, positive.
    batch_size : int, default=64
        Training batch size, positive.
    lr : float, default=2e-3
        Adam learning rate, positive.
    seed : int, default=0
        Seed of the generated data and of the training, non-negative.
    out : str or os.PathLike, optional
        The folder written (``~`` expanded); default :func:`classifiers_dir` of ``level``.
    progress : bool, default=True
        Report the data generation and training progress.

    Returns
    -------
    dict of str to Any
        ``format_version``, ``level``, ``generator``, ``model``, ``target_accuracy``, ``attributes``
        (per attribute the entry described in the module docstring: ``val_accuracy``, ``meets_target``,
        ...) and ``directory`` (str).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, a size, ``epochs`` or ``batch_size`` is not a positive integer,
        ``seed`` is not a non-negative integer, or ``lr`` is not positive.

    Warns
    -----
    RuntimeWarning
        For each attribute whose validation accuracy is below ``TARGET_ACCURACY``.
    """
    level = check_level(level)
    train_size, val_size = _positive(train_size, "train_size"), _positive(val_size, "val_size")
    epochs, batch_size = _positive(epochs, "epochs"), _positive(batch_size, "batch_size")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
    if not float(lr) > 0:
        raise InvalidArgumentError(f"lr: must be positive, got {lr!r}")
    directory = Path(out).expanduser() if out is not None else classifiers_dir(level)
    with exclusive_lock(directory):
        return _train_locked(level, directory, train_size, val_size, epochs, batch_size, float(lr), int(seed), progress)


def _train_locked(
    level: int,
    directory: Path,
    train_size: int,
    val_size: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    progress: bool,
) -> dict[str, Any]:
    remove_leftovers(directory)
    attributes = level_attributes(level)
    built = temporary_sibling(directory)
    runs = Path(tempfile.mkdtemp(prefix="runs-", dir=built))
    try:
        with quiet_progress(not progress):
            dataset = cdsprites_dataset(
                level, train_size=train_size, val_size=val_size, test_size=0, seed=seed, in_memory=True
            )
            entries: dict[str, dict[str, Any]] = {}
            for k, attribute in enumerate(attributes):
                config = attribute_config(level, attribute, train_size, val_size, epochs, batch_size, lr, seed)
                description = f"level-{level} {attribute} classifier ({k + 1} of {len(attributes)})"
                task, accuracy, seconds = _fit_attribute(level, attribute, dataset, config, runs, description)
                meets = accuracy >= TARGET_ACCURACY
                if not meets:
                    warnings.warn(
                        f"CdSprites+ level {level} classifier of {attribute}: validation accuracy "
                        f"{accuracy:.4f} is below the target {TARGET_ACCURACY} (train_size={train_size}, "
                        f"epochs={epochs}); coherency judged with it will be off by that much",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                checkpoint = {
                    "state_dict": task.state_dict(),
                    "hyper_parameters": dict(task.hparams),
                    "level": level,
                    "attribute": attribute,
                    "architecture": ARCHITECTURE,
                    "format_version": FORMAT_VERSION,
                }
                with atomic_write(built / f"{attribute}.ckpt") as handle:
                    torch.save(checkpoint, handle)
                entries[attribute] = {
                    "val_accuracy": round(accuracy, 6),
                    "meets_target": meets,
                    "n_train": train_size,
                    "n_val": val_size,
                    "epochs": epochs,
                    "batch_size": batch_size,
                    "lr": lr,
                    "seed": seed,
                    "classes": list(ATTRIBUTE_VALUES[attribute]),
                    "architecture": ARCHITECTURE,
                    "repscope_version": __version__,
                    "train_seconds": round(seconds, 2),
                    "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                }
        shutil.rmtree(runs)  # the training runs' checkpoints are in {attribute}.ckpt now
        metadata = {
            "format_version": FORMAT_VERSION,
            "level": level,
            "generator": GENERATOR,
            "model": MODEL,
            "target_accuracy": TARGET_ACCURACY,
            "attributes": entries,
        }
        # written last: a folder holding it has every checkpoint
        write_json_atomic(built / METADATA_FILE, metadata)
        replace_directory(built, directory)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    return {**metadata, "directory": str(directory)}


# ---------------------------------------------------------------------------------------------
# loading


def _task_of_checkpoint(checkpoint: dict[str, Any], path: Path, level: int, attribute: str) -> SupervisedTask:
    hyper_parameters = dict(checkpoint.get("hyper_parameters", {}))
    if "level" in hyper_parameters:  # format 1: the task of the stack before the framework
        stored = (hyper_parameters.get("level"), hyper_parameters.get("attribute"))
        hyper_parameters = {
            "network": "attribute-cnn",
            "num_outputs": hyper_parameters.get("num_classes"),
            "lr": hyper_parameters.get("lr", DEFAULT_LR),
            "image_shape": list(SPRITE_SHAPE),
            "schedule": "cosine",
        }
    else:
        stored = (checkpoint.get("level"), checkpoint.get("attribute"))
    if stored != (level, attribute):
        raise DataFormatError(
            f"checkpoint {path}: holds the classifier of {stored[1]!r} at level {stored[0]!r}, "
            f"not {attribute} at level {level}"
        )
    if hyper_parameters.get("network") != "attribute-cnn" or hyper_parameters.get("num_outputs") != len(
        ATTRIBUTE_VALUES[attribute]
    ):
        raise DataFormatError(
            f"checkpoint {path}: not an {ARCHITECTURE} with {len(ATTRIBUTE_VALUES[attribute])} classes of {attribute}"
        )
    try:
        module = SupervisedTask(**hyper_parameters)
        module.load_state_dict(checkpoint["state_dict"], strict=True)
    except (TypeError, RuntimeError, InvalidArgumentError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataFormatError(f"checkpoint {path}: does not fit {ARCHITECTURE} ({detail[:200]})") from None
    return module.eval()


def read_classifiers(directory: str | os.PathLike, level: int) -> AttributeClassifiers:
    """The classifiers cached in ``directory``; :class:`SourceNotFoundError` when files are missing,
    :class:`DataFormatError` naming the file when one is corrupt or belongs to something else.

    Nothing is trained (see :func:`load_classifiers`). Checkpoints in the format before the framework
    (format 1) are read too.

    Parameters
    ----------
    directory : str or os.PathLike
        A cache folder as :func:`train_classifiers` writes it.
    level : int
        CdSprites+ level 1-5 the classifiers must be of.

    Returns
    -------
    AttributeClassifiers
        The level's classifiers, on the CPU in eval mode, with the ``classifiers.json`` content as
        ``metadata``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    SourceNotFoundError
        When ``classifiers.json`` or an attribute's ``{attribute}.ckpt`` (or its entry) is missing.
    DataFormatError
        When ``classifiers.json`` or a checkpoint is unreadable, of another level or attribute, or does
        not fit the attribute CNN.
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
    modules: dict[str, SupervisedTask] = {}
    for attribute in level_attributes(level):
        path = directory / f"{attribute}.ckpt"
        if attribute not in entries or not path.is_file():
            raise SourceNotFoundError(f"{directory}: no classifier of {attribute} ({path.name})")
        modules[attribute] = _task_of_checkpoint(read_checkpoint(path), path, level, attribute)
    return AttributeClassifiers(level, modules, metadata, directory)


def load_classifiers(
    level: int, train_if_missing: bool = True, *, directory: str | os.PathLike | None = None, progress: bool = True
) -> AttributeClassifiers:
    """The cached classifiers of ``level`` (from ``directory``, default :func:`classifiers_dir`).

    When the cache is missing, incomplete or corrupt: with ``train_if_missing`` they are trained once
    with the defaults (a line on stderr says so and how long it takes; a few minutes on 2 CPU cores)
    and cached, other processes waiting on the lock meanwhile; without it the error is raised
    (:class:`SourceNotFoundError` or :class:`DataFormatError`, naming the file).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    train_if_missing : bool, default=True
        Train (with the ``DEFAULT_*`` settings, seed 0) and cache the classifiers when the cache is not
        usable, instead of raising.
    directory : str or os.PathLike, optional
        The cache folder (``~`` expanded); default :func:`classifiers_dir` of ``level``.
    progress : bool, default=True
        Report the training progress, if training happens.

    Returns
    -------
    AttributeClassifiers
        The level's classifiers, on the CPU in eval mode.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    SourceNotFoundError, DataFormatError
        Without ``train_if_missing``, when the cache is missing, incomplete or corrupt (see
        :func:`read_classifiers`).

    Warns
    -----
    RuntimeWarning
        When a loaded classifier was below ``TARGET_ACCURACY`` when trained (and, while training, as
        :func:`train_classifiers` warns).
    """
    level = check_level(level)
    folder = Path(directory).expanduser() if directory is not None else classifiers_dir(level)
    try:
        return _loaded(folder, level)
    except (SourceNotFoundError, DataFormatError):
        if not train_if_missing:
            raise
    with exclusive_lock(folder):
        try:  # another process may have trained them while this one waited
            return _loaded(folder, level)
        except (SourceNotFoundError, DataFormatError) as exc:
            minutes = max(1, round(0.5 * level * DEFAULT_TRAIN_SIZE / 20_000))
            print(
                f"CdSprites+ level {level} attribute classifiers: {exc}; training them once with the defaults "
                f"into {folder} (about {minutes} min on 2 CPU cores, once for this machine)",
                file=sys.stderr,
                flush=True,
            )
            _train_locked(
                level,
                folder,
                DEFAULT_TRAIN_SIZE,
                DEFAULT_VAL_SIZE,
                DEFAULT_EPOCHS,
                DEFAULT_BATCH_SIZE,
                DEFAULT_LR,
                0,
                progress,
            )
    return _loaded(folder, level)


def _loaded(folder: Path, level: int) -> AttributeClassifiers:
    classifiers = read_classifiers(folder, level)
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
    "AttributeClassifiers",
    "SpriteClassifiers",
    "classifiers_dir",
    "train_classifiers",
    "read_classifiers",
    "load_classifiers",
    "evaluate_classifiers",
    "check_sprite_images",
    "attribute_config",
    "TARGET_ACCURACY",
]
