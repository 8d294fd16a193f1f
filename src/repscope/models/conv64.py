"""Convolutional encoder and decoder for 64x64 images (dSprites, CdSprites+, CANDLE at 64x64).

The architecture of Burgess et al. (2018), *Understanding disentangling in beta-VAE*, which the
widely used disentanglement benchmarks train every VAE with, so that scores compare across papers:

* encoder: four 4x4 convolutions with stride 2 and padding 1 (32, 32, 64, 64 channels, ReLU), halving
  64 -> 32 -> 16 -> 8 -> 4 pixels; fully connected 1,024 -> 256 (ReLU) -> ``2 * latent_dim`` (the
  posterior means and log-variances);
* decoder: fully connected ``latent_dim`` -> 256 -> 1,024 (ReLU), reshaped to 64 x 4 x 4, then four
  4x4 transposed convolutions with stride 2 (64, 32, 32, C channels, ReLU between) back to 64x64.

Images are float ``(B, C, 64, 64)`` in [0, 1]; the decoder returns Bernoulli logits, or their sigmoid.
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

SIDE = 64
HIDDEN = 256


def _check(image_shape: tuple[int, ...], latent_dim: int) -> int:
    if len(image_shape) != 3 or tuple(image_shape[1:]) != (SIDE, SIDE):
        raise InvalidArgumentError(f"image_shape: the 64x64 networks take (C, 64, 64) images, got {tuple(image_shape)}")
    check_positive_int(latent_dim, "latent_dim")
    return int(image_shape[0])


class Conv64Encoder(nn.Module):
    """``forward(images) -> (mean, log_var)``, each ``(B, latent_dim)``."""

    def __init__(self, latent_dim: int, image_shape: tuple[int, ...] = (1, SIDE, SIDE)) -> None:
        super().__init__()
        channels = _check(image_shape, latent_dim)
        layers: list[nn.Module] = []
        for in_channels, out_channels in zip((channels, 32, 32, 64), (32, 32, 64, 64)):
            layers += [nn.Conv2d(in_channels, out_channels, 4, stride=2, padding=1), nn.ReLU()]
        self.conv = nn.Sequential(*layers)
        self.fc = nn.Sequential(nn.Linear(64 * 4 * 4, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 2 * int(latent_dim)))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_var = self.fc(self.conv(images).flatten(1)).chunk(2, dim=1)
        return mean, log_var


class Conv64Decoder(nn.Module):
    """``forward(z, logits=False)`` -> ``(B, C, 64, 64)`` intensities in [0, 1] (or logits)."""

    def __init__(self, latent_dim: int, image_shape: tuple[int, ...] = (1, SIDE, SIDE)) -> None:
        super().__init__()
        channels = _check(image_shape, latent_dim)
        self.fc = nn.Sequential(nn.Linear(int(latent_dim), HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 64 * 4 * 4), nn.ReLU())
        layers: list[nn.Module] = []
        pairs = list(zip((64, 64, 32, 32), (64, 32, 32, channels)))
        for k, (in_channels, out_channels) in enumerate(pairs):
            layers.append(nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1))
            if k < len(pairs) - 1:
                layers.append(nn.ReLU())
        self.deconv = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor, logits: bool = False) -> torch.Tensor:
        out = self.deconv(self.fc(z).view(len(z), 64, 4, 4))
        return out if logits else torch.sigmoid(out)


__all__ = ["Conv64Encoder", "Conv64Decoder"]
