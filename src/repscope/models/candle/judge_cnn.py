"""The factor classifier CG judges counterfactual images with (CANDLE, Sec. 4.2): one factor of a
dSprites or CANDLE image (shape, scale, orientation, position; object, colour, size, rotation, scene,
light).

CG is only as good as its judge, and the judge's hard factors are the fine ones: dSprites' 32 positions
lie 1.2 pixels apart and its six scales change a shape's half-size by 0.9 pixels, and CANDLE's object
size is read against the object's place on the floor. The network therefore keeps the image's full
resolution in its first layer, sees where each pixel is (two coordinate channels, CoordConv: Liu et al.,
2018, "An intriguing failing of convolutional neural networks and the CoordConv solution"), and reads
both where features are and whether they are anywhere before a hidden layer.

The network takes float images ``(B, C, H, W)`` in [0, 1] (sides multiples of 16) and returns
``(B, num_classes)`` logits.
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal.judge_cnn import checked_classes_and_shape
from repscope.validation import check_positive_int


def _block(in_channels: int, out_channels: int, stride: int) -> list[nn.Module]:
    return [
        nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    ]


class FactorCNN(nn.Module):
    """Coordinate channels, five 3x3 convolution blocks and a hidden read-out layer.

    Layers: the image with two coordinate channels (x and y, each -1 to 1 across the image) appended;
    a block of 3x3 convolution (no bias), batch normalisation and ReLU at full resolution to ``width``
    maps, then four such blocks with stride 2 (``width`` -> 2 ``width`` -> 4 ``width`` -> 4 ``width`` ->
    4 ``width``), halving the image each time (64 -> 32 -> 16 -> 8 -> 4 pixels). The read-out joins the
    flattened ``4 width x 4 x 4`` maps (where a feature is) with their maximum over the grid (whether it
    is anywhere), then a ``hidden``-unit ReLU layer with dropout ``dropout`` and a linear layer to the
    logits.

    Parameters
    ----------
    num_classes : int
        Classes of the factor (at least 2).
    image_shape : tuple of int, default=(1, 64, 64)
        ``(channels, height, width)``; sides multiples of 16.
    width : int, default=16
        Maps of the first block.
    hidden : int, default=256
        Units of the hidden read-out layer.
    dropout : float, default=0.2
        Dropout before the last layer, in [0, 1).
    """

    def __init__(
        self,
        num_classes: int,
        image_shape: tuple[int, ...] = (1, 64, 64),
        width: int = 16,
        hidden: int = 256,
        dropout: float = 0.2,
    ) -> None:
        super().__init__()
        shape = checked_classes_and_shape(num_classes, image_shape)
        width, hidden = check_positive_int(width, "width"), check_positive_int(hidden, "hidden")
        if not 0.0 <= float(dropout) < 1.0:
            raise InvalidArgumentError(f"dropout: must be in [0, 1), got {dropout!r}")
        self.num_classes, width = int(num_classes), int(width)
        channels = (shape[0] + 2, width, 2 * width, 4 * width, 4 * width, 4 * width)
        layers: list[nn.Module] = []
        for k, (in_channels, out_channels) in enumerate(zip(channels[:-1], channels[1:])):
            layers += _block(in_channels, out_channels, stride=1 if k == 0 else 2)
        self.features = nn.Sequential(*layers)
        cells = (shape[1] // 16) * (shape[2] // 16)
        self.classifier = nn.Sequential(
            nn.Linear(channels[-1] * (cells + 1), int(hidden)),
            nn.ReLU(inplace=True),
            nn.Dropout(float(dropout)),
            nn.Linear(int(hidden), self.num_classes),
        )
        rows = torch.linspace(-1.0, 1.0, shape[1])
        columns = torch.linspace(-1.0, 1.0, shape[2])
        grid = torch.stack(torch.meshgrid(rows, columns, indexing="ij"))  # (2, H, W): y then x
        self.register_buffer("coordinates", grid[None], persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        coordinates = self.coordinates.to(images.dtype).expand(len(images), -1, -1, -1)
        maps = self.features(torch.cat([images, coordinates], dim=1))
        return self.classifier(torch.cat([maps.flatten(1), maps.amax(dim=(2, 3))], dim=1))


__all__ = ["FactorCNN"]
