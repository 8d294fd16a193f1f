"""Training objectives of the multimodal VAEs: ELBO with beta, IWAE and its DReG estimator.

All take per-sample log-densities already evaluated by the model, so they serve every model:
``log_likelihood`` = ``log p(X | z)`` (summed over the modalities, each with its likelihood scaling),
``log_prior`` = ``log p(z)``, ``log_posterior`` = ``log q(z | X)``, each ``(K, B)`` for ``K`` samples
of ``z`` per example (``K = 1`` for the ELBO).
"""

from __future__ import annotations

import math

import torch

from repscope.errors import InvalidArgumentError


def _check(*tensors: torch.Tensor) -> None:
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise InvalidArgumentError(f"log-densities: expected equal (K, B) shapes, got {sorted(shapes)}")


def elbo(
    log_likelihood: torch.Tensor, log_prior: torch.Tensor, log_posterior: torch.Tensor, beta: float = 1.0
) -> torch.Tensor:
    """Evidence lower bound with a weight on the KL term (Higgins et al. 2017), per example.

    ``ELBO_beta = mean_k [ log p(X | z_k) - beta (log q(z_k | X) - log p(z_k)) ]``, a Monte-Carlo estimate
    of ``E_q log p(X | z) - beta KL(q(z | X) || p(z))``.

    Parameters
    ----------
    log_likelihood, log_prior, log_posterior : torch.Tensor
        ``(K, B)`` log-densities at the ``K`` samples ``z_k`` of each example.
    beta : float, default=1.0
        Weight of the KL term.

    Returns
    -------
    torch.Tensor
        ``(B,)`` the bound of each example (maximise it).
    """
    _check(log_likelihood, log_prior, log_posterior)
    return (log_likelihood - beta * (log_posterior - log_prior)).mean(0)


def log_importance_weights(
    log_likelihood: torch.Tensor, log_prior: torch.Tensor, log_posterior: torch.Tensor
) -> torch.Tensor:
    """``log w_k = log p(X | z_k) + log p(z_k) - log q(z_k | X)``, shape ``(K, B)``.

    Parameters
    ----------
    log_likelihood, log_prior, log_posterior : torch.Tensor
        ``(K, B)`` log-densities.

    Returns
    -------
    torch.Tensor
        ``(K, B)``.
    """
    _check(log_likelihood, log_prior, log_posterior)
    return log_likelihood + log_prior - log_posterior


def iwae(log_weights: torch.Tensor) -> torch.Tensor:
    """Importance-weighted bound (Burda et al. 2016, eq. 8), per example.

    ``IWAE_K = log (1/K) sum_k w_k``, computed as ``logsumexp_k(log w_k) - log K``; with ``K = 1`` it is
    the ELBO (beta = 1).

    Parameters
    ----------
    log_weights : torch.Tensor
        ``(K, B)`` log importance weights (:func:`log_importance_weights`).

    Returns
    -------
    torch.Tensor
        ``(B,)``.
    """
    if log_weights.dim() != 2:
        raise InvalidArgumentError(f"log_weights: expected (K, B), got {tuple(log_weights.shape)}")
    return torch.logsumexp(log_weights, 0) - math.log(log_weights.shape[0])


def dreg(log_weights: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
    """Surrogate whose gradient is the doubly reparameterised IWAE gradient (Tucker et al. 2019, eq. 5).

    ``log_weights`` must be computed with the posterior's parameters detached in ``log q`` (so that only
    the path through the reparameterised ``z`` reaches the encoder), and from ``latents`` = the ``z_k``.
    With normalised weights ``w~_k = w_k / sum_j w_j`` (no gradient) the surrogate is
    ``sum_k w~_k log w_k``: its gradient for the decoder is the IWAE gradient ``sum_k w~_k d log w_k``,
    and a hook on ``latents`` multiplies the gradient reaching ``z_k`` by ``w~_k`` once more, which gives
    the encoder ``sum_k w~_k^2 (d log w_k / d z_k) (d z_k / d phi)``: unbiased, with a variance that does
    not grow with K (MMVAE's estimator, Shi et al. 2019).

    Parameters
    ----------
    log_weights : torch.Tensor
        ``(K, B)`` log importance weights, with detached posterior parameters in ``log q``.
    latents : torch.Tensor
        ``(K, B, D)`` the reparameterised samples they were computed from.

    Returns
    -------
    torch.Tensor
        ``(B,)`` surrogate values (maximise their sum); its value is not a bound, use :func:`iwae` to
        report one.
    """
    if log_weights.dim() != 2 or latents.shape[:2] != log_weights.shape:
        raise InvalidArgumentError(
            f"dreg: log_weights (K, B) and latents (K, B, D) must agree, got {tuple(log_weights.shape)} and "
            f"{tuple(latents.shape)}"
        )
    with torch.no_grad():
        normalised = torch.softmax(log_weights, 0)
    if latents.requires_grad:
        latents.register_hook(lambda grad: normalised.unsqueeze(-1) * grad)
    return (normalised * log_weights).sum(0)
