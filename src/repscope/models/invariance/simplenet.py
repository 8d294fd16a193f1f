"""CNN5, the ML4ML model repository's MNIST classifier, as the authors' released code defines it.

Zukang-Liao/ML4ML-invariance-testing, ``model.py``, class ``SimpleNet`` (the network
``save_invariance_results.py`` tests for ``--dbname mnist``; the paper's "CNN5"): three unpadded
convolutions and two fully connected layers,

* ``conv1``: 5x5 convolution to 6 maps (28 -> 24), dropout 0.25, ReLU, 2x2 max pooling (24 -> 12);
* ``conv2``: 5x5 convolution to 16 maps (12 -> 8), dropout 0.25, ReLU, 2x2 max pooling (8 -> 4);
* ``conv3``: 3x3 convolution to 32 maps (4 -> 2), dropout 0.25, ReLU;
* ``fc1``: ``32*2*2 = 128 -> 64``, dropout 0.25, ReLU; ``fc2``: ``64 -> num_outputs``.

Dropout sits between each layer and its ReLU, as in the reference's ``forward``. The reference also
builds a ``Dropout(p=0.5)`` that its ``forward`` never calls; it has no weights and is left out here.
The reference takes 1 x 28 x 28 MNIST digits (``fc1`` fixed at 128 inputs); here ``image_shape`` sets
the input channels and ``fc1``'s input size (``32 * h * w`` with ``h = ((H - 4) // 2 - 4) // 2 - 2``),
so sides of at least 24 pixels work. The convolutions are registered in order, so the probes' CONV-1
and CONV-2 are ``conv3`` and ``conv2``: the reference's measured layers ``Conv2d_2`` and ``Conv2d_1``.

``input_range="symmetric"`` reads the [0, 1] images as the reference does, normalised to [-1, 1]
(:mod:`repscope.models.inputs`); the default reads them as served.

Parameters for 1 x 28 x 28 and ``L`` outputs: ``(1*6*25 + 6) + (6*16*25 + 16) + (16*32*9 + 32) +
(128*64 + 64) + (64*L + L)`` = 16,118 for ``L = 10``.
"""

from __future__ import annotations

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.inputs import check_input_range, scaled_inputs
from repscope.validation import check_positive_int


class SimpleNet(nn.Module):
    """The reference CNN5 (``model.py``: ``SimpleNet``) for images of ``image_shape`` ``(C, H, W)``.

    Parameters
    ----------
    num_outputs : int, default 10
        Logits.
    image_shape : tuple of int, default (1, 28, 28)
        One input image; sides of at least 24 pixels.
    input_range : {"unit", "symmetric"}, default "unit"
        ``symmetric``: the images are mapped from [0, 1] to [-1, 1] first, as the reference normalises them.
    """

    DROPOUT = 0.25
    MINIMUM_SIDE = 24

    def __init__(
        self, num_outputs: int = 10, image_shape: tuple[int, ...] = (1, 28, 28), input_range: str = "unit"
    ) -> None:
        super().__init__()
        self.input_range = check_input_range(input_range)
        num_outputs = check_positive_int(num_outputs, "num_outputs")
        shape = tuple(int(s) for s in image_shape)
        if len(shape) != 3 or shape[0] < 1 or min(shape[1:]) < self.MINIMUM_SIDE:
            raise InvalidArgumentError(
                f"image_shape: expected (channels, height, width) with sides of at least {self.MINIMUM_SIDE} "
                f"pixels (three unpadded convolutions and two poolings), got {tuple(image_shape)}"
            )
        channels, height, width = shape
        self.num_outputs = num_outputs
        self.conv1 = nn.Conv2d(channels, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.conv3 = nn.Conv2d(16, 32, 3)
        self.fc1 = nn.Linear(32 * self.final_side(height) * self.final_side(width), 64)
        self.fc2 = nn.Linear(64, self.num_outputs)
        self.dropout = nn.Dropout(p=self.DROPOUT)

    @staticmethod
    def final_side(side: int) -> int:
        """The side of ``conv3``'s maps for an input side: ``((side - 4) // 2 - 4) // 2 - 2``.

        Parameters
        ----------
        side : int
            Input height or width.

        Returns
        -------
        int
        """
        return ((side - 4) // 2 - 4) // 2 - 2

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.dropout(self.conv1(scaled_inputs(images, self.input_range)))))
        x = self.pool(torch.relu(self.dropout(self.conv2(x))))
        x = torch.relu(self.dropout(self.conv3(x)))
        x = torch.relu(self.dropout(self.fc1(x.flatten(1))))
        return self.fc2(x)


__all__ = ["SimpleNet"]
