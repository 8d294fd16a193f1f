"""Multimodal VAEs with one shared latent: MVAE, MMVAE and MoPoE, for any number of modalities.

Each modality brings an encoder (``x -> (mu, logvar)``, both ``(B, D)``), a decoder (``z -> output``,
read by its likelihood, :mod:`.likelihoods`), a likelihood kind, a scale and a likelihood weight. The
models differ only in how the unimodal posteriors are joined (:mod:`.experts`) and in their objective,
one subclass of :class:`MultimodalVAE` each:

* :class:`ProductOfExpertsVAE`, MVAE (Wu & Goodman 2018): ``q(z | X)`` = product of experts with the
  prior expert; the loss sums the ELBO of the joint posterior and of each single modality
  (``subsampling="singles"``) or of every proper subset (``"all"``; the same for two modalities, as
  CdSprites+), each reconstructing the modalities it was given (the sub-sampling the CdSprites+ paper
  used).
* :class:`MixtureOfExpertsVAE`, MMVAE (Shi et al. 2019): ``q(z | X)`` = mixture of the unimodal experts;
  stratified over the present modalities, each ``z ~ q(z | x_m)`` reconstructs every modality
  (cross-reconstruction) with importance weights ``p(X, z) / q_MoE(z | X)``; K samples give the IWAE
  bound, DReG its estimator.
* :class:`MixtureOfProductsVAE`, MoPoE (Sutter et al. 2021): ``q(z | X)`` = mixture over the non-empty
  subsets of the product of their experts; stratified over the available subsets, each ELBO
  reconstructs every modality.

Where the CdSprites+ authors' toolkit (gabinsane/multimodal-vae-comparison, ``multimodal_compare/``) trains
a model otherwise than its paper defines it, a setting reproduces the toolkit (the default is the paper's):
MVAE ``reconstruct="all"``, MMVAE ``bound="m_elbo"``, MoPoE ``prior_expert="full_subset"`` (and DMVAE's
``kl_accounting="toolkit"``, :mod:`.private`).

For MMVAE and MoPoE, ``estimator="sampled"`` draws one mixture component per example instead of taking
the bound of every one (an unbiased estimate of the same average, one decoding per example instead of
one per component: what Sutter et al.'s MoPoE code and MultiVae do).

Missing modalities (``present[m]`` False for an example) are left out of the posterior and of the
reconstruction terms, so every model infers from, and trains on, any subset.

A training step reads no tensor on the host (which would make the CPU wait for an accelerator): which
terms exist is decided from the modalities given (:func:`~repscope.models.multimodal.experts.known_presence`);
only where the caller's ``present`` masks leave it open is a mask read, on the CPU, and on an accelerator
such a term is computed and weighted by whether an example has it instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts, objectives
from repscope.models.multimodal.likelihoods import log_likelihood, log_normal, log_prior
from repscope.validation import check_positive_int

OBJECTIVES: tuple[str, ...] = ("elbo", "iwae", "dreg")
SUBSAMPLINGS: tuple[str, ...] = ("singles", "all")  # MVAE's sub-sampled ELBO terms besides the joint one
ESTIMATORS: tuple[str, ...] = ("stratified", "sampled")  # MMVAE / MoPoE: every component, or one per example
RECONSTRUCTIONS: tuple[str, ...] = ("given", "all")  # MVAE: what each sub-sampled subset reconstructs
BOUNDS: tuple[str, ...] = ("mixture", "m_elbo")  # MMVAE: Shi et al.'s mixture bound, or the toolkit's m_elbo
PRIOR_EXPERTS = experts.PRIOR_EXPERTS  # MoPoE: which subsets take the prior expert


@dataclass(frozen=True)
class LikelihoodSpec:
    """How one modality's decoder output is scored: kind, scale and likelihood weight."""

    kind: str = "gaussian"
    scale: float = 0.75
    weight: float = 1.0


class MultimodalVAE(nn.Module):
    """What the models with one shared latent of ``latent_dim`` dimensions share (module docstring).

    A subclass joins the unimodal experts (:meth:`_components`) and sets the objective
    (:meth:`_negative_objective`); encoding, decoding, likelihood estimates and cross-generation are
    common.

    Parameters
    ----------
    encoders, decoders : dict of str to torch.nn.Module
        One per modality (same keys, in the modality order used everywhere).
    likelihoods : dict of str to LikelihoodSpec
        One per modality.
    latent_dim : int
        Size of the shared latent.
    prior : {"normal", "laplace"}, default="normal"
        Latent prior.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        latent_dim: int,
        prior: str = "normal",
    ) -> None:
        super().__init__()
        if not (set(encoders) == set(decoders) == set(likelihoods)) or not encoders:
            raise InvalidArgumentError("modalities: encoders, decoders and likelihoods must name the same modalities")
        self.modalities = tuple(encoders)
        self.encoders = nn.ModuleDict(encoders)
        self.decoders = nn.ModuleDict(decoders)
        self.likelihoods = dict(likelihoods)
        self.latent_dim = int(latent_dim)
        self.prior = prior

    # -- inference --------------------------------------------------------------------------

    def _present(self, inputs: dict[str, torch.Tensor], present: dict[str, torch.Tensor] | None) -> torch.Tensor:
        batch = next(t.shape[0] for name, t in inputs.items() if name in self.modalities)
        device = next(iter(self.parameters())).device  # built there: no host-device copy
        rows = []
        for name in self.modalities:
            if name not in inputs:
                rows.append(torch.zeros(batch, dtype=torch.bool, device=device))
            elif present is not None and name in present:
                rows.append(present[name].to(device=device, dtype=torch.bool))
            else:
                rows.append(torch.ones(batch, dtype=torch.bool, device=device))
        return torch.stack(rows)

    def encode(
        self, inputs: dict[str, torch.Tensor], present: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The unimodal experts, stacked.

        Parameters
        ----------
        inputs : dict of str to torch.Tensor
            Batches of the modalities given (a modality left out is missing for every example).
        present : dict of str to torch.Tensor, optional
            bool ``(B,)`` per modality: which examples have it.

        Returns
        -------
        mu, logvar : torch.Tensor
            ``(E, B, D)``; zeros for a modality not given.
        present : torch.Tensor
            bool ``(E, B)``.
        """
        mask = self._present(inputs, present)
        batch = mask.shape[1]
        reference = next(iter(self.parameters()))
        mus, logvars = [], []
        for name in self.modalities:
            if name in inputs:
                mu, logvar = self.encoders[name](inputs[name])
            else:
                mu = logvar = torch.zeros(batch, self.latent_dim, dtype=reference.dtype, device=reference.device)
            mus.append(mu)
            logvars.append(logvar)
        return torch.stack(mus), torch.stack(logvars), mask

    def posterior(
        self, inputs: dict[str, torch.Tensor], present: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Components of ``q(z | X)``: ``(C, B, D)`` means and log-variances and bool ``(C, B)`` availability.

        MVAE: one component (the product with the prior expert); MMVAE: one per modality; MoPoE: one per
        subset (:meth:`_components` of each subclass).

        Parameters
        ----------
        inputs, present
            As for :meth:`encode`.

        Returns
        -------
        (torch.Tensor, torch.Tensor, torch.Tensor)
            The mixture's components and where they are available (a mixture is uniform over them).
        """
        return self._components(*self.encode(inputs, present))

    def _components(
        self, mu: torch.Tensor, logvar: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The mixture components of ``q(z | X)`` from the stacked experts ``(E, B, D)`` and ``mask`` ``(E, B)``."""
        raise NotImplementedError

    def _components_known(self, known: tuple[bool | None, ...]) -> tuple[bool | None, ...]:
        """Per component of :meth:`_components`, whether every example has it (True), none (False) or its
        mask decides (None), from the modalities' :func:`~repscope.models.multimodal.experts.known_presence`."""
        raise NotImplementedError

    def decode(self, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every modality's decoder output for latents ``z`` (``(..., D)``; leading dims are flattened)."""
        lead = z.shape[:-1]
        flat = z.reshape(-1, z.shape[-1])
        out = {}
        for name in self.modalities:
            decoded = self.decoders[name](flat)
            out[name] = decoded.reshape(*lead, *decoded.shape[1:])
        return out

    # -- objectives -------------------------------------------------------------------------

    def _modality_log_likelihood(
        self, name: str, output: torch.Tensor, inputs: dict[str, torch.Tensor], masks: dict, weighted: bool = True
    ) -> torch.Tensor:
        """``log p(x_name | z)`` with its likelihood weight, ``(K, B)`` for ``output`` with leading ``(K, B)``."""
        spec = self.likelihoods[name]
        observed = inputs[name]
        target = observed.expand(output.shape[0], *observed.shape)  # one per sample of z
        feature_mask = masks.get(name)
        if feature_mask is not None:
            feature_mask = feature_mask.expand(output.shape[0], *feature_mask.shape)
        return log_likelihood(
            spec.kind,
            output,
            target,
            scale=spec.scale,
            weight=spec.weight if weighted else 1.0,
            mask=feature_mask,
            batch_dims=2,
        )

    def _log_likelihoods(
        self,
        outputs: dict[str, torch.Tensor],
        inputs: dict[str, torch.Tensor],
        mask: torch.Tensor,
        masks: dict,
        weighted: bool = True,
    ) -> torch.Tensor:
        """``sum_m present_m log p(x_m | z)``, shape ``(K, B)`` for outputs with leading ``(K, B)``; ``weighted``
        applies the training's likelihood weights (a log-likelihood estimate leaves them out)."""
        total = None
        for index, name in enumerate(self.modalities):
            if name not in inputs:
                continue
            value = self._modality_log_likelihood(name, outputs[name], inputs, masks, weighted)
            value = value * mask[index].to(value.dtype)
            total = value if total is None else total + value
        return total

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
        """The training loss: minus the model's objective, averaged over the batch.

        Parameters
        ----------
        inputs, present
            As for :meth:`encode`.
        objective : {"elbo", "iwae", "dreg"}, default="elbo"
            ELBO with ``beta`` (K samples averaged), IWAE with K samples, or its DReG estimator.
        k : int, default=1
            Samples of z per example and component.
        beta : float, default=1.0
            KL weight (ELBO only).
        feature_masks : dict of str to torch.Tensor, optional
            bool masks of counted features per modality (caption padding).
        targets : dict of str to torch.Tensor, optional
            What a modality's likelihood scores, when it differs from the encoder's input (a caption
            whose padding the decoder must learn to write as spaces).
        generator : torch.Generator, optional
            Source of the reparameterisation noise.

        Returns
        -------
        torch.Tensor
            Scalar loss.
        """
        if objective not in OBJECTIVES:
            raise InvalidArgumentError(f"objective: must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        k = check_positive_int(k, "k")
        feature_masks = feature_masks or {}
        mu, logvar, mask = self.encode(inputs, present)
        known = experts.known_presence(self.modalities, inputs, present, mask.shape[1])
        scored = {**inputs, **{name: value for name, value in (targets or {}).items() if name in inputs}}
        return self._negative_objective(mu, logvar, mask, scored, feature_masks, objective, k, beta, generator, known)

    def _negative_objective(self, mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, known):
        """Minus the model's objective, averaged over the batch, from the stacked experts (:meth:`encode`);
        ``known``: :func:`~repscope.models.multimodal.experts.known_presence` of the modalities."""
        raise NotImplementedError

    @staticmethod
    def _log_mixture_density(z, c_mu, c_logvar, available, detach):
        """``log (1/|X|) sum_{m present} q(z | x_m)`` at ``z`` ``(K, B, D)``."""
        if detach:
            c_mu, c_logvar = c_mu.detach(), c_logvar.detach()
        per_component = log_normal(z[:, None], c_mu[None], c_logvar[None])  # (K, C, B)
        per_component = per_component.masked_fill(~available[None], float("-inf"))
        return torch.logsumexp(per_component, 1) - torch.log(available.sum(0).to(z.dtype)).clamp(min=0)

    @staticmethod
    def _sample_mixture(c_mu, c_logvar, available, k, generator):
        """``K`` samples per example of the uniform mixture of the available components, and their log-density;
        drawn on the generator's device (the model's without one)."""
        source = generator.device if generator is not None else c_mu.device
        weights = available.T.to(device=source, dtype=torch.float64)  # (B, C)
        component = torch.multinomial(weights, k, replacement=True, generator=generator).T.to(c_mu.device)
        batch = torch.arange(c_mu.shape[1], device=c_mu.device)
        mu, logvar = c_mu[component, batch], c_logvar[component, batch]  # (K, B, D)
        noise = experts.random_normal(tuple(mu.shape), generator, mu.dtype, mu.device)
        z = mu + torch.exp(0.5 * logvar) * noise
        return z, MultimodalVAE._log_mixture_density(z, c_mu, c_logvar, available, False)

    def posterior_mean(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The mean of ``q(z | X)`` from the given modalities, ``(B, D)`` (a mixture's: its components' average)."""
        c_mu, _, available = self.posterior(inputs)
        weights = available.to(c_mu.dtype)[..., None]
        return (c_mu * weights).sum(0) / weights.sum(0).clamp(min=1)

    @torch.no_grad()
    def log_likelihood_weights(
        self,
        inputs: dict[str, torch.Tensor],
        scored: dict[str, torch.Tensor],
        k: int,
        feature_masks: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Log importance weights ``log p(X_S | z_k) + log p(z_k) - log q(z_k | X_G)``, ``(K, B)``.

        ``z_k`` are drawn from the model's posterior given the modalities ``inputs`` (``X_G``); the scored
        modalities ``X_S`` are ``scored`` (their likelihood targets). ``logsumexp_k - log K`` of the weights
        is the importance-sampled estimate of ``log p(X_S)`` (Burda et al. 2016), tighter as K grows.

        Parameters
        ----------
        inputs : dict of str to torch.Tensor
            The modalities the posterior sees.
        scored : dict of str to torch.Tensor
            The modalities whose likelihood is estimated (as their likelihood reads them).
        k : int
            Samples per example.
        feature_masks : dict of str to torch.Tensor, optional
            Counted features per scored modality.
        generator : torch.Generator, optional
            Source of the samples.

        Returns
        -------
        torch.Tensor
            ``(K, B)``.
        """
        c_mu, c_logvar, available = self.posterior(inputs)
        z, log_q = self._sample_mixture(c_mu, c_logvar, available, int(k), generator)
        everywhere = torch.ones(len(self.modalities), z.shape[1], dtype=torch.bool, device=z.device)
        log_px = self._log_likelihoods(self.decode(z), scored, everywhere, feature_masks or {}, weighted=False)
        return log_px + log_prior(self.prior, z) - log_q

    # -- generation -------------------------------------------------------------------------

    @torch.no_grad()
    def reconstruct(
        self,
        inputs: dict[str, torch.Tensor],
        present: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
        use_mean: bool = True,
    ) -> dict[str, torch.Tensor]:
        """Decoder outputs of every modality from the given ones (cross-generation when some are missing).

        Parameters
        ----------
        inputs, present
            As for :meth:`encode`.
        generator : torch.Generator, optional
            Source of the component choice (and of z when ``use_mean`` is False).
        use_mean : bool, default=True
            Decode the chosen component's mean rather than a sample.

        Returns
        -------
        dict of str to torch.Tensor
            ``(B, ...)`` decoder outputs per modality.
        """
        c_mu, c_logvar, available = self.posterior(inputs, present)
        component = experts.choose_present(available, generator)
        batch = torch.arange(c_mu.shape[1], device=c_mu.device)
        mu, logvar = c_mu[component, batch], c_logvar[component, batch]
        z = mu if use_mean else experts.reparameterise(mu, logvar, generator)
        return self.decode(z)


class ProductOfExpertsVAE(MultimodalVAE):
    """MVAE (Wu & Goodman 2018): the product of the experts with the prior expert, sub-sampled ELBO terms.

    Parameters
    ----------
    encoders, decoders, likelihoods, latent_dim, prior
        As for :class:`MultimodalVAE`.
    subsampling : {"singles", "all"}, default="singles"
        The ELBO terms besides the joint one: each single modality, or every proper non-empty subset.
    reconstruct : {"given", "all"}, default="given"
        What each sub-sampled subset's ELBO reconstructs. ``"given"``: only the modalities of the subset
        (Wu & Goodman 2018, eq. 7, the terms ``ELBO(x_i)``). ``"all"``: every present modality, decoded from
        the subset's product of experts, so that e.g. text alone -> image is trained directly; this is the
        CdSprites+ authors' toolkit (gabinsane/multimodal-vae-comparison,
        ``multimodal_compare/models/mmvae_models.py``, ``POE.objective``: for each subset of
        ``utils.subsample_input_modalities`` (every non-empty subset, the full one included: our
        ``subsampling="all"``) the likelihood of every modality's full data, minus ``beta`` times the KL of
        the subset's product, the subsets' losses summed with weight one, as here). With ``"all"`` an
        example counts in a subset's term only when it has one of the subset's modalities.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        latent_dim: int,
        prior: str = "normal",
        subsampling: str = "singles",
        reconstruct: str = "given",
    ) -> None:
        if subsampling not in SUBSAMPLINGS:
            raise InvalidArgumentError(f"subsampling: must be one of {', '.join(SUBSAMPLINGS)}, got {subsampling!r}")
        if reconstruct not in RECONSTRUCTIONS:
            raise InvalidArgumentError(f"reconstruct: must be one of {', '.join(RECONSTRUCTIONS)}, got {reconstruct!r}")
        super().__init__(encoders, decoders, likelihoods, latent_dim, prior)
        self.subsampling = subsampling
        self.subset_reconstruction = reconstruct

    def _components(self, mu, logvar, mask):
        joint_mu, joint_logvar = experts.product_of_experts(mu, logvar, mask)
        return joint_mu[None], joint_logvar[None], torch.ones_like(mask[:1])

    def _components_known(self, known):
        return (any(state is not False for state in known),)  # the product: every example has it

    def training_subsets(self) -> list[tuple[int, ...]]:
        """MVAE's sub-sampled subsets besides the joint one: each single modality (``singles``, Wu & Goodman
        2018), or every proper non-empty subset (``all``; the same for two modalities)."""
        count = len(self.modalities)
        if self.subsampling == "singles":
            return [(index,) for index in range(count)]
        return [subset for subset in experts.subsets(count) if len(subset) < count]

    def _negative_objective(self, mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, known):
        # the joint posterior plus each sub-sampled subset, each reconstructing what it was given (or every
        # present modality with ``reconstruct="all"``)
        terms = [self._component_objective(mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator)]
        for subset in self.training_subsets():
            only = torch.stack([mask[i] if i in subset else torch.zeros_like(mask[i]) for i in range(len(mask))])
            # a subset no example has is left out: known from the modalities given, else read from the
            # masks on the CPU; on an accelerator its term is kept and weighted by whether an example has it
            has_rows = experts.any_known([known[i] for i in subset])
            if has_rows is None and experts.may_read(only):
                has_rows = bool(only.any(0).any())
            if has_rows is False:
                continue
            if self.subset_reconstruction == "all":
                term = self._component_objective(
                    mu, logvar, only, inputs, feature_masks, objective, k, beta, generator, reconstructed=mask
                )
                term = term * only.any(0).to(term.dtype)  # an example with none of the subset's modalities
            else:
                term = self._component_objective(mu, logvar, only, inputs, feature_masks, objective, k, beta, generator)
            terms.append(term if has_rows else term * only.any().to(term.dtype))
        return -torch.stack([t.mean() for t in terms]).sum()

    def _component_objective(
        self, mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, reconstructed=None
    ):
        """MVAE: the bound of the product of the experts in ``mask`` (with the prior expert), per example,
        reconstructing the modalities in ``reconstructed`` (default: those in ``mask``)."""
        joint_mu, joint_logvar = experts.product_of_experts(mu, logvar, mask)
        z = experts.reparameterise(joint_mu, joint_logvar, generator, k)  # (K, B, D)
        outputs = self.decode(z)
        log_px = self._log_likelihoods(outputs, inputs, mask if reconstructed is None else reconstructed, feature_masks)
        log_pz = log_prior(self.prior, z)
        if objective == "dreg":
            log_qz = log_normal(z, joint_mu.detach(), joint_logvar.detach())
            return objectives.dreg(objectives.log_importance_weights(log_px, log_pz, log_qz), z)
        log_qz = log_normal(z, joint_mu, joint_logvar)
        if objective == "iwae":
            return objectives.iwae(objectives.log_importance_weights(log_px, log_pz, log_qz))
        return objectives.elbo(log_px, log_pz, log_qz, beta)


class MixtureVAE(MultimodalVAE):
    """What MMVAE and MoPoE share: a uniform mixture posterior whose every component reconstructs every
    modality, stratified over the components or one drawn per example.

    Parameters
    ----------
    encoders, decoders, likelihoods, latent_dim, prior
        As for :class:`MultimodalVAE`.
    estimator : {"stratified", "sampled"}, default="stratified"
        The bound of every mixture component, or of one drawn per example (cheaper).
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        latent_dim: int,
        prior: str = "normal",
        estimator: str = "stratified",
    ) -> None:
        if estimator not in ESTIMATORS:
            raise InvalidArgumentError(f"estimator: must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
        super().__init__(encoders, decoders, likelihoods, latent_dim, prior)
        self.estimator = estimator

    def _negative_objective(self, mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, known):
        # the components from the experts already encoded (encoding again would run every encoder twice)
        components_mu, components_logvar, available = self._components(mu, logvar, mask)
        return -self._mixture_objective(
            components_mu,
            components_logvar,
            available,
            mask,
            inputs,
            feature_masks,
            objective,
            k,
            beta,
            generator,
            self._components_known(known),
        ).mean()

    def _log_posterior_density(self, z, chosen, c_mu, c_logvar, available, detach):
        """``log q(z | X)`` in the bound of ``z`` drawn from the component ``chosen``; ``detach`` (DReG) stops
        its gradient to the posterior's parameters."""
        raise NotImplementedError

    def _mixture_objective(
        self, c_mu, c_logvar, available, mask, inputs, feature_masks, objective, k, beta, generator, components_known
    ):
        """MMVAE / MoPoE, every modality reconstructed: stratified over the available components (the
        average of their bounds), or with ``estimator="sampled"`` one component drawn per example (an
        unbiased estimate of that average with one decoding instead of one per component).
        ``components_known``: :meth:`_components_known`, which spares reading ``available``."""
        if self.estimator == "sampled":
            # a component every example has: each example has one to draw, nothing to check
            component = experts.choose_present(available, generator, check=True not in components_known)
            batch = torch.arange(c_mu.shape[1], device=c_mu.device)
            chosen = (c_mu[component, batch], c_logvar[component, batch])
            return self._component_bound(
                chosen, c_mu, c_logvar, available, mask, inputs, feature_masks, objective, k, beta, generator
            )
        total = torch.zeros(c_mu.shape[1], dtype=c_mu.dtype, device=c_mu.device)
        count = available.sum(0).to(c_mu.dtype)
        for c in range(c_mu.shape[0]):
            # a component no example has is left out: known from the modalities given, else read on the
            # CPU; on an accelerator it is computed, and its bound weighted by ``available[c]`` (all zero)
            has_rows = components_known[c]
            if has_rows is None and experts.may_read(available):
                has_rows = bool(available[c].any())
            if has_rows is False:
                continue
            value = self._component_bound(
                (c_mu[c], c_logvar[c]),
                c_mu,
                c_logvar,
                available,
                mask,
                inputs,
                feature_masks,
                objective,
                k,
                beta,
                generator,
            )
            total = total + value * available[c].to(value.dtype)
        return total / count.clamp(min=1)

    def _component_bound(
        self, chosen, c_mu, c_logvar, available, mask, inputs, feature_masks, objective, k, beta, generator
    ):
        """The bound of ``z`` drawn from one component ``chosen = (mu, logvar)`` (``(B, D)`` each), per example."""
        z = experts.reparameterise(chosen[0], chosen[1], generator, k)  # (K, B, D)
        outputs = self.decode(z)
        log_px = self._log_likelihoods(outputs, inputs, mask, feature_masks)
        log_pz = log_prior(self.prior, z)
        detach = objective == "dreg"
        log_qz = self._log_posterior_density(z, chosen, c_mu, c_logvar, available, detach)
        if objective == "elbo":
            return objectives.elbo(log_px, log_pz, log_qz, beta)
        weights = objectives.log_importance_weights(log_px, log_pz, log_qz)
        return objectives.dreg(weights, z) if detach else objectives.iwae(weights)


class MixtureOfExpertsVAE(MixtureVAE):
    """MMVAE (Shi et al. 2019): the uniform mixture of the unimodal experts (module docstring).

    Parameters
    ----------
    encoders, decoders, likelihoods, latent_dim, prior, estimator
        As for :class:`MixtureVAE`.
    bound : {"mixture", "m_elbo"}, default="mixture"
        ``"mixture"``: Shi et al.'s bound, ``log q(z | X)`` the mixture density (ELBO, IWAE or DReG).
        ``"m_elbo"``: the objective the CdSprites+ authors' toolkit trains MMVAE on (obj ``elbo``;
        gabinsane/multimodal-vae-comparison, ``multimodal_compare/models/mmvae_models.py``, ``MOE.objective``
        and ``MOE.forward``, with ``models/objectives.py``, ``BaseObjective.elbo``), per example, for two
        modalities ``r, d`` with one sample ``z_m ~ q(z | x_m)`` each::

            m_elbo = 1/2 * sum_r [ log p(x_r | z_r) + w_rd log p(x_r | z_d) ] - T * beta / 2 * sum_r KL_r
            w_rd = exp( log q(sg(z_d) | x_r) - sg(log q(sg(z_d) | x_d)) )

        where ``log p`` carries the modality's likelihood weight (the toolkit's ``llik_scaling``),
        ``KL_r = KL(q(z | x_r) || N(0, I))`` in closed form, ``sg`` stops the gradient (the weight's sample
        is detached, so the weight trains ``q(z | x_r)`` only; the cross term ``log p(x_r | z_d)`` keeps its
        gradient through ``z_d``), and ``T = 4``: ``BaseObjective.elbo`` subtracts ``beta`` times the
        summed KLs from each of the four stacked likelihood terms (a broadcast), so every KL is weighted
        ``4 beta / 2 = 2 beta``. The toolkit sums the loss over the batch; here it is averaged (its value
        divided by the batch size). An example lacking a modality drops the terms that need it (the toolkit
        trains on complete pairs only). Defined for two modalities, the normal prior, the ``elbo``
        objective with ``k = 1`` (the toolkit's K) and the stratified estimator (the toolkit has no other);
        other combinations are refused.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        latent_dim: int,
        prior: str = "normal",
        estimator: str = "stratified",
        bound: str = "mixture",
    ) -> None:
        if bound not in BOUNDS:
            raise InvalidArgumentError(f"bound: must be one of {', '.join(BOUNDS)}, got {bound!r}")
        super().__init__(encoders, decoders, likelihoods, latent_dim, prior, estimator)
        if bound == "m_elbo":
            if len(self.modalities) != 2:
                raise InvalidArgumentError(
                    f"bound: m_elbo is the toolkit's objective for two modalities, got {len(self.modalities)}"
                )
            if prior != "normal" or estimator != "stratified":
                raise InvalidArgumentError(
                    f"bound: m_elbo takes prior='normal' and estimator='stratified' (its closed-form KL and "
                    f"every modality's sample), got prior={prior!r}, estimator={estimator!r}"
                )
        self.bound = bound

    def _negative_objective(self, mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, known):
        if self.bound == "mixture":
            return super()._negative_objective(
                mu, logvar, mask, inputs, feature_masks, objective, k, beta, generator, known
            )
        if objective != "elbo" or k != 1:
            raise InvalidArgumentError(
                f"bound: m_elbo trains on the elbo objective with k = 1 (the toolkit's), got {objective!r}, k = {k}"
            )
        return -self._toolkit_m_elbo(mu, logvar, mask, inputs, feature_masks, beta, generator).mean()

    def _toolkit_m_elbo(self, mu, logvar, mask, inputs, feature_masks, beta, generator):
        """The toolkit's m_elbo per example (class docstring), ``(B,)``."""
        count = len(self.modalities)
        presence = mask.to(mu.dtype)  # (E, B)
        samples = [experts.reparameterise(mu[m], logvar[m], generator, 1) for m in range(count)]  # (1, B, D) each
        decoded = [self.decode(z) for z in samples]
        likelihood = torch.zeros(mu.shape[1], dtype=mu.dtype, device=mu.device)
        stacked_terms = 0
        for r, name in enumerate(self.modalities):
            for d in range(count):
                if d == r:
                    continue
                stacked_terms += 2  # the toolkit stacks the own and the cross term for each pair
                if name not in inputs:
                    continue
                own = self._modality_log_likelihood(name, decoded[r][name], inputs, feature_masks)[0]
                cross = self._modality_log_likelihood(name, decoded[d][name], inputs, feature_masks)[0]
                z_d = samples[d].detach()[0]
                log_weight = log_normal(z_d, mu[r], logvar[r]) - log_normal(z_d, mu[d], logvar[d]).detach()
                # an example lacking r or d has no cross term: its weight is not taken (exp could overflow)
                both = mask[r] & mask[d]
                weight = torch.exp(log_weight.masked_fill(~both, 0.0))
                likelihood = likelihood + presence[r] * own + both.to(mu.dtype) * weight * cross
        # closed-form KL(N(mu, exp(logvar)) || N(0, I)), summed over the latent dimensions
        divergence = 0.5 * (torch.exp(logvar) + mu.pow(2) - 1.0 - logvar).sum(-1)  # (E, B)
        divergence = (divergence * presence).sum(0)
        return (likelihood - stacked_terms * beta * divergence) / count

    def _components(self, mu, logvar, mask):
        return mu, logvar, mask

    def _components_known(self, known):
        return known

    def _log_posterior_density(self, z, chosen, c_mu, c_logvar, available, detach):
        return self._log_mixture_density(z, c_mu, c_logvar, available, detach)


class MixtureOfProductsVAE(MixtureVAE):
    """MoPoE (Sutter et al. 2021): the uniform mixture over the non-empty subsets of their experts' product.

    Parameters
    ----------
    encoders, decoders, likelihoods, latent_dim, prior, estimator
        As for :class:`MixtureVAE`.
    prior_expert : {"none", "full_subset"}, default="none"
        ``"none"``: each subset's posterior is the product of its experts alone (Sutter et al. 2021, eq. 6).
        ``"full_subset"``: the subset of every modality also takes the prior expert ``N(0, I)``, as the
        CdSprites+ authors' toolkit does (gabinsane/multimodal-vae-comparison,
        ``multimodal_compare/models/mmvae_models.py``, ``MoPOE.poe_fusion``);
        :func:`~repscope.models.multimodal.experts.mixture_of_products`. It changes the posterior used for
        inference and generation as well as the loss.
    """

    def __init__(
        self,
        encoders: dict[str, nn.Module],
        decoders: dict[str, nn.Module],
        likelihoods: dict[str, LikelihoodSpec],
        latent_dim: int,
        prior: str = "normal",
        estimator: str = "stratified",
        prior_expert: str = "none",
    ) -> None:
        if prior_expert not in PRIOR_EXPERTS:
            raise InvalidArgumentError(f"prior_expert: must be one of {', '.join(PRIOR_EXPERTS)}, got {prior_expert!r}")
        super().__init__(encoders, decoders, likelihoods, latent_dim, prior, estimator)
        self.prior_expert = prior_expert

    def _components(self, mu, logvar, mask):
        return experts.mixture_of_products(mu, logvar, mask, prior_expert=self.prior_expert)

    def _components_known(self, known):
        return tuple(experts.all_known([known[i] for i in subset]) for subset in experts.subsets(len(known)))

    def _log_posterior_density(self, z, chosen, c_mu, c_logvar, available, detach):
        # MoPoE's KL term is taken per subset (an upper bound of the mixture's; Sutter et al. 2021)
        mu_c, logvar_c = (chosen[0].detach(), chosen[1].detach()) if detach else chosen
        return log_normal(z, mu_c, logvar_c)
