"""Per-modality networks of the multimodal VAEs, chosen by name independently of the model.

A factory ``factory(shape, latent_dim, **params) -> (encoder, decoder)`` builds a pair: the encoder maps
a batch of the modality to ``(mu, logvar)``, each ``(B, latent_dim)``; the decoder maps ``(B, latent_dim)``
to what the modality's likelihood reads (image means in [0, 1], caption logits, label logits).

* ``fc-image``: the CdSprites+ paper's image nets (Sec. A.2: four fully connected layers, ReLU).
* ``conv-image``: the convolutional nets of :mod:`repscope.models.networks` (64x64 colour or 28x28 grey).
* ``text-transformer``: a character-level Transformer for one-hot captions ``(B, L, V)``; padding (all-zero
  rows) is masked out of attention and of the pooled code. The paper used 8 layers, 2 heads, 1024
  hidden features, dropout 0.1; the defaults are small enough for a CPU.
* ``label``: an embedding of class indices ``(B,)`` and a linear decoder to class logits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from repscope.errors import InvalidArgumentError, shown
from repscope.models.networks import build_autoencoder, default_architecture


class FCImageEncoder(nn.Module):
    """Flattened image -> three hidden ReLU layers -> ``(mu, logvar)`` (four linear layers in all)."""

    def __init__(self, shape: tuple[int, ...], latent_dim: int, hidden: int = 512) -> None:
        super().__init__()
        size = math.prod(shape)
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(size, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 2 * latent_dim),
        )

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.net(images).chunk(2, dim=-1)
        return mu, logvar


class FCImageDecoder(nn.Module):
    """``z`` -> three hidden ReLU layers -> image means in [0, 1] of ``shape``."""

    def __init__(self, shape: tuple[int, ...], latent_dim: int, hidden: int = 512) -> None:
        super().__init__()
        self.shape = tuple(shape)
        self.net = nn.Sequential(
            nn.Linear(latent_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, math.prod(shape)),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(z)).reshape(len(z), *self.shape)


def _transformer(width: int, layers: int, heads: int, hidden: int, dropout: float) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(width, heads, hidden, dropout, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class TextEncoder(nn.Module):
    """One-hot captions ``(B, L, V)`` -> Transformer encoder -> mean over the characters -> ``(mu, logvar)``."""

    def __init__(
        self,
        shape: tuple[int, int],
        latent_dim: int,
        width: int = 64,
        layers: int = 2,
        heads: int = 2,
        hidden: int = 128,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        length, vocabulary = shape
        self.embed = nn.Linear(vocabulary, width)
        self.position = nn.Parameter(torch.zeros(length, width))
        self.transformer = _transformer(width, layers, heads, hidden, dropout)
        self.head = nn.Linear(width, 2 * latent_dim)

    def forward(self, text: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        padding = text.abs().sum(-1) == 0  # (B, L): all-zero rows past the caption's end
        padding = padding & ~padding.all(-1, keepdim=True)  # an empty caption attends to everything
        hidden = self.transformer(self.embed(text) + self.position, src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)
        mu, logvar = self.head(pooled).chunk(2, dim=-1)
        return mu, logvar


class TextDecoder(nn.Module):
    """``z`` -> one token per position -> Transformer encoder -> character logits ``(B, L, V)``."""

    def __init__(
        self,
        shape: tuple[int, int],
        latent_dim: int,
        width: int = 64,
        layers: int = 2,
        heads: int = 2,
        hidden: int = 128,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        length, vocabulary = shape
        self.length, self.width = length, width
        self.expand = nn.Linear(latent_dim, width)
        self.position = nn.Parameter(torch.randn(length, width) * 0.02)
        self.transformer = _transformer(width, layers, heads, hidden, dropout)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        tokens = self.expand(z).unsqueeze(1) + self.position  # (B, L, width)
        return self.head(self.transformer(tokens))


class LabelEncoder(nn.Module):
    """Class indices ``(B,)`` -> embedding -> ``(mu, logvar)``."""

    def __init__(self, num_classes: int, latent_dim: int, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Embedding(num_classes, width), nn.ReLU(), nn.Linear(width, 2 * latent_dim))

    def forward(self, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.net(labels.long()).chunk(2, dim=-1)
        return mu, logvar


def _fc_image(shape: tuple[int, ...], latent_dim: int, hidden: int = 512) -> tuple[nn.Module, nn.Module]:
    return FCImageEncoder(shape, latent_dim, hidden), FCImageDecoder(shape, latent_dim, hidden)


def _conv_image(
    shape: tuple[int, ...], latent_dim: int, architecture: str | None = None
) -> tuple[nn.Module, nn.Module]:
    return build_autoencoder(architecture or default_architecture(shape), shape, latent_dim)


def _text_transformer(shape: tuple[int, ...], latent_dim: int, **params: Any) -> tuple[nn.Module, nn.Module]:
    if len(shape) != 2:
        raise InvalidArgumentError(f"network 'text-transformer': needs (length, vocabulary) captions, got {shape}")
    return TextEncoder(tuple(shape), latent_dim, **params), TextDecoder(tuple(shape), latent_dim, **params)


def _label(shape: tuple[int, ...], latent_dim: int, num_classes: int, width: int = 64) -> tuple[nn.Module, nn.Module]:
    return LabelEncoder(num_classes, latent_dim, width), nn.Sequential(
        nn.Linear(latent_dim, width), nn.ReLU(), nn.Linear(width, num_classes)
    )


MODALITY_NETWORKS: dict[str, Callable[..., tuple[nn.Module, nn.Module]]] = {
    "fc-image": _fc_image,
    "conv-image": _conv_image,
    "text-transformer": _text_transformer,
    "label": _label,
}


def build_modality_networks(
    name: str, shape: tuple[int, ...], latent_dim: int, **params: Any
) -> tuple[nn.Module, nn.Module]:
    """The encoder and decoder ``name`` for a modality of ``shape``.

    Parameters
    ----------
    name : str
        A key of :data:`MODALITY_NETWORKS`.
    shape : tuple of int
        Shape of one example of the modality (``(C, H, W)``, ``(L, V)``, ``()`` for labels).
    latent_dim : int
        Size of the latent the pair encodes to and decodes from.
    **params
        The network's own parameters (widths, layers; ``num_classes`` for ``label``).

    Returns
    -------
    (torch.nn.Module, torch.nn.Module)
        Encoder and decoder.

    Raises
    ------
    InvalidArgumentError
        On an unknown name or parameter.
    """
    if name not in MODALITY_NETWORKS:
        raise InvalidArgumentError(
            f"network: unknown {shown(name)}; registered: {', '.join(sorted(MODALITY_NETWORKS))}"
        )
    try:
        return MODALITY_NETWORKS[name](tuple(shape), int(latent_dim), **params)
    except TypeError as exc:
        raise InvalidArgumentError(f"network {name!r}: {exc}") from None
