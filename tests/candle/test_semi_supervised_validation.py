"""What a semi-supervised VAE's validation steps see (``supervision="stream"``): the held-out rows of the
data module as their batches, and, as their labelled batches, the labelled examples of those held-out
rows only (chosen by ``labelled_fraction`` and ``label_seed`` from each example's dataset index), in the
order seeded by ``stream_seed``, from the start of that order every validation epoch, as many as a
training batch. The labelled examples are recomputed here from the documented hash, not with the code
under test."""

from __future__ import annotations

import logging
import warnings

import lightning.pytorch as pl
import numpy as np
import pytest
import torch

from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.train.datamodule import DatasetModule
from repscope.train.tasks.semi_supervised import SemiSupervisedVAETask

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)

ROWS, BATCH = 64, 8
# non-default settings, so that a setting dropped on the way shows
FRACTION, LABEL_SEED, STREAM_SEED, HOLD_OUT_SEED = 0.5, 3, 5, 2
MASK64 = (1 << 64) - 1


def dataset_index(row: int) -> int:
    """The ``index`` field of a row: not the row number, so that reading one for the other shows."""
    return 500 + 7 * row


def uniform_of(index: int, seed: int) -> float:
    """The documented hash, in Python integers: splitmix64 of ``index + seed * 2^32``, top 53 bits / 2^53."""
    x = (index + (seed << 32) + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    x ^= x >> 31
    return (x >> 11) / 2**53


def labelled_by_hand(rows, fraction: float = FRACTION, seed: int = LABEL_SEED) -> list[int]:
    return [int(row) for row in rows if uniform_of(dataset_index(int(row)), seed) < fraction]


def grid_rows() -> Dataset:
    """64 rows whose factors ``(0, row // 8, row % 8)`` name the row, with random 28x28 images."""
    rows = np.arange(ROWS)
    arrays = {
        "image": np.random.default_rng(0).integers(0, 256, size=(ROWS, 28, 28), dtype=np.uint8),
        "factors": np.stack([np.zeros(ROWS, np.int64), rows // 8, rows % 8], 1),
        "index": dataset_index(rows).astype(np.int64),
    }
    fields = {
        "image": FieldSpec("image", (1, 28, 28), "uint8"),
        "factors": FieldSpec("categorical", (3,), "int64"),
        "index": FieldSpec("index", (), "int64"),
    }
    return Dataset("grid", {"train": ArraySplit(arrays, image_shapes={"image": (1, 28, 28)})}, fields)


def row_of(factors: torch.Tensor) -> list[int]:
    return (factors[:, 1] * 8 + factors[:, 2]).tolist()


@pytest.fixture(scope="module")
def trained():
    """Two epochs of one training step, each epoch validated: what every step saw, by stage."""
    data = grid_rows()
    torch.manual_seed(0)
    task = SemiSupervisedVAETask(
        latent_dim=3,
        labelled_fraction=FRACTION,
        label_seed=LABEL_SEED,
        stream_seed=STREAM_SEED,
        supervised_factors=[1, 2],
        factor_sizes=[1, 8, 8],
    )
    module = DatasetModule(data, task.batch_fields, batch_size=BATCH, val_fraction=0.25, seed=HOLD_OUT_SEED)
    seen: dict[str, list] = {"train_labelled": [], "val_labelled": [], "train_batch": [], "val_batch": []}
    term, train_step, val_step = task.stream_supervised_loss, task.training_step, task.validation_step

    def recording_term(mean, factors):
        seen["train_labelled" if task.training else "val_labelled"].append(row_of(factors))
        return term(mean, factors)

    def recording_train_step(batch, batch_idx):
        seen["train_batch"].append(row_of(batch["factors"]))
        return train_step(batch, batch_idx)

    def recording_val_step(batch, batch_idx):
        seen["val_batch"].append(row_of(batch["factors"]))
        return val_step(batch, batch_idx)

    task.stream_supervised_loss = recording_term
    task.training_step, task.validation_step = recording_train_step, recording_val_step
    run = pl.Trainer(
        max_epochs=2,
        limit_train_batches=1,
        num_sanity_val_steps=0,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(task, datamodule=module)
    return seen, module


def test_validation_batches_are_the_held_out_rows(trained):
    seen, module = trained
    held_out = [int(row) for row in module.val_set.rows]
    assert len(held_out) == 16 and not set(held_out) & set(module.train_set.rows.tolist())
    # one batch of all 16 held-out rows, in the data's order, each validation epoch
    assert seen["val_batch"] == [held_out, held_out]
    assert all(set(batch) <= set(module.train_set.rows.tolist()) for batch in seen["train_batch"])


def test_validation_draws_the_labelled_held_out_rows_in_the_seeded_order_from_its_start(trained):
    seen, module = trained
    labelled = labelled_by_hand(int(row) for row in module.val_set.rows)
    n = len(labelled)
    # the fixture is where the rules show: a batch that is no multiple of the subset (a stream not
    # restarted draws other rows), and other subsets for the default fraction and seed
    assert n > 0 and BATCH % n
    assert labelled != labelled_by_hand(module.val_set.rows, fraction=0.1)
    assert labelled != labelled_by_hand(module.val_set.rows, seed=0)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(STREAM_SEED)).tolist()
    expected = [labelled[order[i % n]] for i in range(BATCH)]  # a training batch's worth
    assert seen["val_labelled"] == [expected, expected]


def test_training_draws_only_labelled_training_rows(trained):
    seen, module = trained
    labelled = labelled_by_hand(int(row) for row in module.train_set.rows)
    n = len(labelled)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(STREAM_SEED)).tolist()
    # the second epoch's step continues through the seeded order where the first stopped (no restart)
    drawn = [labelled[order[(BATCH * step + i) % n]] for step in range(2) for i in range(BATCH)]
    assert sum(seen["train_labelled"], []) == drawn
