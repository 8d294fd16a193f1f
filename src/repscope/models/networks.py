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

A classifier network may also be a user's own: an import path ``"pkg.module:factory"`` or
``"path/to/file.py:factory"`` (:func:`import_network`). The factory is called as
``factory(num_classes=num_outputs, **params)`` (``num_outputs=`` when that is what it takes; ``image_shape=``
too when it takes it) and must return an ``nn.Module`` taking float images ``(B, C, H, W)`` in [0, 1]. A run
directory records the import path (a file path made absolute), not the code: the module must still be
importable (on ``sys.path``, or the file where it was) when the run is read back.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
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


# what an imported factory may be told the number of classes by (the first it takes is used)
COUNT_PARAMETERS = ("num_classes", "num_outputs")
# set by the data, never by network_params
_DATA_PARAMETERS = (*COUNT_PARAMETERS, "image_shape")


def is_import_path(name: str) -> bool:
    """Whether the network name ``name`` is an import path (``"pkg.module:factory"``, ``"file.py:factory"``)
    rather than a key of :data:`CLASSIFIERS` (no registered name holds a ``:``)."""
    return isinstance(name, str) and ":" in name


def recorded_network(name: str) -> str:
    """``name`` as a run records it: a ``file.py:factory`` path made absolute (so that the run is read back
    from any working directory); a module path or a registered name as it is."""
    if not is_import_path(name):
        return name
    module, _, attribute = name.rpartition(":")
    if module.endswith(".py"):
        return f"{Path(module).expanduser().resolve()}:{attribute}"
    return name


def _module_from_file(path: Path, name: str) -> Any:
    # one module object per file (its absolute path names it), so that rebuilding a network re-uses the
    # classes of the first import instead of executing the file again
    resolved = path.expanduser().resolve()
    module_name = f"repscope_network_{resolved.stem}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:10]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if not resolved.is_file():
        raise InvalidArgumentError(f"network {shown(name)}: no file {resolved}")
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise InvalidArgumentError(f"network {shown(name)}: {resolved} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        failure = f"{type(exc).__name__}: {exc}"
        raise InvalidArgumentError(f"network {shown(name)}: importing {resolved} failed: {failure}") from None
    return module


def import_network(name: str) -> Callable[..., Any]:
    """The factory an import-path network name points to.

    Parameters
    ----------
    name : str
        ``"pkg.module:factory"`` (the module importable from ``sys.path``) or ``"path/to/file.py:factory"``.

    Returns
    -------
    callable
        The factory (called by :func:`build_classifier`).

    Raises
    ------
    InvalidArgumentError
        Naming the network: no ``factory`` after the ``:``, a module or file that cannot be imported, no such
        attribute, or an attribute that is not callable.
    """
    module_path, _, attribute = name.rpartition(":")
    if not module_path or not attribute.isidentifier():
        raise InvalidArgumentError(f"network {shown(name)}: expected 'pkg.module:factory' or 'file.py:factory'")
    if module_path.endswith(".py"):
        module = _module_from_file(Path(module_path), name)
    else:
        try:
            module = importlib.import_module(module_path)
        except ImportError as exc:
            raise InvalidArgumentError(
                f"network {shown(name)}: cannot import {module_path!r} ({exc}); is it on sys.path / PYTHONPATH?"
            ) from None
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise InvalidArgumentError(f"network {shown(name)}: {module_path!r} has no callable {attribute!r}")
    return factory


def _factory_parameters(factory: Callable[..., Any]) -> tuple[dict[str, Any], bool]:
    """An imported factory's keyword parameters with their defaults, and whether it takes ``**kwargs``."""
    parameters = inspect.signature(factory).parameters.values()
    named = {
        p.name: (None if p.default is p.empty else p.default)
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    return named, any(p.kind is p.VAR_KEYWORD for p in parameters)


def _build_imported(name: str, image_shape: tuple[int, ...], num_outputs: int, params: Mapping[str, Any]) -> nn.Module:
    """Call the factory of an import path as the module docstring says; check that it made a module."""
    factory = import_network(name)
    accepted, any_keyword = _factory_parameters(factory)
    count = next((key for key in COUNT_PARAMETERS if key in accepted), None)
    if count is None:
        raise InvalidArgumentError(
            f"network {shown(name)}: the factory must take num_classes (or num_outputs), the number of classes; "
            f"it takes {', '.join(accepted) or 'no named parameters'}"
        )
    clash = sorted(key for key in params if key in _DATA_PARAMETERS)
    unknown = sorted(str(key) for key in params if key not in accepted)
    if clash or (unknown and not any_keyword):
        key = (clash or unknown)[0]
        why = "is set from the data" if clash else f"the factory takes {', '.join(accepted)}"
        raise InvalidArgumentError(f"network {shown(name)}: parameter {key!r} in network_params: {why}")
    kwargs = {count: int(num_outputs), **params}
    if "image_shape" in accepted:
        kwargs["image_shape"] = tuple(image_shape)
    try:
        network = factory(**kwargs)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"network {shown(name)}: {exc}") from None
    if not isinstance(network, nn.Module):
        raise InvalidArgumentError(
            f"network {shown(name)}: the factory must return a torch.nn.Module, it returned a {type(network).__name__}"
        )
    return network


def network_parameters(name: str) -> dict[str, Any]:
    """The keyword parameters the classifier network ``name`` takes, with their defaults.

    Parameters
    ----------
    name : str
        A registered classifier network (a key of :data:`CLASSIFIERS`) or an import path
        (:func:`import_network`; its factory's parameters less ``num_classes``, ``num_outputs`` and
        ``image_shape``, None for those without a default).

    Returns
    -------
    dict
        ``{parameter: default}``; empty for a network without parameters.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered or its import path does not import.
    """
    if is_import_path(name):
        accepted, _ = _factory_parameters(import_network(name))
        return {key: value for key, value in accepted.items() if key not in _DATA_PARAMETERS}
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
        A registered network (a key of :data:`CLASSIFIERS`) or an import path ``"pkg.module:factory"`` /
        ``"file.py:factory"`` (module docstring: called with ``num_classes=num_outputs``).
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
        network does not take or a bad value; also for an image shape or output count it cannot take. For
        an import path also when it does not import, its factory takes neither ``num_classes`` nor
        ``num_outputs``, or returns something other than an ``nn.Module``.
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"network_params: expected a mapping of parameter names to values, got {params!r}")
    if is_import_path(name):
        return _build_imported(name, tuple(image_shape), num_outputs, params)
    factory = _lookup(CLASSIFIERS, name, "network")
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
    "import_network",
    "is_import_path",
    "network_parameters",
    "recorded_network",
    "build_autoencoder",
    "default_architecture",
]
