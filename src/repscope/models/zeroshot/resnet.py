"""The CIFAR residual network of He et al. (2016), ResNet-(6n+2), ResNet-20 by default: one of the
five classifiers of the Raw Zero-Shot comparison (Vargas & Su).

The network takes float images ``(B, C, H, W)`` in [0, 1] (28x28 grey digits and 32x32 colour CIFAR
images, any size of at least 4 pixels) and returns ``(B, num_outputs)`` logits.

References
----------
K. He, X. Zhang, S. Ren and J. Sun, "Deep residual learning for image recognition", CVPR 2016
(Section 4.2, the CIFAR-10 networks).
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.morpho.baselines import check_image_shape, check_outputs, check_positive

STAGES = 3


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch normalisation and a shortcut: ``relu(bn(conv(relu(bn(conv(x)))))
    + shortcut(x))``. The shortcut is the identity when the shape is kept, a 1x1 convolution with the
    block's stride followed by batch normalisation when it changes.

    Parameters
    ----------
    in_maps, out_maps : int
        Feature maps in and out.
    stride : int
        Stride of the first convolution (and of the projection).
    """

    def __init__(self, in_maps: int, out_maps: int, stride: int) -> None:
        super().__init__()
        self.residual = nn.Sequential(
            nn.Conv2d(in_maps, out_maps, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(out_maps),
            nn.ReLU(),
            nn.Conv2d(out_maps, out_maps, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_maps),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_maps != out_maps:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_maps, out_maps, 1, stride=stride, bias=False), nn.BatchNorm2d(out_maps)
            )
        self.activation = nn.ReLU()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.activation(self.residual(features) + self.shortcut(features))


class ResNet(nn.Module):
    """CIFAR ResNet-(6n+2): a 3x3 convolution, three stages of ``n`` basic blocks, global average
    pooling and a linear layer.

    Layers: 3x3 convolution to ``width`` maps (16), batch normalisation, ReLU; stage 1: ``n`` blocks of
    ``width`` maps; stage 2: ``n`` blocks of ``2 * width`` maps, the first with stride 2; stage 3: ``n``
    blocks of ``4 * width`` maps, the first with stride 2 (see :class:`BasicBlock`); global average
    pooling; a linear layer to ``num_outputs``. 32x32 images give 32x32, 16x16 and 8x8 maps, as in the
    paper; 28x28 digits 28x28, 14x14 and 7x7. ``depth = 6n + 2`` counts the weight layers
    (convolutions and the linear layer, not the projections); 20 gives ResNet-20. The convolutions are
    initialised as in He et al. (normal, variance ``2 / fan_out``), the normalisations at scale 1, shift 0.

    Deviation: where the shape changes (the first block of stages 2 and 3) the shortcut is a
    projection (1x1 convolution + batch normalisation, the paper's option B) where the CIFAR
    experiments used option A (the identity, subsampled and zero-padded to the new width), a
    parameter-free shortcut. Projections learnt slightly better in the paper's own comparison (Table 3,
    B against A on ImageNet) and keep the shortcut a plain layer for any ``width``; they add
    ``2*w*w + 8*w*w`` weights and ``2 * (2*w + 4*w)`` normalisation weights (``w = width``): 2,752 for
    ResNet-20.

    Parameters (``C`` input channels, ``K`` outputs, ``w = width``, ``n = (depth - 2) / 6``):
    stem ``C*w*9 + 2*w``; stage 1 ``n * (2 * w*w*9 + 4*w)``; stage 2 ``(w*2w*9 + 2w*2w*9 + 4*2w)
    + (w*2w + 2*2w) + (n - 1) * (2 * 2w*2w*9 + 4*2w)``; stage 3 the same from ``2w`` to ``4w``;
    read-out ``4w*K + K``. ResNet-20 with ``w = 16``: 272,474 for CIFAR-10 (the paper's 0.27M).

    Parameters
    ----------
    num_outputs : int, default=10
        Logits (classes); at least 1.
    image_shape : tuple of int, default=(1, 28, 28)
        ``(C, H, W)`` of the input images, sides of at least 4 pixels.
    depth : int, default=20
        ``6n + 2`` with ``n >= 1`` (8, 14, 20, 32, 44, 56, 110 ...).
    width : int, default=16
        Maps of the first stage (the paper's 16); the others have twice and four times as many.
    """

    def __init__(
        self, num_outputs: int = 10, image_shape: tuple[int, ...] = (1, 28, 28), depth: int = 20, width: int = 16
    ) -> None:
        super().__init__()
        self.num_outputs = check_outputs(num_outputs)
        channels, _, _ = check_image_shape(image_shape, minimum=4)
        depth = check_positive(depth, "depth", integer=True)
        if depth < 8 or (depth - 2) % 6:
            raise InvalidArgumentError(
                f"depth: a CIFAR ResNet has 6n+2 layers (8, 14, 20, 32, 44, 56, 110 ...), got {depth!r}"
            )
        width = check_positive(width, "width", integer=True)
        blocks_per_stage = (depth - 2) // 6
        layers: list[nn.Module] = [
            nn.Conv2d(channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
        ]
        maps = width
        for stage in range(STAGES):
            out_maps = width * 2**stage
            for block in range(blocks_per_stage):
                stride = 2 if stage > 0 and block == 0 else 1
                layers.append(BasicBlock(maps, out_maps, stride))
                maps = out_maps
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Linear(maps, self.num_outputs)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images))


__all__ = ["ResNet", "BasicBlock"]
