"""Attribute classifiers that judge CdSprites+ images: one :class:`AttributeCNN` per attribute of a level.

The paper (Sejnova et al., Sec. 3.3 and A.2.3) counts a generated image as correct only when
pre-trained classifiers recognise every attribute of its level (shape, size, colour, position,
background). This module trains those classifiers on generated CdSprites+ samples, caches them and
applies them:

* :func:`train_classifiers` trains one network per attribute of ``level`` on
  ``CdSpritesPlus(level, size=train_size, seed=seed, split="train")`` (generated once, shared by the
  attributes) and measures each on freshly generated ``split="val"`` samples;
* :func:`load_classifiers` reads the cache, training it once with the defaults when it is missing,
  incomplete or corrupt;
* :meth:`SpriteClassifiers.predict` turns images into an attribute table ``(N, L)``;
  :func:`evaluate_classifiers` compares it with the true table, attribute by attribute.

Cache layout, ``classifiers_dir(level) = $REPSCOPE_HOME/classifiers/cdsprites-level{L}``:
``{attribute}.ckpt`` per attribute (``state_dict`` and ``hyper_parameters``, readable with
``torch.load(..., weights_only=True)``) and ``classifiers.json`` (per attribute: ``val_accuracy``,
``meets_target``, ``n_train``, ``n_val``, ``epochs``, ``batch_size``, ``lr``, ``seed``, ``classes``
(the class words), ``architecture``, ``repscope_version``, ``date``, ``train_seconds``).

The folder is built in a temporary sibling and renamed into place only once every file is written,
so a crash never leaves a half cache that looks complete; a file lock (``.cdsprites-level{L}.lock``
next to it, the mechanism of :func:`repscope.data.training_sets.ensure_morpho_dataset`) makes a
second process wait for the first one's training instead of training too.

A corrupt or mismatched checkpoint (or ``classifiers.json``) counts as a missing cache: with
``train_if_missing=True`` :func:`load_classifiers` says so in one line and retrains; with
``train_if_missing=False`` it raises :class:`DataFormatError` naming the file (or
:class:`SourceNotFoundError` when files are missing).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from repscope.data.sprites.attributes import ATTRIBUTE_VALUES, check_level, check_table, level_attributes
from repscope.data.sprites.loader import image_to_float
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.fileio import TEMP_PREFIX, atomic_write, write_json_atomic
from repscope.models.sprite_cnn import IMAGE_SIZE, AttributeCNN
from repscope.train.tasks import EVAL_BATCH, check_pixel_values, evaluating

TARGET_ACCURACY = 0.98
METADATA_FILE = "classifiers.json"
FORMAT_VERSION = 1
ARCHITECTURE = "AttributeCNN"
GENERATOR = "repscope.data.sprites.cdsprites.CdSpritesPlus"
# measured on 2 CPU cores: every attribute of levels 1-5 reached >= 0.997 validation accuracy (seeds
# 0-2), about 24 s per attribute (2 min for level 5's five) on an unloaded machine
DEFAULT_TRAIN_SIZE = 20_000
DEFAULT_VAL_SIZE = 5_000
DEFAULT_EPOCHS = 3
DEFAULT_BATCH_SIZE = 64
DEFAULT_LR = 2e-3
GENERATE_CHUNK = 2_048


def classifiers_dir(level: int) -> Path:
    """Where the classifiers of ``level`` are cached: ``$REPSCOPE_HOME/classifiers/cdsprites-level{L}``."""
    from repscope.data.sources import repscope_home

    return repscope_home() / "classifiers" / f"cdsprites-level{check_level(level)}"


# ---------------------------------------------------------------------------------------------
# images at the boundary


def check_sprite_images(images: Any, name: str = "images") -> np.ndarray:
    """``images`` as a channels-last ``(N, 64, 64, 3)`` array: uint8 (0-255) or float in [0, 1].

    Channels-first ``(N, 3, 64, 64)`` (what torch decoders return) is accepted and transposed.
    Raises :class:`InvalidArgumentError` naming ``name`` otherwise.
    """
    array = images.detach().cpu().numpy() if torch.is_tensor(images) else np.asarray(images)
    if array.ndim == 4 and array.shape[1:] == (3, IMAGE_SIZE, IMAGE_SIZE):
        array = array.transpose(0, 2, 3, 1)
    if array.ndim != 4 or array.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE, 3):
        raise InvalidArgumentError(
            f"{name}: expected RGB sprites of shape (N, 64, 64, 3) (or (N, 3, 64, 64)), got shape {array.shape}")
    if len(array) == 0:
        raise InvalidArgumentError(f"{name}: no images (N = 0)")
    return check_pixel_values(array, name)


def channels_first(images: np.ndarray) -> torch.Tensor:
    """Checked channels-last images -> a ``(N, 3, 64, 64)`` tensor of the same dtype (uint8 stays
    uint8, a quarter of the memory of float; ``image_to_float`` converts per batch)."""
    return torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))


def _batches(images: np.ndarray, batch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise InvalidArgumentError(f"batch_size: must be a positive integer, got {batch_size!r}")
    for start in range(0, len(images), int(batch_size)):
        yield image_to_float(channels_first(images[start:start + int(batch_size)]).to(device))


# ---------------------------------------------------------------------------------------------
# the LightningModule


class SpriteAttributeTask(pl.LightningModule):
    """An :class:`AttributeCNN` learning one attribute of a CdSprites+ level: cross-entropy, Adam.

    Batches are ``(images, classes)``: images ``(B, 3, 64, 64)`` uint8 (0-255) or float in [0, 1],
    classes int64. Logs (``on_epoch``) ``train_loss``, ``val_loss`` and ``val_accuracy``.
    """

    def __init__(self, level: int = 1, attribute: str = "shape", num_classes: int = 3, lr: float = DEFAULT_LR) -> None:
        super().__init__()
        level = check_level(level)
        if attribute not in level_attributes(level):
            raise InvalidArgumentError(
                f"attribute: level {level} has {', '.join(level_attributes(level))}, got {attribute!r}")
        if num_classes != len(ATTRIBUTE_VALUES[attribute]):
            raise InvalidArgumentError(
                f"num_classes: attribute {attribute} has {len(ATTRIBUTE_VALUES[attribute])} classes, got {num_classes!r}")
        if not float(lr) > 0:
            raise InvalidArgumentError(f"lr: must be positive, got {lr!r}")
        self.save_hyperparameters({"level": level, "attribute": str(attribute), "num_classes": int(num_classes),
                                   "lr": float(lr)})
        self.network = AttributeCNN(int(num_classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.network(image_to_float(images))

    def _log(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        images, classes = batch
        loss = F.cross_entropy(self(images), classes)
        self._log("train_loss", loss, len(images))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        images, classes = batch
        logits = self(images)
        self._log("val_loss", F.cross_entropy(logits, classes), len(images))
        self._log("val_accuracy", (logits.argmax(1) == classes).float().mean(), len(images))

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        # cosine decay to zero over the run: large steps early, small ones to settle at the end,
        # so a few epochs suffice
        steps = max(1, int(self.trainer.estimated_stepping_batches))
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Class indices (int64) of ``images`` (see :func:`check_sprite_images`)."""
        array = check_sprite_images(images)
        with evaluating(self):
            out = [self(chunk).argmax(1).cpu() for chunk in _batches(array, batch_size, self.device)]
        return torch.cat(out).numpy().astype(np.int64)


# ---------------------------------------------------------------------------------------------
# the trained set


@dataclass
class SpriteClassifiers:
    """The attribute classifiers of one level (modules in eval mode) and their ``classifiers.json``."""

    level: int
    modules: dict[str, SpriteAttributeTask]
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

    def to(self, device: str | torch.device) -> SpriteClassifiers:
        for module in self.modules.values():
            module.to(device)
        return self

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The attribute table ``(N, L)`` int64 (columns in :func:`level_attributes` order) that the
        classifiers read off ``images``: uint8 ``(N, 64, 64, 3)`` RGB or float in [0, 1]
        (channels-first ``(N, 3, 64, 64)`` accepted)."""
        array = check_sprite_images(images)
        device = next(self.modules[self.attributes[0]].parameters()).device
        columns: list[list[torch.Tensor]] = [[] for _ in self.attributes]
        modules = [self.modules[a] for a in self.attributes]
        with contextlib.ExitStack() as stack:
            for module in modules:
                stack.enter_context(evaluating(module))
            for chunk in _batches(array, batch_size, device):
                for k, module in enumerate(modules):
                    columns[k].append(module.network(chunk).argmax(1).cpu())
        return torch.stack([torch.cat(c) for c in columns], dim=1).numpy().astype(np.int64)


def evaluate_classifiers(classifiers: SpriteClassifiers, images: Any, table: Any) -> dict[str, float]:
    """Accuracy of each attribute's classifier on ``images`` against the true attribute ``table``
    ``(N, L)``: the fraction of images whose predicted class equals the table's."""
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


def generate_arrays(level: int, size: int, seed: int, split: str, progress: bool = False) -> tuple[torch.Tensor, np.ndarray]:
    """``CdSpritesPlus(level, size, seed, split)`` as a uint8 ``(N, 3, 64, 64)`` tensor and its
    attribute table ``(N, L)`` int64."""
    from repscope.data.sprites.cdsprites import CdSpritesPlus
    from repscope.progress import progress_bar

    generator = CdSpritesPlus(level=level, size=size, seed=seed, split=split)
    images = torch.empty((size, 3, IMAGE_SIZE, IMAGE_SIZE), dtype=torch.uint8)
    table = np.empty((size, len(level_attributes(level))), dtype=np.int64)
    with progress_bar(f"CdSprites+ level {level} {split}", total=size, enabled=None if progress else False) as update:
        for start in range(0, size, GENERATE_CHUNK):
            stop = min(size, start + GENERATE_CHUNK)
            chunk, _, rows = generator.batch(np.arange(start, stop))
            images[start:stop] = torch.from_numpy(np.ascontiguousarray(np.asarray(chunk).transpose(0, 3, 1, 2)))
            table[start:stop] = rows
            update(stop)
    return images, table


def _fit_attribute(level: int, attribute: str, column: int, train: tuple[torch.Tensor, np.ndarray],
                   val: tuple[torch.Tensor, np.ndarray], epochs: int, batch_size: int, lr: float, seed: int,
                   progress: bool) -> tuple[SpriteAttributeTask, float, float]:
    from repscope.progress import interactive
    from repscope.train.run import quiet_lightning

    quiet_lightning()
    targets = [torch.from_numpy(np.ascontiguousarray(t[:, column])) for t in (train[1], val[1])]
    train_loader = DataLoader(TensorDataset(train[0], targets[0]), batch_size=batch_size, shuffle=True,
                              drop_last=len(train[0]) > batch_size, generator=torch.Generator().manual_seed(seed))
    val_loader = DataLoader(TensorDataset(val[0], targets[1]), batch_size=EVAL_BATCH)
    # the caller's global random state is left as it was; the initial weights depend on seed only
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        task = SpriteAttributeTask(level, attribute, len(ATTRIBUTE_VALUES[attribute]), lr)
        trainer = pl.Trainer(accelerator="auto", devices=1, max_epochs=epochs, logger=False,
                             enable_checkpointing=False, enable_progress_bar=progress and interactive(),
                             enable_model_summary=False, num_sanity_val_steps=0, log_every_n_steps=50)
        started = time.perf_counter()
        trainer.fit(task, train_dataloaders=train_loader, val_dataloaders=val_loader)
        seconds = time.perf_counter() - started
    task.cpu().eval()
    with evaluating(task):
        predicted = torch.cat([task(images).argmax(1) for images, _ in val_loader])
    accuracy = float((predicted == targets[1]).float().mean())
    return task, accuracy, seconds


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _replace_directory(built: Path, directory: Path) -> None:
    """Put the finished folder ``built`` at ``directory``; an older folder there is removed after."""
    old = None
    if directory.exists():
        old = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{directory.name}.old-", dir=directory.parent))
        os.rename(directory, old / directory.name)
    os.rename(built, directory)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _remove_leftovers(directory: Path) -> None:
    """Temporary folders of builds that crashed (only ever touched under the lock)."""
    for stale in directory.parent.glob(f"{TEMP_PREFIX}{directory.name}.*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


def train_classifiers(level: int, *, train_size: int = DEFAULT_TRAIN_SIZE, val_size: int = DEFAULT_VAL_SIZE,
                      epochs: int = DEFAULT_EPOCHS, batch_size: int = DEFAULT_BATCH_SIZE, lr: float = DEFAULT_LR,
                      seed: int = 0, out: str | os.PathLike | None = None, progress: bool = True) -> dict[str, Any]:
    """Train one :class:`AttributeCNN` per attribute of ``level`` and write them to ``out``
    (default :func:`classifiers_dir`), replacing what was there once every file is written.

    Returns the ``classifiers.json`` content plus ``directory``. An attribute below
    ``TARGET_ACCURACY`` (0.98) on the validation samples is recorded with ``meets_target: false`` and
    a warning; its classifier is still saved.
    """
    level = check_level(level)
    train_size, val_size = _positive(train_size, "train_size"), _positive(val_size, "val_size")
    epochs, batch_size = _positive(epochs, "epochs"), _positive(batch_size, "batch_size")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise InvalidArgumentError(f"seed: must be a non-negative integer, got {seed!r}")
    directory = Path(out).expanduser() if out is not None else classifiers_dir(level)
    with _locked(directory):
        return _train_locked(level, directory, train_size, val_size, epochs, batch_size, float(lr), int(seed), progress)


def _train_locked(level: int, directory: Path, train_size: int, val_size: int, epochs: int, batch_size: int,
                  lr: float, seed: int, progress: bool) -> dict[str, Any]:
    from repscope import __version__

    _remove_leftovers(directory)
    train = generate_arrays(level, train_size, seed, "train", progress)
    val = generate_arrays(level, val_size, seed, "val", progress)
    built = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{directory.name}.", dir=directory.parent))
    try:
        entries: dict[str, dict[str, Any]] = {}
        for column, attribute in enumerate(level_attributes(level)):
            task, accuracy, seconds = _fit_attribute(level, attribute, column, train, val, epochs, batch_size, lr,
                                                     seed, progress)
            meets = accuracy >= TARGET_ACCURACY
            if not meets:
                warnings.warn(f"CdSprites+ level {level} classifier of {attribute}: validation accuracy "
                              f"{accuracy:.4f} is below the target {TARGET_ACCURACY} (train_size={train_size}, "
                              f"epochs={epochs}); coherency judged with it will be off by that much",
                              RuntimeWarning, stacklevel=3)
            checkpoint = {"state_dict": task.state_dict(), "hyper_parameters": dict(task.hparams),
                          "architecture": ARCHITECTURE, "format_version": FORMAT_VERSION}
            with atomic_write(built / f"{attribute}.ckpt") as handle:
                torch.save(checkpoint, handle)
            entries[attribute] = {
                "val_accuracy": round(accuracy, 6), "meets_target": meets, "n_train": train_size, "n_val": val_size,
                "epochs": epochs, "batch_size": batch_size, "lr": lr, "seed": seed,
                "classes": list(ATTRIBUTE_VALUES[attribute]), "architecture": ARCHITECTURE,
                "repscope_version": __version__, "train_seconds": round(seconds, 2),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            }
        metadata = {"format_version": FORMAT_VERSION, "level": level, "generator": GENERATOR,
                    "target_accuracy": TARGET_ACCURACY, "attributes": entries}
        # written last: a folder holding it has every checkpoint
        write_json_atomic(built / METADATA_FILE, metadata)
        _replace_directory(built, directory)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    return {**metadata, "directory": str(directory)}


# ---------------------------------------------------------------------------------------------
# loading


def read_classifiers(directory: str | os.PathLike, level: int) -> SpriteClassifiers:
    """The classifiers cached in ``directory``; :class:`SourceNotFoundError` when files are missing,
    :class:`DataFormatError` naming the file when one is corrupt or belongs to something else."""
    from repscope.train.run import read_checkpoint

    level, directory = check_level(level), Path(directory)
    metadata_path = directory / METADATA_FILE
    if not metadata_path.is_file():
        raise SourceNotFoundError(f"{directory}: no {METADATA_FILE}; not a complete classifier cache")
    try:
        metadata = json.loads(metadata_path.read_text())
        entries = metadata["attributes"]
        stored_level = metadata["level"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{metadata_path}: not a readable classifiers.json ({type(exc).__name__}: {exc})") from None
    if stored_level != level or not isinstance(entries, dict):
        raise DataFormatError(f"{metadata_path}: holds level {stored_level!r} classifiers, expected level {level}")
    modules: dict[str, SpriteAttributeTask] = {}
    for attribute in level_attributes(level):
        path = directory / f"{attribute}.ckpt"
        if attribute not in entries or not path.is_file():
            raise SourceNotFoundError(f"{directory}: no classifier of {attribute} ({path.name})")
        checkpoint = read_checkpoint(path)
        hyper_parameters = dict(checkpoint.get("hyper_parameters", {}))
        if hyper_parameters.get("level") != level or hyper_parameters.get("attribute") != attribute:
            raise DataFormatError(f"checkpoint {path}: holds the classifier of {hyper_parameters.get('attribute')!r} "
                                  f"at level {hyper_parameters.get('level')!r}, not {attribute} at level {level}")
        try:
            module = SpriteAttributeTask(**hyper_parameters)
            module.load_state_dict(checkpoint["state_dict"], strict=True)
        except (TypeError, RuntimeError, InvalidArgumentError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataFormatError(f"checkpoint {path}: does not fit {ARCHITECTURE} ({detail[:200]})") from None
        modules[attribute] = module.eval()
    return SpriteClassifiers(level, modules, metadata, directory)


def load_classifiers(level: int, train_if_missing: bool = True, *, directory: str | os.PathLike | None = None,
                     progress: bool = True) -> SpriteClassifiers:
    """The cached classifiers of ``level`` (from ``directory``, default :func:`classifiers_dir`).

    When the cache is missing, incomplete or corrupt: with ``train_if_missing`` they are trained once
    with the defaults (one line on stderr says so; a few minutes on 2 CPU cores) and cached, other
    processes waiting on the lock meanwhile; without it the error is raised
    (:class:`SourceNotFoundError` or :class:`DataFormatError`, naming the file).
    """
    level = check_level(level)
    folder = Path(directory).expanduser() if directory is not None else classifiers_dir(level)
    try:
        return _loaded(folder, level)
    except (SourceNotFoundError, DataFormatError):
        if not train_if_missing:
            raise
    with _locked(folder):
        try:  # another process may have trained them while this one waited
            return _loaded(folder, level)
        except (SourceNotFoundError, DataFormatError) as exc:
            print(f"CdSprites+ level {level} attribute classifiers: {exc}; training them once with the defaults "
                  f"into {folder}", file=sys.stderr, flush=True)
            _train_locked(level, folder, DEFAULT_TRAIN_SIZE, DEFAULT_VAL_SIZE, DEFAULT_EPOCHS, DEFAULT_BATCH_SIZE,
                          DEFAULT_LR, 0, progress)
    return _loaded(folder, level)


def _loaded(folder: Path, level: int) -> SpriteClassifiers:
    classifiers = read_classifiers(folder, level)
    below = [a for a, entry in classifiers.metadata["attributes"].items() if not entry.get("meets_target", True)]
    if below:
        warnings.warn(f"{folder}: the classifiers of {', '.join(below)} were below {TARGET_ACCURACY} validation "
                      "accuracy when trained", RuntimeWarning, stacklevel=3)
    return classifiers


__all__ = [
    "SpriteAttributeTask", "SpriteClassifiers", "classifiers_dir", "train_classifiers", "read_classifiers",
    "load_classifiers", "evaluate_classifiers", "check_sprite_images", "TARGET_ACCURACY",
]
