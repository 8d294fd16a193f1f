"""Probes: read signals at named positions of any torch model with forward hooks (ML4ML, Sec. III).

A position is ``CONF`` (the softmax of the model's output: its confidence vector), ``CONV-1`` / ``CONV-2``
(the last and penultimate convolution layers, in the order the model registers its modules), or the
name of any module (``model.named_modules()``). The signal set ``S(M, p, x)`` of an example is that
position's output for the example, flattened.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from repscope.errors import InvalidArgumentError

CONFIDENCE = "CONF"
CONVOLUTIONS = {"CONV-1": 1, "CONV-2": 2}  # counted from the last


def convolution_names(model: nn.Module) -> list[str]:
    """Names of the model's convolution modules (1-, 2- and 3-d), in registration order.

    Parameters
    ----------
    model : torch.nn.Module
        Any model.

    Returns
    -------
    list of str
        Module names as ``model.named_modules()`` gives them.
    """
    kinds = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
    return [name for name, module in model.named_modules() if isinstance(module, kinds)]


def resolve_positions(model: nn.Module, positions: Sequence[str]) -> dict[str, str | None]:
    """Each position's module name (None for ``CONF``, read from the output).

    Parameters
    ----------
    model : torch.nn.Module
        The model.
    positions : sequence of str
        ``CONF``, ``CONV-1``, ``CONV-2`` or module names.

    Returns
    -------
    dict of str to str or None
        Position -> module name.

    Raises
    ------
    InvalidArgumentError
        Naming the position: ``CONV-2`` on a model with one convolution, or an unknown module name
        (the message lists the model's modules).
    """
    modules = dict(model.named_modules())
    convolutions = convolution_names(model)
    resolved: dict[str, str | None] = {}
    for position in positions:
        if position == CONFIDENCE:
            resolved[position] = None
        elif position in CONVOLUTIONS:
            rank = CONVOLUTIONS[position]
            if len(convolutions) < rank:
                raise InvalidArgumentError(
                    f"position {position}: the model has {len(convolutions)} convolution layer(s), needs {rank}"
                )
            resolved[position] = convolutions[-rank]
        elif position in modules and position != "":
            resolved[position] = position
        else:
            names = ", ".join(name for name in modules if name) or "none"
            raise InvalidArgumentError(
                f"position {position!r}: not CONF, CONV-1, CONV-2 or a module of the model (modules: {names})"
            )
    return resolved


@contextmanager
def recording(model: nn.Module, module_names: Sequence[str]) -> Iterator[dict[str, torch.Tensor]]:
    """Record the outputs of the named modules at each forward pass inside the block.

    Parameters
    ----------
    model : torch.nn.Module
        The model.
    module_names : sequence of str
        Modules to hook.

    Yields
    ------
    dict of str to torch.Tensor
        Module name -> its output of the latest forward pass, detached.
    """
    modules = dict(model.named_modules())
    outputs: dict[str, torch.Tensor] = {}
    handles = []
    for name in dict.fromkeys(module_names):

        def hook(module: nn.Module, inputs: object, output: object, name: str = name) -> None:
            tensor = output[0] if isinstance(output, tuple) else output
            outputs[name] = tensor.detach()

        handles.append(modules[name].register_forward_hook(hook))
    try:
        yield outputs
    finally:
        for handle in handles:
            handle.remove()


def signal_sets(
    model: nn.Module, images: torch.Tensor, positions: dict[str, str | None]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward pass: the model's logits and each position's signals ``(B, n_signals)``.

    Parameters
    ----------
    model : torch.nn.Module
        The model, in eval mode.
    images : torch.Tensor
        A batch.
    positions : dict
        :func:`resolve_positions`.

    Returns
    -------
    tuple
        ``(logits, {position: signals})``; ``CONF`` is the softmax of the logits.
    """
    names = [name for name in positions.values() if name is not None]
    with torch.no_grad(), recording(model, names) as outputs:
        logits = model(images)
    signals = {}
    for position, name in positions.items():
        tensor = torch.softmax(logits, dim=1) if name is None else outputs[name]
        signals[position] = tensor.reshape(tensor.shape[0], -1)
    return logits, signals


__all__ = ["CONFIDENCE", "convolution_names", "recording", "resolve_positions", "signal_sets"]
