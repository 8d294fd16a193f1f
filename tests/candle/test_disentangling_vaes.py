"""The disentangling VAEs (beta-TCVAE, DIP-VAE, FactorVAE): their regularisers on hand-checkable cases,
FactorVAE's permutation and discriminator, and a few training steps of each on tiny 64x64 images."""

from __future__ import annotations

import inspect
import logging
import math
import warnings

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from repscope.errors import InvalidArgumentError
from repscope.train.tasks.disentangling_vaes import (
    BetaTCVAETask,
    DIPVAETask,
    FactorVAETask,
    TCDiscriminator,
    dip_penalties,
    gaussian_log_density,
    mws_decomposition,
    permute_dims,
)

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SPRITES = (1, 64, 64)


def normal_log_pdf(x: float, mu: float, var: float) -> float:
    return -0.5 * (math.log(2 * math.pi * var) + (x - mu) ** 2 / var)


# ---------------------------------------------------------------------------------------------
# beta-TCVAE: minibatch-weighted sampling


def test_mws_terms_of_a_single_image_by_hand():
    # M = 1: log q(z) = log q(z|x) - log N and log q(z_d) = log q(z_d|x) - log N
    mean, log_var, z = torch.tensor([[0.5, -1.0, 2.0]]), torch.tensor([[0.0, math.log(4.0), -1.0]]), torch.zeros(1, 3)
    n = 1000
    parts = mws_decomposition(mean, log_var, z, n)
    assert float(parts["mi"]) == pytest.approx(math.log(n), rel=1e-5)
    assert float(parts["tc"]) == pytest.approx(2 * math.log(n), rel=1e-5)  # (D - 1) log N
    log_q = sum(normal_log_pdf(0.0, m, math.exp(v)) for m, v in zip([0.5, -1.0, 2.0], [0.0, math.log(4.0), -1.0]))
    log_p = 3 * normal_log_pdf(0.0, 0.0, 1.0)
    assert float(parts["dim_kl"]) == pytest.approx(log_q - 3 * math.log(n) - log_p, rel=1e-5)


def test_mws_mutual_information_sees_whether_the_posteriors_overlap():
    torch.manual_seed(0)
    m, n = 8, 100
    # identical posteriors: q(z) = q(z|x) M / (N M) -> mi = log N
    mean, log_var = torch.zeros(m, 2), torch.zeros(m, 2)
    z = torch.randn(m, 2)
    assert float(mws_decomposition(mean, log_var, z, n)["mi"]) == pytest.approx(math.log(n), rel=1e-5)
    # far apart, narrow posteriors: only the own term counts -> mi = log(N M)
    mean = torch.arange(m, dtype=torch.float32).repeat(2, 1).T * 100
    log_var = torch.full((m, 2), -4.0)
    z = mean + torch.randn(m, 2) * math.exp(-2.0)
    parts = mws_decomposition(mean, log_var, z, n)
    assert float(parts["mi"]) == pytest.approx(math.log(n * m), rel=1e-4)
    # the three terms always sum to the one-sample estimate of the KL
    kl_sample = (gaussian_log_density(z, mean, log_var) - gaussian_log_density(z, 0 * z, 0 * z)).sum(1).mean()
    assert float(parts["mi"] + parts["tc"] + parts["dim_kl"]) == pytest.approx(float(kl_sample), rel=1e-5)
    with pytest.raises(InvalidArgumentError, match="dataset_size"):
        mws_decomposition(mean, log_var, z, 0)


def test_mws_total_correlation_is_larger_for_correlated_codes():
    torch.manual_seed(0)
    m = 256
    independent = torch.randn(m, 2)
    correlated = torch.cat([independent[:, :1], independent[:, :1] + 0.1 * independent[:, 1:]], 1)
    log_var = torch.full((m, 2), math.log(0.01))
    tc = [float(mws_decomposition(codes, log_var, codes, 1000)["tc"]) for codes in (independent, correlated)]
    assert tc[1] > tc[0] + 1.0


def test_beta_tcvae_regulariser_weights_only_the_total_correlation():
    torch.manual_seed(0)
    task = BetaTCVAETask(latent_dim=3, beta=5.0, dataset_size=500)
    mean, log_var = torch.randn(16, 3), torch.randn(16, 3) * 0.3
    z = mean + torch.randn(16, 3) * torch.exp(0.5 * log_var)
    out = task.regulariser(mean, log_var, z)
    assert float(out["regulariser"]) == pytest.approx(float(out["mi"] + 5.0 * out["tc"] + out["dim_kl"]), rel=1e-5)
    assert {"mi", "tc", "dim_kl", "kl"} <= set(out)


# ---------------------------------------------------------------------------------------------
# DIP-VAE


def test_dip_penalties_by_hand():
    r = math.sqrt(2.0)
    identity = torch.tensor([[r, 0.0], [-r, 0.0], [0.0, r], [0.0, -r]])  # Cov = I (divided by B = 4)
    zero_var = torch.full((4, 2), -30.0)
    off, diag = dip_penalties(identity, zero_var, "i")
    assert float(off) == pytest.approx(0.0, abs=1e-6) and float(diag) == pytest.approx(0.0, abs=1e-6)
    # type ii adds E[sigma^2] = 1 on the diagonal: C = 2I -> diagonal penalty 2 * (2 - 1)^2
    off, diag = dip_penalties(identity, torch.zeros(4, 2), "ii")
    assert float(off) == pytest.approx(0.0, abs=1e-6) and float(diag) == pytest.approx(2.0, rel=1e-6)
    # perfectly correlated means [[1, 1], [-1, -1]]: C = [[1, 1], [1, 1]] -> off-diagonal 1^2 + 1^2
    off, diag = dip_penalties(torch.tensor([[1.0, 1.0], [-1.0, -1.0]]), zero_var[:2], "i")
    assert float(off) == pytest.approx(2.0, rel=1e-6) and float(diag) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(InvalidArgumentError, match="dip_type"):
        dip_penalties(identity, zero_var, "iii")


def test_dip_vae_defaults_and_regulariser():
    assert DIPVAETask(latent_dim=2).hparams.lambda_d == 100.0
    task = DIPVAETask(latent_dim=2, dip_type="ii")
    assert (task.hparams.lambda_od, task.hparams.lambda_d, task.hparams.beta) == (10.0, 10.0, 1.0)
    mean, log_var = torch.tensor([[1.0, 1.0], [-1.0, -1.0]]), torch.zeros(2, 2)
    out = task.regulariser(mean, log_var, mean)
    # C = [[2, 1], [1, 2]]: off 2, diagonal 2; KL per image = 1/2 (1 + 1) = 1
    assert float(out["kl"]) == pytest.approx(1.0) and float(out["dip_diagonal"]) == pytest.approx(2.0)
    assert float(out["regulariser"]) == pytest.approx(1.0 + 10 * 2.0 + 10 * 2.0)
    with pytest.raises(InvalidArgumentError, match="dip_type"):
        DIPVAETask(dip_type="iii")


# ---------------------------------------------------------------------------------------------
# FactorVAE


def test_permute_dims_keeps_each_marginal_and_breaks_the_rows():
    z = torch.arange(200, dtype=torch.float32).reshape(50, 4)
    permuted = permute_dims(z, torch.Generator().manual_seed(0))
    assert torch.equal(permuted.sort(0).values, z.sort(0).values)
    assert not torch.equal(permuted, z)
    # rows no longer come from one code: column offsets differ from the original 0, 1, 2, 3
    assert (permuted - permuted[:, :1] != torch.arange(4.0)).any(1).float().mean() > 0.9


@pytest.mark.slow  # trains the FactorVAE discriminator to convergence
def test_discriminator_tells_a_correlated_gaussian_from_its_permutation():
    torch.manual_seed(0)
    rho = 0.9
    mix = torch.tensor([[1.0, rho], [0.0, math.sqrt(1 - rho**2)]])
    discriminator = TCDiscriminator(2, width=64, layers=2)
    optimiser = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
    loss_fn = torch.nn.functional.binary_cross_entropy_with_logits
    for _ in range(300):
        real = torch.randn(128, 2) @ mix
        fake = permute_dims(torch.randn(128, 2) @ mix)
        loss = loss_fn(discriminator(real), torch.ones(128)) + loss_fn(discriminator(fake), torch.zeros(128))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        real = torch.randn(2000, 2) @ mix
        fake = permute_dims(torch.randn(2000, 2) @ mix)
        accuracy = ((discriminator(real) > 0).float().mean() + (discriminator(fake) < 0).float().mean()) / 2
        tc = float(discriminator(real).mean())
    assert accuracy > 0.7
    assert 0.4 < tc < 1.3  # the true TC: -1/2 log(1 - rho^2) = 0.83 nats


def test_factor_vae_regulariser_and_optimisers():
    task = FactorVAETask(latent_dim=3, gamma=2.0, discriminator_width=8, image_shape=SPRITES)
    assert task.automatic_optimization is False
    z = torch.randn(6, 3)
    out = task.regulariser(torch.zeros(6, 3), torch.zeros(6, 3), z)
    assert float(out["kl"]) == 0.0
    assert float(out["regulariser"]) == pytest.approx(2.0 * float(task.discriminator(z).mean()), rel=1e-5)
    vae_opt, d_opt = task.configure_optimizers()
    assert d_opt.defaults["betas"] == (0.5, 0.9) and d_opt.defaults["lr"] == 1e-4
    in_vae = {id(p) for group in vae_opt.param_groups for p in group["params"]}
    assert not in_vae & {id(p) for p in task.discriminator.parameters()}
    assert task.discriminator_loss(z[:1]) is None


# ---------------------------------------------------------------------------------------------
# a few training steps of each


def as_batch(rows):
    return {"image": torch.stack([r[0] for r in rows])}


@pytest.fixture(scope="module")
def sprites():
    """32 64x64 squares at random places: binary images like dSprites."""
    rng = np.random.default_rng(0)
    images = np.zeros((32, 64, 64), np.uint8)
    for image, (x, y) in zip(images, rng.integers(4, 48, (32, 2))):
        image[y : y + 12, x : x + 12] = 255
    return images


def train(task, images, epochs=2):
    x = torch.from_numpy(images).float().div(255).unsqueeze(1)
    data = DataLoader(TensorDataset(x), batch_size=16, shuffle=True, collate_fn=as_batch)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(task, data, data)
    return trainer


CASES = {
    "beta-tcvae": (BetaTCVAETask, {"dataset_size": 32}, {"mi", "tc", "dim_kl", "kl"}),
    "dip-vae-ii": (DIPVAETask, {"dip_type": "ii"}, {"kl", "dip_off_diagonal", "dip_diagonal"}),
    "factor-vae": (FactorVAETask, {"discriminator_width": 32}, {"kl", "tc", "loss_d"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_trains_logs_its_terms_and_round_trips(name, sprites, tmp_path):
    cls, params, terms = CASES[name]
    torch.manual_seed(0)
    task = cls(latent_dim=4, image_shape=SPRITES, architecture="conv64", **params)
    before = {k: v.clone() for k, v in task.state_dict().items()}
    trainer = train(task, sprites)
    metrics = trainer.callback_metrics
    assert {f"train_{t}_epoch" for t in terms | {"loss", "reconstruction"}} <= set(metrics)
    assert {f"val_{t}" for t in terms - {"loss_d"}} <= set(metrics)
    assert all(math.isfinite(float(v)) for v in metrics.values())
    after = task.state_dict()
    changed = {k.split(".")[0] for k in before if not torch.equal(before[k], after[k])}
    assert {"encoder", "decoder"} <= changed and ("discriminator" in changed) == (name == "factor-vae")
    assert task.encode(sprites[:5]).shape == (5, 4)
    assert task.sample(3, seed=1).shape == (3, 64, 64)
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert set(raw["hyper_parameters"]) == set(inspect.signature(cls).parameters)
    loaded = cls.load_from_checkpoint(path, weights_only=True)
    assert np.array_equal(loaded.encode(sprites), task.encode(sprites))


@pytest.mark.parametrize("name", ["beta-tcvae", "dip-vae-i", "dip-vae-ii", "factor-vae"])
def test_each_model_trains_through_the_framework_on_dsprites_and_is_scored(tmp_path, name):
    from repscope.studies.candle.score_arrays import codes_of_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    config = TrainConfig(
        model=Named(name=name, params={"latent_dim": 4}),
        data=Named(name="dsprites", params={"train_size": 128, "test_size": 64}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    assert np.isfinite(outcome.metrics["final"]["train_loss_epoch"])
    factors, codes, _ = codes_of_run(tmp_path / "run", n=64)
    assert codes.shape == (64, 4) and np.isfinite(codes).all() and factors.shape == (64, 5)


@pytest.mark.parametrize("cls", [BetaTCVAETask, DIPVAETask, FactorVAETask])
def test_colour_64x64_images(cls):
    # CANDLE's images are colour: the conv64 networks take 3 channels and give colour images back
    torch.manual_seed(0)
    task = cls(latent_dim=4, image_shape=(3, 64, 64), architecture="conv64")
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 64, 64, 3), dtype=np.uint8)
    losses = task.losses(torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255)
    assert all(math.isfinite(float(value)) for value in losses.values())
    # a colour image's Bernoulli reconstruction term covers 3 x 64 x 64 pixels: above 3 * 4096 * log(2) / 2
    assert float(losses["reconstruction"]) > 3 * 4096 * math.log(2) / 2
    assert task.encode(images).shape == (6, 4)
    assert task.decode(np.zeros((2, 4))).shape == (2, 64, 64, 3)
