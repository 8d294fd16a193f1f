"""Read a training run back: :func:`open_run` gives a :class:`TrainedRun` (typed config, metrics, the
trained task on demand), and the checkpoint readers every load goes through.

A run directory is what :func:`repscope.train.fitting.fit` writes (``repscope train``, every study member,
the attribute and factor classifiers): ``config.yaml`` (the :class:`~repscope.train.config.TrainConfig`
as run, plus ``repscope_version`` and, for a run made by a higher-level command, ``origin``),
``metrics.json`` and ``checkpoints/``. This module is the one place that reads them; no study parses a
run's ``config.yaml`` itself.

.. code-block:: python

    run = open_run("runs/train-20250101-120000")
    run.model_name, run.config.trainer.max_epochs, run.metrics["test_accuracy"]
    run.task().predict(run.dataset().arrays("test", ["image"])["image"])

Checkpoints are untrusted input: every load goes through ``torch.load(..., weights_only=True)`` (plain
tensors and containers only, no code), and a corrupt or mismatched file is a
:class:`repscope.errors.DataFormatError` naming it.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repscope.config import read_yaml_mapping, validate_config
from repscope.data.registry import load_dataset, loader_arguments
from repscope.errors import DataFormatError, InvalidArgumentError, RepscopeError
from repscope.run_directory import CONFIG_FILE, read_config, read_metrics
from repscope.train.config import TrainConfig
from repscope.train.registry import model_entry, task_class

LAST_CHECKPOINT = "last.ckpt"
FINAL_CHECKPOINT = "final.ckpt"
# What config.yaml records beside the training config itself: the package version, the config of the
# command that derived the training config (``origin``), and a key the first training runs may carry.
RECORD_KEYS = ("repscope_version", "origin", "config_source")
# Runs made before ``origin`` was recorded in config.yaml kept their command's config in a file of its own.
LEGACY_ORIGIN_FILES = {"mmvae-config.yaml": "mmvae train"}


@dataclass(frozen=True)
class TrainedRun:
    """A training run read back from its directory (build one with :func:`open_run`).

    Attributes
    ----------
    path : pathlib.Path
        The run directory.
    config : TrainConfig
        The validated training config the run was trained with (keys added to the schema after the run
        was written take their defaults, which are what that run did).
    metrics : dict
        The content of ``metrics.json`` (``model``, ``n_train``, ``epochs``, ``final``, ``test_*`` ...);
        empty when the run wrote none (it stopped before the end of training).
    version : str or None
        The ``repscope_version`` that wrote the run; None for a config that does not record it.
    origin : dict or None
        For a run made by a higher-level command, ``{"command": ..., "config": {...}}``: the command (e.g.
        ``mmvae train``) and the config it translated into :attr:`config`; None for ``repscope train``.
    """

    path: Path
    config: TrainConfig
    metrics: dict[str, Any] = field(default_factory=dict)
    version: str | None = None
    origin: dict[str, Any] | None = None
    _loaded: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def config_path(self) -> Path:
        """The run's ``config.yaml``."""
        return self.path / CONFIG_FILE

    @property
    def model_name(self) -> str:
        """The registered model name (``model.name``)."""
        return self.config.model.name

    @property
    def model_params(self) -> dict[str, Any]:
        """The model parameters the config set (``model.params``, a copy); the task's own defaults and the
        parameters the framework sets are in the checkpoint (``task().hparams``)."""
        return dict(self.config.model.params)

    @property
    def data_name(self) -> str:
        """The registered dataset name (``data.name``)."""
        return self.config.data.name

    @property
    def data_params(self) -> dict[str, Any]:
        """The dataset parameters the config set (``data.params``, a copy)."""
        return dict(self.config.data.params)

    @property
    def data_arguments(self) -> dict[str, Any]:
        """Every keyword argument the dataset's loader ran with: :attr:`data_params` over the loader's
        defaults (e.g. the CdSprites+ ``level`` of a run whose config leaves it unset). The defaults are read
        from the registered loader's signature, so no caller copies them.

        Raises
        ------
        InvalidArgumentError
            When :attr:`data_name` is not a registered dataset.
        """
        return loader_arguments(self.data_name, self.data_params)

    @property
    def checkpoint(self) -> Path:
        """The checkpoint of the trained weights: ``checkpoints/final.ckpt``, else (training interrupted)
        ``checkpoints/last.ckpt``.

        Raises
        ------
        InvalidArgumentError
            When the run has neither (it stopped before its first epoch ended).
        """
        for name in (FINAL_CHECKPOINT, LAST_CHECKPOINT):
            candidate = self.path / "checkpoints" / name
            if candidate.exists():
                return candidate
        raise InvalidArgumentError(f"run {self.path}: no checkpoints/{FINAL_CHECKPOINT} or {LAST_CHECKPOINT}")

    def task(self) -> Any:
        """The trained LightningModule, loaded from :attr:`checkpoint` on the first call and kept.

        Returns
        -------
        lightning.pytorch.LightningModule
            The task of :attr:`model_name` built from the checkpoint's hyper-parameters with its weights,
            on the CPU, in eval mode; the same object on every call.

        Raises
        ------
        InvalidArgumentError
            When the run has no checkpoint or its model is not registered.
        DataFormatError
            When the checkpoint is unreadable, holds another model, or its hyper-parameters or weights do
            not fit the model.
        """
        if "task" not in self._loaded:
            self._loaded["task"] = task_from_checkpoint(self.checkpoint, self.model_name)
        return self._loaded["task"]

    def dataset(self, **overrides: Any) -> Any:
        """The registered dataset of the run's ``data`` section, loaded anew.

        Parameters
        ----------
        **overrides
            Loader keywords that replace the run's ``data.params`` (e.g. ``test_size=200``).

        Returns
        -------
        Dataset
            ``load_dataset(data_name, **{**data_params, **overrides})``.

        Raises
        ------
        InvalidArgumentError
            When the dataset is not registered (and the loader's own errors).
        """
        return load_dataset(self.data_name, **{**self.data_params, **overrides})


def open_run(path: Path | str) -> TrainedRun:
    """Read the run directory ``path`` of ``repscope train`` (or of a study member trained through
    :func:`~repscope.train.fitting.fit`): its validated config, its metrics and, on demand, its task.

    Parameters
    ----------
    path : pathlib.Path or str
        The run directory.

    Returns
    -------
    TrainedRun
        The run; nothing is loaded beyond ``config.yaml`` and ``metrics.json`` until
        :meth:`TrainedRun.task` or :meth:`TrainedRun.dataset` is called.

    Raises
    ------
    InvalidArgumentError
        When ``path`` holds no ``config.yaml``, or one without ``model`` and ``data`` sections (the run
        directory of a study, not of a training; a study's folder with a ``models/`` subfolder gets the
        names of its models' runs).
    DataFormatError
        When ``config.yaml`` is unreadable, not a mapping, or not a valid training config (an unknown
        key, a missing ``model`` or ``data``, a wrong type: the message names the file and the key), or
        ``metrics.json`` is not a readable JSON object.
    """
    root = Path(path)
    config_path = root / CONFIG_FILE
    if not config_path.is_file():
        raise InvalidArgumentError(f"{root}: no {CONFIG_FILE}; not a run directory of repscope train")
    stored = read_config(root)
    body = {key: value for key, value in stored.items() if key not in RECORD_KEYS}
    models = root / "models"
    if "model" not in body and models.is_dir():
        # a study that trained several models keeps each one's run under models/: name them
        names = sorted(p.name for p in models.iterdir() if (p / CONFIG_FILE).is_file())
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
        raise InvalidArgumentError(
            f"{root}: the run directory of a study that trained {len(names)} models, not of one training; "
            f"give one of its models' runs: {models}/<name> ({shown})"
        )
    if "model" not in body and "data" not in body:
        # a study's or a command's run directory (its config is its own schema), not a training run
        raise InvalidArgumentError(
            f"{root}: not a run directory of repscope train ({config_path.name} has no model and data sections)"
        )
    try:
        config = validate_config(body, TrainConfig, f"{config_path}: not the config of a training run")
    except InvalidArgumentError as exc:
        raise DataFormatError(str(exc)) from None
    origin = stored.get("origin")
    if origin is None:
        origin = _legacy_origin(root)
    elif not isinstance(origin, dict):
        raise DataFormatError(f"{config_path}: origin must be a mapping, found {type(origin).__name__}")
    version = stored.get("repscope_version")
    return TrainedRun(
        path=root,
        config=config,
        metrics=read_metrics(root),
        version=None if version is None else str(version),
        origin=origin,
    )


def _legacy_origin(root: Path) -> dict[str, Any] | None:
    for name, command in LEGACY_ORIGIN_FILES.items():
        if (root / name).is_file():
            return {"command": command, "config": read_yaml_mapping(root / name)}
    return None


# --------------------------------------------------------------------------------------------
# checkpoints


def read_checkpoint(path: Path | str) -> dict[str, Any]:
    """A checkpoint file read with ``weights_only=True``; corrupt files are a clear error.

    Parameters
    ----------
    path : pathlib.Path or str
        The checkpoint file.

    Returns
    -------
    dict
        The checkpoint, tensors on the CPU; it holds at least ``state_dict``.

    Raises
    ------
    InvalidArgumentError
        When ``path`` is not a file.
    DataFormatError
        When the file cannot be read with ``weights_only=True`` or holds no ``state_dict``.
    """
    import torch  # noqa: PLC0415  (reading a run's config and metrics needs no torch)

    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"checkpoint {path}: no such file")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    # torch's weights-only unpickler fails on some garbage with IndexError ("pop from empty list"), KeyError
    # or TypeError rather than UnpicklingError: each of them means a file that is no checkpoint
    except (
        RuntimeError,
        EOFError,
        pickle.UnpicklingError,
        ValueError,
        OSError,
        IndexError,
        KeyError,
        TypeError,
    ) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(f"checkpoint {path}: not a readable checkpoint ({first[:160]})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise DataFormatError(f"checkpoint {path}: holds no state_dict; not a repscope/Lightning checkpoint")
    return checkpoint


def load_weights(task: Any, checkpoint: dict[str, Any], path: Path, what: str) -> None:
    """Load a checkpoint's ``state_dict`` into ``task`` strictly, or say which file does not fit.

    Parameters
    ----------
    task : torch.nn.Module
        The model to load into (a LightningModule).
    checkpoint : dict
        A checkpoint of :func:`read_checkpoint`.
    path : pathlib.Path
        The checkpoint file, named in the error.
    what : str
        What ``task`` is, named in the error (e.g. ``"model 'lenet5'"``).

    Raises
    ------
    DataFormatError
        When the ``state_dict`` is not a mapping, lacks or adds a key, or holds a tensor of another shape.
    """
    try:
        state = task.state_dict()
        incoming = checkpoint["state_dict"]
        if not isinstance(incoming, dict):
            raise RuntimeError("state_dict is not a mapping")
        for key, value in incoming.items():
            if key in state and hasattr(value, "shape") and tuple(value.shape) != tuple(state[key].shape):
                raise RuntimeError(f"{key} has shape {tuple(value.shape)}, the model's has {tuple(state[key].shape)}")
        task.load_state_dict(incoming, strict=True)
    except (RuntimeError, TypeError, AttributeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataFormatError(f"checkpoint {path}: does not match {what} ({detail[:200]})") from None


def task_from_checkpoint(path: Path | str, model: str) -> Any:
    """The task of the registered ``model`` rebuilt from a checkpoint file's hyper-parameters and weights.

    Parameters
    ----------
    path : pathlib.Path or str
        The checkpoint file (a run's ``checkpoints/final.ckpt`` or ``last.ckpt``).
    model : str
        The registered model name the checkpoint holds.

    Returns
    -------
    lightning.pytorch.LightningModule
        The task built from the checkpoint's ``hyper_parameters`` with its weights, on the CPU, in eval
        mode.

    Raises
    ------
    InvalidArgumentError
        When ``model`` is not registered or the file does not exist.
    DataFormatError
        When the checkpoint is unreadable, holds another model, or its hyper-parameters or weights do not
        fit the model.
    """
    path = Path(path)
    checkpoint = read_checkpoint(path)
    cls = task_class(model)
    hyper_parameters = checkpoint.get("hyper_parameters", {})
    if not isinstance(hyper_parameters, dict):
        raise DataFormatError(f"checkpoint {path}: its hyper_parameters are not a mapping")
    hyper_parameters = dict(hyper_parameters)
    for key, value in model_entry(model).fixed.items():
        if hyper_parameters.get(key, value) != value:
            raise DataFormatError(
                f"checkpoint {path}: does not match model {model!r} (it holds {key}={hyper_parameters[key]!r})"
            )
    try:
        task = cls(**hyper_parameters)
    except (TypeError, ValueError, RepscopeError) as exc:
        raise DataFormatError(f"checkpoint {path}: its hyper-parameters do not fit model {model!r} ({exc})") from None
    load_weights(task, checkpoint, path, f"model {model!r}")
    task.eval()
    return task


__all__ = [
    "TrainedRun",
    "open_run",
    "read_checkpoint",
    "load_weights",
    "task_from_checkpoint",
    "FINAL_CHECKPOINT",
    "LAST_CHECKPOINT",
]
