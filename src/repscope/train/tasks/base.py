"""What every task shares: images at the numpy boundary, decoding to uint8, seeded sampling, logging.

A task is a small LightningModule of one training family (supervised, VAE, GAN); it takes its
networks by name (:mod:`repscope.models.networks`) for the image shape of its data, and declares the
batch fields it reads (:attr:`ImageTask.batch_fields`), which the DataModule serves as a dict of
tensors: ``image`` float32 ``(B, C, H, W)`` in [0, 1], ``target`` int64 classes or float32 values.

Constructors take plain values only (ints, floats, strings, lists and dicts of those) and store them
with ``save_hyperparameters``, so a checkpoint loads with ``torch.load(..., weights_only=True)``.
Inference methods (``predict``, ``encode``, ``sample`` ...) run in eval mode without gradients, on
the module's device, and restore the train/eval mode they found. Sampling draws from a CPU
``torch.Generator`` seeded with ``seed``: the same seed gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.validation import check_images as check_image_batch
from repscope.validation import check_pixel_values  # noqa: F401 -- the pixel rule, importable from here too

EVAL_BATCH = 512
DIGIT_SHAPE = (1, 28, 28)


def channels_last_shape(image_shape: Sequence[int]) -> tuple[int, ...]:
    """``(C, H, W)`` -> the numpy layout users pass: ``(H, W)`` for grey, ``(H, W, C)`` for colour.

    Parameters
    ----------
    image_shape : sequence of int
        ``(C, H, W)``, the channels-first shape of one image.

    Returns
    -------
    tuple of int
        ``(H, W)`` when ``C == 1``, else ``(H, W, C)``.
    """
    channels, height, width = (int(s) for s in image_shape)
    return (height, width) if channels == 1 else (height, width, channels)


def check_images(images: Any, name: str = "images", image_shape: Sequence[int] = DIGIT_SHAPE) -> np.ndarray:
    """``images`` checked against ``image_shape`` ``(C, H, W)``: uint8 (0-255) or float in [0, 1],
    grey ``(N, H, W)`` (or ``(N, 1, H, W)``), colour ``(N, H, W, C)`` (or ``(N, C, H, W)``). Returns
    the batch in the channels-last numpy layout; raises :class:`InvalidArgumentError` naming ``name``.

    Parameters
    ----------
    images : array-like or torch.Tensor
        The batch, at least one image: uint8 (0-255), or float / bool with finite values in [0, 1].
    name : str, default="images"
        The argument named in error messages.
    image_shape : sequence of int, default=(1, 28, 28)
        ``(C, H, W)`` of one image.

    Returns
    -------
    numpy.ndarray
        ``(N, H, W)`` for grey, ``(N, H, W, C)`` for colour images; the values and dtype as given (not
        converted; a view where the layout had to change).

    Raises
    ------
    InvalidArgumentError
        When ``images`` is empty, not a batch of images of ``image_shape``, or breaks the pixel rule
        (another dtype, NaN / infinite values, floats outside [0, 1]).
    """
    return check_image_batch(images, name, image_shape=channels_last_shape(image_shape))


def image_batches(images: np.ndarray, batch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    """Float ``(b, C, H, W)`` tensors in [0, 1] on ``device`` from a checked channels-last batch.

    Parameters
    ----------
    images : numpy.ndarray
        A batch as :func:`check_images` returns it: ``(N, H, W)`` or ``(N, H, W, C)``, uint8 (0-255,
        divided by 255) or float in [0, 1] (cast to float32 as it is). Read-only arrays are copied.
    batch_size : int
        Images per yielded tensor (the last one may hold fewer), at least 1.
    device : torch.device
        Where the tensors are put.

    Yields
    ------
    torch.Tensor
        float32 ``(b, C, H, W)`` in [0, 1], ``b <= batch_size``, in the order of ``images``.

    Raises
    ------
    InvalidArgumentError
        When ``batch_size`` is below 1 (on the first ``next``: this is a generator).
    """
    if int(batch_size) < 1:
        raise InvalidArgumentError(f"batch_size: must be at least 1, got {batch_size}")
    for start in range(0, len(images), int(batch_size)):
        rows = np.ascontiguousarray(images[start : start + int(batch_size)])
        chunk = torch.from_numpy(rows if rows.flags.writeable else rows.copy())  # memory-mapped files are read-only
        chunk = chunk.float() / 255.0 if chunk.dtype == torch.uint8 else chunk.float()
        yield (chunk.unsqueeze(1) if chunk.ndim == 3 else chunk.permute(0, 3, 1, 2)).to(device)


def to_uint8(probabilities: torch.Tensor) -> np.ndarray:
    """``(B, C, H, W)`` intensities in [0, 1] -> uint8 ``round(255 p)``: ``(B, H, W)`` for one channel,
    ``(B, H, W, C)`` for colour.

    Parameters
    ----------
    probabilities : torch.Tensor, shape (B, C, H, W)
        Pixel intensities (e.g. Bernoulli means, not logits) in [0, 1], on any device.

    Returns
    -------
    numpy.ndarray
        uint8 ``round(255 p)`` clipped to 0-255, on the CPU: ``(B, H, W)`` when ``C == 1``, else
        ``(B, H, W, C)``.
    """
    pixels = torch.round(probabilities * 255.0).clamp(0, 255).to(torch.uint8)
    pixels = pixels[:, 0] if pixels.shape[1] == 1 else pixels.permute(0, 2, 3, 1)
    return pixels.cpu().numpy()


def seeded(seed: int) -> torch.Generator:
    """A CPU random generator seeded with ``seed``: the same seed gives the same draws.

    Parameters
    ----------
    seed : int
        The seed (an integral float such as ``3.0`` is accepted; bools are not).

    Returns
    -------
    torch.Generator
        A new CPU generator, ``manual_seed(int(seed))``.

    Raises
    ------
    InvalidArgumentError
        When ``seed`` is a bool or a non-integral number.
    """
    if isinstance(seed, bool) or int(seed) != seed:
        raise InvalidArgumentError(f"seed: must be an integer, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


def count(n: int) -> int:
    """``n`` checked as a number of samples to draw.

    Parameters
    ----------
    n : int
        How many samples; 0 is allowed (an integral float such as ``3.0`` is accepted; bools are not).

    Returns
    -------
    int
        ``n`` as an int.

    Raises
    ------
    InvalidArgumentError
        When ``n`` is a bool, a non-integral number or negative.
    """
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise InvalidArgumentError(f"n: must be a non-negative integer, got {n!r}")
    return int(n)


def checked_shape(image_shape: Sequence[int]) -> list[int]:
    """``image_shape`` checked as the ``(channels, height, width)`` of one image.

    Parameters
    ----------
    image_shape : sequence of int
        ``(C, H, W)``, each at least 1.

    Returns
    -------
    list of int
        ``[C, H, W]`` as plain ints (fit for ``save_hyperparameters``).

    Raises
    ------
    InvalidArgumentError
        When ``image_shape`` is not three integers, or one of them is below 1.
    """
    try:
        shape = [int(s) for s in image_shape]
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"image_shape: expected (channels, height, width), got {image_shape!r}") from None
    if len(shape) != 3 or min(shape) < 1:
        raise InvalidArgumentError(f"image_shape: expected (channels, height, width), got {image_shape!r}")
    return shape


@contextmanager
def evaluating(module: torch.nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside; the module's previous mode restored after.

    Parameters
    ----------
    module : torch.nn.Module
        The module switched to eval mode (with its children) for the ``with`` block.

    Yields
    ------
    None
        Once; inside, ``torch.no_grad()`` is active. ``module.train(previous mode)`` runs on exit,
        also when the block raises.
    """
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


class ImageTask(pl.LightningModule):
    """Shared plumbing: the fields a batch must hold, logging defaults, decoding latents in chunks."""

    batch_fields: tuple[str, ...] = ("image",)

    @property
    def image_shape(self) -> tuple[int, ...]:
        return tuple(self.hparams.get("image_shape") or DIGIT_SHAPE)

    def _log(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        # Lightning's defaults add per-step values in training_step (``<name>_step``, ``<name>_epoch``)
        self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)

    def _decode(self, network: torch.nn.Module, latent: torch.Tensor) -> np.ndarray:
        with evaluating(self):
            chunks = [
                to_uint8(network(latent[s : s + EVAL_BATCH].to(self.device))) for s in range(0, len(latent), EVAL_BATCH)
            ]
        if chunks:
            return np.concatenate(chunks)
        return np.zeros((0, *channels_last_shape(self.image_shape)), np.uint8)


__all__ = [
    "ImageTask",
    "check_images",
    "image_batches",
    "to_uint8",
    "seeded",
    "count",
    "evaluating",
    "EVAL_BATCH",
    "channels_last_shape",
    "checked_shape",
    "DIGIT_SHAPE",
]
