"""MMVAE+ (Palumbo et al. 2023): MMVAE with modality-specific latents and an auxiliary prior.

Each modality's encoder gives a shared part ``q(z | x_m)`` and a modality-specific part ``q(w_m | x_m)``
(the layout of :class:`~repscope.models.multimodal.dmvae.PrivateSharedVAE`); the decoder of modality
``n`` reads ``[z, w_n]``. The shared posterior is MMVAE's mixture of the unimodal experts,
``q(z | X) = 1/|X| sum_{m in X} q(z | x_m)``.

Objective (Palumbo et al. 2023, eq. 4; stratified over the present modalities ``m``, K samples): with
``(z, w_m) ~ q(z | x_m) q(w_m | x_m)`` and, for every other modality ``n``, ``w~_n ~ r_n(w_n)``, the
*auxiliary prior* (a zero-mean Gaussian whose scale per dimension is learned through the reparameterised
samples), the log importance weight is::

    log w = log p(x_m | z, w_m) + sum_{n != m} log p(x_n | z, w~_n)
            + log p(z) + log p(w_m) - log q(z | X) - log q(w_m | x_m)

and the objective is the ELBO (``beta`` on the KL part), the IWAE bound or its DReG estimator (the paper
trains with DReG). Cross-reconstruction from ``w~_n`` drawn from ``r_n``, not from ``x_n``'s own code,
keeps the shared information out of the modality-specific latents: ``w~_n`` carries nothing about ``x_n``,
so the decoder has to read it from ``z``. Cross-generation likewise takes a missing modality's specific
code from ``r_n`` (its mean, zero, when decoding means).
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts, objectives
from repscope.models.multimodal.dmvae import PrivateSharedVAE
from repscope.models.multimodal.likelihoods import log_likelihood, log_normal, log_prior
from repscope.models.multimodal.models import OBJECTIVES, LikelihoodSpec, MultimodalVAE
from repscope.validation import check_positive_int


class ModalitySpecificMixtureVAE(PrivateSharedVAE):
    """MMVAE+ with a ``shared_dim`` shared latent and a ``private_dim`` specific latent per modality.

    Parameters
    ----------
    encoders, decoders, likelihoods, shared_dim, private_dim, prior
        As for :class:`~repscope.models.multimodal.dmvae.PrivateSharedVAE`.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        shared_dim: int,
        private_dim: int,
        prior: str = "normal",
    ) -> None:
        super().__init__(encoders, decoders, likelihoods, shared_dim, private_dim, prior)
        # log standard deviation of each modality's auxiliary prior r_n (learned; starts at the prior's 1)
        self.auxiliary_log_scale = nn.ParameterDict(
            {name: nn.Parameter(torch.zeros(self.private_dim)) for name in self.modalities}
        )

    def auxiliary_sample(self, name: str, shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
        """Reparameterised samples ``w~ ~ r_name(w)`` of shape ``(*shape, private_dim)`` (drawn on the
        generator's device, the model's without one)."""
        scale = torch.exp(self.auxiliary_log_scale[name])
        return experts.random_normal((*shape, self.private_dim), generator, scale.dtype, scale.device) * scale

    def loss(
        self,
        inputs: dict[str, torch.Tensor],
        present: dict[str, torch.Tensor] | None = None,
        *,
        objective: str = "elbo",
        k: int = 1,
        beta: float = 1.0,
        feature_masks: dict[str, torch.Tensor] | None = None,
        targets: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Minus the MMVAE+ objective (module docstring), averaged over the batch.

        Parameters
        ----------
        inputs, present, objective, k, beta, feature_masks, targets, generator
            As for :meth:`repscope.models.multimodal.models.MultimodalVAE.loss`.

        Returns
        -------
        torch.Tensor
            Scalar loss.
        """
        if objective not in OBJECTIVES:
            raise InvalidArgumentError(f"objective: must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        k = check_positive_int(k, "k")
        feature_masks = feature_masks or {}
        scored = {**inputs, **{name: value for name, value in (targets or {}).items() if name in inputs}}
        shared, private, mask = self.encode(inputs)
        mask = self._present_mask(mask, present)
        known = experts.known_presence(self.modalities, private, present, mask.shape[1])
        detach = objective == "dreg"
        total = torch.zeros(mask.shape[1], dtype=shared["mu"].dtype, device=shared["mu"].device)
        for index, name in enumerate(self.modalities):
            # a modality no example has is left out: known from the modalities given, else read from its
            # mask on the CPU; on an accelerator its bound is computed and weighted by the mask (all zero)
            has_rows = known[index]
            if has_rows is None and experts.may_read(mask):
                has_rows = bool(mask[index].any())
            if has_rows is False:
                continue
            mu = torch.cat([shared["mu"][index], private[name][0]], dim=-1)
            logvar = torch.cat([shared["logvar"][index], private[name][1]], dim=-1)
            latents = experts.reparameterise(mu, logvar, generator, k)  # (K, B, D + P): z and w_m together
            z, w = latents[..., : self.shared_dim], latents[..., self.shared_dim :]
            log_px = self._cross_log_likelihood(name, z, w, scored, mask, feature_masks, generator)
            log_p = log_prior(self.prior, z) + log_prior(self.prior, w)
            c_mu, c_logvar = shared["mu"], shared["logvar"]
            q_mu, q_logvar = private[name]
            if detach:
                c_mu, c_logvar, q_mu, q_logvar = c_mu.detach(), c_logvar.detach(), q_mu.detach(), q_logvar.detach()
            log_q = MultimodalVAE._log_mixture_density(z, c_mu, c_logvar, mask, False) + log_normal(w, q_mu, q_logvar)
            if objective == "elbo":
                value = objectives.elbo(log_px, log_p, log_q, beta)
            else:
                weights = objectives.log_importance_weights(log_px, log_p, log_q)
                value = objectives.dreg(weights, latents) if detach else objectives.iwae(weights)
            total = total + value * mask[index].to(value.dtype)
        return -(total / mask.sum(0).to(total.dtype).clamp(min=1)).mean()

    def _cross_log_likelihood(self, source, z, w, scored, mask, feature_masks, generator) -> torch.Tensor:
        """``sum_{n present} log p(x_n | z, w_n)``, ``w_n`` = the source's own code or a sample of ``r_n``."""
        total = torch.zeros(z.shape[:2], dtype=z.dtype, device=z.device)
        for index, name in enumerate(self.modalities):
            if name not in scored:
                continue
            code = w if name == source else self.auxiliary_sample(name, tuple(z.shape[:2]), generator)
            output = self.decoders[name](torch.cat([z, code], dim=-1).reshape(-1, z.shape[-1] + self.private_dim))
            output = output.reshape(*z.shape[:2], *output.shape[1:])
            target = scored[name].expand(z.shape[0], *scored[name].shape)
            feature_mask = feature_masks.get(name)
            if feature_mask is not None:
                feature_mask = feature_mask.expand(z.shape[0], *feature_mask.shape)
            spec = self.likelihoods[name]
            value = log_likelihood(
                spec.kind, output, target, scale=spec.scale, weight=spec.weight, mask=feature_mask, batch_dims=2
            )
            total = total + value * mask[index].to(value.dtype)
        return total

    def shared_posterior(
        self, inputs: dict[str, torch.Tensor], present: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The mixture's components ``(E, B, D)`` and their availability ``(E, B)`` (one per modality)."""
        shared, _, mask = self.encode(inputs)
        return shared["mu"], shared["logvar"], self._present_mask(mask, present)

    def private_code(self, name: str, batch: int, generator: torch.Generator | None, use_mean: bool) -> torch.Tensor:
        """A missing modality's specific code: the auxiliary prior's mean (zero) or a sample of it."""
        if use_mean:
            return torch.zeros(batch, self.private_dim, device=self.auxiliary_log_scale[name].device)
        return self.auxiliary_sample(name, (batch,), generator)

    @torch.no_grad()
    def reconstruct(
        self,
        inputs: dict[str, torch.Tensor],
        present: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
        use_mean: bool = True,
    ) -> dict[str, torch.Tensor]:
        """Every modality from the given ones: ``z`` from one mixture component drawn per example, a given
        modality's own specific code, a missing one's from its auxiliary prior."""
        shared, private, mask = self.encode(inputs)
        mask = self._present_mask(mask, present)
        component = experts.choose_present(mask, generator)
        batch = torch.arange(mask.shape[1], device=mask.device)
        mu, logvar = shared["mu"][component, batch], shared["logvar"][component, batch]
        z = mu if use_mean else experts.reparameterise(mu, logvar, generator)
        codes = {}
        for index, name in enumerate(self.modalities):
            fallback = self.private_code(name, len(z), generator, use_mean)
            if name in private:
                own = private[name][0] if use_mean else experts.reparameterise(*private[name], generator)
                codes[name] = torch.where(mask[index][:, None], own, fallback)  # an example may lack it
            else:
                codes[name] = fallback
        return self.decode(z, codes)

    def _shared_proposal(self, shared, mask, k, generator):
        # the mixture of the given modalities' experts, as in training
        return MultimodalVAE._sample_mixture(shared["mu"], shared["logvar"], mask, k, generator)

    def _missing_private(self, name, k, batch, generator):
        # a missing modality's code is proposed from its auxiliary prior: weight p(w) / r(w)
        w = self.auxiliary_sample(name, (k, batch), generator)
        scale = torch.exp(self.auxiliary_log_scale[name])
        return w, log_prior(self.prior, w) - log_normal(w, torch.zeros_like(scale), 2.0 * torch.log(scale))

    def posterior_mean(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The mean of the shared mixture ``q(z | X)``: the average of the given experts' means, ``(B, D)``."""
        shared, _, mask = self.encode(inputs)
        weights = mask.to(shared["mu"].dtype)[..., None]
        return (shared["mu"] * weights).sum(0) / weights.sum(0).clamp(min=1)


__all__ = ["ModalitySpecificMixtureVAE"]
