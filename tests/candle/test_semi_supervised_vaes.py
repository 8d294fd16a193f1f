"""Semi-supervised VAEs (Locatello et al., 2020): the "xent" supervised loss by hand, which examples are
labelled, that only they contribute, every variant's loss and logs, and a short training on tiny images
that ties the assigned latent dimensions to their factors."""

from __future__ import annotations

import logging
import math
import warnings

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from repscope.data.dsprites import FACTOR_SIZES
from repscope.data.multimodal.datasets import dsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.train.datamodule import SplitView
from repscope.train.tasks.semi_supervised import (
    DSPRITES_FACTOR_SIZES,
    SemiSupervisedBetaTCVAETask,
    SemiSupervisedDIPVAETask,
    SemiSupervisedFactorVAETask,
    SemiSupervisedVAETask,
    labelled_mask,
    labelled_rows,
    supervised_xent,
)

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SMALL = {"latent_dim": 4, "supervised_factors": [1, 2], "factor_sizes": [1, 8, 8]}
VARIANTS = {
    "beta-vae-semi": (SemiSupervisedVAETask, {}),
    "beta-tcvae-semi": (SemiSupervisedBetaTCVAETask, {"dataset_size": 64}),
    "dip-vae-i-semi": (SemiSupervisedDIPVAETask, {"dip_type": "i"}),
    "dip-vae-ii-semi": (SemiSupervisedDIPVAETask, {"dip_type": "ii"}),
    "factor-vae-semi": (SemiSupervisedFactorVAETask, {"discriminator_width": 16, "discriminator_layers": 2}),
}


def squares(positions: np.ndarray) -> torch.Tensor:
    """28x28 grey images of a 6x6 white square at ``(2 + 2 x, 2 + 2 y)`` for rows ``(x, y)`` of 0..7."""
    images = torch.zeros(len(positions), 1, 28, 28)
    for n, (x, y) in enumerate(positions):
        images[n, 0, 2 + 2 * y : 8 + 2 * y, 2 + 2 * x : 8 + 2 * x] = 1.0
    return images


class Squares(Dataset):
    """Every (x, y) of an 8x8 grid ``repeats`` times; factors ``(colour = 0, x, y)``, index = row."""

    def __init__(self, repeats: int) -> None:
        grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 2)
        positions = np.tile(grid, (repeats, 1))
        self.images = squares(positions)
        self.factors = torch.as_tensor(np.concatenate([np.zeros((len(positions), 1)), positions], 1), dtype=torch.long)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"image": self.images[i], "factors": self.factors[i], "index": torch.tensor(i)}


def batch_of(n: int, seed: int = 0) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    positions = rng.integers(0, 8, (n, 2))
    factors = torch.as_tensor(np.concatenate([np.zeros((n, 1)), positions], 1), dtype=torch.long)
    return {"image": squares(positions), "factors": factors, "index": torch.arange(n)}


def trainer(**kwargs) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------
# the supervised loss by hand


def test_xent_loss_of_two_examples_by_hand():
    # BCE(t, sigmoid(m)) = softplus(m) - t m; factor sizes (3, 5): class c -> c / (size - 1)
    mean = torch.tensor([[0.0, 2.0, 5.0], [-1.0, 0.5, 0.0]])  # dim 2 is unassigned
    targets = torch.tensor([[2 / 2, 1 / 4], [0 / 2, 4 / 4]])
    # example 0: softplus(0) - 0 = log 2 = 0.693147; softplus(2) - 0.25 * 2 = 2.126928 - 0.5 = 1.626928
    # example 1: softplus(-1) = 0.313262;            softplus(0.5) - 0.5 = 0.974077 - 0.5 = 0.474077
    expected = [math.log(2) + math.log1p(math.e**2) - 0.5, math.log1p(math.e**-1) + math.log1p(math.e**0.5) - 0.5]
    assert expected == pytest.approx([2.320075, 0.787339], abs=1e-6)
    assert supervised_xent(mean, targets).tolist() == pytest.approx(expected, abs=1e-5)
    # rho = 2: factor 0 owns dims 0, 1; factor 1 dims 2, 3
    wide = torch.tensor([[0.0, 0.0, 2.0, 2.0]])
    assert float(supervised_xent(wide, targets[:1], dims_per_factor=2)) == pytest.approx(
        2 * math.log(2) + 2 * (math.log1p(math.e**2) - 0.5), abs=1e-5
    )


def test_batch_share_supervised_loss_averages_over_the_labelled_examples():
    task = SemiSupervisedVAETask(
        latent_dim=3, supervised_factors=[1, 2], factor_sizes=[1, 3, 5], labelled_fraction=1, supervision="batch_share"
    )
    mean = torch.tensor([[0.0, 2.0, 5.0], [-1.0, 0.5, 0.0]])
    factors = torch.tensor([[0, 2, 1], [0, 0, 4]])  # column 0 (one class) is not supervised
    terms = task.supervised_loss(mean, factors, torch.tensor([10, 11]))
    assert float(terms["supervised"]) == pytest.approx((2.320075 + 0.787339) / 2, abs=1e-5)
    assert float(terms["labelled"]) == 2
    nobody = SemiSupervisedVAETask(latent_dim=3, supervised_factors=[1, 2], factor_sizes=[1, 3, 5], labelled_fraction=0)
    terms = nobody.supervised_loss(mean.requires_grad_(), factors, torch.tensor([10, 11]))
    assert float(terms["supervised"]) == 0 and float(terms["labelled"]) == 0
    terms["supervised"].backward()  # still part of the graph


@pytest.mark.parametrize("supervision", ["stream", "batch_share"])
def test_loss_is_the_models_loss_plus_the_weighted_term_for_every_variant(supervision):
    batch = batch_of(16)
    stream_batch = batch_of(12, seed=1)  # a labelled batch of another size than the unlabelled one
    for name, (cls, params) in VARIANTS.items():
        task = cls(**SMALL, **params, labelled_fraction=0.5, supervision_weight=3.0, supervision=supervision)
        task.train()
        torch.manual_seed(1)
        plain = task.losses(batch["image"])
        torch.manual_seed(1)
        if supervision == "batch_share":
            semi = task.losses(batch["image"], batch["factors"], batch["index"])
            expected_count = labelled_mask(np.arange(16), 0.5).sum()
        else:
            semi = task.losses(batch["image"], labelled=(stream_batch["image"], stream_batch["factors"]))
            expected_count = 12
        assert "supervised" not in plain, name
        assert float(semi["labelled"]) == expected_count, name
        assert float(semi["loss"] - plain["loss"]) == pytest.approx(3.0 * float(semi["supervised"]), rel=1e-4), name
        assert float(semi["reconstruction"]) == pytest.approx(float(plain["reconstruction"]), rel=1e-6), name


def test_only_labelled_examples_contribute_with_batch_share():
    task = SemiSupervisedVAETask(**SMALL, labelled_fraction=0.5, supervision="batch_share")
    task.eval()
    batch = batch_of(16)
    mask = labelled_mask(batch["index"].numpy(), 0.5)
    assert 0 < mask.sum() < 16
    unlabelled, labelled = int(np.flatnonzero(~mask)[0]), int(np.flatnonzero(mask)[0])

    def loss(factors: torch.Tensor) -> float:
        torch.manual_seed(0)
        with torch.no_grad():
            return float(task.losses(batch["image"], factors, batch["index"])["loss"])

    base = loss(batch["factors"])
    changed = batch["factors"].clone()
    changed[unlabelled, 1:] = 7 - changed[unlabelled, 1:]
    assert loss(changed) == base
    changed = batch["factors"].clone()
    changed[labelled, 1:] = 7 - changed[labelled, 1:]
    assert loss(changed) != pytest.approx(base, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# which examples are labelled


def test_the_labelled_set_is_about_the_fraction_stable_and_independent_of_factors():
    index = np.arange(200_000)
    mask = labelled_mask(index)
    assert 0.098 < mask.mean() < 0.102
    assert np.array_equal(mask, labelled_mask(index, 0.1, 0))  # the same in every call (epoch, run)
    assert np.array_equal(labelled_mask(torch.as_tensor(index[:1000])), mask[:1000])
    assert np.array_equal(labelled_mask(index[::-1]), mask[::-1])  # per index, not per position
    assert not np.any(labelled_mask(index, 0.05) & ~mask)  # a smaller fraction labels a subset
    other = labelled_mask(index, 0.1, seed=1)
    assert 0.098 < other.mean() < 0.102 and 0.005 < (mask & other).mean() < 0.015  # independent subsets
    # dSprites' index is row-major over the factors: every posY / shape class gets about 10%
    per_pos_y = [mask[y::32].mean() for y in range(32)]
    assert min(per_pos_y) > 0.085 and max(per_pos_y) < 0.115
    assert not labelled_mask(index, 0.0).any() and labelled_mask(index, 1.0).all()


def test_bad_arguments_are_refused():
    with pytest.raises(InvalidArgumentError, match="labelled_fraction"):
        labelled_mask([1, 2], 1.5)
    with pytest.raises(InvalidArgumentError, match="index"):
        labelled_mask([-1])
    with pytest.raises(InvalidArgumentError, match="latent_dim"):
        SemiSupervisedVAETask(latent_dim=4)  # dSprites: five varying factors
    with pytest.raises(InvalidArgumentError, match="one class"):
        SemiSupervisedVAETask(latent_dim=8, supervised_factors=[0, 1])
    with pytest.raises(InvalidArgumentError, match="supervised_factors"):
        SemiSupervisedVAETask(latent_dim=8, supervised_factors=[1, 9])
    with pytest.raises(InvalidArgumentError, match="supervision"):
        SemiSupervisedVAETask(**SMALL, supervision="mean")
    with pytest.raises(InvalidArgumentError, match="stream_seed"):
        SemiSupervisedVAETask(**SMALL, stream_seed=-1)
    task = SemiSupervisedVAETask(**SMALL, labelled_fraction=1)
    with pytest.raises(InvalidArgumentError, match="outside"):
        task.supervised_loss(torch.zeros(1, 4), torch.tensor([[0, 8, 0]]), torch.tensor([0]))
    with pytest.raises(InvalidArgumentError, match="outside"):
        task.stream_supervised_loss(torch.zeros(1, 4), torch.tensor([[0, 8, 0]]))
    with pytest.raises(InvalidArgumentError, match="outside"):
        task.attach_labelled(torch.zeros(1, 1, 28, 28), torch.tensor([[0, 3, -1]]))
    with pytest.raises(InvalidArgumentError, match="shape"):
        task.supervised_loss(torch.zeros(1, 4), torch.tensor([[0, 1]]), torch.tensor([0]))
    with pytest.raises(InvalidArgumentError, match="shape"):
        task.stream_supervised_loss(torch.zeros(1, 4), torch.tensor([[0, 1]]))
    # each supervision reads its own labels
    images = torch.zeros(2, 1, 28, 28)
    with pytest.raises(InvalidArgumentError, match="labelled=.*batch_share"):
        task.losses(images, torch.zeros(2, 3, dtype=torch.long), torch.arange(2))
    shared = SemiSupervisedVAETask(**SMALL, supervision="batch_share")
    with pytest.raises(InvalidArgumentError, match="labelled.*'stream'"):
        shared.losses(images, labelled=(images, torch.zeros(2, 3, dtype=torch.long)))


def test_dsprites_defaults_and_batch_fields():
    assert tuple(DSPRITES_FACTOR_SIZES) == tuple(FACTOR_SIZES)
    task = SemiSupervisedDIPVAETask(latent_dim=6, image_shape=(1, 64, 64), dip_type="ii")
    assert task.hparams.supervised_factors == [1, 2, 3, 4, 5]  # colour is constant
    assert task.hparams.labelled_fraction == 0.1 and task.hparams.supervision_weight == 4.0
    assert task.hparams.supervision == "stream" and task.hparams.stream_seed is None
    data = dsprites_dataset(train_size=64, test_size=8)
    batch = SplitView(data, "train", task.batch_fields).__getitems__(list(range(32)))
    losses = task.losses(batch["image"], labelled=(batch["image"][:8], batch["factors"][:8]))
    assert float(losses["labelled"]) == 8
    assert torch.isfinite(losses["loss"])
    shared = SemiSupervisedDIPVAETask(latent_dim=6, image_shape=(1, 64, 64), dip_type="ii", supervision="batch_share")
    losses = shared.losses(batch["image"], batch["factors"], batch["index"])
    assert float(losses["labelled"]) == labelled_mask(batch["index"]).sum()
    assert torch.isfinite(losses["loss"])


# ---------------------------------------------------------------------------------------------
# training


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_variant_trains_and_logs_the_supervised_term(name):
    cls, params = VARIANTS[name]
    torch.manual_seed(0)
    task = cls(**SMALL, **params, labelled_fraction=0.5)
    data = DataLoader(Squares(1), batch_size=16, shuffle=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=1, num_sanity_val_steps=0)
        run.fit(task, data, data)
    metrics = run.callback_metrics
    for key in ("train_supervised", "train_labelled", "train_loss", "val_supervised", "val_labelled"):
        assert key in metrics and torch.isfinite(metrics[key]), (name, key)
    # the stream: a full labelled batch of 16 in training and validation steps alike
    assert float(metrics["train_labelled"]) == 16 and float(metrics["val_labelled"]) == 16, name
    if name == "factor-vae-semi":
        assert "train_loss_d" in metrics


def assigned_correlation(task: SemiSupervisedVAETask) -> float:
    """Mean |Pearson r| between mu_k and factor k (x for dim 0, y for dim 1) over the 8x8 grid."""
    grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 2)
    codes = task.encode(squares(grid).numpy()[:, 0])
    return float(np.mean([abs(np.corrcoef(codes[:, k], grid[:, k])[0, 1]) for k in range(2)]))


@pytest.mark.slow  # a learning claim; the round-trip tests train the same tasks briefly
def test_supervision_ties_the_assigned_dimensions_to_their_factors():
    # 40 Adam steps of batches of 64 from 640 examples (68 labelled), without supervision, with the batch's
    # labelled share and with a labelled stream of 64 a step; the Trainer path is covered above
    data = Squares(10)
    results = {}
    for supervision, weight in (("stream", 0.0), ("batch_share", 10.0), ("stream", 4.0)):
        torch.manual_seed(0)
        task = SemiSupervisedVAETask(**SMALL, beta=1.0, supervision_weight=weight, supervision=supervision)
        stream = task.attach_labelled(*labelled_rows(data, 0.1, 0))
        optimiser = torch.optim.Adam(task.parameters(), lr=1e-3)
        draws = torch.Generator().manual_seed(0)
        for _ in range(40):
            rows = torch.randint(0, len(data), (64,), generator=draws)
            if supervision == "stream":
                loss = task.losses(data.images[rows], labelled=stream.next(64))["loss"]
            else:
                loss = task.losses(data.images[rows], data.factors[rows], rows)["loss"]
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        results[supervision, weight] = assigned_correlation(task)
    # measured: 0.63 unsupervised (the axes of a square's position are partly found by chance), 0.85 with
    # the batch's share at weight 10, 0.98 with the reference's stream at weight 4
    unsupervised = results["stream", 0.0]
    assert results["batch_share", 10.0] > 0.75 and results["batch_share", 10.0] > unsupervised + 0.1, results
    assert results["stream", 4.0] > 0.9 and results["stream", 4.0] > results["batch_share", 10.0], results


def test_a_semi_supervised_variant_trains_through_the_framework_on_dsprites(tmp_path):
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    config = TrainConfig(
        model=Named(name="beta-tcvae-semi", params={"latent_dim": 6}),
        data=Named(name="dsprites", params={"train_size": 128, "test_size": 64}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    assert set(outcome.task.batch_fields) == {"image", "factors", "index"}
    assert np.isfinite(outcome.metrics["final"]["train_supervised_epoch"])
