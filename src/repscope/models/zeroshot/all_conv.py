"""The All-Convolutional Net (Springenberg et al., 2015, model All-CNN-C), one of the five classifiers
of the Raw Zero-Shot comparison (Vargas & Su).

The network takes float images ``(B, C, H, W)`` in [0, 1] (28x28 grey digits and 32x32 colour CIFAR
images, any size of at least 12 pixels) and returns ``(B, num_outputs)`` logits.

References
----------
J. T. Springenberg, A. Dosovitskiy, T. Brox and M. Riedmiller, "Striving for simplicity: the all
convolutional net", ICLR workshop track, 2015 (Table 2, model All-CNN-C).
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.models.morpho.baselines import check_flag, check_image_shape, check_outputs, check_positive, scaled_maps

# (maps, kernel, stride, padding) of the hidden convolutions; the 1x1 output convolution follows
LAYERS = (
    (96, 3, 1, 1),
    (96, 3, 1, 1),
    (96, 3, 2, 1),  # replaces 3x3 max pooling with stride 2
    (192, 3, 1, 1),
    (192, 3, 1, 1),
    (192, 3, 2, 1),  # replaces 3x3 max pooling with stride 2
    (192, 3, 1, 0),  # no padding: 8x8 -> 6x6 on CIFAR
    (192, 1, 1, 0),
)
STRIDED = (2, 5)  # indices in LAYERS after which dropout 0.5 follows


class AllConvNet(nn.Module):
    """All-CNN-C: convolutions only, no pooling layer and no fully connected layer.

    Layers (every convolution followed by ReLU): dropout 0.2 on the input; 3x3 convolutions to 96, 96
    and 96 maps, the third with stride 2; dropout 0.5; 3x3 convolutions to 192, 192 and 192 maps, the
    third with stride 2; dropout 0.5; a 3x3 convolution to 192 maps without padding; 1x1 convolutions
    to 192 and to ``num_outputs`` maps; global average pooling to ``(B, num_outputs)``. The other 3x3
    convolutions pad by 1 pixel, so 32x32 images give 16x16, 8x8 and 6x6 maps (the paper's "global
    averaging over 6x6"), 28x28 digits 14x14, 7x7 and 5x5.

    As in the paper, the output convolution is followed by a ReLU before the averaging (Table 2 lists
    "1x1 conv. 10 ReLU"): the logits are non-negative.

    Deviations, each a parameter:

    * ``batch_norm=True`` (default) puts batch normalisation between every convolution and its ReLU
      (the convolutions then have no bias, which the normalisation's shift replaces). The paper
      trained the plain network with SGD for 350 epochs; without normalisation it is notoriously hard
      to train with Adam in few epochs, and the Raw Zero-Shot study trains it 11 times. The output
      convolution is normalised too: behind the published ReLU a class map that is negative
      everywhere for every image is a dead class (zero logit, zero gradient, for good); normalisation
      re-centres each class map, so about half of it stays positive. Measured on 1,000 MNIST digits,
      width 0.25, 2 epochs of Adam (batch 32), two seeds: the plain network stayed at chance (loss
      2.30, 7 to 10 of the 10 class maps dead) at learning rates 1e-3 and 3e-3; the normalised one
      reached loss 1.7-1.8 and 0.41 / 0.18 test accuracy at 3e-3, and learns on from there.
      ``batch_norm=False`` is the published network.
    * ``width`` multiplies the 96 / 192 maps (rounded, at least 1), to shrink the network for CPU
      studies; 1.0 is the published size.
    * ``dropout=False`` removes the three dropout layers.

    Parameters (``C`` input channels, ``K`` outputs, published widths, ``batch_norm=False``):
    ``(C*96*9 + 96) + 2*(96*96*9 + 96) + (96*192*9 + 192) + 3*(192*192*9 + 192) + (192*192 + 192)
    + (192*K + K)``: 1,369,738 for CIFAR-10. With batch normalisation the nine convolutions lose their
    ``1,248 + K`` biases and gain ``2 * (1,248 + K)`` normalisation weights: 1,370,996 for CIFAR-10.

    Parameters
    ----------
    num_outputs : int, default=10
        Logits (classes); at least 1.
    image_shape : tuple of int, default=(1, 28, 28)
        ``(C, H, W)`` of the input images, sides of at least 12 pixels.
    width : float, default=1.0
        Multiplier of the published 96 / 192 maps.
    batch_norm : bool, default=True
        Batch normalisation after each convolution.
    dropout : bool, default=True
        The paper's dropout (0.2 on the input, 0.5 after each stride-2 convolution).
    """

    def __init__(
        self,
        num_outputs: int = 10,
        image_shape: tuple[int, ...] = (1, 28, 28),
        width: float = 1.0,
        batch_norm: bool = True,
        dropout: bool = True,
    ) -> None:
        super().__init__()
        self.num_outputs = check_outputs(num_outputs)
        channels, _, _ = check_image_shape(image_shape, minimum=12)
        width = check_positive(width, "width")
        batch_norm, dropout = check_flag(batch_norm, "batch_norm"), check_flag(dropout, "dropout")
        layers: list[nn.Module] = [nn.Dropout(0.2)] if dropout else []
        for index, (maps, kernel, stride, padding) in enumerate(LAYERS):
            maps = scaled_maps(maps, width)
            layers.append(nn.Conv2d(channels, maps, kernel, stride=stride, padding=padding, bias=not batch_norm))
            layers += [nn.BatchNorm2d(maps), nn.ReLU()] if batch_norm else [nn.ReLU()]
            if dropout and index in STRIDED:
                layers.append(nn.Dropout(0.5))
            channels = maps
        layers.append(nn.Conv2d(channels, self.num_outputs, 1, bias=not batch_norm))
        layers += [nn.BatchNorm2d(self.num_outputs), nn.ReLU()] if batch_norm else [nn.ReLU()]
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)


__all__ = ["AllConvNet"]
