"""How multimodal VAEs combine their unimodal posteriors ("experts") into one joint posterior.

Every rule takes the experts of ``E`` modalities as stacked Gaussian parameters ``mu``, ``logvar`` of
shape ``(E, B, D)`` and a presence mask ``(E, B)`` (False: the modality is missing for that example), so
that every model infers from any subset of modalities.

* Product of experts (MVAE, Wu & Goodman 2018): ``q(z | X) ∝ p(z) prod_{m in X} q(z | x_m)``.
* Mixture of experts (MMVAE, Shi et al. 2019): ``q(z | X) = 1/|X| sum_{m in X} q(z | x_m)``.
* Mixture of products of experts (MoPoE, Sutter et al. 2021):
  ``q(z | X) = 1/|P(X)| sum_{S in P(X)} PoE(S)`` over the non-empty subsets ``S`` of the present ones.

No function here reads a tensor's values on the host in a training step: a host read (``bool(t)``,
``t.item()``) stops the CPU until an accelerator has finished every queued kernel. The checks of the
presence masks that need one run where reading costs nothing (:func:`may_read`: tensors on the CPU).
"""

from __future__ import annotations

import itertools

import torch

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int


def may_read(tensor: torch.Tensor) -> bool:
    """Whether a data-dependent input check may read ``tensor`` on the host.

    True on the CPU, where reading costs nothing; False on an accelerator, where it would stall every
    training step until the device has caught up (there such a check is left out), and while tracing.
    """
    return tensor.device.type == "cpu" and not torch.jit.is_tracing()


def random_normal(
    shape: tuple[int, ...], generator: torch.Generator | None, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """Standard normal noise of ``shape`` on ``device``, drawn on ``generator``'s device (a seeded CPU
    generator gives the same numbers whatever the model's device); without a generator, drawn on ``device``
    from its default generator (no host-to-device copy in a training step)."""
    source = generator.device if generator is not None else device
    return torch.randn(shape, generator=generator, dtype=dtype, device=source).to(device)


def known_presence(
    modalities: tuple[str, ...], inputs: dict, present: dict | None, batch: int
) -> tuple[bool | None, ...]:
    """What the modalities given say, without reading a mask, about each modality's presence.

    Parameters
    ----------
    modalities : tuple of str
        The model's modalities, in order.
    inputs : dict
        The modalities given (a modality left out is missing for every example).
    present : dict, optional
        The caller's presence masks by modality.
    batch : int
        Examples in the batch.

    Returns
    -------
    tuple of (bool or None)
        Per modality: True when every example has it (given, without a mask), False when none has (not
        given, or an empty batch), None when its ``present`` mask decides.
    """
    if batch == 0:
        return tuple(False for _ in modalities)
    return tuple(
        False if name not in inputs else (None if present is not None and name in present else True)
        for name in modalities
    )


def all_known(states: list[bool | None]) -> bool | None:
    """Whether every example has all of the modalities of :func:`known_presence` ``states``: True, False or
    None (masks decide)."""
    return False if False in states else (True if all(states) else None)


def any_known(states: list[bool | None]) -> bool | None:
    """Whether some example has one of the modalities of :func:`known_presence` ``states``: True, False or
    None (masks decide)."""
    return True if True in states else (False if all(state is False for state in states) else None)


def _check(mu: torch.Tensor, logvar: torch.Tensor, present: torch.Tensor | None) -> torch.Tensor:
    if mu.dim() != 3 or mu.shape != logvar.shape:
        raise InvalidArgumentError(
            f"experts: mu and logvar must both be (modalities, batch, latent), got {tuple(mu.shape)} and "
            f"{tuple(logvar.shape)}"
        )
    if present is None:
        return torch.ones(mu.shape[:2], dtype=torch.bool, device=mu.device)
    if present.shape != mu.shape[:2]:
        raise InvalidArgumentError(f"present: expected shape {tuple(mu.shape[:2])}, got {tuple(present.shape)}")
    return present.to(torch.bool)


def product_of_experts(
    mu: torch.Tensor, logvar: torch.Tensor, present: torch.Tensor | None = None, prior_expert: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Product of Gaussian experts (Wu & Goodman 2018, eq. 5; with the prior N(0, I) as one expert).

    With precisions ``T_m = 1 / var_m`` of the present experts (and ``T_0 = 1``, ``mu_0 = 0`` for the
    prior expert)::

        var = 1 / sum_m T_m,        mu = var * sum_m T_m mu_m

    Parameters
    ----------
    mu, logvar : torch.Tensor
        ``(E, B, D)`` means and log-variances of the ``E`` experts.
    present : torch.Tensor, optional
        bool ``(E, B)``; a missing expert is left out of the product. Default: all present.
    prior_expert : bool, default=True
        Include the prior expert N(0, I) (MVAE does; then an example with no modality gets the prior).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(B, D)`` mean and log-variance of the product.

    Raises
    ------
    InvalidArgumentError
        On mismatched shapes, or when an example has no expert at all and ``prior_expert`` is False (read
        only from a ``present`` on the CPU, :func:`may_read`; on an accelerator such an example gets NaN).
    """
    given = present
    present = _check(mu, logvar, present)
    weight = present.unsqueeze(-1).to(mu.dtype)
    precision = torch.exp(-logvar) * weight
    total = precision.sum(0)
    weighted_mean = (precision * mu).sum(0)
    if prior_expert:
        total = total + 1.0
    else:
        # without a mask every expert is present (nothing to read); a mask is read on the CPU only
        no_experts = mu.shape[0] == 0 and mu.shape[1] > 0
        if no_experts or (given is not None and may_read(present) and bool((~present.any(0)).any())):
            raise InvalidArgumentError("present: an example has no modality and the prior expert is excluded")
    variance = 1.0 / total
    return weighted_mean * variance, torch.log(variance)


def reparameterise(
    mu: torch.Tensor, logvar: torch.Tensor, generator: torch.Generator | None = None, samples: int | None = None
) -> torch.Tensor:
    """Reparameterised Gaussian samples ``z = mu + exp(logvar / 2) * eps``, ``eps ~ N(0, I)``.

    Parameters
    ----------
    mu, logvar : torch.Tensor
        Means and log-variances, any shape.
    generator : torch.Generator, optional
        Source of ``eps``.
    samples : int, optional
        Draw this many samples along a new leading axis (``(samples, *mu.shape)``); default one, ``mu``'s shape.

    Returns
    -------
    torch.Tensor
        Samples, with gradients to ``mu`` and ``logvar``.
    """
    shape = tuple(mu.shape) if samples is None else (int(samples), *mu.shape)
    noise = random_normal(shape, generator, mu.dtype, mu.device)
    return mu + torch.exp(0.5 * logvar) * noise


def choose_present(present: torch.Tensor, generator: torch.Generator | None = None, check: bool = True) -> torch.Tensor:
    """For each example, one present expert drawn uniformly: the component of a mixture of experts.

    The draw is ``torch.multinomial(weights, 1)``'s own algorithm (``argmax(weights / q)``, ``q ~ Exp(1)``,
    the same numbers from the same generator) without its validity checks, which read the weights on the
    host.

    Parameters
    ----------
    present : torch.Tensor
        bool ``(E, B)``; every example needs at least one present expert.
    generator : torch.Generator, optional
        Source of randomness (seeded for determinism); the draw happens on its device.
    check : bool, default=True
        Check that every example has a present expert (only where :func:`may_read`); a caller that knows
        it from the modalities given passes False.

    Returns
    -------
    torch.Tensor
        int64 ``(B,)`` expert index of each example, always a present one.

    Raises
    ------
    InvalidArgumentError
        When an example has no present expert (checked on the CPU only; on an accelerator it gets expert 0).
    """
    present = present.to(torch.bool)
    if check and may_read(present) and bool((~present.any(0)).any()):
        raise InvalidArgumentError("present: an example has no modality to draw from")
    source = generator.device if generator is not None else present.device
    weights = present.T.to(device=source, dtype=torch.float64)  # (B, E), uniform over the present experts
    exponential = torch.empty_like(weights).exponential_(1, generator=generator)
    return (weights / exponential).argmax(-1).to(present.device)


def mixture_of_experts_sample(
    mu: torch.Tensor,
    logvar: torch.Tensor,
    present: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One reparameterised sample of a mixture of Gaussian experts (Shi et al. 2019, eq. 3).

    ``z = mu_c + exp(logvar_c / 2) * eps`` with the component ``c`` drawn uniformly among the present
    experts of each example (:func:`choose_present`); gradients flow into the chosen expert only.

    Parameters
    ----------
    mu, logvar : torch.Tensor
        ``(E, B, D)`` experts.
    present : torch.Tensor, optional
        bool ``(E, B)``; default all present.
    generator : torch.Generator, optional
        Source of randomness (component and noise).

    Returns
    -------
    z : torch.Tensor
        ``(B, D)`` samples.
    component : torch.Tensor
        int64 ``(B,)`` the expert each sample came from.
    """
    present = _check(mu, logvar, present)
    component = choose_present(present, generator)
    batch = torch.arange(mu.shape[1], device=mu.device)
    chosen_mu, chosen_logvar = mu[component, batch], logvar[component, batch]
    return reparameterise(chosen_mu, chosen_logvar, generator), component


def subsets(n_modalities: int) -> list[tuple[int, ...]]:
    """The non-empty subsets of ``range(n_modalities)``, by size then lexicographically (MoPoE's P(M)).

    Parameters
    ----------
    n_modalities : int
        Number of modalities (>= 1).

    Returns
    -------
    list of tuple of int
        ``2 ** n_modalities - 1`` subsets.
    """
    n_modalities = check_positive_int(n_modalities, "n_modalities")
    return [s for size in range(1, n_modalities + 1) for s in itertools.combinations(range(n_modalities), size)]


PRIOR_EXPERTS: tuple[str, ...] = ("none", "full_subset")  # where MoPoE's subsets take the prior expert N(0, I)


def mixture_of_products(
    mu: torch.Tensor, logvar: torch.Tensor, present: torch.Tensor | None = None, prior_expert: str = "none"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The components of MoPoE's posterior: one product of experts per subset (Sutter et al. 2021, eq. 6).

    Each subset ``S`` gets ``PoE({q(z | x_m) : m in S})`` (without the prior expert, as the paper defines
    it); a subset holding a missing modality is not a component for that example.

    Parameters
    ----------
    mu, logvar : torch.Tensor
        ``(E, B, D)`` experts.
    present : torch.Tensor, optional
        bool ``(E, B)``; default all present.
    prior_expert : {"none", "full_subset"}, default="none"
        ``"none"``: no subset takes the prior expert (Sutter et al. 2021, eq. 6). ``"full_subset"``: the
        subset of all ``E`` modalities takes the prior expert ``N(0, I)`` as one more factor, the others
        none, as the CdSprites+ authors' toolkit does (gabinsane/multimodal-vae-comparison,
        ``multimodal_compare/models/mmvae_models.py``, ``MoPOE.poe_fusion``: a zero mean and zero
        log-variance expert is appended when the subset holds every modality).

    Returns
    -------
    mu, logvar : torch.Tensor
        ``(S, B, D)`` the components, in the order of :func:`subsets`.
    available : torch.Tensor
        bool ``(S, B)``: whether every modality of the subset is present for the example.
    """
    if prior_expert not in PRIOR_EXPERTS:
        raise InvalidArgumentError(f"prior_expert: must be one of {', '.join(PRIOR_EXPERTS)}, got {prior_expert!r}")
    present = _check(mu, logvar, present)
    parts_mu, parts_logvar, available = [], [], []
    for subset in subsets(mu.shape[0]):
        # rows picked by Python ints, not a list: a list index is a host tensor copied to the device
        inside = torch.stack([present[i] for i in subset]).all(0)
        # compute the product over the subset as if all were present; unavailable rows are masked out
        part_mu, part_logvar = product_of_experts(
            torch.stack([mu[i] for i in subset]),
            torch.stack([logvar[i] for i in subset]),
            None,
            prior_expert=prior_expert == "full_subset" and len(subset) == mu.shape[0],
        )
        parts_mu.append(part_mu)
        parts_logvar.append(part_logvar)
        available.append(inside)
    return torch.stack(parts_mu), torch.stack(parts_logvar), torch.stack(available)
