"""Per-modality likelihoods and the latent priors of the multimodal VAEs.

A likelihood turns a decoder's output into ``log p(x_m | z)`` per example, summed over the modality's
features and multiplied by the modality's likelihood scaling ``lambda_m`` (the weight that balances an
image of 12,288 values against a caption of a few dozen characters; Shi et al. 2019 scale by feature
counts, Daunhawer et al. use fixed weights). Modalities:

* ``gaussian``: decoder gives the mean; fixed scale ``sigma`` (default 0.75 as in the reference toolkit's
  images): ``log N(x; mu, sigma^2)``;
* ``laplace``: decoder gives the location; fixed scale ``b``: ``log Laplace(x; mu, b)``;
* ``bernoulli``: decoder gives the mean ``p`` in [0, 1] (as every image network does: a sigmoid output);
  ``x`` in [0, 1]: ``x log p + (1 - x) log(1 - p)``, ``p`` clipped to [1e-6, 1 - 1e-6];
* ``categorical``: decoder gives ``(..., C)`` logits; ``x`` holds class indices (labels) or one-hot rows
  of the logits' shape (caption characters); positions where ``mask`` is False (padding) count zero.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from repscope.errors import InvalidArgumentError

LIKELIHOODS: tuple[str, ...] = ("gaussian", "laplace", "bernoulli", "categorical")
PRIORS: tuple[str, ...] = ("normal", "laplace")
BERNOULLI_EPS = 1e-6  # a mean of exactly 0 or 1 would give an infinite loss on a wrong pixel


def _sum_features(values: torch.Tensor, batch_dims: int) -> torch.Tensor:
    return values.reshape(*values.shape[:batch_dims], -1).sum(-1)


def log_likelihood(
    kind: str,
    output: torch.Tensor,
    target: torch.Tensor,
    *,
    scale: float = 0.75,
    weight: float = 1.0,
    mask: torch.Tensor | None = None,
    batch_dims: int = 1,
) -> torch.Tensor:
    """``weight * log p(x | z)`` of one modality, summed over its features.

    Parameters
    ----------
    kind : {"gaussian", "laplace", "bernoulli", "categorical"}
        The likelihood (module docstring).
    output : torch.Tensor
        Decoder output: means / locations / logits of the target's shape, or for ``categorical`` the
        target's shape plus a class axis.
    target : torch.Tensor
        The observed modality (class indices for ``categorical``).
    scale : float, default=0.75
        Standard deviation (``gaussian``) or scale ``b`` (``laplace``); > 0.
    weight : float, default=1.0
        Likelihood scaling ``lambda_m`` of the modality.
    mask : torch.Tensor, optional
        bool, the target's shape: features that count (False: padding).
    batch_dims : int, default=1
        Leading dimensions kept (1: ``(B,)`` results; 2 for ``(K, B)`` importance samples).

    Returns
    -------
    torch.Tensor
        The log-likelihood per example, shape ``target.shape[:batch_dims]``.

    Raises
    ------
    InvalidArgumentError
        On an unknown kind, a non-positive scale or mismatched shapes.
    """
    if kind not in LIKELIHOODS:
        raise InvalidArgumentError(f"likelihood: must be one of {', '.join(LIKELIHOODS)}, got {kind!r}")
    if kind in ("gaussian", "laplace") and not scale > 0:
        raise InvalidArgumentError(f"likelihood scale: must be > 0, got {scale!r}")
    one_hot = kind == "categorical" and tuple(target.shape) == tuple(output.shape)
    expected = tuple(output.shape[:-1]) if kind == "categorical" and not one_hot else tuple(output.shape)
    if tuple(target.shape) != expected:
        raise InvalidArgumentError(
            f"likelihood {kind}: target shape {tuple(target.shape)} does not match decoder output {tuple(output.shape)}"
        )
    if kind == "gaussian":
        values = -0.5 * ((target - output) / scale) ** 2 - math.log(scale) - 0.5 * math.log(2 * math.pi)
    elif kind == "laplace":
        values = -(target - output).abs() / scale - math.log(2 * scale)
    elif kind == "bernoulli":
        probability = output.clamp(BERNOULLI_EPS, 1.0 - BERNOULLI_EPS)
        values = -F.binary_cross_entropy(probability, target.to(output.dtype), reduction="none")
    elif one_hot:  # one-hot (or soft) targets over the last axis
        values = (target.to(output.dtype) * torch.log_softmax(output, -1)).sum(-1)
    else:
        values = -F.cross_entropy(output.movedim(-1, 1), target.long(), reduction="none")
    if mask is not None:
        values = values * mask.to(values.dtype)
    return weight * _sum_features(values, batch_dims)


def log_prior(kind: str, z: torch.Tensor) -> torch.Tensor:
    """``log p(z)`` under a standard prior, summed over the latent dimensions.

    ``normal``: ``N(0, I)``; ``laplace``: ``Laplace(0, 1)`` per dimension.

    Parameters
    ----------
    kind : {"normal", "laplace"}
        The prior.
    z : torch.Tensor
        ``(..., D)`` latents.

    Returns
    -------
    torch.Tensor
        ``z.shape[:-1]``.
    """
    if kind == "normal":
        return (-0.5 * z**2 - 0.5 * math.log(2 * math.pi)).sum(-1)
    if kind == "laplace":
        return (-z.abs() - math.log(2.0)).sum(-1)
    raise InvalidArgumentError(f"prior: must be one of {', '.join(PRIORS)}, got {kind!r}")


def log_normal(z: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """``log N(z; mu, exp(logvar))`` summed over the last dimension (a posterior's density).

    Parameters
    ----------
    z, mu, logvar : torch.Tensor
        Broadcastable ``(..., D)`` tensors.

    Returns
    -------
    torch.Tensor
        ``(...)``.
    """
    return (-0.5 * (z - mu) ** 2 * torch.exp(-logvar) - 0.5 * logvar - 0.5 * math.log(2 * math.pi)).sum(-1)
