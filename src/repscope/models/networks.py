"""Networks by name: what a task's ``network`` / ``architecture`` parameter picks.

A task takes its networks as arguments (by name, so a config and a checkpoint's hyper-parameters can
say which), built for the image shape of the data it trains on: a beta-VAE on 64x64 colour images is
a config change, not a new class. A new network is one module plus one line here.

* :data:`CLASSIFIERS` -- ``factory(image_shape, num_outputs) -> nn.Module`` mapping float images
  ``(B, C, H, W)`` to ``(B, num_outputs)`` logits or values;
* :data:`AUTOENCODERS` -- ``factory(image_shape, latent_dim) -> (encoder, decoder)``: the encoder maps
  images to ``(mean, log_var)``, the decoder maps ``(B, latent_dim)`` codes to images, with
  ``logits=True`` to Bernoulli logits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.classifiers import CNN5, MLP, VGG13BN, LeNet5
from repscope.models.conv64 import Conv64Decoder, Conv64Encoder
from repscope.models.mnist_gan import Encoder, Generator
from repscope.models.sprite_cnn import AttributeCNN


def _lenet5(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return LeNet5(num_outputs, image_shape=image_shape)


def _cnn5(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return CNN5(num_outputs, image_shape=image_shape)


def _vgg13_bn(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return VGG13BN(num_outputs, image_shape=image_shape)


def _mlp(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return MLP(num_outputs, image_shape=image_shape)


def _attribute_cnn(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return AttributeCNN(num_outputs, image_shape=image_shape)


def _infogan_mnist(image_shape: tuple[int, ...], latent_dim: int) -> tuple[nn.Module, nn.Module]:
    if len(image_shape) != 3 or tuple(image_shape[1:]) != (28, 28) or image_shape[0] not in (1, 3):
        raise InvalidArgumentError(
            f"architecture 'infogan-mnist': takes 28x28 images, grey (1, 28, 28) or colour (3, 28, 28), got "
            f"images {tuple(image_shape)}; use 'conv64' for 64x64 images"
        )
    return Encoder(latent_dim, image_shape[0]), Generator(latent_dim, image_shape[0])


def _conv64(image_shape: tuple[int, ...], latent_dim: int) -> tuple[nn.Module, nn.Module]:
    return Conv64Encoder(latent_dim, image_shape), Conv64Decoder(latent_dim, image_shape)


CLASSIFIERS: dict[str, Callable[..., nn.Module]] = {
    "lenet5": _lenet5,
    "cnn5": _cnn5,
    "vgg13-bn": _vgg13_bn,
    "mlp": _mlp,
    "attribute-cnn": _attribute_cnn,
}
AUTOENCODERS: dict[str, Callable[..., tuple[nn.Module, nn.Module]]] = {
    "infogan-mnist": _infogan_mnist,
    "conv64": _conv64,
}


def _lookup(table: dict[str, Any], name: str, what: str) -> Any:
    if name not in table:
        raise InvalidArgumentError(f"{what}: unknown network {name!r}; registered: {', '.join(sorted(table))}")
    return table[name]


def build_classifier(name: str, image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    """The classifier network ``name`` for images of ``image_shape`` ``(C, H, W)``."""
    return _lookup(CLASSIFIERS, name, "network")(tuple(image_shape), int(num_outputs))


def build_autoencoder(name: str, image_shape: tuple[int, ...], latent_dim: int) -> tuple[nn.Module, nn.Module]:
    """The encoder and decoder ``name`` for images of ``image_shape`` ``(C, H, W)``."""
    return _lookup(AUTOENCODERS, name, "architecture")(tuple(image_shape), int(latent_dim))


def default_architecture(image_shape: tuple[int, ...]) -> str:
    """The autoencoder that fits ``image_shape``: ``infogan-mnist`` for 28x28 images (grey or colour, as
    PolyMNIST), ``conv64`` for 64x64."""
    return "infogan-mnist" if tuple(image_shape[1:]) == (28, 28) else "conv64"


__all__ = ["CLASSIFIERS", "AUTOENCODERS", "build_classifier", "build_autoencoder", "default_architecture"]
