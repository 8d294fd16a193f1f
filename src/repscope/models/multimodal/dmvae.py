"""DMVAE (Lee & Pavlovic 2021): shared and modality-private latents.

Each modality's encoder gives a shared part ``q(z_s | x_m)`` (the first ``shared_dim`` coordinates) and a
private part ``q(z_p^m | x_m)`` (the next ``private_dim``); its decoder reads ``[z_s, z_p^m]``. The shared
posterior of a set of modalities is the product of their shared experts with the prior expert (as MVAE).

Objective, per example (Lee & Pavlovic 2021, eq. 4-5, with Monte-Carlo KL terms so that the Laplace prior
works too): for each source of the shared latent, the joint product and each present modality alone,

    ELBO_source = sum_{n present} E[log p(x_n | z_s, z_p^n)] - KL(q_source(z_s) || p(z_s))
                  - sum_{n present} KL(q(z_p^n | x_n) || p(z_p))

so every modality is reconstructed from every other modality's shared code together with its own private
code (cross-reconstruction); the loss is minus the sum over the sources. A missing modality takes its
shared part from the present ones and its private part from the prior (its mean, or a prior sample).

With ``kl_accounting="toolkit"`` the same reconstruction terms and shared KLs of the single sources are
kept, but the KLs are counted as the CdSprites+ authors' toolkit counts them
(gabinsane/multimodal-vae-comparison, ``multimodal_compare/models/mmvae_models.py``, ``DMVAE.objective``:
for each modality ``n`` one loss of its own reconstruction with ``KL(q(z_s | x_n))``, one of its
reconstruction from the joint with ``KL(q_joint(z_s))``, and one of its reconstructions from each other
modality's shared code with ``KL(q(z_p^n | x_n))`` once per such modality)::

    ELBO_toolkit = sum_{sources} sum_{n present} E[log p(x_n | z_s, z_p^n)]
                   - beta * [ sum_{n present} KL(q(z_s | x_n)) + N_present * KL(q_joint(z_s))
                              + sum_{n present} (N_present - 1) * KL(q(z_p^n | x_n)) ]

with ``N_present`` the modalities an example has: with two modalities each private KL counts once
(the paper's accounting above counts it ``N_present + 1`` times: three) and the joint KL twice.
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts
from repscope.models.multimodal.likelihoods import log_likelihood, log_normal, log_prior
from repscope.models.multimodal.models import LikelihoodSpec

KL_ACCOUNTINGS: tuple[str, ...] = ("per_source", "toolkit")  # how often DMVAE's KL terms count


class PrivateSharedVAE(nn.Module):
    """DMVAE with a ``shared_dim`` shared latent and a ``private_dim`` private latent per modality.

    Parameters
    ----------
    encoders : dict of str to torch.nn.Module
        ``x -> (mu, logvar)`` of size ``shared_dim + private_dim`` (shared first).
    decoders : dict of str to torch.nn.Module
        ``[z_s, z_p] -> output`` from ``shared_dim + private_dim`` inputs.
    likelihoods : dict of str to LikelihoodSpec
        One per modality.
    shared_dim, private_dim : int
        Sizes of the shared and of each private latent.
    prior : {"normal", "laplace"}, default="normal"
        Prior of both latents.
    kl_accounting : {"per_source", "toolkit"}, default="per_source"
        How often the KL terms count (module docstring): once per source of the shared code, the private
        KLs in every source (Lee & Pavlovic 2021, eq. 4-5), or as the CdSprites+ authors' toolkit counts them
        (``mmvae_models.py``, ``DMVAE.objective``). The KL estimators (one Monte-Carlo sample) are ours in
        both.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        shared_dim: int,
        private_dim: int,
        prior: str = "normal",
        kl_accounting: str = "per_source",
    ) -> None:
        super().__init__()
        if kl_accounting not in KL_ACCOUNTINGS:
            raise InvalidArgumentError(
                f"kl_accounting: must be one of {', '.join(KL_ACCOUNTINGS)}, got {kl_accounting!r}"
            )
        if not (set(encoders) == set(decoders) == set(likelihoods)) or len(encoders) < 2:
            raise InvalidArgumentError("modalities: encoders, decoders and likelihoods must name the same two or more")
        if shared_dim < 1 or private_dim < 1:
            raise InvalidArgumentError(f"latent sizes: shared {shared_dim} and private {private_dim} must be >= 1")
        self.modalities = tuple(encoders)
        self.encoders = nn.ModuleDict(encoders)
        self.decoders = nn.ModuleDict(decoders)
        self.likelihoods = dict(likelihoods)
        self.shared_dim, self.private_dim = int(shared_dim), int(private_dim)
        self.latent_dim = self.shared_dim
        self.prior = prior
        self.kl_accounting = kl_accounting

    def encode(self, inputs: dict[str, torch.Tensor]) -> tuple[dict, dict, torch.Tensor]:
        """Shared and private posteriors of the modalities given.

        Returns
        -------
        shared : dict
            ``"mu"``, ``"logvar"`` ``(E, B, shared_dim)`` (zeros for a modality not given).
        private : dict of str to (torch.Tensor, torch.Tensor)
            Per given modality, its private ``(mu, logvar)`` ``(B, private_dim)``.
        present : torch.Tensor
            bool ``(E, B)``.
        """
        reference = next(iter(self.parameters()))
        batch = len(next(v for k, v in inputs.items() if k in self.modalities))
        mus, logvars, present, private = [], [], [], {}
        for name in self.modalities:
            if name in inputs:
                mu, logvar = self.encoders[name](inputs[name])
                mus.append(mu[:, : self.shared_dim])
                logvars.append(logvar[:, : self.shared_dim])
                private[name] = (mu[:, self.shared_dim :], logvar[:, self.shared_dim :])
                present.append(torch.ones(batch, dtype=torch.bool, device=reference.device))
            else:
                zeros = torch.zeros(batch, self.shared_dim, dtype=reference.dtype, device=reference.device)
                mus.append(zeros)
                logvars.append(zeros)
                present.append(torch.zeros(batch, dtype=torch.bool, device=reference.device))
        return {"mu": torch.stack(mus), "logvar": torch.stack(logvars)}, private, torch.stack(present)

    def _present_mask(self, mask: torch.Tensor, present: dict[str, torch.Tensor] | None) -> torch.Tensor:
        if not present:
            return mask
        rows = [
            mask[i] & present[name].to(torch.bool).to(mask.device) if name in present else mask[i]
            for i, name in enumerate(self.modalities)
        ]
        return torch.stack(rows)

    def _decode_one(self, name: str, shared: torch.Tensor, private: torch.Tensor) -> torch.Tensor:
        return self.decoders[name](torch.cat([shared, private], dim=-1))

    def decode(self, shared: torch.Tensor, private: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """Every modality from a shared code ``(B, shared_dim)`` and private codes (prior mean when absent)."""
        private = private or {}
        zeros = torch.zeros(len(shared), self.private_dim, dtype=shared.dtype, device=shared.device)
        return {name: self._decode_one(name, shared, private.get(name, zeros)) for name in self.modalities}

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
        """Minus the DMVAE objective (module docstring), averaged over the batch.

        Parameters
        ----------
        inputs : dict of str to torch.Tensor
            The modalities given (all of a batch's examples have them).
        present : dict of str to torch.Tensor, optional
            bool ``(B,)`` per modality: which examples have it (a missing one is left out of the product,
            of the reconstruction terms and of the private KL terms).
        objective : {"elbo"}, default="elbo"
            Only the ELBO (the DMVAE paper's objective).
        k : int, default=1
            Must be 1.
        beta : float, default=1.0
            Weight of the KL terms.
        feature_masks, targets : dict, optional
            As for :meth:`repscope.models.multimodal.models.MultimodalVAE.loss`.
        generator : torch.Generator, optional
            Source of the reparameterisation noise.

        Returns
        -------
        torch.Tensor
            Scalar loss.
        """
        if objective != "elbo" or k != 1:
            raise InvalidArgumentError("dmvae: trains on the ELBO with k = 1 only")
        feature_masks = feature_masks or {}
        scored = {**inputs, **{name: value for name, value in (targets or {}).items() if name in inputs}}
        shared, private, mask = self.encode(inputs)
        mask = self._present_mask(mask, present)
        given = [name for name in self.modalities if name in inputs]
        dtype = shared["mu"].dtype
        has = {name: mask[self.modalities.index(name)].to(dtype) for name in given}  # per example
        private_samples = {name: experts.reparameterise(*private[name], generator) for name in given}
        private_kls = {
            n: log_normal(private_samples[n], *private[n]) - log_prior(self.prior, private_samples[n]) for n in given
        }
        private_kl = sum(private_kls[n] * has[n] for n in given)
        # the sources of the shared code: the joint product, and each modality alone where an example has it
        sources = [(experts.product_of_experts(shared["mu"], shared["logvar"], mask), 1.0)]
        sources += [
            ((shared["mu"][self.modalities.index(n)], shared["logvar"][self.modalities.index(n)]), has[n])
            for n in given
        ]
        total = 0.0
        if self.kl_accounting == "toolkit":
            present_count = sum(has.values())
            # the joint KL once per present modality, each private KL once per other present modality
            joint_weight = present_count
            total = -beta * sum(private_kls[n] * has[n] * (present_count - has[n]) for n in given)
        for index, ((mu_s, logvar_s), available) in enumerate(sources):
            z_s = experts.reparameterise(mu_s, logvar_s, generator)
            reconstruction = 0.0
            for name in given:
                spec = self.likelihoods[name]
                output = self._decode_one(name, z_s, private_samples[name])
                value = log_likelihood(
                    spec.kind,
                    output,
                    scored[name],
                    scale=spec.scale,
                    weight=spec.weight,
                    mask=feature_masks.get(name),
                )
                reconstruction = reconstruction + value * has[name]
            shared_kl = log_normal(z_s, mu_s, logvar_s) - log_prior(self.prior, z_s)
            if self.kl_accounting == "toolkit":
                weight = joint_weight if index == 0 else available
                total = total + available * reconstruction - beta * weight * shared_kl
            else:
                total = total + available * (reconstruction - beta * (shared_kl + private_kl))
        return -total.mean()

    def _shared_proposal(self, shared, mask, k, generator):
        # DMVAE's shared posterior: the product of the given experts with the prior expert
        mu, logvar = experts.product_of_experts(shared["mu"], shared["logvar"], mask)
        z = experts.reparameterise(mu, logvar, generator, k)
        return z, log_normal(z, mu, logvar)

    def _missing_private(self, name, k, batch, generator):
        # a missing modality's private code is proposed from its prior: importance weight 1
        reference = next(iter(self.parameters()))
        shape = (k, batch, self.private_dim)
        source = generator.device if generator is not None else reference.device  # drawn there, no host copy
        if self.prior == "normal":
            w = torch.randn(shape, generator=generator, dtype=reference.dtype, device=source)
        else:
            uniform = torch.rand(shape, generator=generator, dtype=reference.dtype, device=source) - 0.5
            w = -torch.sign(uniform) * torch.log1p(-2.0 * uniform.abs())
        return w.to(reference.device), torch.zeros(shape[:2], dtype=reference.dtype, device=reference.device)

    def posterior_mean(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The mean of the shared posterior (the product of the given experts and the prior), ``(B, D)``."""
        shared, _, mask = self.encode(inputs)
        return experts.product_of_experts(shared["mu"], shared["logvar"], mask)[0]

    @torch.no_grad()
    def log_likelihood_weights(
        self,
        inputs: dict[str, torch.Tensor],
        scored: dict[str, torch.Tensor],
        k: int,
        feature_masks: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Log importance weights of ``log p(X_S)`` with shared and private latents, ``(K, B)``.

        ``log w = sum_{n in S} log p(x_n | z, w_n) + log p(z) - log q(z | X_G)
        + sum_{n in S} (log p(w_n) - log q_n(w_n))``, with ``w_n ~ q(w_n | x_n)`` for a given modality and
        from the model's proposal for a missing one (:meth:`_missing_private`). Parameters as for
        :meth:`repscope.models.multimodal.models.MultimodalVAE.log_likelihood_weights`.

        Returns
        -------
        torch.Tensor
            ``(K, B)``.
        """
        feature_masks = feature_masks or {}
        shared, private, mask = self.encode(inputs)
        z, log_q = self._shared_proposal(shared, mask, int(k), generator)
        total = log_prior(self.prior, z) - log_q
        for name in self.modalities:
            if name not in scored:
                continue
            if name in private:
                w = experts.reparameterise(*private[name], generator, int(k))
                total = total + log_prior(self.prior, w) - log_normal(w, *private[name])
            else:
                w, log_ratio = self._missing_private(name, int(k), z.shape[1], generator)
                total = total + log_ratio
            output = self.decoders[name](torch.cat([z, w], dim=-1).reshape(-1, z.shape[-1] + self.private_dim))
            output = output.reshape(*z.shape[:2], *output.shape[1:])
            target = scored[name].expand(z.shape[0], *scored[name].shape)
            feature_mask = feature_masks.get(name)
            if feature_mask is not None:
                feature_mask = feature_mask.expand(z.shape[0], *feature_mask.shape)
            spec = self.likelihoods[name]
            total = total + log_likelihood(spec.kind, output, target, scale=spec.scale, mask=feature_mask, batch_dims=2)
        return total

    @torch.no_grad()
    def reconstruct(
        self,
        inputs: dict[str, torch.Tensor],
        present: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
        use_mean: bool = True,
    ) -> dict[str, torch.Tensor]:
        """Every modality from the given ones: shared code from their product, a missing modality's
        private code from the prior (its mean with ``use_mean``, else a sample)."""
        shared, private, mask = self.encode(inputs)
        mask = self._present_mask(mask, present)
        mu_s, logvar_s = experts.product_of_experts(shared["mu"], shared["logvar"], mask)
        z_s = mu_s if use_mean else experts.reparameterise(mu_s, logvar_s, generator)
        codes = {}
        for index, name in enumerate(self.modalities):
            if use_mean:
                fallback = torch.zeros(len(z_s), self.private_dim, dtype=z_s.dtype, device=z_s.device)
            else:
                fallback = self._missing_private(name, 1, len(z_s), generator)[0][0]
            if name in private:
                own = private[name][0] if use_mean else experts.reparameterise(*private[name], generator)
                codes[name] = torch.where(mask[index][:, None], own, fallback)  # an example may lack it
            else:
                codes[name] = fallback
        return self.decode(z_s, codes)
