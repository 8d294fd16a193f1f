"""Loss values of the training tasks computed by hand on tiny batches: the GAN losses on known
logits, and the beta-VAE loss = reconstruction + beta x KL with the KL of the encoder's outputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from repscope.train.tasks import VAETask, discriminator_loss, generator_loss


def softplus(x: float) -> float:
    """log(1 + e^x): -log sigmoid(-x), i.e. the binary cross-entropy of logit -x against target 1."""
    return math.log1p(math.exp(x))


def test_generator_loss_is_minus_log_d_of_the_fakes():
    logits = torch.tensor([0.0, 2.0, -1.0, 0.5], dtype=torch.float64)
    # -log sigmoid(x) = log(1 + e^-x), averaged over the batch
    expected = (math.log(2.0) + softplus(-2.0) + softplus(1.0) + softplus(-0.5)) / 4
    assert generator_loss(logits).item() == pytest.approx(expected, rel=1e-12)
    # non-saturating: the loss falls as the discriminator believes the fakes more
    assert generator_loss(logits + 1.0).item() < generator_loss(logits).item()
    assert generator_loss(torch.full((3,), 20.0, dtype=torch.float64)).item() == pytest.approx(0.0, abs=1e-8)


def test_discriminator_loss_on_known_logits():
    real = torch.tensor([1.0, -2.0], dtype=torch.float64)
    fake = torch.tensor([0.5, 3.0, -1.0], dtype=torch.float64)
    # -log D(x) averaged over the real batch + -log(1 - D(G(z))) averaged over the fake batch
    expected_real = (softplus(-1.0) + softplus(2.0)) / 2
    expected_fake = (softplus(0.5) + softplus(3.0) + softplus(-1.0)) / 3
    assert discriminator_loss(real, fake).item() == pytest.approx(expected_real + expected_fake, rel=1e-12)
    # a perfect discriminator has a loss near 0, a fooled one a large loss
    assert discriminator_loss(torch.full((2,), 20.0), torch.full((2,), -20.0)).item() < 1e-6
    assert discriminator_loss(torch.full((2,), -5.0), torch.full((2,), 5.0)).item() > 9.0


def tiny_images(seed: int = 0, n: int = 4) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 1, size=(n, 1, 28, 28)) * (rng.uniform(size=(n, 1, 28, 28)) < 0.3)
    return torch.from_numpy(images)


def vae_pair(beta_a: float, beta_b: float) -> tuple[VAETask, VAETask]:
    """Two beta-VAEs with the same weights and different beta, in eval mode, in float64 (the KL of
    a fresh encoder is ~1e-3 against a reconstruction of ~500: float32 would blur beta x KL)."""
    torch.manual_seed(3)
    a = VAETask(latent_dim=3, beta=beta_a, lr=1e-3)
    b = VAETask(latent_dim=3, beta=beta_b, lr=1e-3)
    b.load_state_dict(a.state_dict())
    return a.double().eval(), b.double().eval()


def seeded_losses(task: VAETask, images: torch.Tensor, seed: int) -> dict[str, float]:
    torch.manual_seed(seed)
    with torch.no_grad():
        return {key: float(value) for key, value in task.losses(images).items()}


def test_vae_loss_is_reconstruction_plus_beta_times_kl():
    images = tiny_images()
    low, high = vae_pair(0.5, 4.0)
    a, b = seeded_losses(low, images, seed=11), seeded_losses(high, images, seed=11)
    # same weights, same noise: the same reconstruction and KL, the loss differs by beta only
    assert a["reconstruction"] == pytest.approx(b["reconstruction"], rel=1e-12)
    assert a["kl"] == pytest.approx(b["kl"], rel=1e-12) and a["kl"] > 0
    assert a["loss"] == pytest.approx(a["reconstruction"] + 0.5 * a["kl"], rel=1e-12)
    assert b["loss"] == pytest.approx(b["reconstruction"] + 4.0 * b["kl"], rel=1e-12)
    assert b["loss"] - a["loss"] == pytest.approx((4.0 - 0.5) * a["kl"], rel=1e-7)
    zero, _ = vae_pair(0.0, 1.0)
    assert seeded_losses(zero, images, seed=11)["loss"] == pytest.approx(a["reconstruction"], rel=1e-12)


def test_vae_kl_and_reconstruction_by_hand_from_the_encoder_outputs():
    images = tiny_images(seed=1)
    task, _ = vae_pair(2.0, 2.0)
    with torch.no_grad():
        mean, log_var = task.encoder(images)
        m, lv = mean.numpy(), log_var.numpy()
        sigma2 = np.exp(lv)
        kl = float(np.mean(0.5 * np.sum(m**2 + sigma2 - 1.0 - np.log(sigma2), axis=1)))
        # the reparameterisation noise: standard normal draws of the generator seeded below
        torch.manual_seed(5)
        noise = torch.randn_like(mean)
        z = mean + noise * torch.exp(0.5 * log_var)
        p = torch.sigmoid(task.decoder(z, logits=True)).numpy().reshape(len(images), -1)
        x = images.numpy().reshape(len(images), -1)
        p = np.clip(p, 1e-12, 1 - 1e-12)
        reconstruction = float(np.mean(-np.sum(x * np.log(p) + (1 - x) * np.log(1 - p), axis=1)))
    got = seeded_losses(task, images, seed=5)
    assert got["kl"] == pytest.approx(kl, rel=1e-9)
    assert got["reconstruction"] == pytest.approx(reconstruction, rel=1e-9)
    assert got["loss"] == pytest.approx(reconstruction + 2.0 * kl, rel=1e-9)
