"""The supervised family: a classifier or regressor network trained on ``(image, target)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from repscope.data.invariance.transforms import PER_EXAMPLE, check_ranges, draw_values
from repscope.errors import InvalidArgumentError
from repscope.models.networks import build_classifier, recorded_network
from repscope.train.tasks.base import (
    DIGIT_SHAPE,
    EVAL_BATCH,
    ImageShape,
    ImageTask,
    check_images,
    evaluating,
    image_batches,
    optimiser_options,
)


class SupervisedTask(ImageTask):
    """A network of :data:`repscope.models.networks.CLASSIFIERS` (LeNet-5, the 784-200-200-L MLP of
    Castro et al., Appendix D, the CdSprites+ ``attribute-cnn``, the Raw Zero-Shot ``allconv``, ``nin``
    and ``resnet``) trained with Adam (``optimizer="sgd"``: SGD with momentum 0.9).

    ``network`` is a registered network name or a user's import path ``"pkg.module:factory"`` /
    ``"file.py:factory"`` (:mod:`repscope.models.networks`; the ``classifier`` model takes it, e.g.
    ``--set model.name=classifier --set model.params.network=pkg.mod:make``); the checkpoint records the path
    (a file path made absolute), so the module must be importable when the run is read back.
    ``network_params`` are the network's own parameters (plain values, e.g. ``{"width": 0.25}`` to
    shrink a network for a CPU study); the network's defaults, the published sizes, when omitted.
    An unknown key or a bad value is an :class:`InvalidArgumentError` naming the network and the key.

    Classification: cross-entropy on ``num_outputs`` logits, targets int class labels.
    Regression: mean squared error of the single output (``num_outputs`` must be 1), targets float.
    ``schedule="cosine"`` decays the learning rate to zero over the run, step by step (large steps
    early, small ones to settle at the end, so a few epochs suffice).
    ``augment`` (``rotation``, ``brightness``, ``scale``) transforms each training image by a value
    drawn uniformly from ``augment_ranges`` (``[[low, high], ...]``; two intervals make a range with a
    gap), as the ML4ML model repository varies its models; validation and test images stay as they are.
    ``shift`` moves each image by two values drawn from the ranges, whole pixels right and down, the
    edges repeated (:func:`repscope.data.invariance.transforms.shift_each`), so that a judge of a small
    object on photographed scenes learns less of where things sit in the frame (CANDLE's rotation judge:
    0.45 -> 0.60 identifiable accuracy with shifts of up to 6 pixels).

    Logs (``on_epoch``) ``train_loss``, ``val_loss`` and ``val_accuracy`` (classification) or
    ``val_rmse`` (regression, over all validation samples).
    """

    batch_fields = ("image", "target")

    @dataclass(kw_only=True)
    class Config(ImageTask.Config):
        network: str = "lenet5"
        kind: Literal["classification", "regression"] = "classification"
        num_outputs: int = 10
        lr: Annotated[float, Field(gt=0)] = 1e-3
        image_shape: ImageShape = DIGIT_SHAPE
        schedule: Literal["none", "cosine"] = "none"
        augment: Literal["none", "rotation", "brightness", "scale", "shift"] = "none"
        augment_ranges: list[list[float]] = ()
        optimizer: Literal["adam", "sgd"] = "adam"  # sgd: with momentum 0.9
        network_params: dict[str, Any] | None = None

    def check_config(self, config: Any) -> None:
        super().check_config(config)
        kind, num_outputs = config.kind, config.num_outputs
        if kind == "regression" and num_outputs != 1:
            raise InvalidArgumentError(f"num_outputs: regression predicts one value, got num_outputs={num_outputs}")
        if kind == "classification" and num_outputs < 2:
            raise InvalidArgumentError(f"num_outputs: classification needs at least 2 classes, got {num_outputs}")
        augment, augment_ranges = config.augment, config.augment_ranges
        ranges = [] if augment == "none" else check_ranges(augment, augment_ranges)
        if augment == "none" and len(augment_ranges):
            raise InvalidArgumentError(f"augment_ranges: given without augment ({', '.join(PER_EXAMPLE)})")
        # every argument is stored, so that a checkpoint rebuilds its task (older checkpoints without
        # the augmentation or network_params keys load with their defaults)
        config.augment_ranges = [list(pair) for pair in ranges]
        config.network_params = plain_params(config.network_params)
        # a file path is stored absolute: the run rebuilds its network from any working directory
        config.network = recorded_network(config.network)

    def build(self) -> None:
        super().build()
        hp = self.hparams
        self.augment, self.augment_ranges = hp.augment, [tuple(pair) for pair in hp.augment_ranges]
        self.network = build_classifier(hp.network, hp.image_shape, hp.num_outputs, hp.network_params)
        self._squared_error = torch.zeros(())
        self._val_count = 0

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dtype == torch.uint8:
            images = images.float() / 255.0
        return self.network(images)

    def _step(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, targets = batch["image"], batch["target"]
        outputs = self(images)
        if self.hparams.kind == "classification":
            return F.cross_entropy(outputs, targets.long()), outputs, targets
        outputs = outputs.squeeze(1)
        return F.mse_loss(outputs, targets.float()), outputs, targets

    def augmented(self, images: torch.Tensor) -> torch.Tensor:
        """The training images with each one transformed by a V drawn from ``augment_ranges``.

        Parameters
        ----------
        images : torch.Tensor
            A training batch ``(B, C, H, W)``, uint8 or floats in [0, 1].

        Returns
        -------
        torch.Tensor
            The batch unchanged when ``augment`` is ``none``; otherwise floats in [0, 1], each image
            transformed by its own value (torch's generator, seeded by the training seed).
        """
        if self.augment == "none":
            return images
        if images.dtype == torch.uint8:
            images = images.float() / 255.0
        transform, _, per_image = PER_EXAMPLE[self.augment]
        values = draw_values(self.augment_ranges, len(images) * per_image).to(images.device)
        return transform(images, values if per_image == 1 else values.reshape(len(images), per_image))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        batch = {**batch, "image": self.augmented(batch["image"])}
        loss, _, _ = self._step(batch)
        self._log("train_loss", loss, len(batch["image"]))
        return loss

    def on_validation_epoch_start(self) -> None:
        self._squared_error, self._val_count = torch.zeros((), device=self.device), 0

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        loss, outputs, targets = self._step(batch)
        n = len(batch["image"])
        self._log("val_loss", loss, n)
        if self.hparams.kind == "classification":
            self._log("val_accuracy", (outputs.argmax(1) == targets.long()).float().mean(), n)
        else:
            self._squared_error = self._squared_error + ((outputs - targets.float()) ** 2).sum().detach()
            self._val_count += n

    def on_validation_epoch_end(self) -> None:
        if self.hparams.kind == "regression" and self._val_count:
            # RMSE over all validation samples (not a mean of per-batch RMSEs), summed across devices
            total = self.trainer.strategy.reduce(self._squared_error, reduce_op="sum")
            count = self.trainer.strategy.reduce(
                torch.tensor(float(self._val_count), device=self.device), reduce_op="sum"
            )
            self.log("val_rmse", torch.sqrt(total / count), prog_bar=False)

    def configure_optimizers(self) -> Any:
        if self.hparams.get("optimizer", "adam") == "sgd":
            optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, **optimiser_options(self))
        else:
            optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr, **optimiser_options(self))
        if self.hparams.get("schedule", "none") != "cosine":
            return optimizer
        steps = max(1, int(self.trainer.estimated_stepping_batches))
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def outputs(self, images: Any, batch_size: int = EVAL_BATCH) -> torch.Tensor:
        """The network's raw outputs ``(N, num_outputs)`` (logits or values) on ``images``.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of ``image_shape``: uint8 (0-255) or float in [0, 1], ``(N, H, W)`` grey
            or ``(N, H, W, C)`` colour (channels-first accepted).
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        torch.Tensor
            float32 ``(N, num_outputs)`` on the CPU, without gradients: class logits (before the softmax)
            for classification, the predicted value (``num_outputs == 1``) for regression.

        Raises
        ------
        InvalidArgumentError
            When ``images`` breaks the image rule of :func:`~repscope.train.tasks.base.check_images`, or
            ``batch_size`` is below 1.
        """
        array = check_images(images, image_shape=self.image_shape)
        with evaluating(self):
            return torch.cat([self(chunk).cpu() for chunk in image_batches(array, batch_size, self.device)])

    def soft_labels(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The classifier's soft-labels on ``images``: the softmax of its logits, one row per image.

        The softmax is taken in float64 (from the float32 logits), so each row sums to one within
        1e-12: the soft-labels the Raw Zero-Shot metrics (Davies-Bouldin, Amalgam) read.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of ``image_shape``: uint8 (0-255) or float in [0, 1], ``(N, H, W)`` grey
            or ``(N, H, W, C)`` colour (channels-first accepted).
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            float64 ``(N, num_outputs)``, non-negative, rows summing to one.

        Raises
        ------
        InvalidArgumentError
            When the task is a regression (it has no classes), ``images`` breaks the image rule of
            :func:`~repscope.train.tasks.base.check_images`, or ``batch_size`` is below 1.
        """
        self._check_classifies("soft_labels")
        return torch.softmax(self.outputs(images, batch_size).double(), dim=1).numpy()

    def _check_classifies(self, what: str) -> None:
        if self.hparams.kind != "classification":
            raise InvalidArgumentError(
                f"{what}: a {self.hparams.kind} task predicts values, not classes; soft-labels need a classifier"
            )

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Class indices (int64) or regression values (float32), one per image of ``images``: uint8
        (0-255) or float in [0, 1], ``(N, H, W)`` grey or ``(N, H, W, C)`` colour (channels-first accepted).

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of ``image_shape``, as for :meth:`outputs`.
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            ``(N,)``: int64 arg-max of the logits (classification) or float32 predicted values
            (regression).

        Raises
        ------
        InvalidArgumentError
            When ``images`` breaks the image rule, or ``batch_size`` is below 1.
        """
        joined = self.outputs(images, batch_size)
        if self.hparams.kind == "classification":
            return joined.argmax(1).numpy().astype(np.int64)
        return joined.squeeze(1).numpy().astype(np.float32)


PLAIN_SCALARS = (bool, int, float, str, type(None))


def plain_params(params: Any, name: str = "network_params") -> dict[str, Any]:
    """``params`` checked as a mapping of names to plain values (bool, int, float, str, None, and lists
    or mappings of those), so that it can be stored in a checkpoint read with ``weights_only=True``.

    Parameters
    ----------
    params : mapping or None
        The parameters; None gives an empty dict.
    name : str, default="network_params"
        The argument named in error messages.

    Returns
    -------
    dict
        A plain copy (tuples become lists).

    Raises
    ------
    InvalidArgumentError
        When ``params`` is not a mapping with string keys, or holds another kind of value (a numpy
        number, a tensor, an object).
    """
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"{name}: expected a mapping of parameter names to values, got {params!r}")

    def plain(value: Any, key: str) -> Any:
        if isinstance(value, PLAIN_SCALARS):
            return value
        if isinstance(value, list | tuple):
            return [plain(item, key) for item in value]
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return {k: plain(v, f"{key}.{k}") for k, v in value.items()}
        raise InvalidArgumentError(
            f"{name}.{key}: must be a plain value (number, string, bool, or a list of those), got {value!r}"
        )

    for key in params:
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{name}: parameter names must be strings, got {key!r}")
    return {key: plain(value, key) for key, value in params.items()}


__all__ = ["SupervisedTask", "plain_params"]
