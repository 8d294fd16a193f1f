"""Train any registered model on any registered dataset and write a run directory.

The run directory holds ``config.yaml`` (the validated config as run), ``metrics.json`` (final
training and validation losses, test metrics, time), ``tables/training_curves.csv`` (one row per
epoch), ``logs/`` (Lightning's CSV log, every logged step; ``logs-resume-N/`` after a resume) and
``checkpoints/`` (``last.ckpt``
every epoch, for ``--resume``; ``final.ckpt`` when training ends).

``last.ckpt`` is one rolling file, replaced at the end of every training epoch (after that epoch's
validation) by a rename of a completely written temporary file (:class:`EpochCheckpoint`), so a run
stopped at any moment (Ctrl-C, a killed process) keeps the state of its last complete epoch and never a
half-written checkpoint that ``--resume`` would trust; :func:`resume_epoch` says where it continues.

A run directory is read back with :func:`repscope.train.reader.open_run`; checkpoints are read there
too (``torch.load(..., weights_only=True)``: plain tensors and containers only, no code), and a corrupt
or mismatched file is a :class:`repscope.errors.DataFormatError` naming it.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import math
import os
import random
import shutil
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import pandas as pd
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from repscope import __version__
from repscope.data.registry import load_dataset
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import OutputWriteError, atomic_path, is_write_refusal, output_error
from repscope.progress import progress_bar
from repscope.report.training import training_report
from repscope.resources import THREADS_ENV, configure_torch_threads
from repscope.resume_check import PLACEMENT_TEXT, differences, refuse_changes, where_the_work_runs
from repscope.run_directory import RunDirectory
from repscope.train.config import TrainConfig
from repscope.train.datamodule import DatasetModule
from repscope.train.progress_callback import TrainingProgress
from repscope.train.reader import (
    FINAL_CHECKPOINT,
    LAST_CHECKPOINT,
    load_weights,
    open_run,
    read_checkpoint,
    task_from_checkpoint,
)
from repscope.train.registry import model_entry, task_class
from repscope.train.tasks.base import DIGIT_SHAPE


@dataclass
class TrainOutcome:
    """What :func:`fit` returns: the run directory, the trained task (eval mode), the dataset and the
    ``metrics.json`` content."""

    run: Any  # RunDirectory
    task: Any  # LightningModule, trained
    data: Any  # repscope.data.datasets.Dataset
    metrics: dict[str, Any]


def quiet_lightning() -> None:
    """Lightning's banners (GPU available, model summary hints) and the few-workers hint are noise
    for a CLI whose data live in memory; real warnings stay."""
    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    warnings.filterwarnings("ignore", message=".*no `val_dataloader`.*")
    warnings.filterwarnings("ignore", message=".*number of training batches.*smaller than the logging interval.*")
    # runs saved before EpochCheckpoint hold a ModelCheckpoint state: resuming them needs no such callback
    warnings.filterwarnings("ignore", message=r".*callbacks used to create the.*\[.ModelCheckpoint\{[^]]*\]\.$")


def build_task(config: TrainConfig, dataset: Any) -> Any:
    """The registered LightningModule for ``config.model``, fitted to the dataset: its image shape and,
    for the supervised family, its target (classification with the target's classes, or regression).

    The constructor gets the registry entry's defaults, overridden by ``config.model.params``, overridden
    by the entry's fixed parameters; then ``image_shape``, ``kind`` and ``num_outputs`` from the data,
    and ``factor_sizes`` (semi-supervised models) from the data's ``factors`` field unless given.

    Parameters
    ----------
    config : TrainConfig
        The training config; ``config.model`` names the model and its parameters.
    dataset : Dataset
        The dataset of ``config.data`` (its ``image_shape``, ``target_kind`` and ``num_classes`` are read).

    Returns
    -------
    lightning.pytorch.LightningModule
        A new, untrained task (e.g. :class:`~repscope.train.tasks.SupervisedTask`).

    Raises
    ------
    InvalidArgumentError
        When the model is not registered, the data has no image field, a 28x28-digits-only model gets
        other images, a supervised model gets a dataset without a target, the task's constructor
        refuses a parameter, or the task reads a batch field the dataset does not give.
    """
    entry = model_entry(config.model.name)
    cls = task_class(config.model.name)
    kwargs = {**entry.defaults, **config.model.params, **entry.fixed}
    image_shape = dataset.image_shape
    accepted = inspect.signature(cls).parameters
    if "image_shape" in accepted and image_shape is None and "field_specs" in accepted:
        pass  # a multimodal task reads its modalities' shapes from field_specs: no image field needed
    elif "image_shape" in accepted:
        if image_shape is None:
            raise InvalidArgumentError(f"data {dataset.name!r}: has no image field for model {config.model.name!r}")
        kwargs["image_shape"] = list(image_shape)
    elif image_shape is not None and tuple(image_shape) != DIGIT_SHAPE:
        raise InvalidArgumentError(
            f"model {config.model.name!r}: trains on 28x28 grey digits; data "
            f"{dataset.name!r} gives images of shape {tuple(image_shape)}"
        )
    if "field_specs" in inspect.signature(cls).parameters:
        # the multimodal family reads several fields: their shapes and classes come from the data
        kwargs["field_specs"] = {
            name: {"shape": list(spec.shape), "classes": spec.classes, "kind": spec.kind}
            for name, spec in dataset.fields.items()
        }
    factors = dataset.fields.get("factors")
    if "factor_sizes" in accepted and "factor_sizes" not in config.model.params and factors is not None:
        # semi-supervised models: the class count of each factor column, from the data's factor fields
        sizes = [dataset.fields[name].classes for name in factors.names if name in dataset.fields]
        if len(sizes) == factors.shape[0] and all(sizes):
            kwargs["factor_sizes"] = sizes
    if entry.supervised:
        if dataset.target_kind == "none":
            raise InvalidArgumentError(
                f"model {config.model.name!r} learns a target; set data.params.target (e.g. label, abnormal, "
                "perturbation or thickness for digits, an attribute for cdsprites, a factor for dsprites)"
            )
        kwargs["kind"] = dataset.target_kind
        kwargs["num_outputs"] = dataset.num_classes if dataset.target_kind == "classification" else 1
    task = cls(**kwargs)
    missing = [name for name in getattr(task, "batch_fields", ()) if name != "target" and name not in dataset.fields]
    if missing:
        raise InvalidArgumentError(
            f"model {config.model.name!r}: reads the field(s) {', '.join(map(repr, missing))}, which data "
            f"{dataset.name!r} does not give (it gives {', '.join(dataset.fields)})"
        )
    return task


def load_data(config: TrainConfig) -> Any:
    """The registered dataset of ``config.data``.

    Parameters
    ----------
    config : TrainConfig
        The training config; ``config.data.name`` is looked up in :mod:`repscope.data.registry` and its
        loader called with ``config.data.params``.

    Returns
    -------
    Dataset
        The loaded :class:`~repscope.data.datasets.Dataset`.

    Raises
    ------
    InvalidArgumentError
        When ``config.data.name`` is not registered; the loader's own errors (e.g.
        :class:`~repscope.errors.SourceNotFoundError`, :class:`DataFormatError`) pass through.
    """
    return load_dataset(config.data.name, **config.data.params)


def log_versions(run_root: Path) -> list[Path]:
    """The run's CSV log folders in training order: ``logs``, then ``logs-resume-1``, ``-2``, ...

    Parameters
    ----------
    run_root : pathlib.Path
        The run directory.

    Returns
    -------
    list of pathlib.Path
        The existing folders ``run_root/logs*``, sorted by resume number; empty when there are none.
    """
    folders = [p for p in run_root.glob("logs*") if p.is_dir()]
    return sorted(folders, key=lambda p: int(p.name.rsplit("-", 1)[1]) if p.name != "logs" else 0)


def _logger(config: TrainConfig, run_root: Path) -> Any:
    kind = config.trainer.logger
    if kind == "none":
        return False
    # a resumed run logs into a new folder: Lightning's loggers would clear the old one
    previous = log_versions(run_root)
    version = "logs" if not previous else f"logs-resume-{len(previous)}"
    if kind == "tensorboard":
        return TensorBoardLogger(save_dir=str(run_root), name="", version=version)
    return CSVLogger(save_dir=str(run_root), name="", version=version)


def check_trainer(config: TrainConfig) -> None:
    """Refuse, before anything is written, trainer settings Lightning cannot run (an unknown
    accelerator or precision, a GPU that is not there, a missing logger package).

    Builds a throwaway ``lightning.pytorch.Trainer`` (no logger, no checkpoints) from ``config.trainer``.

    Parameters
    ----------
    config : TrainConfig
        The training config; only ``config.trainer`` is read.

    Raises
    ------
    InvalidArgumentError
        When ``trainer.logger`` is ``tensorboard`` without the tensorboard (or tensorboardX) package, or
        Lightning refuses the accelerator, devices, nodes, strategy or precision (its first line quoted).
    """
    if config.trainer.logger == "tensorboard":
        if importlib.util.find_spec("tensorboard") is None and importlib.util.find_spec("tensorboardX") is None:
            raise InvalidArgumentError(
                "trainer.logger: 'tensorboard' needs the tensorboard package (pip install tensorboard); or use csv"
            )
    t = config.trainer
    try:
        pl.Trainer(
            accelerator=t.accelerator,
            devices=t.devices,
            num_nodes=t.num_nodes,
            strategy=t.strategy,
            precision=t.precision,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
    except Exception as exc:  # Lightning raises ValueError / MisconfigurationException / RuntimeError
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgumentError(
            f"trainer: accelerator={t.accelerator!r}, devices={t.devices!r}, precision={t.precision!r}: {first[:240]}"
        ) from None


class EpochCheckpoint(Callback):
    """Keep one rolling checkpoint of the last complete training epoch, written atomically.

    At the end of every training epoch (Lightning runs the epoch's validation before
    ``on_train_epoch_end``, the moment Lightning's own ``ModelCheckpoint`` saves when validation runs
    once per epoch) the full training state (weights, optimizer, loops, callbacks) is saved with
    ``Trainer.save_checkpoint`` to a temporary file beside ``path`` (prefix ``.tmp-``, ignored by later
    runs), which then replaces ``path`` in one rename. A process stopped while saving leaves the previous
    checkpoint whole; the temporary file is removed when the save fails or is interrupted.

    So that a resumed run draws what the uninterrupted run would have drawn, the callback's own state in
    the checkpoint holds the random states at the epoch's end: torch's, CUDA's, numpy's and Python's
    global generators (dropout, augmentations) and the ``torch.Generator`` that shuffles the training
    loader's rows; they are set back as the next epoch starts after a resume. (Lightning restores loops,
    weights and optimizer but no random state: without this a resumed epoch repeats the first epoch's
    row order.)

    The training time is kept too: each checkpoint stores ``train_seconds``, the seconds trained up to its
    save, those of earlier sessions (read back from the checkpoint a resume starts from:
    :attr:`seconds_before`) included, so that a resumed run reports its whole training time.

    Cost: a save takes milliseconds for small networks but ~0.6 s for a 150 MB VAE checkpoint, more
    than a tiny epoch. With ``max_share`` the save at an epoch's end is skipped while less than
    ``d * (1 - max_share) / max_share`` seconds have passed since the last save ended, ``d`` being how
    long that save took, so saving takes at most about ``max_share`` of the training time; the first
    epoch is always saved, and :func:`fit` makes ``last.ckpt`` the final state once training ends.
    Epochs longer than that wait are all saved.

    Parameters
    ----------
    path : pathlib.Path
        The checkpoint to keep (``<run>/checkpoints/last.ckpt``); its folder is created when missing.
    max_share : float, optional
        The largest share of the training time spent saving, in (0, 1]; None saves every epoch.
    clock : callable, default time.monotonic
        Seconds, for the rule above.
    """

    def __init__(self, path: Path, max_share: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if max_share is not None and not 0 < max_share <= 1:
            raise InvalidArgumentError(f"max_share: must be in (0, 1], got {max_share!r}")
        self.path = Path(path)
        self.max_share = max_share
        self._clock = clock
        self._next_save = -math.inf
        self._trainer: Any = None
        self._restored: dict[str, Any] | None = None
        self.fit_started: float | None = None
        """``time.perf_counter()`` when training started in this process (set by :meth:`setup` unless
        set before, as :func:`fit` does, so that both count the same seconds)."""
        self.seconds_before: float | None = 0.0
        """Seconds trained before this process (0 for a new run; None when the checkpoint resumed from
        predates the record of its time)."""

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Remember the trainer, whose loader and random states :meth:`state_dict` reads, and when
        training started in this process.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer.
        pl_module : lightning.pytorch.LightningModule
            The task (unused).
        stage : str
            Lightning's stage (unused).
        """
        self._trainer = trainer
        if self.fit_started is None:
            self.fit_started = time.perf_counter()

    def train_seconds(self) -> float:
        """Seconds trained so far: those before this process (when known) and those since :meth:`setup`.

        Returns
        -------
        float
            The whole training time up to now.
        """
        now = time.perf_counter() - self.fit_started if self.fit_started is not None else 0.0
        return (self.seconds_before or 0.0) + now

    def state_dict(self) -> dict[str, Any]:
        """The random states a resumed run needs (see the class).

        Returns
        -------
        dict
            ``rng``: the global generators' states; ``loader_generators``: the state of each shuffling
            ``torch.Generator`` of the training loader; ``train_seconds``: :meth:`train_seconds` (None
            when the time before a resume is unknown).
        """
        loader = getattr(self._trainer, "train_dataloader", None) if self._trainer is not None else None
        return {
            "rng": _random_states(),
            "loader_generators": [g.get_state() for g in _shuffling_generators(loader)],
            "train_seconds": None if self.seconds_before is None else round(self.train_seconds(), 3),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Keep a checkpoint's random states until the next training epoch starts; take its training
        time as :attr:`seconds_before`.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned when the checkpoint was saved.
        """
        self._restored = dict(state_dict)
        seconds = state_dict.get("train_seconds")
        self.seconds_before = float(seconds) if isinstance(seconds, int | float) else None

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        """After a resume: set the random states back to those of the checkpoint's epoch end.

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer.
        pl_module : lightning.pytorch.LightningModule
            The task (unused).
        """
        restored, self._restored = self._restored, None
        if not restored:
            return
        if restored.get("rng"):
            _set_random_states(restored["rng"])
        generators = _shuffling_generators(trainer.train_dataloader)
        states = restored.get("loader_generators") or []
        if len(states) == len(generators):
            for generator, state in zip(generators, states, strict=True):
                generator.set_state(state)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Save the epoch's training state to ``path`` (see the class).

        Parameters
        ----------
        trainer : lightning.pytorch.Trainer
            The trainer; every rank calls ``save_checkpoint`` (a collective call), the global-zero rank
            writes and renames.
        pl_module : lightning.pytorch.LightningModule
            The task (unused: the trainer saves it).
        """
        if trainer.sanity_checking or trainer.fast_dev_run:
            return
        started = self._clock()
        # every rank must take the same decision (saving is a collective call): rank zero's clock decides
        save = bool(trainer.strategy.broadcast(started >= self._next_save, src=0))
        if not save:
            return
        save_checkpoint_atomically(trainer, self.path)
        ended = self._clock()
        if self.max_share is not None:
            self._next_save = ended + (ended - started) * (1 - self.max_share) / self.max_share


def _random_states() -> dict[str, Any]:
    # tensors and plain values only: checkpoints are read back with torch.load(weights_only=True)
    name, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": [
            str(name),
            torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            int(position),
            int(has_gauss),
            float(cached),
        ],
        "python": random.getstate(),
    }


def _set_random_states(states: Mapping[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    if states.get("cuda") and torch.cuda.is_available() and len(states["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(states["cuda"])
    name, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


def _shuffling_generators(loader: Any) -> list[torch.Generator]:
    # the torch.Generator that orders a training loader's rows: a DataLoader's own, or the one of the
    # DataLoader over row numbers behind DeviceBatches (repscope.train.datamodule)
    found = []
    for candidate in (loader, getattr(loader, "order", None)):
        generator = getattr(candidate, "generator", None)
        if isinstance(generator, torch.Generator):
            found.append(generator)
    return found


def save_checkpoint_atomically(trainer: Any, path: Path) -> Path:
    """``trainer.save_checkpoint`` to ``path`` through a temporary file and one rename.

    Parameters
    ----------
    trainer : lightning.pytorch.Trainer
        A trainer inside (or after) ``fit``.
    path : pathlib.Path
        The checkpoint file; an existing one is replaced only once the new one is completely written.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    try:
        if trainer.is_global_zero:
            with atomic_path(path) as temporary:
                trainer.save_checkpoint(temporary, weights_only=False)
        else:
            # Lightning writes on global rank zero only; the other ranks take part in the collective save
            trainer.save_checkpoint(path, weights_only=False)
    except OSError as exc:  # a full disk: one line naming the checkpoint, not the temporary copies
        if not is_write_refusal(exc) or isinstance(exc, OutputWriteError):
            raise
        raise output_error(path, OSError(exc.errno, exc.strerror)) from None
    trainer.strategy.barrier()
    return path


def _replace_with_copy(source: Path, target: Path) -> None:
    """``target`` becomes a copy of ``source`` (a hard link where the file system has them) in one rename."""
    with atomic_path(target) as temporary:
        temporary.unlink()  # the link needs the name free: atomic_path reserved it with an empty file
        try:
            os.link(source, temporary)
        except OSError:  # a file system without hard links
            shutil.copyfile(source, temporary)


def resume_epoch(run_root: Path | str) -> int | None:
    """The epoch (counted from 1) from which ``--resume`` continues the run in ``run_root``.

    Parameters
    ----------
    run_root : pathlib.Path or str
        A training run directory.

    Returns
    -------
    int or None
        One more than the epochs ``checkpoints/last.ckpt`` holds complete (Lightning's fit-loop
        ``epoch_progress.total.processed``: the same count whether the checkpoint was saved at an
        epoch's end or after training ended); None when there is no readable ``last.ckpt`` (the run
        stopped before its first epoch ended) or it lacks Lightning's loop state.
    """
    last = Path(run_root) / "checkpoints" / LAST_CHECKPOINT
    if not last.is_file():
        return None
    try:
        checkpoint = read_checkpoint(last)
    except DataFormatError:
        return None
    try:
        done = checkpoint["loops"]["fit_loop"]["epoch_progress"]["total"]["processed"]
    except (KeyError, TypeError):
        return None
    return int(done) + 1 if isinstance(done, int) else None


# at most this share of a training's time goes to the rolling checkpoint (EpochCheckpoint's max_share)
CHECKPOINT_SHARE = 0.1


def make_trainer(
    config: TrainConfig, run_root: Path | None, extra_callbacks: list | None = None, description: str | None = None
) -> Any:
    """A Lightning ``Trainer`` of ``config.trainer``: checkpoints and logs in ``run_root`` (none when
    None), our progress reporting (a bar on a terminal, lines elsewhere) naming ``description``.

    Parameters
    ----------
    config : TrainConfig
        The training config; ``config.trainer`` gives the Trainer's flags and logger.
    run_root : pathlib.Path or None
        The run directory: ``checkpoints/last.ckpt`` is replaced there at the end of every epoch
        (:class:`EpochCheckpoint`; epochs shorter than nine times a save are saved less often, so that
        saving takes at most :data:`CHECKPOINT_SHARE` of the time) and the logger (per
        ``trainer.logger``) writes ``logs/`` (``logs-resume-N/`` when earlier logs exist). None: neither.
    extra_callbacks : list of lightning.pytorch.Callback, optional
        Callbacks run before the progress reporting.
    description : str, optional
        What the progress reporting says (default ``training <model>``).

    Returns
    -------
    lightning.pytorch.Trainer
        Lightning's own progress bar and model summary off, no sanity validation steps, a log entry
        every 10 steps.
    """
    callbacks = list(extra_callbacks or [])
    callbacks.append(TrainingProgress(description or f"training {config.model.name}"))
    logger: Any = False
    if run_root is not None:
        callbacks.append(EpochCheckpoint(run_root / "checkpoints" / LAST_CHECKPOINT, max_share=CHECKPOINT_SHARE))
        logger = _logger(config, run_root)
    t = config.trainer
    return pl.Trainer(
        accelerator=t.accelerator,
        devices=t.devices,
        num_nodes=t.num_nodes,
        strategy=t.strategy,
        precision=t.precision,
        max_epochs=t.max_epochs,
        limit_train_batches=t.limit_train_batches,
        gradient_clip_val=t.gradient_clip_val,
        logger=logger,
        callbacks=callbacks,
        enable_checkpointing=False,  # EpochCheckpoint saves; Lightning's default ModelCheckpoint would add files
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=10,
        deterministic=t.deterministic,
        num_sanity_val_steps=0,
    )


def epoch_curves(run_root: Path) -> Any:
    """Lightning's CSV logs (every training session of the run) collapsed to one row per epoch (the
    mean of what was logged in it).

    Parameters
    ----------
    run_root : pathlib.Path
        The run directory; the ``metrics.csv`` of each of its :func:`log_versions` folders is read.

    Returns
    -------
    pandas.DataFrame
        One row per epoch, sorted by ``epoch``: the column ``epoch``, the per-epoch training values
        (``<name>_epoch``) and the validation values (``val_*``); every logged column except ``step``
        when there are no such columns. Empty when there is no CSV log or it has no ``epoch`` column.
    """
    logs = [
        pd.read_csv(folder / "metrics.csv") for folder in log_versions(run_root) if (folder / "metrics.csv").exists()
    ]
    if not logs:
        return pd.DataFrame()
    log = pd.concat(logs, ignore_index=True)
    if "epoch" not in log:
        return pd.DataFrame()
    columns = [c for c in log.columns if c not in ("step",)]
    curves = log[columns].groupby("epoch", as_index=False).mean(numeric_only=True)
    epoch_columns = [c for c in curves.columns if c == "epoch" or c.endswith("_epoch") or c.startswith("val_")]
    return curves[epoch_columns] if len(epoch_columns) > 1 else curves


def evaluate_task(task: Any, dataset: Any, module: Any = None, trainer: Any = None) -> dict[str, float]:
    """Test metrics on the dataset's ``test`` split: accuracy or RMSE for supervised tasks; the
    validation losses on the test samples for the other families. Empty when there is no test split.

    Parameters
    ----------
    task : lightning.pytorch.LightningModule
        The trained task.
    dataset : Dataset
        The dataset it was trained on.
    module : DatasetModule, optional
        The data module whose test loader feeds the non-supervised tasks (default: a new one over
        ``task.batch_fields``).
    trainer : TrainerSection, optional
        Where the training ran: the validation pass runs on its accelerator (one device, 32-bit, so
        that runs of any precision are measured alike); default the CPU.

    Returns
    -------
    dict of str to float
        Supervised tasks: ``test_accuracy`` (fraction of correct classes, classification) or
        ``test_rmse`` (in the target's units, regression). Other tasks: each ``val_<name>`` that their
        ``validation_step`` logs, renamed ``test_<name>``, from a validation run over the test split.
    """
    if "test" not in dataset.splits:
        return {}
    if "target" in getattr(task, "batch_fields", ()) and dataset.target_kind != "none":
        test = dataset.arrays("test", ["image", "target"])
        predicted = task.predict(test["image"])
        if dataset.target_kind == "classification":
            return {"test_accuracy": float(np.mean(predicted == test["target"]))}
        error = np.asarray(predicted, dtype=np.float64) - test["target"]
        return {"test_rmse": float(np.sqrt(np.mean(error**2)))}
    module = module or DatasetModule(dataset, task.batch_fields)
    validation = pl.Trainer(
        accelerator=trainer.accelerator if trainer is not None else "cpu",
        devices=1,
        precision="32-true",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
    )
    results = validation.validate(task, dataloaders=module.test_dataloader(), verbose=False)
    return {f"test_{k.removeprefix('val_')}": float(v) for k, v in (results[0] if results else {}).items()}


# what a resumed training may change: more epochs, and where it runs (the same numbers on one kind of machine)
RESUME_MAY_CHANGE = f"trainer.max_epochs and where the work runs ({PLACEMENT_TEXT})"


def may_change_on_resume(key: str) -> bool:
    """Whether the dotted config key ``key`` may differ when a training is resumed.

    Parameters
    ----------
    key : str
        A dotted key of a :class:`TrainConfig` (``trainer.logger``, ``model.params.beta``).

    Returns
    -------
    bool
        True for ``trainer.max_epochs`` and the keys that say where the work runs
        (:func:`repscope.resume_check.where_the_work_runs`: the trainer's accelerator, devices, nodes,
        strategy, logger, data placement and compilation).
    """
    return key == "trainer.max_epochs" or where_the_work_runs(key)


def check_same_training(run_root: Path, config: TrainConfig) -> None:
    """Refuse to resume the run in ``run_root`` with a config other than the one it was trained with.

    Parameters
    ----------
    run_root : pathlib.Path
        The run directory (its ``config.yaml`` is read through :func:`~repscope.train.reader.open_run`).
    config : TrainConfig
        The config given now.

    Raises
    ------
    InvalidArgumentError
        Naming every setting that differs (but those :func:`may_change_on_resume`), with its stored and
        its new value.
    """
    stored = open_run(run_root).config.model_dump(mode="json")
    found = differences(stored, config.model_dump(mode="json"), may_change_on_resume)
    refuse_changes(found, str(run_root), RESUME_MAY_CHANGE, verb="trained")


def compile_networks(task: Any, mode: str) -> Any:
    """``torch.compile`` what a training step of ``task`` runs, in place, so that the state dict, and so
    the checkpoint, keeps its keys.

    A task naming :attr:`~repscope.train.tasks.base.ConfiguredModule.compiled_methods` (the multimodal
    VAEs: ``losses``, whose step calls ``net.loss`` rather than ``net(...)``) has each of them compiled
    whole, one graph for the encoders, the decoders and the objective; any other task has each direct
    child module compiled (``nn.Module.compile``: the step calls its networks as modules).

    Parameters
    ----------
    task : lightning.pytorch.LightningModule
        The task.
    mode : {"off", "default", "reduce-overhead", "max-autotune"}
        ``off`` leaves the task as it is; the others are ``torch.compile`` modes (``reduce-overhead``
        records CUDA graphs for the static shapes of a training step).

    Returns
    -------
    lightning.pytorch.LightningModule
        ``task`` itself.
    """
    if mode == "off":
        return task
    methods = getattr(task, "compiled_methods", ())
    for name in methods:
        # an instance attribute shadows the class's method; the bound method keeps ``self``
        setattr(task, name, torch.compile(getattr(task, name), mode=mode))
    if not methods:
        for child in task.children():
            child.compile(mode=mode)
    return task


def fit(
    config: TrainConfig,
    out: Path | str | None = None,
    resume: bool = False,
    root: Path | str = Path("runs"),
    source: str = "config",
    kind: str = "train",
    dataset: Any = None,
    description: str | None = None,
    report: bool = True,
    origin: Mapping[str, Any] | None = None,
) -> TrainOutcome:
    """Train ``config`` and write its run directory: the one training entry point (``repscope train``,
    every study, the CdSprites+ attribute classifiers).

    Parameters
    ----------
    config : TrainConfig
        Model, data, trainer, batch size, validation share, seed.
    out : path, optional
        The run directory (default ``root/<kind>-<time>``); an existing non-empty one is refused
        unless ``resume``.
    resume : bool
        Continue the run in ``out`` from ``checkpoints/last.ckpt``; only the keys
        :func:`may_change_on_resume` may differ from the config it was trained with.
    source : str
        Named in error messages (the config file, or the study and member).
    dataset : Dataset, optional
        The already loaded dataset of ``config.data`` (saves loading it again for several models).
    description : str, optional
        What the progress bar or lines say (default ``training <model> on <data>``).
    report : bool
        Write ``report.html`` (curves, test metrics against the constant-prediction baseline, images).
    origin : mapping, optional
        For a training derived from a higher-level command's config: ``{"command": ..., "config": {...}}``
        (e.g. ``mmvae train`` and its multimodal config), recorded in ``config.yaml`` as ``origin`` and
        read back as :attr:`repscope.train.reader.TrainedRun.origin`.

    Returns
    -------
    TrainOutcome
        The run directory, the trained task (in eval mode), the dataset and the metrics. ``fit_seconds``
        is the whole training time; a resumed run adds ``fit_seconds_before_resume`` (stored in the
        checkpoint; None for a checkpoint that predates it, and then ``fit_seconds`` counts this session
        only) and ``fit_seconds_since_resume``.

    Nothing is written before the config, the data, the model and the trainer flags have been
    checked, so a failed start leaves nothing that blocks the corrected command.
    """
    config.check_params(source)
    quiet_lightning()
    as_dict = {**config.model_dump(mode="json"), "repscope_version": __version__}
    if origin is not None:
        as_dict["origin"] = dict(origin)
    check_trainer(config)
    if resume:
        last = _checkpoint_to_resume(out, config)
    elif out is not None:
        RunDirectory.check_free(out, resumable=True)

    if os.environ.get(THREADS_ENV, "").strip():
        configure_torch_threads()  # the user chose the thread count (it changes the last bits of results)
    pl.seed_everything(config.seed, workers=True, verbose=False)
    dataset = load_data(config) if dataset is None else dataset
    task = build_task(config, dataset)
    if resume:
        check_resumable(last, task)  # fail early, with a clear message, on a corrupt or mismatched file
    compile_networks(task, config.trainer.compile)
    module = DatasetModule(
        dataset,
        task.batch_fields,
        config.batch_size,
        config.val_fraction,
        config.seed,
        config.num_workers,
        shuffle=config.shuffle,
        placement=config.trainer.data_placement,
        progress=progress_bar,
    )
    run = RunDirectory.create(kind, out=out, root=root, resume=resume, resumable=True)
    run.write_config(as_dict)
    trainer = make_trainer(
        config, run.root, description=description or f"training {config.model.name} on {config.data.name}"
    )
    timing = _train(trainer, task, module, run.root, resume)
    _keep_end_state(trainer, run.root)
    curves = epoch_curves(run.root)
    if len(curves):
        run.write_table("training_curves", curves)
    metrics = _run_metrics(config, task, dataset, module, trainer, timing)
    run.write_metrics(metrics)
    if report:
        images_in_and_out = model_entry(config.model.name).family != "multimodal"
        run.write_report(training_report(config, task, dataset, metrics, curves, images_in_and_out))
    return TrainOutcome(run, task, dataset, metrics)


def _checkpoint_to_resume(out: Path | str | None, config: TrainConfig) -> Path:
    """The ``last.ckpt`` that ``--resume`` continues in the run directory ``out``, once ``out`` is checked to
    be a training run of ``config`` (:func:`check_same_training`) that has finished an epoch."""
    run_root = Path(out) if out is not None else None
    if run_root is None:
        raise InvalidArgumentError("--resume: continuing a run needs --out, the run directory to continue")
    last = run_root / "checkpoints" / LAST_CHECKPOINT
    if not (run_root / "config.yaml").exists():
        raise InvalidArgumentError(f"--resume: {run_root} holds no config.yaml: not a training run to continue")
    if not last.exists():
        raise InvalidArgumentError(
            f"--resume: {run_root} has no checkpoints/{LAST_CHECKPOINT} (stopped before its first epoch "
            "ended); pass --overwrite to start it again"
        )
    check_same_training(run_root, config)
    return last


def _train(trainer: Any, task: Any, module: Any, run_root: Path, resume: bool) -> dict[str, Any]:
    """``trainer.fit`` (from ``last.ckpt`` when resuming) and the training time: ``fit_seconds`` and, for a
    resumed run, ``fit_seconds_before_resume`` and ``fit_seconds_since_resume`` (see :func:`fit`)."""
    keeper = next((c for c in trainer.callbacks if isinstance(c, EpochCheckpoint)), None)
    started = time.perf_counter()
    if keeper is not None:
        keeper.fit_started = started  # the checkpoints' training time counts from here, as fit_seconds does
    trainer.fit(
        task,
        datamodule=module,
        ckpt_path=str(run_root / "checkpoints" / LAST_CHECKPOINT) if resume else None,
        weights_only=True,
    )
    seconds = time.perf_counter() - started
    # a resumed run: the seconds of the sessions before (from the checkpoint) count too
    before = keeper.seconds_before if keeper is not None and resume else 0.0
    # fit_seconds is the whole training time: a resumed run adds the two parts, or has only this one when
    # the time before is unknown (a checkpoint of an older version)
    timing: dict[str, Any] = {"fit_seconds": round(seconds + (before or 0.0), 2)}
    if resume:
        timing["fit_seconds_before_resume"] = None if before is None else round(before, 2)
        timing["fit_seconds_since_resume"] = round(seconds, 2)
    return timing


def _keep_end_state(trainer: Any, run_root: Path) -> None:
    """Save ``final.ckpt``; ``last.ckpt`` becomes its content, so that a longer ``--resume`` starts there."""
    final_path = save_checkpoint_atomically(trainer, run_root / "checkpoints" / FINAL_CHECKPOINT)
    if trainer.is_global_zero:
        # a hard link, no second save, through a temporary name and one rename
        _replace_with_copy(final_path, run_root / "checkpoints" / LAST_CHECKPOINT)


def _run_metrics(
    config: TrainConfig, task: Any, dataset: Any, module: Any, trainer: Any, timing: dict[str, Any]
) -> dict[str, Any]:
    """The content of ``metrics.json``: what was trained on what, the sizes of the splits, ``timing``, the
    final logged values and the test metrics of :func:`evaluate_task` (``task`` is put in eval mode)."""
    final = {k: float(v) for k, v in trainer.callback_metrics.items() if np.ndim(v.detach().cpu().numpy()) == 0}
    epochs_run = int(trainer.current_epoch)
    task.eval()
    return {
        "model": config.model.name,
        "data": config.data.name,
        "target": dataset.target or "none",
        "n_train": int(len(module.train_set)),
        "n_val": int(len(module.val_set) if module.val_set is not None else 0),
        "n_test": int(len(module.test_set) if module.test_set is not None else 0),
        "epochs": epochs_run,
        **timing,
        "data_placement": "device" if module.placed else "loader",
        "final": final,
        **evaluate_task(task, dataset, module, config.trainer),
    }


# --------------------------------------------------------------------------------------------
# resuming


# what Lightning restores on a resumed fit: without one of them the run would not go on where it stopped
TRAINING_STATE_KEYS = ("epoch", "global_step", "loops", "optimizer_states", "lr_schedulers")
# the random states EpochCheckpoint keeps (its callback state): without them the resumed epochs draw
# other rows and other noise than the uninterrupted run
RANDOM_STATE_KEYS = ("rng.torch", "rng.numpy", "rng.python", "loader_generators")


def check_resumable(path: Path, task: Any) -> None:
    """Refuse, before anything is written, a ``last.ckpt`` that ``--resume`` could not continue as the
    same run: unreadable, without part of Lightning's training state or of the random states, or with
    weights that do not fit ``task``.

    Parameters
    ----------
    path : pathlib.Path
        The checkpoint to resume from.
    task : lightning.pytorch.LightningModule
        The task built from the config; the checkpoint's weights are loaded into it (strictly) to test
        that they fit, so on success ``task`` holds them.

    Raises
    ------
    InvalidArgumentError
        When ``path`` is not a file.
    DataFormatError
        When the checkpoint is unreadable; lacks one of :data:`TRAINING_STATE_KEYS` (or the fit loop's
        state in ``loops``), or the :class:`EpochCheckpoint` state with each of :data:`RANDOM_STATE_KEYS`
        (every absent one is named); or its ``state_dict`` does not match ``task`` (a missing or extra
        key, a different shape).
    """
    checkpoint = read_checkpoint(path)
    missing = [key for key in TRAINING_STATE_KEYS if key not in checkpoint]
    loops = checkpoint.get("loops")
    if "loops" not in missing and not (isinstance(loops, Mapping) and isinstance(loops.get("fit_loop"), Mapping)):
        missing.append("loops.fit_loop")
    if missing:
        raise DataFormatError(
            f"checkpoint {path}: lacks Lightning's training state ({', '.join(missing)}); it cannot be resumed"
        )
    absent = _absent_random_states(checkpoint)
    if absent:
        raise DataFormatError(
            f"checkpoint {path}: lacks the random states a resumed run restores ({', '.join(absent)}); it cannot "
            "be continued as the same run (start it again)"
        )
    load_weights(task, checkpoint, path, "the configured model")


def _absent_random_states(checkpoint: Mapping[str, Any]) -> list[str]:
    """The parts of :data:`RANDOM_STATE_KEYS` the checkpoint's :class:`EpochCheckpoint` state lacks, as
    dotted keys under ``callbacks.EpochCheckpoint``; all of it when there is no such state."""
    callbacks = checkpoint.get("callbacks")
    states = [
        value
        for key, value in (callbacks.items() if isinstance(callbacks, Mapping) else ())
        if str(key).startswith(EpochCheckpoint.__qualname__) and isinstance(value, Mapping)
    ]
    if not states:
        return [f"callbacks.{EpochCheckpoint.__qualname__}"]
    absent = []
    for dotted in RANDOM_STATE_KEYS:
        value: Any = states[0]
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            absent.append(f"callbacks.{EpochCheckpoint.__qualname__}.{dotted}")
    return absent


def load_task(path: Path | str, model: str | None = None) -> Any:
    """The trained LightningModule of a run directory (through :func:`~repscope.train.reader.open_run`:
    its ``final.ckpt``, else ``last.ckpt``) or of a checkpoint file.

    Parameters
    ----------
    path : pathlib.Path or str
        A run directory (the one :func:`fit` writes) or a checkpoint file.
    model : str, optional
        The registered model name the checkpoint holds: required for a checkpoint file; for a run
        directory, read from its ``config.yaml`` (and, when given, checked against it).

    Returns
    -------
    lightning.pytorch.LightningModule
        The task built from the checkpoint's ``hyper_parameters`` with its weights, on the CPU, in eval
        mode.

    Raises
    ------
    InvalidArgumentError
        When a run directory has no ``config.yaml``, no ``checkpoints/final.ckpt`` or ``last.ckpt``, or
        trained another model than ``model``; when ``model`` is omitted for a checkpoint file, is not
        registered, or the checkpoint file does not exist.
    DataFormatError
        When the checkpoint or ``config.yaml`` is unreadable or invalid, the checkpoint holds another
        model, or its hyper-parameters or weights do not fit the model.
    """
    path = Path(path)
    if path.is_dir():
        run = open_run(path)
        if model is not None and model != run.model_name:
            raise InvalidArgumentError(f"run {path}: trained model {run.model_name!r}, not {model!r}")
        return run.task()
    if model is None:
        raise InvalidArgumentError(f"checkpoint {path}: say which model it holds (a registered name)")
    return task_from_checkpoint(path, model)
