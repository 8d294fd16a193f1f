"""Training values logged once an epoch (``log_training``) give what Lightning's per-step ``self.log``
gave: the same epoch means, bit for bit, and the same rows in the CSV log."""

from __future__ import annotations

import lightning.pytorch as pl
import pandas as pd
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger

from repscope.data.registry import load_dataset
from repscope.train.datamodule import DatasetModule, loader
from repscope.train.tasks import GANTask, VAETask


class LightningLoggedVAE(VAETask):
    """The reference: every training value through Lightning's own ``self.log`` at every step."""

    def log_training(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)


class LightningLoggedGAN(GANTask):
    def log_training(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)


class EpochEnd(pl.Callback):
    """What a callback sees at the end of each epoch."""

    def __init__(self) -> None:
        self.seen: list[dict[str, float]] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.seen.append({k: float(v) for k, v in trainer.callback_metrics.items() if not k.endswith("_step")})


def train(task_class, dataset, folder) -> tuple[dict, pd.DataFrame, list]:
    pl.seed_everything(3, verbose=False)
    task = task_class(latent_dim=3) if issubclass(task_class, VAETask) else task_class(latent_dim=4)
    module = DatasetModule(dataset, task.batch_fields, batch_size=8, val_fraction=0.2, seed=1)
    # 52 training rows in batches of 8, the last one kept: 6 steps of 8 and one of 4 an epoch, so the
    # epoch mean's weights differ
    train = loader(module.train_set, 8, shuffle=True, seed=1, drop_last=False)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=2,
        logger=CSVLogger(folder, name="", version=""),
        log_every_n_steps=4,  # not a divisor of the 7 steps an epoch: writes fall mid-epoch
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[seen := EpochEnd()],
    )
    trainer.fit(task, train_dataloaders=train, val_dataloaders=module.val_dataloader())
    metrics = {k: v.detach().clone() for k, v in trainer.callback_metrics.items()}
    return metrics, pd.read_csv(folder / "metrics.csv"), seen.seen


@pytest.mark.slow  # 4 trainings beside Lightning's; run by make test-all and by tools/mutation_check.py
def test_epoch_means_and_logged_rows_are_lightnings(tmp_path):
    dataset = load_dataset("digits", train_size=65, test_size=8, target="none")
    for ours_class, reference_class in ((VAETask, LightningLoggedVAE), (GANTask, LightningLoggedGAN)):
        ours, ours_log, ours_seen = train(ours_class, dataset, tmp_path / f"ours-{ours_class.__name__}")
        reference, reference_log, reference_seen = train(
            reference_class, dataset, tmp_path / f"ref-{ours_class.__name__}"
        )
        # a callback sees the epoch's values at its end, as with Lightning's own logging
        assert ours_seen == reference_seen and "train_loss_epoch" in ours_seen[0]
        epoch_keys = sorted(k for k in reference if k.endswith("_epoch"))
        assert epoch_keys and [k for k in epoch_keys if k.startswith("train_")] == epoch_keys
        for key in epoch_keys + [k.removesuffix("_epoch") for k in epoch_keys]:
            assert torch.equal(ours[key], reference[key]), key  # the same float, not close
        # the CSV log: the same columns and rows (steps written every 4 steps, epochs, validation)
        assert sorted(ours_log.columns) == sorted(reference_log.columns)
        columns = sorted(reference_log.columns)
        pd.testing.assert_frame_equal(ours_log[columns], reference_log[columns])
        # <name>_step: the value of the last step, as Lightning's
        step_keys = sorted(k for k in reference if k.endswith("_step"))
        assert step_keys and sorted(k for k in ours if k.endswith("_step")) == step_keys
        for key in step_keys:
            assert torch.equal(ours[key], reference[key]), key
