"""What crosses the boundary of a model from outside: numpy images in, torch tensors through the
model, and the model's outputs read as codes, logits or images, whatever container they come in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.validation import check_images, check_positive_int

CHANNEL_COUNTS = (1, 3, 4)
# the keys a dict output names its posterior mean (encoders) or its logits (classifiers) by
MEAN_KEYS = ("mean", "mu", "loc")
LOGIT_KEYS = ("logits", "scores", "output")
# a row of non-negative outputs summing to 1 within this is read as probabilities
PROBABILITY_TOLERANCE = 1e-4


def _numpy_layout(image_shape: Sequence[int]) -> tuple[int, ...]:
    channels, height, width = (int(s) for s in image_shape)
    return (height, width) if channels == 1 else (height, width, channels)


def guess_image_shape(images: Any) -> tuple[int, int, int]:
    """``(C, H, W)`` of a batch given as ``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)``.

    Parameters
    ----------
    images : array-like or torch.Tensor
        The batch.

    Returns
    -------
    tuple of int
        Grey ``(1, H, W)`` for 3-D; for 4-D channels first when the second axis is 1, 3 or 4 and the last
        is not, else channels last.

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not 3-D or 4-D.
    """
    shape = tuple(np.shape(images))
    if len(shape) == 3:
        return (1, shape[1], shape[2])
    if len(shape) == 4:
        if shape[1] in CHANNEL_COUNTS and shape[3] not in CHANNEL_COUNTS:
            return (shape[1], shape[2], shape[3])
        return (shape[3], shape[1], shape[2])
    raise InvalidArgumentError(f"images: expected (N, H, W), (N, H, W, C) or (N, C, H, W), got shape {shape}")


def checked_images(images: Any, image_shape: Sequence[int] | None, name: str = "images") -> np.ndarray:
    """``images`` checked (uint8 or float in [0, 1]) and put in the channels-last numpy layout.

    Parameters
    ----------
    images : array-like or torch.Tensor
        At least one image: grey ``(N, H, W)`` (or ``(N, 1, H, W)``), colour ``(N, H, W, C)`` or ``(N, C, H, W)``.
    image_shape : sequence of int or None
        ``(C, H, W)`` expected; None: read from the batch (:func:`guess_image_shape`).
    name : str, default="images"
        The argument named in messages.

    Returns
    -------
    numpy.ndarray
        ``(N, H, W)`` grey or ``(N, H, W, C)`` colour, values as given.

    Raises
    ------
    InvalidArgumentError
        When the batch breaks the image rule of :func:`repscope.validation.check_images`.
    """
    shape = tuple(image_shape) if image_shape is not None else guess_image_shape(images)
    return check_images(images, name, image_shape=_numpy_layout(shape))


def image_tensors(images: np.ndarray, batch_size: int, device: torch.device | str) -> Iterator[torch.Tensor]:
    """Float32 ``(b, C, H, W)`` tensors in [0, 1] from a checked channels-last batch.

    Parameters
    ----------
    images : numpy.ndarray
        ``(N, H, W)`` or ``(N, H, W, C)``, uint8 (divided by 255) or float in [0, 1].
    batch_size : int
        Rows per tensor.
    device : torch.device or str
        Where the tensors go.

    Yields
    ------
    torch.Tensor
        Consecutive chunks of ``images``.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    for start in range(0, len(images), batch_size):
        rows = np.array(images[start : start + batch_size])  # a copy: memory maps are read-only
        chunk = torch.from_numpy(rows)
        chunk = chunk.float() / 255.0 if chunk.dtype == torch.uint8 else chunk.float()
        yield (chunk.unsqueeze(1) if chunk.ndim == 3 else chunk.permute(0, 3, 1, 2)).to(device)


def code_tensor(output: Any, what: str = "the encoder") -> torch.Tensor:
    """The codes in an encoder's output: a tensor; a tuple / list's first element (the posterior mean
    of ``(mean, log_var)``); a dict's ``mean``, ``mu`` or ``loc``; a distribution's ``.mean``.

    Parameters
    ----------
    output : object
        What the model returned.
    what : str
        Named in the message.

    Returns
    -------
    torch.Tensor
        ``(B, L)`` (trailing singleton dimensions such as ``(B, L, 1, 1)`` dropped).

    Raises
    ------
    InvalidArgumentError
        For another output, or a tensor that is not ``(B, L)``.
    """
    if isinstance(output, tuple | list) and output:
        output = output[0]
    elif isinstance(output, Mapping):
        key = next((k for k in MEAN_KEYS if k in output), None)
        if key is None:
            raise InvalidArgumentError(
                f"--role encoder: {what} returned a dict with keys {sorted(map(str, output))[:6]}; "
                f"expected one of {', '.join(MEAN_KEYS)}"
            )
        output = output[key]
    elif not isinstance(output, torch.Tensor) and isinstance(getattr(output, "mean", None), torch.Tensor):
        output = output.mean
    if not isinstance(output, torch.Tensor):
        raise InvalidArgumentError(
            f"--role encoder: {what} returned {type(output).__name__}; expected a tensor (B, L), a tuple "
            f"(mean, ...), a dict with 'mean' / 'mu' / 'loc', or a distribution with .mean"
        )
    while output.ndim > 2 and output.shape[-1] == 1:
        output = output.squeeze(-1)
    if output.ndim != 2:
        raise InvalidArgumentError(
            f"--role encoder: {what} returned shape {tuple(output.shape)}; expected codes (B, L)"
        )
    return output


def logit_tensor(output: Any, what: str = "the classifier") -> torch.Tensor:
    """A classifier's ``(B, K)`` outputs: a tensor, a tuple's first element or a dict's ``logits``.

    Parameters
    ----------
    output : object
        What the model returned.
    what : str
        Named in the message.

    Returns
    -------
    torch.Tensor
        ``(B, K)``.

    Raises
    ------
    InvalidArgumentError
        For another output or shape.
    """
    if isinstance(output, tuple | list) and output:
        output = output[0]
    elif isinstance(output, Mapping):
        output = next((output[k] for k in LOGIT_KEYS if k in output), None)
    if not isinstance(output, torch.Tensor) or output.ndim != 2:
        shape = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
        raise InvalidArgumentError(f"--role classifier: {what} returned {shape}; expected logits (B, classes)")
    return output


def image_tensor(output: Any, image_shape: Sequence[int] | None, what: str = "the decoder") -> torch.Tensor:
    """A decoder's images as ``(B, C, H, W)``: from ``(B, C, H, W)``, ``(B, H, W)``, a tuple's first
    element, or flat ``(B, C*H*W)`` when ``image_shape`` is known.

    Parameters
    ----------
    output : object
        What the model returned.
    image_shape : sequence of int or None
        ``(C, H, W)`` expected, when known.
    what : str
        Named in the message.

    Returns
    -------
    torch.Tensor
        ``(B, C, H, W)``.

    Raises
    ------
    InvalidArgumentError
        For another output, or images of another size than ``image_shape``.
    """
    if isinstance(output, tuple | list) and output:
        output = output[0]
    if not isinstance(output, torch.Tensor):
        raise InvalidArgumentError(f"--role generator: {what} returned {type(output).__name__}; expected images")
    if output.ndim == 2 and image_shape is not None and output.shape[1] == int(np.prod(image_shape)):
        output = output.reshape(len(output), *image_shape)
    if output.ndim == 3:
        output = output.unsqueeze(1)
    if output.ndim != 4 or (image_shape is not None and tuple(output.shape[1:]) != tuple(image_shape)):
        wanted = f"(B, {', '.join(map(str, image_shape))})" if image_shape is not None else "(B, C, H, W) or (B, H, W)"
        raise InvalidArgumentError(
            f"--role generator: {what} returned shape {tuple(output.shape)}; expected images {wanted}"
        )
    return output


def are_probabilities(outputs: torch.Tensor) -> bool:
    """Whether ``(B, K)`` outputs are already class probabilities: non-negative rows summing to 1.

    Parameters
    ----------
    outputs : torch.Tensor
        A classifier's outputs.

    Returns
    -------
    bool
        True when every value is >= 0 and every row sums to 1 within 1e-4.
    """
    sums = outputs.double().sum(1)
    return bool((outputs >= 0).all() and torch.allclose(sums, torch.ones_like(sums), atol=PROBABILITY_TOLERANCE))


def are_logits(images: torch.Tensor) -> bool:
    """Whether a decoder's outputs are logits: any value outside [0, 1].

    Parameters
    ----------
    images : torch.Tensor
        A decoder's outputs.

    Returns
    -------
    bool
        True when some value is below 0 or above 1 (then the sigmoid gives intensities).
    """
    return bool((images < 0).any() or (images > 1).any())


def check_finite(outputs: torch.Tensor, what: str) -> torch.Tensor:
    """``outputs`` when floating and finite.

    Parameters
    ----------
    outputs : torch.Tensor
        A model's outputs.
    what : str
        The model and what it was given, named in the message.

    Returns
    -------
    torch.Tensor
        ``outputs``.

    Raises
    ------
    InvalidArgumentError
        When they are not floating point, or hold NaN / infinite values.
    """
    if not outputs.is_floating_point():
        raise InvalidArgumentError(f"--model: {what} returned {outputs.dtype} values; expected floating point")
    if not torch.isfinite(outputs).all():
        bad = int((~torch.isfinite(outputs)).sum())
        raise InvalidArgumentError(f"--model: {what} returned {bad} NaN or infinite values of {outputs.numel()}")
    return outputs


__all__ = [
    "are_logits",
    "are_probabilities",
    "check_finite",
    "checked_images",
    "code_tensor",
    "guess_image_shape",
    "image_tensor",
    "image_tensors",
    "logit_tensor",
]
