"""Networks by name: what a task's ``network`` / ``architecture`` parameter picks.

A task takes its networks as arguments (by name, so a config and a checkpoint's hyper-parameters can
say which), built for the image shape of the data it trains on: a beta-VAE on 64x64 colour images is
a config change, not a new class. A new network is one module plus one line here.

* :data:`CLASSIFIERS` -- ``factory(image_shape, num_outputs, **params) -> nn.Module`` mapping float
  images ``(B, C, H, W)`` to ``(B, num_outputs)`` logits or values (class-capsule lengths for
  ``capsnet``); ``params`` are the network's own keyword parameters (a task's ``network_params``, e.g.
  ``{"width": 0.25}`` to shrink a network for a CPU study), the published sizes by default;
* :data:`AUTOENCODERS` -- ``factory(image_shape, latent_dim) -> (encoder, decoder)``: the encoder maps
  images to ``(mean, log_var)``, the decoder maps ``(B, latent_dim)`` codes to images, with
  ``logits=True`` to Bernoulli logits.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from repscope.errors import InvalidArgumentError, shown
from repscope.models.candle.judge_cnn import FactorCNN
from repscope.models.conv64 import Conv64Decoder, Conv64Encoder
from repscope.models.invariance.simplenet import SimpleNet
from repscope.models.morpho.baselines import CNN5, MLP, VGG13BN, LeNet5
from repscope.models.morpho.infogan import Encoder, Generator
from repscope.models.multimodal.judge_cnn import AttributeCNN
from repscope.models.zeroshot.all_conv import AllConvNet
from repscope.models.zeroshot.capsnet import CapsNet
from repscope.models.zeroshot.network_in_network import NetworkInNetwork
from repscope.models.zeroshot.resnet import ResNet


def _lenet5(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return LeNet5(num_outputs, image_shape=image_shape)


def _cnn5(image_shape: tuple[int, ...], num_outputs: int, input_range: str = "unit") -> nn.Module:
    # the ML4ML authors' CNN5 (their model.py: SimpleNet)
    return SimpleNet(num_outputs, image_shape=image_shape, input_range=input_range)


def _cnn5_compact(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    # the network cnn5 named before the reference's was followed (3x3 convolutions, padding 1)
    return CNN5(num_outputs, image_shape=image_shape)


def _vgg13_bn(image_shape: tuple[int, ...], num_outputs: int, input_range: str = "unit") -> nn.Module:
    return VGG13BN(num_outputs, image_shape=image_shape, input_range=input_range)


def _mlp(image_shape: tuple[int, ...], num_outputs: int) -> nn.Module:
    return MLP(num_outputs, image_shape=image_shape)


def _attribute_cnn(
    image_shape: tuple[int, ...], num_outputs: int, first_stride: int = 2, readout: str = "both", width: int = 1
) -> nn.Module:
    return AttributeCNN(num_outputs, image_shape=image_shape, first_stride=first_stride, readout=readout, width=width)


def _factor_cnn(
    image_shape: tuple[int, ...], num_outputs: int, width: int = 16, hidden: int = 256, dropout: float = 0.2
) -> nn.Module:
    return FactorCNN(num_outputs, image_shape=image_shape, width=width, hidden=hidden, dropout=dropout)


def _allconv(
    image_shape: tuple[int, ...], num_outputs: int, width: float = 1.0, batch_norm: bool = True, dropout: bool = True
) -> nn.Module:
    return AllConvNet(num_outputs, image_shape, width=width, batch_norm=batch_norm, dropout=dropout)


def _nin(
    image_shape: tuple[int, ...], num_outputs: int, width: float = 1.0, batch_norm: bool = True, dropout: bool = True
) -> nn.Module:
    return NetworkInNetwork(num_outputs, image_shape, width=width, batch_norm=batch_norm, dropout=dropout)


def _resnet(image_shape: tuple[int, ...], num_outputs: int, depth: int = 20, width: int = 16) -> nn.Module:
    return ResNet(num_outputs, image_shape, depth=depth, width=width)


def _capsnet(
    image_shape: tuple[int, ...],
    num_outputs: int,
    conv_channels: int = 256,
    primary_types: int = 32,
    primary_dim: int = 8,
    class_dim: int = 16,
    routing_iterations: int = 3,
    reconstruction: bool = True,
) -> nn.Module:
    return CapsNet(
        num_outputs,
        image_shape,
        conv_channels=conv_channels,
        primary_types=primary_types,
        primary_dim=primary_dim,
        class_dim=class_dim,
        routing_iterations=routing_iterations,
        reconstruction=reconstruction,
    )


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
    "cnn5-compact": _cnn5_compact,
    "vgg13-bn": _vgg13_bn,
    "mlp": _mlp,
    "attribute-cnn": _attribute_cnn,
    "factor-cnn": _factor_cnn,
    "allconv": _allconv,
    "nin": _nin,
    "resnet": _resnet,
    "capsnet": _capsnet,
}
AUTOENCODERS: dict[str, Callable[..., tuple[nn.Module, nn.Module]]] = {
    "infogan-mnist": _infogan_mnist,
    "conv64": _conv64,
}


def _lookup(table: dict[str, Any], name: str, what: str) -> Any:
    if name not in table:
        raise InvalidArgumentError(f"{what}: unknown network {shown(name)}; registered: {', '.join(sorted(table))}")
    return table[name]


def network_parameters(name: str) -> dict[str, Any]:
    """The keyword parameters the classifier network ``name`` takes, with their defaults.

    Parameters
    ----------
    name : str
        A registered classifier network (a key of :data:`CLASSIFIERS`).

    Returns
    -------
    dict
        ``{parameter: default}``; empty for a network without parameters.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered.
    """
    factory = _lookup(CLASSIFIERS, name, "network")
    return {
        key: parameter.default
        for key, parameter in list(inspect.signature(factory).parameters.items())[2:]
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD or parameter.kind is parameter.KEYWORD_ONLY
    }


def build_classifier(
    name: str, image_shape: tuple[int, ...], num_outputs: int, params: Mapping[str, Any] | None = None
) -> nn.Module:
    """The classifier network ``name`` for images of ``image_shape`` ``(C, H, W)``.

    Parameters
    ----------
    name : str
        A registered network (a key of :data:`CLASSIFIERS`).
    image_shape : tuple of int
        ``(C, H, W)`` of one input image.
    num_outputs : int
        Logits (classes) or regression values.
    params : mapping, optional
        The network's own keyword parameters (:func:`network_parameters`); its defaults, the published
        sizes, for those not given.

    Returns
    -------
    torch.nn.Module
        A new, untrained network.

    Raises
    ------
    InvalidArgumentError
        Naming the network and the key, when ``name`` is not registered, ``params`` holds a key the
        network does not take or a bad value; also for an image shape or output count it cannot take.
    """
    factory = _lookup(CLASSIFIERS, name, "network")
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"network_params: expected a mapping of parameter names to values, got {params!r}")
    accepted = network_parameters(name)
    unknown = sorted(str(key) for key in params if key not in accepted)
    if unknown:
        takes = f"it takes {', '.join(accepted)}" if accepted else "it takes none"
        raise InvalidArgumentError(f"network {name!r}: unknown parameter {unknown[0]!r} in network_params; {takes}")
    try:
        return factory(tuple(image_shape), int(num_outputs), **params)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"network {name!r}: {exc}") from None


def build_autoencoder(name: str, image_shape: tuple[int, ...], latent_dim: int) -> tuple[nn.Module, nn.Module]:
    """The encoder and decoder ``name`` for images of ``image_shape`` ``(C, H, W)``."""
    return _lookup(AUTOENCODERS, name, "architecture")(tuple(image_shape), int(latent_dim))


def default_architecture(image_shape: tuple[int, ...]) -> str:
    """The autoencoder that fits ``image_shape``: ``infogan-mnist`` for 28x28 images (grey or colour, as
    PolyMNIST), ``conv64`` for 64x64."""
    return "infogan-mnist" if tuple(image_shape[1:]) == (28, 28) else "conv64"


__all__ = [
    "CLASSIFIERS",
    "AUTOENCODERS",
    "build_classifier",
    "network_parameters",
    "build_autoencoder",
    "default_architecture",
]
