"""The semi-supervised VAEs' labelled stream (``supervision="stream"``, the default), following Locatello et
al.'s code (google-research/disentanglement_lib, ``methods/semi_supervised/``): a full labelled batch zipped
into every step, recycling the labelled subset (``train_semi_supervised_lib.py``,
``semi_supervised_dataset_from_ground_truth_data``), the xent term summed over that batch with labels
scaled ``c / K`` (``semi_supervised_vae.py``, ``supervised_regularizer_xent`` and ``normalize_labels``).
The expected values are computed here from those rules, not with the code under test."""

from __future__ import annotations

import logging
import math
import warnings

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from host_reads import no_host_reads  # tests/host_reads.py (tests/ is on the path of its conftest)
from repscope.data.multimodal.datasets import dsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.train.datamodule import SplitView
from repscope.train.tasks.semi_supervised import (
    LabelledStream,
    SemiSupervisedFactorVAETask,
    SemiSupervisedVAETask,
    labelled_mask,
    labelled_rows,
)

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

# three factor columns: a constant one and two supervised ones of 3 and 5 classes (asymmetric sizes)
SIZES = {"supervised_factors": [1, 2], "factor_sizes": [1, 3, 5]}


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def xent_by_hand(mean: list[list[float]], classes: list[list[int]], sizes: list[int], rho: int = 1) -> float:
    """The reference's term: sum over examples, factors and the factor's dims of
    sigmoid_cross_entropy_with_logits(mu, c / K) = softplus(mu) - (c / K) mu."""
    total = 0.0
    for mu_row, class_row in zip(mean, classes):
        for k, (c, size) in enumerate(zip(class_row, sizes)):
            for j in range(k * rho, (k + 1) * rho):
                total += softplus(mu_row[j]) - c / size * mu_row[j]
    return total


# ---------------------------------------------------------------------------------------------
# the supervised term


def test_the_stream_term_is_the_sum_over_the_labelled_batch_with_labels_over_k():
    task = SemiSupervisedVAETask(latent_dim=3, **SIZES)
    mean = [[0.0, 2.0, 5.0], [-1.0, 0.5, 0.0], [1.5, -2.0, 3.0]]  # dim 2 is unassigned
    factors = [[0, 2, 1], [0, 0, 4], [0, 1, 3]]  # column 0 (one class) is not supervised
    # example 0: softplus(0) - (2/3) 0 + softplus(2) - (1/5) 2 = 0.693147 + 1.726928
    # example 1: softplus(-1) - 0 + softplus(0.5) - (4/5) 0.5   = 0.313262 + 0.574077
    # example 2: softplus(1.5) - (1/3) 1.5 + softplus(-2) + (3/5) 2 = 1.201413 + 1.326928
    expected = xent_by_hand([row[:2] for row in mean], [row[1:] for row in factors], [3, 5])
    assert expected == pytest.approx(0.693147 + 1.726928 + 0.313262 + 0.574077 + 1.201413 + 1.326928, abs=1e-5)
    terms = task.stream_supervised_loss(torch.tensor(mean), torch.tensor(factors))
    assert float(terms["supervised"]) == pytest.approx(expected, abs=1e-5)
    assert float(terms["labelled"]) == 3
    # c / (K - 1), the batch-share convention, gives another value: the normalisation is tested
    other = xent_by_hand([row[:2] for row in mean], [row[1:] for row in factors], [2, 4])
    assert abs(other - expected) > 0.1
    # rho = 2: factor 1 owns dims 0, 1 and factor 2 dims 2, 3
    wide = SemiSupervisedVAETask(latent_dim=5, dims_per_factor=2, **SIZES)
    wide_mean = [[0.5, -1.0, 2.0, 0.25, 9.0], [-0.5, 1.0, -3.0, 1.5, 9.0]]
    wide_factors = [[0, 1, 4], [0, 2, 0]]
    expected = xent_by_hand(wide_mean, [row[1:] for row in wide_factors], [3, 5], rho=2)
    terms = wide.stream_supervised_loss(torch.tensor(wide_mean), torch.tensor(wide_factors))
    assert float(terms["supervised"]) == pytest.approx(expected, abs=1e-5)


def test_the_loss_adds_the_weight_times_the_term_of_the_encoded_labelled_batch():
    torch.manual_seed(0)
    task = SemiSupervisedVAETask(latent_dim=3, image_shape=(1, 28, 28), supervision_weight=2.5, **SIZES)
    task.eval()
    generator = torch.Generator().manual_seed(3)
    images = torch.rand(4, 1, 28, 28, generator=generator)
    labelled_images = torch.rand(6, 1, 28, 28, generator=generator)  # another size than the batch
    labelled_factors = torch.tensor([[0, 0, 4], [0, 2, 1], [0, 1, 0], [0, 2, 3], [0, 0, 2], [0, 1, 4]])
    with torch.no_grad():
        torch.manual_seed(1)
        plain = task.losses(images)
        torch.manual_seed(1)
        semi = task.losses(images, labelled=(labelled_images, labelled_factors))
        codes = task.encoder(labelled_images)[0][:, :2].tolist()
    expected = xent_by_hand(codes, labelled_factors[:, 1:].tolist(), [3, 5])
    assert float(semi["supervised"]) == pytest.approx(expected, rel=1e-5)
    assert float(semi["labelled"]) == 6
    assert float(semi["loss"] - plain["loss"]) == pytest.approx(2.5 * expected, rel=1e-4)
    assert float(semi["reconstruction"]) == pytest.approx(float(plain["reconstruction"]), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# the stream


def expected_order(n: int, seed: int) -> list[int]:
    """The documented order: a permutation drawn once by a CPU torch.Generator seeded with ``seed``."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


def test_the_stream_recycles_the_subset_in_its_seeded_order():
    images = torch.arange(5, dtype=torch.uint8).repeat_interleave(4).reshape(5, 1, 2, 2) * 50
    factors = torch.tensor([[0, 0, 1], [0, 1, 2], [0, 2, 3], [0, 0, 4], [0, 1, 0]])
    stream = LabelledStream(images, factors, seed=11)
    order = expected_order(5, 11)
    assert sorted(order) == [0, 1, 2, 3, 4] and order != [0, 1, 2, 3, 4]
    drawn = [stream.next_rows(3).tolist() for _ in range(5)]
    # the reference's repeat-then-batch: step s takes positions 3s .. 3s + 2 of the repeated subset
    assert drawn == [[order[(3 * s + i) % 5] for i in range(3)] for s in range(5)]
    flat = sum(drawn, [])
    assert [flat.count(row) for row in range(5)] == [3] * 5  # each example once per pass
    # a batch larger than the subset repeats it within the batch
    small = LabelledStream(images[:2], factors[:2], seed=0)
    order = expected_order(2, 0)
    assert small.next_rows(5).tolist() == [order[i % 2] for i in range(5)]
    assert small.next_rows(5).tolist() == [order[(5 + i) % 2] for i in range(5)]
    # the batch's values: uint8 images become float in [0, 1], factors as held
    stream = LabelledStream(images, factors, seed=11)
    batch_images, batch_factors = stream.next(3)
    rows = expected_order(5, 11)[:3]
    assert batch_images.dtype == torch.float32
    assert torch.equal(batch_images, images[rows].float() / 255) and torch.equal(batch_factors, factors[rows])


def test_the_same_seed_gives_the_same_draws_and_the_default_is_the_runs_seed():
    images, factors = torch.zeros(9, 1, 2, 2), torch.zeros(9, 3, dtype=torch.long)

    def draws(task):
        stream = task.attach_labelled(images, factors)
        return [stream.next_rows(4).tolist() for _ in range(3)]

    first = draws(SemiSupervisedVAETask(latent_dim=2, stream_seed=3, **SIZES))
    assert first == draws(SemiSupervisedVAETask(latent_dim=2, stream_seed=3, **SIZES))
    assert first != draws(SemiSupervisedVAETask(latent_dim=2, stream_seed=4, **SIZES))
    order = expected_order(9, 3)
    assert first[0] == order[:4] and first[2] == [order[8], *order[:3]]
    torch.manual_seed(3)  # what pl.seed_everything(3) does to torch: the run's seed
    assert draws(SemiSupervisedVAETask(latent_dim=2, **SIZES)) == first


class Grid(Dataset):
    """The 64 cells (x, y) of an 8x8 grid in row-major order: image 28x28 with a square at the cell,
    factors (0, x, y), index = row, so a labelled batch's factors name its rows."""

    def __init__(self) -> None:
        cells = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 2)
        self.images = torch.zeros(64, 1, 28, 28)
        for n, (x, y) in enumerate(cells):
            self.images[n, 0, 2 + 2 * y : 8 + 2 * y, 2 + 2 * x : 8 + 2 * x] = 1.0
        self.factors = torch.as_tensor(np.concatenate([np.zeros((64, 1)), cells], 1), dtype=torch.long)

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"image": self.images[i], "factors": self.factors[i], "index": torch.tensor(i)}


def test_every_training_step_gets_a_full_labelled_batch_even_when_its_own_batch_has_none():
    data = Grid()
    fraction, seed = 0.25, 7
    labelled = np.flatnonzero(labelled_mask(np.arange(64), fraction))  # the subset, in data order
    assert len(labelled) == 12
    batches = np.arange(32).reshape(4, 8)
    assert any(not labelled_mask(rows, fraction).any() for rows in batches)  # a step with no labelled example
    torch.manual_seed(0)
    task = SemiSupervisedVAETask(
        latent_dim=3, labelled_fraction=fraction, stream_seed=seed, supervised_factors=[1, 2], factor_sizes=[1, 8, 8]
    )
    seen, term = [], task.stream_supervised_loss

    def recording(mean, factors):
        seen.append((factors[:, 1] * 8 + factors[:, 2]).tolist())  # the rows, from their (x, y)
        return term(mean, factors)

    task.stream_supervised_loss = recording
    run = pl.Trainer(
        max_steps=4,
        limit_val_batches=0,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(task, DataLoader(data, batch_size=8, shuffle=False))
    order = expected_order(12, seed)
    # 4 steps x 8 draws from the 12 labelled rows: wraps around after 12 and 24 draws
    assert seen == [[int(labelled[order[(8 * s + i) % 12]]) for i in range(8)] for s in range(4)]
    assert task.labelled_stream("train").position == 32 % 12


def test_the_stream_reads_a_data_module_split_as_its_rows_say():
    data = dsprites_dataset(train_size=96, test_size=8, seed=1)
    view = SplitView(data, "train", ("image", "factors", "index"), rows=np.arange(10, 90))
    images, factors = labelled_rows(view, 0.2, 0)
    index = data.batch("train", np.arange(10, 90), ("index",))["index"]
    chosen = np.arange(10, 90)[labelled_mask(index, 0.2)]
    expected = data.batch("train", chosen, ("image", "factors"))
    assert 5 < len(chosen) < 30
    assert images.dtype == torch.uint8 and np.array_equal(images.numpy(), expected["image"])
    assert np.array_equal(factors.numpy(), expected["factors"])
    # the same rows read item by item from a map-style dataset
    items = [view[i] for i in range(len(view))]
    item_images, item_factors = labelled_rows(items, 0.2, 0)
    assert torch.equal(item_images, images.float() / 255) and torch.equal(item_factors, factors)


def test_a_resumed_run_continues_the_stream_and_validation_restarts_it():
    task = SemiSupervisedVAETask(latent_dim=2, stream_seed=5, **SIZES)
    images, factors = torch.zeros(7, 1, 2, 2), torch.zeros(7, 3, dtype=torch.long)
    stream = task.attach_labelled(images, factors)
    stream.next_rows(4)
    checkpoint: dict = {}
    task.on_save_checkpoint(checkpoint)
    assert checkpoint["labelled_stream"] == {"seed": 5, "position": 4}
    resumed = SemiSupervisedVAETask(latent_dim=2, stream_seed=5, **SIZES)
    resumed.on_load_checkpoint(checkpoint)
    again = resumed.attach_labelled(images, factors)
    assert again.next_rows(3).tolist() == stream.next_rows(3).tolist()
    val = task.attach_labelled(images, factors, stage="val")
    first = val.next_rows(5).tolist()
    task.on_validation_epoch_start()
    assert val.next_rows(5).tolist() == first


def test_stream_errors_name_what_is_wrong():
    task = SemiSupervisedVAETask(latent_dim=2, labelled_fraction=0.0, **SIZES)
    with pytest.raises(InvalidArgumentError, match="cannot reach"):
        task.labelled_stream("train")
    empty = DataLoader(Grid(), batch_size=8)
    run = pl.Trainer(max_steps=1, limit_val_batches=0, accelerator="cpu", logger=False, enable_progress_bar=False)
    with pytest.raises(InvalidArgumentError, match="labelled_fraction: none of the 64"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run.fit(task, empty)
    with pytest.raises(InvalidArgumentError, match="stage"):
        task.attach_labelled(torch.zeros(1, 1, 2, 2), torch.zeros(1, 3, dtype=torch.long), stage="test")
    with pytest.raises(InvalidArgumentError, match="labelled_fraction"):
        LabelledStream(torch.zeros(0, 1, 2, 2), torch.zeros(0, 3, dtype=torch.long), seed=0)


# ---------------------------------------------------------------------------------------------
# no host synchronisation in a step


@pytest.mark.parametrize("cls", [SemiSupervisedVAETask, SemiSupervisedFactorVAETask])
def test_a_stream_step_on_the_meta_device_reads_and_copies_nothing(cls):
    torch.manual_seed(0)
    params = {"discriminator_width": 8, "discriminator_layers": 1} if cls is SemiSupervisedFactorVAETask else {}
    task = cls(latent_dim=3, image_shape=(1, 28, 28), stream_seed=2, **SIZES, **params)
    images = (torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0)) * 255).to(torch.uint8)
    stream = task.attach_labelled(images, torch.tensor([[0, k % 3, k % 5] for k in range(10)]))
    task.to("meta")  # no values: any read fails, and a copy from the host shows in the record
    task.labelled_stream("train")  # follows the task to its device (once, before the steps)
    batch = torch.rand(6, 1, 28, 28).to("meta")
    with no_host_reads() as reads:
        labelled = task.labelled_stream("train").next(6)
        losses = task.losses(batch, labelled=labelled)
        losses["loss"].backward()
    assert stream.device.type == "meta" and reads.calls == []
    assert losses["supervised"].device.type == "meta" and stream.position == 6
