"""The generator and discriminator of the InfoGAN MNIST experiments, and the networks built from them.

Castro et al. (Morpho-MNIST, section 4.1) train a GAN, a beta-VAE and InfoGANs "with generator (resp.
decoder) and discriminator architecture as used in the MNIST experiments in Chen et al. (2016), and
encoder mirroring the decoder". That architecture (Chen et al., Appendix C.1):

* generator: FC 1024, BN, ReLU; FC 7x7x128, BN, ReLU; 4x4 up-convolution 64, stride 2, BN, ReLU;
  4x4 up-convolution 1, stride 2, sigmoid -> a 28x28 image of pixel intensities (Bernoulli means);
* discriminator: 4x4 convolution 64, stride 2, leaky ReLU (slope 0.1); 4x4 convolution 128,
  stride 2, BN, leaky ReLU; FC 1024, BN, leaky ReLU; FC to the real/fake logit;
* recognition network Q: shares the discriminator's layers up to the FC 1024 features, then
  FC 128, BN, leaky ReLU and FC to the parameters of the codes' distributions.

Images are float ``(B, 1, 28, 28)`` in [0, 1].
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.models.morpho.infogan_codes import CodeSpec
from repscope.validation import check_positive_int

FEATURES = 1024  # width of the discriminator trunk's output
LEAK = 0.1


class Generator(nn.Module):
    """``(B, input_dim)`` latent vectors -> ``(B, channels, 28, 28)`` images (grey digits: 1 channel).

    ``forward(z, logits=False)`` returns pixel intensities in [0, 1] (the sigmoid of the last
    layer); ``logits=True`` returns the last layer before the sigmoid, for a numerically stable
    Bernoulli likelihood (``binary_cross_entropy_with_logits``).
    """

    def __init__(self, input_dim: int, channels: int = 1) -> None:
        super().__init__()
        self.input_dim = check_positive_int(input_dim, "input_dim")
        self.fc = nn.Sequential(
            nn.Linear(self.input_dim, 1024),
            nn.BatchNorm1d(1024),
            nn.ReLU(),
            nn.Linear(1024, 128 * 7 * 7),
            nn.BatchNorm1d(128 * 7 * 7),
            nn.ReLU(),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),  # 7 -> 14
            nn.ConvTranspose2d(64, int(channels), 4, stride=2, padding=1),  # 14 -> 28
        )

    def forward(self, z: torch.Tensor, logits: bool = False) -> torch.Tensor:
        out = self.deconv(self.fc(z).view(-1, 128, 7, 7))
        return out if logits else torch.sigmoid(out)


class DiscriminatorTrunk(nn.Module):
    """``(B, channels, 28, 28)`` images -> ``(B, 1024)`` features shared by the discriminator, the
    recognition network and (as the same layout) the VAE encoder."""

    def __init__(self, channels: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(int(channels), 64, 4, stride=2, padding=1),
            nn.LeakyReLU(LEAK),  # 28 -> 14
            nn.Conv2d(64, 128, 4, stride=2, padding=1),
            nn.BatchNorm2d(128),
            nn.LeakyReLU(LEAK),  # 14 -> 7
        )
        self.fc = nn.Sequential(nn.Linear(128 * 7 * 7, FEATURES), nn.BatchNorm1d(FEATURES), nn.LeakyReLU(LEAK))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(images).flatten(1))


class Discriminator(nn.Module):
    """``(B, 1, 28, 28)`` images -> ``(B,)`` logits of "real"; ``.trunk`` gives the features."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = DiscriminatorTrunk()
        self.head = nn.Linear(FEATURES, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(images)).squeeze(1)


class Encoder(nn.Module):
    """The VAE encoder, mirroring the generator: the discriminator trunk's layout, then a linear layer
    to the mean and log-variance of a diagonal Gaussian over the latent space.

    ``forward(images) -> (mean, log_var)``, each ``(B, latent_dim)``.
    """

    def __init__(self, latent_dim: int, channels: int = 1) -> None:
        super().__init__()
        self.latent_dim = check_positive_int(latent_dim, "latent_dim")
        self.trunk = DiscriminatorTrunk(channels)
        self.head = nn.Linear(FEATURES, 2 * self.latent_dim)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_var = self.head(self.trunk(images)).chunk(2, dim=1)
        return mean, log_var


class RecognitionHead(nn.Module):
    """InfoGAN's Q network on top of the shared trunk: ``(B, 1024)`` features ->
    ``(B, codes.parameter_dim)`` parameters of the codes' posterior (layout in
    :meth:`CodeSpec.split_parameters`: per categorical code ``K`` logits, per continuous code a mean
    and a log-std, per binary code a logit)."""

    def __init__(self, codes: CodeSpec) -> None:
        super().__init__()
        self.codes = codes
        self.net = nn.Sequential(
            nn.Linear(FEATURES, 128),
            nn.BatchNorm1d(128),
            nn.LeakyReLU(LEAK),
            nn.Linear(128, codes.parameter_dim),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)
