"""Network in Network (Lin et al., 2013), the CIFAR-10 model, one of the five classifiers of the Raw
Zero-Shot comparison (Vargas & Su).

The network takes float images ``(B, C, H, W)`` in [0, 1] (28x28 grey digits and 32x32 colour CIFAR
images, any size of at least 12 pixels) and returns ``(B, num_outputs)`` logits.

References
----------
M. Lin, Q. Chen and S. Yan, "Network in network", arXiv:1312.4400, 2013 (Section 4.2, CIFAR-10; the
layer sizes are those of the authors' published Caffe model).
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.models.morpho.baselines import check_flag, check_image_shape, check_outputs, check_positive, scaled_maps

# per mlpconv block: (kernel, padding) of its spatial convolution and the maps of its three layers;
# the last block's last layer has num_outputs maps instead
BLOCKS = (
    (5, 2, (192, 160, 96)),
    (5, 2, (192, 192, 192)),
    (3, 1, (192, 192, None)),
)


class NetworkInNetwork(nn.Module):
    """Three mlpconv blocks (a spatial convolution followed by two 1x1 convolutions, the "micro
    network") and global average pooling; no fully connected layer.

    Layers (every convolution followed by ReLU): 5x5 convolution to 192 maps (padding 2), 1x1 to 160,
    1x1 to 96, 3x3 max pooling with stride 2, dropout 0.5; 5x5 convolution to 192 (padding 2), 1x1 to
    192, 1x1 to 192, 3x3 average pooling with stride 2, dropout 0.5; 3x3 convolution to 192 (padding
    1), 1x1 to 192, 1x1 to ``num_outputs``; global average pooling to ``(B, num_outputs)``. The
    poolings round the output size up, as Caffe's do: 32x32 images give 16x16 and 8x8 maps, 28x28
    digits 14x14 and 7x7.

    As in the authors' model, the last 1x1 convolution is followed by a ReLU before the averaging: the
    logits are non-negative.

    Deviations, each a parameter:

    * ``batch_norm=True`` (default) puts batch normalisation between every convolution and its ReLU
      (the convolutions then have no bias, which the normalisation's shift replaces). The paper
      trained the plain network with SGD and hand-tuned learning-rate drops; without normalisation
      it is notoriously hard to train with Adam in few epochs, and the Raw Zero-Shot study trains it
      11 times. The output convolution is normalised too: behind the published ReLU a class map that
      is negative everywhere for every image is a dead class (zero logit, zero gradient, for good),
      which we saw in short trainings of narrow networks; normalisation re-centres each class map.
      Measured on 1,000 MNIST digits, width 0.25, Adam at 3e-3, 2 epochs, two seeds: test accuracy
      0.88 and 0.82 with the output normalised, 0.71 and 0.60 without. ``batch_norm=False`` is the
      published network.
    * ``width`` multiplies the 192 / 160 / 96 maps (rounded, at least 1), to shrink the network for
      CPU studies; 1.0 is the published size.
    * ``dropout=False`` removes the two dropout layers.

    Parameters (``C`` input channels, ``K`` outputs, published widths, ``batch_norm=False``):
    ``(C*192*25 + 192) + (192*160 + 160) + (160*96 + 96) + (96*192*25 + 192) + 2*(192*192 + 192)
    + (192*192*9 + 192) + (192*192 + 192) + (192*K + K)``: 966,986 for CIFAR-10. With batch
    normalisation the nine convolutions lose their ``1,408 + K`` biases and gain ``2 * (1,408 + K)``
    normalisation weights: 968,404 for CIFAR-10.

    Parameters
    ----------
    num_outputs : int, default=10
        Logits (classes); at least 1.
    image_shape : tuple of int, default=(1, 28, 28)
        ``(C, H, W)`` of the input images, sides of at least 12 pixels.
    width : float, default=1.0
        Multiplier of the published maps.
    batch_norm : bool, default=True
        Batch normalisation after each convolution.
    dropout : bool, default=True
        The paper's dropout 0.5 after the first two blocks.
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
        layers: list[nn.Module] = []
        for block, (kernel, padding, sizes) in enumerate(BLOCKS):
            for position, maps in enumerate(sizes):
                maps = self.num_outputs if maps is None else scaled_maps(maps, width)
                size, pad = (kernel, padding) if position == 0 else (1, 0)
                layers.append(nn.Conv2d(channels, maps, size, padding=pad, bias=not batch_norm))
                layers += [nn.BatchNorm2d(maps), nn.ReLU()] if batch_norm else [nn.ReLU()]
                channels = maps
            if block == 0:
                layers.append(nn.MaxPool2d(3, stride=2, ceil_mode=True))
            elif block == 1:
                layers.append(nn.AvgPool2d(3, stride=2, ceil_mode=True))
            if block < 2 and dropout:
                layers.append(nn.Dropout(0.5))
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)


__all__ = ["NetworkInNetwork"]
