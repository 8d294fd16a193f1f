"""CapsNet's training (Sabour et al., 2017): the margin loss on class-capsule lengths plus the scaled
reconstruction error of its decoder, in the supervised family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import torch
from pydantic import Field

from repscope.errors import InvalidArgumentError
from repscope.models.zeroshot.capsnet import EPSILON, CapsNet, capsule_lengths
from repscope.train.tasks.base import EVAL_BATCH
from repscope.train.tasks.supervised import SupervisedTask

PRESENT_MARGIN = 0.9  # m+ of the paper
ABSENT_MARGIN = 0.1  # m-
ABSENT_WEIGHT = 0.5  # lambda, down-weights the absent classes so early training does not shrink every capsule
# Keras's K.epsilon(), inside the root of the authors' Length layer (ours: EPSILON, 1e-8)
KERAS_EPSILON = 1e-7


def margin_loss(
    lengths: torch.Tensor,
    targets: torch.Tensor,
    present_margin: float = PRESENT_MARGIN,
    absent_margin: float = ABSENT_MARGIN,
    absent_weight: float = ABSENT_WEIGHT,
) -> torch.Tensor:
    """CapsNet's margin loss (Sabour et al., Eq. 4), summed over classes and averaged over the batch.

    ``L_k = T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2`` with ``T_k = 1`` for the
    true class and 0 otherwise.

    Parameters
    ----------
    lengths : torch.Tensor
        ``(B, K)`` class-capsule lengths ``|v_k|``.
    targets : torch.Tensor
        ``(B,)`` int true classes in ``0 .. K-1``.
    present_margin : float, default=0.9
        ``m+``: the true class's capsule should be at least this long.
    absent_margin : float, default=0.1
        ``m-``: the other capsules should be at most this long.
    absent_weight : float, default=0.5
        ``lambda``, the weight of the absent classes' term.

    Returns
    -------
    torch.Tensor
        The scalar loss ``mean_b sum_k L_k``.
    """
    present = torch.nn.functional.one_hot(targets.long(), lengths.shape[1]).to(lengths.dtype)
    per_class = (
        present * torch.relu(present_margin - lengths) ** 2
        + absent_weight * (1 - present) * torch.relu(lengths - absent_margin) ** 2
    )
    return per_class.sum(1).mean()


def reconstruction_error(reconstructed: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
    """Summed squared error of each image's reconstruction, averaged over the batch.

    Parameters
    ----------
    reconstructed, images : torch.Tensor
        ``(B, C, H, W)`` floats in [0, 1].

    Returns
    -------
    torch.Tensor
        The scalar ``mean_b sum_pixels (reconstructed - images)^2``.
    """
    return ((reconstructed - images) ** 2).flatten(1).sum(1).mean()


class CapsNetTask(SupervisedTask):
    """A :class:`~repscope.models.zeroshot.capsnet.CapsNet` trained as Sabour et al. train it: Adam on the
    margin loss (:func:`margin_loss`) plus ``reconstruction_weight`` (0.0005) times the summed squared
    reconstruction error of each image (:func:`reconstruction_error`, batch mean) when the network has
    its decoder. The decoder reads the true class's capsule in training and the longest capsule in
    validation.

    The network's outputs (:meth:`outputs`) are the class-capsule lengths, not logits: the predicted
    class (:meth:`predict`, ``val_accuracy``) is the longest capsule, and :meth:`soft_labels` are the
    lengths normalised to sum to one. Classification only. The other arguments are
    :class:`~repscope.train.tasks.SupervisedTask`'s; ``network_params`` are the CapsNet's
    (``conv_channels``, ``primary_types``, ``primary_dim``, ``class_dim``, ``routing_iterations``,
    ``reconstruction``).
    """

    @dataclass(kw_only=True)
    class Config(SupervisedTask.Config):
        network: str = "capsnet"
        # CapsNet classifies (a capsule per class): it cannot learn a regression target
        kind: Literal["classification"] = "classification"
        # strict: a number (not a bool, not a string), finite and at least 0
        reconstruction_weight: Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)] = 0.0005

    def build(self) -> None:
        super().build()
        if not isinstance(self.network, CapsNet):
            raise InvalidArgumentError(
                f"network: CapsNetTask trains a capsule network ('capsnet'), got {self.hparams.network!r}"
            )

    def _step(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, targets = batch["image"], batch["target"].long()
        if images.dtype == torch.uint8:
            images = images.float() / 255.0
        capsules = self.network.capsules(images)
        lengths = capsule_lengths(capsules)
        loss = margin_loss(lengths, targets)
        weight = self.hparams.get("reconstruction_weight", 0.0005)
        if self.network.decoder is not None and weight > 0:
            reconstructed = self.network.reconstruct(capsules, targets if self.training else None)
            loss = loss + weight * reconstruction_error(reconstructed, images)
        return loss, lengths, targets

    def soft_labels(self, images: Any, batch_size: int = EVAL_BATCH, compat: str = "paper") -> np.ndarray:
        """The CapsNet's soft-labels on ``images``: the class-capsule lengths divided by their sum (the
        Raw Zero-Shot paper's "capsule lengths, normalised"), one row per image.

        Computed in float64 (from the float32 lengths), so each row sums to one within 1e-12. Every
        length is at least 1e-4 (:func:`~repscope.models.zeroshot.capsnet.capsule_lengths`), so no row divides
        by zero.

        ``compat="reference"`` gives what the authors' code reads instead: the raw capsule lengths, not
        normalised (``shashankkotyan/RepresentationMetrics`` and ``DualQualityAssessment``,
        ``code/networks/cifar/capsnet.py``: the model's ``output`` is the ``Length`` layer,
        ``sqrt(sum(v**2) + K.epsilon())`` with Keras's epsilon 1e-7, and ``Model.predict`` /
        ``analyse_raw_zero_shot`` return it as it is). Ours carry 1e-8 inside the root, so the reference
        rows are ``sqrt(length**2 - 1e-8 + 1e-7)`` in float64; they lie in (0, 1) and do not sum to one.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of ``image_shape``: uint8 (0-255) or float in [0, 1], ``(N, H, W)`` grey
            or ``(N, H, W, C)`` colour (channels-first accepted).
        batch_size : int, default=512
            Images per forward pass.
        compat : {"paper", "reference"}, default="paper"
            Normalised lengths (the paper) or the raw lengths the authors' code outputs (reference).

        Returns
        -------
        numpy.ndarray
            float64 ``(N, num_outputs)``, positive: rows summing to one, or (reference) the raw lengths.

        Raises
        ------
        InvalidArgumentError
            When ``images`` breaks the image rule of :func:`~repscope.train.tasks.base.check_images`,
            ``batch_size`` is below 1, or ``compat`` is neither ``paper`` nor ``reference``.
        """
        if compat not in ("paper", "reference"):
            raise InvalidArgumentError(f"compat: expected paper or reference, got {compat!r}")
        self._check_classifies("soft_labels")
        lengths = self.outputs(images, batch_size).double()
        if compat == "reference":
            return torch.sqrt(lengths**2 + (KERAS_EPSILON - EPSILON)).numpy()
        return (lengths / lengths.sum(1, keepdim=True)).numpy()


__all__ = ["CapsNetTask", "margin_loss", "reconstruction_error"]
