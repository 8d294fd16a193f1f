"""Disentangling VAEs: beta-TCVAE, DIP-VAE (I and II) and FactorVAE, each a :class:`VAETask` with its own
regulariser (the hook of :meth:`VAETask.regulariser`); FactorVAE adds a total-correlation discriminator
and its optimiser step.

All keep the beta-VAE's networks (by name), Bernoulli likelihood, ``encode`` / ``decode`` / ``sample`` and
logging (``train_<key>`` / ``val_<key>`` of every key :meth:`VAETask.losses` returns).

* :class:`BetaTCVAETask` -- Chen et al. (2018), "Isolating sources of disentanglement in VAEs": the KL
  split into index-code mutual information, total correlation and dimension-wise KL, estimated by
  minibatch-weighted sampling; logs ``mi``, ``tc``, ``dim_kl`` (and the analytic ``kl``).
* :class:`DIPVAETask` -- Kumar et al. (2018), "Variational inference of disentangled latent concepts from
  unlabeled observations": the ELBO plus a moment-matching penalty on the covariance of the inferred
  codes; logs ``kl``, ``dip_off_diagonal``, ``dip_diagonal``.
* :class:`FactorVAETask` -- Kim & Mnih (2018), "Disentangling by factorising": the ELBO plus ``gamma`` times
  a density-ratio estimate of the total correlation from a discriminator between ``q(z)`` and the product
  of its marginals; logs ``kl``, ``tc`` and ``loss_d`` (the discriminator's loss, training only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.train.tasks.base import optimiser_options
from repscope.train.tasks.vae import VAETask
from repscope.validation import check_positive_int

LOG_2PI = math.log(2.0 * math.pi)
DSPRITES_SIZE = 737_280  # images in the dSprites grid: 3 shapes x 6 scales x 40 rotations x 32 x 32 positions
DISCRIMINATOR_BETAS = (0.5, 0.9)  # Kim & Mnih (2018), the discriminator's Adam


def gaussian_log_density(z: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Element-wise ``log N(z; mean, exp(log_var))`` in nats (broadcasting).

    ``log N = -1/2 (log 2 pi + log_var + (z - mean)^2 / exp(log_var))``.

    Parameters
    ----------
    z, mean, log_var : torch.Tensor
        Broadcastable tensors: the point, the mean and the log-variance of a univariate normal.

    Returns
    -------
    torch.Tensor
        The log density of each element, of the broadcast shape.
    """
    return -0.5 * (LOG_2PI + log_var + (z - mean).pow(2) * torch.exp(-log_var))


def kl_to_standard_normal(mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Batch mean of the analytic ``KL(N(mu, sigma^2) || N(0, I))`` summed over the latent dimensions.

    Parameters
    ----------
    mean, log_var : torch.Tensor, shape (B, D)
        Posterior means and log-variances.

    Returns
    -------
    torch.Tensor
        Scalar, nats per image: ``mean_i 1/2 sum_d (mu^2 + sigma^2 - 1 - log sigma^2)``.
    """
    return 0.5 * (mean.pow(2) + log_var.exp() - 1.0 - log_var).sum(1).mean()


def mws_decomposition(
    mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor, dataset_size: int
) -> dict[str, torch.Tensor]:
    """The KL decomposition of Chen et al. (2018) with the minibatch-weighted sampling (MWS) estimator.

    For a batch of ``M`` images ``n_1 .. n_M`` drawn from a dataset of ``N = dataset_size`` images, each with
    a diagonal Gaussian posterior ``q(z|n_j)`` and one sample ``z_i ~ q(z|n_i)``::

        log q(z_i)       ~= log sum_j q(z_i | n_j)                 - log(N M)
        log prod_d q(z_id) ~= sum_d [log sum_j q(z_id | n_j)       - log(N M)]

        mi     = mean_i [log q(z_i|n_i) - log q(z_i)]              index-code mutual information
        tc     = mean_i [log q(z_i) - sum_d log q(z_id)]           total correlation
        dim_kl = mean_i [sum_d log q(z_id) - log p(z_i)]           dimension-wise KL, p = N(0, I)

    The three sum to the one-sample Monte Carlo estimate ``mean_i [log q(z_i|n_i) - log p(z_i)]`` of the
    KL. ``N`` only shifts ``mi`` by ``log N`` and ``tc`` by ``(D - 1) log N`` (constants, no gradient).

    Parameters
    ----------
    mean, log_var : torch.Tensor, shape (M, D)
        Posterior means and log-variances of the batch.
    z : torch.Tensor, shape (M, D)
        One sample of each posterior.
    dataset_size : int
        ``N``, the number of images the batch was drawn from (at least 1).

    Returns
    -------
    dict of str to torch.Tensor
        Scalars in nats per image: ``mi``, ``tc``, ``dim_kl``.
    """
    log_norm = math.log(check_positive_int(dataset_size, "dataset_size") * len(z))
    # pairs[i, j, d] = log q(z_id | n_j)
    pairs = gaussian_log_density(z.unsqueeze(1), mean.unsqueeze(0), log_var.unsqueeze(0))
    log_qz = torch.logsumexp(pairs.sum(2), dim=1) - log_norm
    log_qz_product = (torch.logsumexp(pairs, dim=1) - log_norm).sum(1)
    log_qz_x = gaussian_log_density(z, mean, log_var).sum(1)
    log_pz = gaussian_log_density(z, torch.zeros_like(z), torch.zeros_like(z)).sum(1)
    return {
        "mi": (log_qz_x - log_qz).mean(),
        "tc": (log_qz - log_qz_product).mean(),
        "dim_kl": (log_qz_product - log_pz).mean(),
    }


def dip_penalties(mean: torch.Tensor, log_var: torch.Tensor, dip_type: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Kumar et al.'s (2018) moment-matching penalties: ``(sum_{i != j} C_ij^2, sum_i (C_ii - 1)^2)``.

    ``C`` is the batch covariance (divided by the batch size ``B``) of the posterior means for type ``"i"``,
    ``C = Cov[mu]``, and of the aggregated posterior for type ``"ii"``,
    ``C = Cov[mu] + mean_batch diag(sigma^2)``. Both penalties are 0 when ``C = I``.

    Parameters
    ----------
    mean, log_var : torch.Tensor, shape (B, D)
        Posterior means and log-variances of the batch.
    dip_type : {"i", "ii"}
        Which covariance is matched to the identity.

    Returns
    -------
    tuple of torch.Tensor
        ``(off_diagonal, diagonal)``, two non-negative scalars.
    """
    if dip_type not in ("i", "ii"):
        raise InvalidArgumentError(f"dip_type: expected 'i' or 'ii', got {dip_type!r}")
    centred = mean - mean.mean(0, keepdim=True)
    covariance = centred.T @ centred / len(mean)
    if dip_type == "ii":
        covariance = covariance + torch.diag(log_var.exp().mean(0))
    diagonal = torch.diagonal(covariance)
    off_diagonal = covariance - torch.diag(diagonal)
    return off_diagonal.pow(2).sum(), (diagonal - 1.0).pow(2).sum()


def permute_dims(z: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Each column of ``z`` shuffled independently: a sample of ``prod_d q(z_d)`` from one of ``q(z)``.

    Every column keeps its values (so each dimension's marginal), while the rows' joint structure is lost
    (Kim & Mnih, 2018, Algorithm 1).

    Parameters
    ----------
    z : torch.Tensor, shape (B, D)
        Codes, one per row.
    generator : torch.Generator, optional
        CPU generator of the permutations (default: the global torch RNG).

    Returns
    -------
    torch.Tensor
        ``(B, D)`` on ``z``'s device: column ``d`` is ``z[perm_d, d]`` for an independent permutation ``perm_d``.
    """
    order = torch.argsort(torch.rand(z.shape, generator=generator), dim=0).to(z.device)
    return torch.gather(z, 0, order)


class TCDiscriminator(nn.Module):
    """An MLP on codes: ``layers`` hidden layers of ``width`` units with LeakyReLU(0.2), then one logit.

    ``sigmoid(logit)`` is the probability that a code came from ``q(z)`` rather than from the permuted
    ``prod_d q(z_d)``; Kim & Mnih (2018) use 6 layers of 1000 units.

    Parameters
    ----------
    latent_dim : int
        Size of the codes.
    width : int, default=1000
        Units per hidden layer.
    layers : int, default=6
        Hidden layers.
    """

    def __init__(self, latent_dim: int, width: int = 1000, layers: int = 6) -> None:
        super().__init__()
        width, layers = check_positive_int(width, "width"), check_positive_int(layers, "layers")
        modules: list[nn.Module] = []
        size = latent_dim
        for _ in range(layers):
            modules += [nn.Linear(size, width), nn.LeakyReLU(0.2)]
            size = width
        modules.append(nn.Linear(size, 1))
        self.net = nn.Sequential(*modules)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).squeeze(1)


class BetaTCVAETask(VAETask):
    """beta-TCVAE (Chen et al., 2018): ``loss = reconstruction + mi + beta * tc + dim_kl``.

    The KL term of the ELBO is split into index-code mutual information, total correlation and
    dimension-wise KL (alpha = gamma = 1, only the total correlation weighted by ``beta``), each estimated on
    the batch with minibatch-weighted sampling; see :func:`mws_decomposition` for the formulas.

    Parameters
    ----------
    latent_dim, lr, image_shape, architecture, box_weight
        As :class:`VAETask`.
    beta : float, default=6.0
        Weight of the total correlation; disentanglement_lib's unsupervised study sweeps
        {1, 2, 4, 6, 8, 10}.
    dataset_size : int, default=737280
        ``N`` of the MWS estimator, the size of the training set (default: the dSprites grid). It shifts
        the logged ``mi`` and ``tc`` by constants only; the gradients do not depend on it.
    """

    @dataclass(kw_only=True)
    class Config(VAETask.Config):
        beta: Annotated[float, Field(ge=0)] = 6.0
        dataset_size: Annotated[int, Field(ge=1)] = DSPRITES_SIZE

    def regulariser(self, mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """``mi + beta * tc + dim_kl`` (MWS estimates, :func:`mws_decomposition`), and its terms.

        Parameters
        ----------
        mean, log_var : torch.Tensor, shape (B, latent_dim)
            Posterior means and log-variances.
        z : torch.Tensor, shape (B, latent_dim)
            The reparameterised sample the estimates are taken at.

        Returns
        -------
        dict of str to torch.Tensor
            Scalars in nats per image: ``regulariser`` (with gradients), ``mi``, ``tc``, ``dim_kl``, and the
            analytic ``kl`` (for comparison with the other VAEs).
        """
        parts = mws_decomposition(mean, log_var, z, self.hparams.dataset_size)
        regulariser = parts["mi"] + self.hparams.beta * parts["tc"] + parts["dim_kl"]
        return {"regulariser": regulariser, **parts, "kl": kl_to_standard_normal(mean, log_var)}


class DIPVAETask(VAETask):
    """DIP-VAE (Kumar et al., 2018): ``loss = reconstruction + beta * KL + lambda_od * sum_{i != j} C_ij^2
    + lambda_d * sum_i (C_ii - 1)^2`` with ``C`` the batch covariance of the inferred codes
    (:func:`dip_penalties`): of the posterior means for DIP-VAE-I, of the aggregated posterior
    ``Cov[mu] + E[diag sigma^2]`` for DIP-VAE-II.

    Parameters
    ----------
    latent_dim, lr, image_shape, architecture, box_weight
        As :class:`VAETask`.
    beta : float, default=1.0
        Weight of the KL (1: the ELBO, as in the paper).
    dip_type : {"i", "ii"}, default="i"
        DIP-VAE-I or DIP-VAE-II.
    lambda_od : float, default=10.0
        Weight of the off-diagonal penalty (disentanglement_lib's unsupervised study sweeps
        {1, 2, 5, 10, 20, 50}).
    lambda_d : float, optional
        Weight of the diagonal penalty; default ``10 * lambda_od`` for type i, ``lambda_od`` for type ii
        (the paper's choice, disentanglement_lib's ``lambda_d_factor`` 10 and 1).
    """

    @dataclass(kw_only=True)
    class Config(VAETask.Config):
        beta: Annotated[float, Field(ge=0)] = 1.0
        dip_type: Literal["i", "ii"] = "i"
        lambda_od: Annotated[float, Field(ge=0)] = 10.0
        lambda_d: Annotated[float, Field(ge=0)] | None = None  # default: by dip_type (the class docstring)

    def check_config(self, config: Any) -> None:
        super().check_config(config)
        if config.lambda_d is None:
            config.lambda_d = config.lambda_od * (10.0 if config.dip_type == "i" else 1.0)

    def regulariser(self, mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """``beta * KL + lambda_od * off_diagonal + lambda_d * diagonal``, and its terms.

        Parameters
        ----------
        mean, log_var : torch.Tensor, shape (B, latent_dim)
            Posterior means and log-variances.
        z : torch.Tensor, shape (B, latent_dim)
            The reparameterised sample; unused (the penalty is on the moments).

        Returns
        -------
        dict of str to torch.Tensor
            Scalars: ``regulariser`` (with gradients), ``kl`` (nats per image), ``dip_off_diagonal`` and
            ``dip_diagonal`` (the unweighted penalties of :func:`dip_penalties`).
        """
        kl = kl_to_standard_normal(mean, log_var)
        off_diagonal, diagonal = dip_penalties(mean, log_var, self.hparams.dip_type)
        hp = self.hparams
        regulariser = hp.beta * kl + hp.lambda_od * off_diagonal + hp.lambda_d * diagonal
        return {"regulariser": regulariser, "kl": kl, "dip_off_diagonal": off_diagonal, "dip_diagonal": diagonal}


class FactorVAETask(VAETask):
    """FactorVAE (Kim & Mnih, 2018): ``loss = reconstruction + beta * KL + gamma * tc``.

    ``tc = mean_batch log(D(z) / (1 - D(z)))``, the discriminator's logit, estimates the total correlation
    ``KL(q(z) || prod_d q(z_d))`` by the density-ratio trick. Manual optimisation, per batch: one Adam step
    of the encoder and decoder on ``loss`` (the discriminator held fixed), then one step of the
    discriminator (Adam, ``lr_discriminator``, betas (0.5, 0.9) as in the paper) on the binary
    cross-entropy of real codes against permuted ones. Its codes are the batch encoded again (no gradient)
    after the VAE step and cut in two halves: the first half as samples of ``q(z)``, the second half,
    each dimension shuffled (:func:`permute_dims`), as samples of ``prod_d q(z_d)`` (the paper draws a
    second batch instead). A batch of one image skips the discriminator step.

    Parameters
    ----------
    latent_dim, lr, image_shape, architecture, box_weight
        As :class:`VAETask` (``lr``: the encoder's and decoder's Adam).
    beta : float, default=1.0
        Weight of the KL (1: the ELBO, as in the paper).
    gamma : float, default=10.0
        Weight of the total-correlation estimate; disentanglement_lib's unsupervised study sweeps
        {10, 20, 30, 40, 50, 100}.
    discriminator_width : int, default=256
        Units per hidden layer of the discriminator (the paper: 1000; smaller by default for CPUs).
    discriminator_layers : int, default=6
        Hidden layers of the discriminator (the paper: 6).
    lr_discriminator : float, default=1e-4
        The discriminator's Adam learning rate (the paper's).
    """

    @dataclass(kw_only=True)
    class Config(VAETask.Config):
        beta: Annotated[float, Field(ge=0)] = 1.0
        gamma: Annotated[float, Field(ge=0)] = 10.0
        discriminator_width: Annotated[int, Field(ge=1)] = 256
        discriminator_layers: Annotated[int, Field(ge=1)] = 6
        lr_discriminator: float = 1e-4

    def build(self) -> None:
        super().build()
        hp = self.hparams
        self.automatic_optimization = False
        self.discriminator = TCDiscriminator(hp.latent_dim, hp.discriminator_width, hp.discriminator_layers)

    def regulariser(self, mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """``beta * KL + gamma * tc`` with ``tc`` the batch mean of the discriminator's logits of ``z``.

        Parameters
        ----------
        mean, log_var : torch.Tensor, shape (B, latent_dim)
            Posterior means and log-variances.
        z : torch.Tensor, shape (B, latent_dim)
            The reparameterised sample the discriminator sees (gradients flow through it to the encoder).

        Returns
        -------
        dict of str to torch.Tensor
            Scalars in nats per image: ``regulariser`` (with gradients), ``kl`` and ``tc``.
        """
        kl = kl_to_standard_normal(mean, log_var)
        tc = self.discriminator(z).mean()
        return {"regulariser": self.hparams.beta * kl + self.hparams.gamma * tc, "kl": kl, "tc": tc}

    def discriminator_loss(self, z: torch.Tensor) -> torch.Tensor | None:
        """The discriminator's loss on codes ``z``: real first half against the permuted second half.

        ``loss_d = 1/2 [BCE(D(z[:h]), 1) + BCE(D(permute_dims(z[h:2h])), 0)]`` with ``h = B // 2``.

        Parameters
        ----------
        z : torch.Tensor, shape (B, latent_dim)
            Samples of ``q(z)`` (detached from the encoder by the caller).

        Returns
        -------
        torch.Tensor or None
            Scalar loss in nats, or ``None`` when ``B < 2``.
        """
        half = len(z) // 2
        if half == 0:
            return None
        real = self.discriminator(z[:half])
        fake = self.discriminator(permute_dims(z[half : 2 * half]))
        return 0.5 * (
            F.binary_cross_entropy_with_logits(real, torch.ones_like(real))
            + F.binary_cross_entropy_with_logits(fake, torch.zeros_like(fake))
        )

    def training_step(self, batch: Any, batch_idx: int) -> None:
        images = batch["image"]
        opt_vae, opt_d = self.optimizers()
        with self.box_weighting(batch):
            losses = self.losses(images)
        opt_vae.zero_grad()
        self.manual_backward(losses["loss"])
        opt_vae.step()
        with torch.no_grad():
            mean, log_var = self.encoder(images)
            z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)
        loss_d = self.discriminator_loss(z)
        if loss_d is not None:
            opt_d.zero_grad()
            self.manual_backward(loss_d)
            opt_d.step()
            losses["loss_d"] = loss_d
        for key, value in losses.items():
            self._log(f"train_{key}", value.detach(), len(images))

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        vae_parameters = [*self.encoder.parameters(), *self.decoder.parameters()]
        return [
            torch.optim.Adam(vae_parameters, lr=self.hparams.lr, **optimiser_options(self)),
            torch.optim.Adam(
                self.discriminator.parameters(),
                lr=self.hparams.lr_discriminator,
                betas=DISCRIMINATOR_BETAS,
                **optimiser_options(self),
            ),
        ]


__all__ = [
    "BetaTCVAETask",
    "DIPVAETask",
    "FactorVAETask",
    "TCDiscriminator",
    "mws_decomposition",
    "dip_penalties",
    "permute_dims",
    "gaussian_log_density",
    "kl_to_standard_normal",
    "DSPRITES_SIZE",
]
