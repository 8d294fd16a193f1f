"""Train any registered model on any registered dataset and write a run directory.

The run directory holds ``config.yaml`` (the validated config as run), ``metrics.json`` (final
training and validation losses, test metrics, time), ``tables/training_curves.csv`` (one row per
epoch), ``logs/`` (Lightning's CSV log, every logged step; ``logs-resume-N/`` after a resume) and ``checkpoints/`` (``last.ckpt``
every epoch, for ``--resume``; ``final.ckpt`` when training ends).

Checkpoints are untrusted input: every load goes through ``torch.load(..., weights_only=True)``
(plain tensors and containers only, no code), and a corrupt or mismatched file is a
:class:`repscope.errors.DataFormatError` naming it.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.train.config import TrainConfig

LAST_CHECKPOINT = "last.ckpt"
FINAL_CHECKPOINT = "final.ckpt"


@dataclass
class TrainOutcome:
    run: Any  # RunDirectory
    task: Any  # LightningModule, trained
    data: Any  # TrainingSet
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


def build_task(config: TrainConfig, data: Any) -> Any:
    """The registered LightningModule for ``config.model``, fitted to the data's target."""
    from repscope.models.registry import model_entry, task_class

    entry = model_entry(config.model.name)
    kwargs = {**entry.fixed, **config.model.params}
    if entry.supervised:
        if data.target_kind == "none":
            raise InvalidArgumentError(
                f"model {config.model.name!r} learns a target; set data.params.target (label, abnormal, "
                "perturbation or thickness)"
            )
        kwargs["kind"] = data.target_kind
        kwargs["num_outputs"] = data.num_classes if data.target_kind == "classification" else 1
    return task_class(config.model.name)(**kwargs)


def load_data(config: TrainConfig) -> Any:
    from repscope.data.registry import dataset_loader

    return dataset_loader(config.data.name)(**config.data.params)


def log_versions(run_root: Path) -> list[Path]:
    """The run's CSV log folders in training order: ``logs``, then ``logs-resume-1``, ``-2``, ..."""
    folders = [p for p in run_root.glob("logs*") if p.is_dir()]
    return sorted(folders, key=lambda p: int(p.name.rsplit("-", 1)[1]) if p.name != "logs" else 0)


def make_trainer(config: TrainConfig, run_root: Path | None, extra_callbacks: list | None = None) -> Any:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger

    from repscope.progress import interactive

    callbacks = list(extra_callbacks or [])
    logger: Any = False
    if run_root is not None:
        callbacks.append(ModelCheckpoint(dirpath=run_root / "checkpoints", save_top_k=0, save_last=True))
        # a resumed run logs into a new folder: Lightning's CSV logger would clear the old one
        previous = log_versions(run_root)
        version = "logs" if not previous else f"logs-resume-{len(previous)}"
        logger = CSVLogger(save_dir=str(run_root), name="", version=version)
    t = config.trainer
    return pl.Trainer(
        accelerator=t.accelerator, devices=t.devices, num_nodes=t.num_nodes, strategy=t.strategy,
        precision=t.precision, max_epochs=t.max_epochs, limit_train_batches=t.limit_train_batches,
        gradient_clip_val=t.gradient_clip_val, logger=logger, callbacks=callbacks,
        enable_checkpointing=run_root is not None, enable_progress_bar=interactive(),
        enable_model_summary=False, log_every_n_steps=10, deterministic=False, num_sanity_val_steps=0,
    )


def epoch_curves(run_root: Path) -> Any:
    """Lightning's CSV logs (every training session of the run) collapsed to one row per epoch (the
    mean of what was logged in it)."""
    import pandas as pd

    logs = [pd.read_csv(folder / "metrics.csv") for folder in log_versions(run_root) if (folder / "metrics.csv").exists()]
    if not logs:
        return pd.DataFrame()
    log = pd.concat(logs, ignore_index=True)
    if "epoch" not in log:
        return pd.DataFrame()
    columns = [c for c in log.columns if c not in ("step",)]
    curves = log[columns].groupby("epoch", as_index=False).mean(numeric_only=True)
    epoch_columns = [c for c in curves.columns if c == "epoch" or c.endswith("_epoch") or c.startswith("val_")]
    return curves[epoch_columns] if len(epoch_columns) > 1 else curves


def evaluate_task(task: Any, data: Any) -> dict[str, float]:
    """Test metrics: accuracy or RMSE for supervised tasks; the validation losses on the test digits
    for generative ones."""
    if hasattr(task, "predict") and data.target_kind != "none":
        predicted = task.predict(data.test_images)
        if data.target_kind == "classification":
            return {"test_accuracy": float(np.mean(predicted == data.test_targets))}
        error = np.asarray(predicted, dtype=np.float64) - data.test_targets
        return {"test_rmse": float(np.sqrt(np.mean(error**2)))}
    import lightning.pytorch as pl

    from repscope.train.datamodule import array_loader

    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=False)
    results = trainer.validate(task, dataloaders=array_loader(data.test_images), verbose=False)
    return {f"test_{k.removeprefix('val_')}": float(v) for k, v in (results[0] if results else {}).items()}


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in ("repscope_version", "config_source")}
    out["trainer"] = {k: v for k, v in dict(out.get("trainer", {})).items() if k != "max_epochs"}
    return out


def train(config: TrainConfig, out: Path | str | None = None, resume: bool = False,
          root: Path | str = Path("runs"), source: str = "config", kind: str = "train") -> TrainOutcome:
    """Train ``config`` and write its run directory (see the module docstring)."""
    import lightning.pytorch as pl

    from repscope import __version__
    from repscope.runs import RunDirectory
    from repscope.train.datamodule import ArrayDataModule

    config.check_params(source)
    quiet_lightning()
    run = RunDirectory.create(kind, out=out, root=root, resume=resume)
    as_dict = {**config.model_dump(mode="json"), "repscope_version": __version__}
    last = run.root / "checkpoints" / LAST_CHECKPOINT
    if resume:
        if not run.config_path.exists() or not last.exists():
            raise InvalidArgumentError(f"--resume: {run.root} holds no config.yaml and checkpoints/{LAST_CHECKPOINT} to continue")
        stored = yaml.safe_load(run.config_path.read_text())
        if _comparable(stored) != _comparable(as_dict):
            raise InvalidArgumentError(
                f"--resume: the config differs from the one {run.root} was trained with "
                "(only trainer.max_epochs may change when resuming)"
            )
        read_checkpoint(last)  # fail early, with a clear message, on a corrupt file
    run.write_config(as_dict)

    pl.seed_everything(config.seed, workers=True, verbose=False)
    data = load_data(config)
    task = build_task(config, data)
    module = ArrayDataModule(data.train_images, data.train_targets, config.batch_size, config.val_fraction,
                             config.seed, config.num_workers)
    trainer = make_trainer(config, run.root)
    started = time.perf_counter()
    trainer.fit(task, datamodule=module, ckpt_path=str(last) if resume else None, weights_only=True)
    seconds = time.perf_counter() - started
    trainer.save_checkpoint(run.root / "checkpoints" / FINAL_CHECKPOINT)

    curves = epoch_curves(run.root)
    if len(curves):
        run.write_table("training_curves", curves)
    final = {k: float(v) for k, v in trainer.callback_metrics.items() if np.ndim(v.detach().cpu().numpy()) == 0}
    epochs_run = int(trainer.current_epoch)
    metrics = {
        "model": config.model.name,
        "data": config.data.name,
        "target": data.target,
        "train_digits": int(len(module.train_set)),
        "val_digits": int(len(module.val_set) if module.val_set is not None else 0),
        "test_digits": int(len(data.test_images)),
        "epochs": epochs_run,
        "fit_seconds": round(seconds, 2),
        "final": final,
        **evaluate_task(task, data),
    }
    run.write_metrics(metrics)
    return TrainOutcome(run, task, data, metrics)


# --------------------------------------------------------------------------------------------
# checkpoints


def read_checkpoint(path: Path | str) -> dict[str, Any]:
    """A checkpoint file read with ``weights_only=True``; corrupt files are a clear error."""
    import pickle

    import torch

    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"checkpoint {path}: no such file")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(f"checkpoint {path}: not a readable checkpoint ({first[:160]})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise DataFormatError(f"checkpoint {path}: holds no state_dict; not a repscope/Lightning checkpoint")
    return checkpoint


def load_task(path: Path | str, model: str | None = None) -> Any:
    """The trained LightningModule of a run directory (its ``final.ckpt``, else ``last.ckpt``) or of a
    checkpoint file; ``model`` (a registered name) is read from the run's config.yaml when omitted."""
    from repscope.models.registry import task_class

    path = Path(path)
    if path.is_dir():
        config_file = path / "config.yaml"
        if model is None and config_file.exists():
            model = yaml.safe_load(config_file.read_text())["model"]["name"]
        for name in (FINAL_CHECKPOINT, LAST_CHECKPOINT):
            if (path / "checkpoints" / name).exists():
                path = path / "checkpoints" / name
                break
        else:
            raise InvalidArgumentError(f"run {path}: no checkpoints/{FINAL_CHECKPOINT} or {LAST_CHECKPOINT}")
    if model is None:
        raise InvalidArgumentError(f"checkpoint {path}: say which model it holds (a registered name)")
    from repscope.models.registry import model_entry

    checkpoint = read_checkpoint(path)
    cls = task_class(model)
    hyper_parameters = dict(checkpoint.get("hyper_parameters", {}))
    for key, value in model_entry(model).fixed.items():
        if hyper_parameters.get(key, value) != value:
            raise DataFormatError(
                f"checkpoint {path}: does not match model {model!r} (it holds {key}={hyper_parameters[key]!r})"
            )
    try:
        task = cls(**hyper_parameters)
    except TypeError as exc:
        raise DataFormatError(f"checkpoint {path}: its hyper-parameters do not fit model {model!r} ({exc})") from None
    try:
        task.load_state_dict(checkpoint["state_dict"], strict=True)
    except RuntimeError as exc:
        detail = str(exc).splitlines()[0]
        raise DataFormatError(f"checkpoint {path}: does not match model {model!r} ({detail[:200]})") from None
    task.eval()
    return task
