"""Role adapters: a loaded model behind numpy interfaces, batched, in eval mode, without gradients.

==================  ===========================================================================
adapter             interface
==================  ===========================================================================
ImageEncoder        ``encode(images) -> (N, L) float32`` (posterior means)
ImageDecoder        ``decode(codes) -> uint8 (N, H, W) or (N, H, W, C)``
ImageClassifier     ``logits``, ``soft_labels`` (rows sum to 1), ``predict``, ``num_classes``,
                    ``network`` (an ``nn.Module`` on float [0, 1] images, the contract inside)
==================  ===========================================================================

(:class:`~repscope.models.external.roles.CodeGenerator` draws the codes of a prior for a decoder.)

Images go in as uint8 (0-255) or float in [0, 1], grey ``(N, H, W)``, colour ``(N, H, W, C)`` or
``(N, C, H, W)``; the model's :class:`~repscope.models.external.contract.InputContract` maps them to its
own range before the forward pass. For a repscope run directory the adapters drive the task's own
networks (``encoder``, ``decoder``, ``network``); :func:`~repscope.models.external.roles.role_model`
returns the task itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.external.contract import InputContract
from repscope.models.external.loading import LoadedModel, load_model
from repscope.models.external.tensors import (
    are_logits,
    are_probabilities,
    check_finite,
    checked_images,
    code_tensor,
    image_tensor,
    image_tensors,
    logit_tensor,
)
from repscope.progress import progress_bar
from repscope.validation import check_positive_int

# the attribute of a repscope task that holds each role's network
TASK_NETWORKS = {"encoder": "encoder", "decoder": "decoder", "classifier": "network"}
Progress = bool | Callable[[int, int], Any]


class _Adapter:
    """What every adapter shares: the network, its device, batching and progress."""

    network_role = "encoder"

    def __init__(self, loaded: Any, batch_size: int = 256, device: str = "cpu", progress: Progress = False) -> None:
        self.loaded: LoadedModel = load_model(loaded)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        # onnxruntime runs on the CPU whatever torch's device
        self.device = torch.device("cpu" if self.loaded.kind == "onnx" else device)
        self.progress = progress
        self.module = self._pick_module().to(self.device)

    @property
    def contract(self) -> InputContract:
        """The input contract of the model."""
        return self.loaded.contract

    def _pick_module(self) -> nn.Module:
        if self.loaded.module is not None:
            return self.loaded.module
        attribute = TASK_NETWORKS[self.network_role]
        network = getattr(self.loaded.task, attribute, None)
        if not isinstance(network, nn.Module):
            raise InvalidArgumentError(
                f"--role: the run {self.loaded.source} ({self.loaded.metadata.get('model_name')}) has no "
                f"{self.network_role} network"
            )
        return network

    @contextmanager
    def _evaluating(self) -> Iterator[None]:
        was_training = self.module.training
        self.module.eval()
        try:
            with torch.no_grad():
                yield
        finally:
            self.module.train(was_training)

    def _batched(self, chunks: Iterator[torch.Tensor], total: int, description: str, step: Callable) -> list:
        outputs: list = []
        callback = self.progress if callable(self.progress) else None
        with progress_bar(description, total=total, enabled=bool(self.progress) and callback is None) as update:
            with self._evaluating():
                for chunk in chunks:
                    outputs.append(step(chunk))
                    done = sum(len(o) for o in outputs)
                    update(done)
                    if callback is not None:
                        callback(done, total)
        return outputs

    def _images(self, images: Any) -> np.ndarray:
        return checked_images(images, self.contract.image_shape)

    def _forward(self, images01: torch.Tensor) -> Any:
        return self.module(self.contract.prepare(images01))


class ImageEncoder(_Adapter):
    """Codes of images: the model's output, or the posterior mean it returns first.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The encoder (a run directory: its task's ``encoder`` network).
    batch_size : int, default=256
        Images per forward pass.
    device : str, default="cpu"
        Torch device of the forward passes (an ONNX model stays on the CPU).
    progress : bool or callable, default=False
        True: a progress bar; a callable: called ``progress(done, total)`` after each batch.
    """

    def encode(self, images: Any) -> np.ndarray:
        """The codes of ``images``.

        Parameters
        ----------
        images : array-like or torch.Tensor
            uint8 (0-255) or float in [0, 1]; ``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)``.

        Returns
        -------
        numpy.ndarray
            float32 ``(N, L)``.

        Raises
        ------
        InvalidArgumentError
            For images that break the image rule, an output that holds no codes, or non-finite codes.
        """
        array = self._images(images)
        what = f"encoder {self.loaded.source}"

        def step(chunk: torch.Tensor) -> torch.Tensor:
            return check_finite(code_tensor(self._forward(chunk), what), what).float().cpu()

        chunks = image_tensors(array, self.batch_size, self.device)
        codes = self._batched(chunks, len(array), f"encoding {len(array)} images with {self.loaded.source}", step)
        return torch.cat(codes).numpy().astype(np.float32)


class ImageDecoder(_Adapter):
    """uint8 images of codes: the model's intensities in [0, 1], or the sigmoid of its logits.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The decoder, taking ``(B, L)`` codes (a run directory: its task's ``decoder`` network); the
        contract's ``image_shape`` is the images' shape, when set.
    logits : bool or None, default=None
        Whether the outputs are logits; None: decided on the first call (any value outside [0, 1]).
    batch_size, device, progress
        As :class:`ImageEncoder`.
    """

    network_role = "decoder"

    def __init__(self, loaded: Any, logits: bool | None = None, **options: Any) -> None:
        super().__init__(loaded, **options)
        self.logits = logits

    def intensities(self, codes: Any) -> torch.Tensor:
        """Float ``(N, C, H, W)`` intensities in [0, 1] of ``codes`` ``(N, L)``, on the CPU.

        Parameters
        ----------
        codes : array-like, shape (N, L)
            Latent vectors (cast to float32), at least one.

        Returns
        -------
        torch.Tensor
            The decoder's outputs, through the sigmoid where they are logits.

        Raises
        ------
        InvalidArgumentError
            When ``codes`` is not 2-D, or the outputs are not finite images of the contract's shape.
        """
        z = torch.as_tensor(np.asarray(codes, dtype=np.float32))
        if z.ndim != 2 or len(z) == 0:
            raise InvalidArgumentError(f"codes: expected shape (N, L) with N >= 1, got {tuple(z.shape)}")
        what = f"decoder {self.loaded.source}"

        def step(chunk: torch.Tensor) -> torch.Tensor:
            return check_finite(image_tensor(self.module(chunk), self.contract.image_shape, what), what).float().cpu()

        chunks = (z[s : s + self.batch_size].to(self.device) for s in range(0, len(z), self.batch_size))
        images = torch.cat(self._batched(chunks, len(z), f"decoding {len(z)} codes with {self.loaded.source}", step))
        if self.logits is None:
            self.logits = are_logits(images)
        return torch.sigmoid(images) if self.logits else images.clamp(0, 1)

    def decode(self, codes: Any) -> np.ndarray:
        """uint8 images ``round(255 p)`` of ``codes``.

        Parameters
        ----------
        codes : array-like, shape (N, L)
            Latent vectors.

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, H, W)`` grey or ``(N, H, W, C)`` colour.
        """
        pixels = torch.round(self.intensities(codes) * 255.0).clamp(0, 255).to(torch.uint8)
        return (pixels[:, 0] if pixels.shape[1] == 1 else pixels.permute(0, 2, 3, 1)).numpy()


class PreparedNetwork(nn.Module):
    """A classifier as repscope's code calls it: float [0, 1] ``(B, C, H, W)`` images in, logits out.

    The input contract is applied inside; probabilities from the model come out as their logarithms
    (whose softmax gives them back). The user's network is the child ``model``, so a forward hook on
    its layer ``conv1`` is one on ``model.conv1`` here.

    Parameters
    ----------
    model : torch.nn.Module
        The user's network.
    contract : InputContract
        What it reads.
    probabilities : bool
        Whether it returns probabilities instead of logits.
    """

    def __init__(self, model: nn.Module, contract: InputContract, probabilities: bool) -> None:
        super().__init__()
        self.model = model
        self.contract = contract
        self.probabilities = probabilities

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        outputs = logit_tensor(self.model(self.contract.prepare(images)))
        return torch.log(outputs.clamp_min(torch.finfo(outputs.dtype).tiny)) if self.probabilities else outputs


class ImageClassifier(_Adapter):
    """Class scores of images: logits, soft labels (softmax, or the model's probabilities as they are)
    and predicted classes.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The classifier (a run directory: its task's ``network``).
    probabilities : bool or None, default=None
        Whether the model returns probabilities; None: decided on the first batch it classifies
        (non-negative rows summing to 1).
    batch_size, device, progress
        As :class:`ImageEncoder`.
    """

    network_role = "classifier"

    def __init__(self, loaded: Any, probabilities: bool | None = None, **options: Any) -> None:
        super().__init__(loaded, **options)
        self.probabilities = probabilities
        self._num_classes: int | None = None

    def _outputs(self, images: Any) -> torch.Tensor:
        array = self._images(images)
        what = f"classifier {self.loaded.source}"

        def step(chunk: torch.Tensor) -> torch.Tensor:
            return check_finite(logit_tensor(self._forward(chunk), what), what).double().cpu()

        chunks = image_tensors(array, self.batch_size, self.device)
        outputs = torch.cat(
            self._batched(chunks, len(array), f"classifying {len(array)} images with {self.loaded.source}", step)
        )
        if self.probabilities is None:
            self.probabilities = are_probabilities(outputs)
        self._num_classes = outputs.shape[1]
        return outputs

    def logits(self, images: Any) -> np.ndarray:
        """Logits ``(N, K)`` float64 (the log of the model's probabilities where it returns those).

        Parameters
        ----------
        images : array-like or torch.Tensor
            As :meth:`ImageEncoder.encode`.

        Returns
        -------
        numpy.ndarray
            float64 ``(N, K)``.
        """
        outputs = self._outputs(images)
        return (torch.log(outputs.clamp_min(1e-300)) if self.probabilities else outputs).numpy()

    def soft_labels(self, images: Any) -> np.ndarray:
        """Class probabilities ``(N, K)`` float64, rows summing to 1: the softmax of the logits, or the
        model's probabilities (renormalised) where it returns those.

        Parameters
        ----------
        images : array-like or torch.Tensor
            As :meth:`ImageEncoder.encode`.

        Returns
        -------
        numpy.ndarray
            float64 ``(N, K)``.
        """
        outputs = self._outputs(images)
        probabilities = outputs / outputs.sum(1, keepdim=True) if self.probabilities else torch.softmax(outputs, 1)
        return probabilities.numpy()

    def predict(self, images: Any) -> np.ndarray:
        """The class of the largest score of each image.

        Parameters
        ----------
        images : array-like or torch.Tensor
            As :meth:`ImageEncoder.encode`.

        Returns
        -------
        numpy.ndarray
            int64 ``(N,)``.
        """
        return self._outputs(images).argmax(1).numpy().astype(np.int64)

    @property
    def num_classes(self) -> int:
        """K, the number of outputs (read from one blank image of the contract's shape if no call has run)."""
        if self._num_classes is None:
            shape = self.contract.image_shape
            if shape is None:
                raise InvalidArgumentError(
                    "--input-size: the classifier's input shape is unknown; give --input-size C,H,W"
                )
            self._outputs(np.zeros((1, *shape), np.float32))
        return int(self._num_classes)

    @property
    def network(self) -> PreparedNetwork:
        """The classifier as an ``nn.Module`` on float [0, 1] images, returning logits (:class:`PreparedNetwork`)."""
        if self.probabilities is None and self.contract.image_shape is not None:
            self.num_classes  # noqa: B018 -- one probe decides whether the model returns probabilities
        return PreparedNetwork(self.module, self.contract, bool(self.probabilities))


__all__ = ["TASK_NETWORKS", "ImageClassifier", "ImageDecoder", "ImageEncoder", "PreparedNetwork"]
