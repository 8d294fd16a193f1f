"""The VAE family: an encoder / decoder pair trained on the evidence lower bound; beta-VAE first."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from repscope.errors import InvalidArgumentError
from repscope.models.networks import build_autoencoder, default_architecture
from repscope.train.tasks.base import (
    DIGIT_SHAPE,
    EVAL_BATCH,
    ImageShape,
    ImageTask,
    check_images,
    count,
    evaluating,
    image_batches,
    optimiser_options,
    seeded,
)


def box_weight_map(boxes: torch.Tensor, height: int, width: int, weight: float) -> torch.Tensor:
    """Per-pixel weights ``(B, 1, height, width)``: ``weight`` inside each image's box, 1 outside.

    A pixel is inside when its centre ``(column + 0.5, row + 0.5)`` lies in ``x0 <= x < x1``,
    ``y0 <= y < y1`` (the ``box`` field layout of :mod:`repscope.data.boxes`).

    Parameters
    ----------
    boxes : torch.Tensor, shape (B, 4)
        ``(x0, y0, x1, y1)`` in pixels of the images the loss sees.
    height, width : int
        Image size.
    weight : float
        Weight of the pixels inside.

    Returns
    -------
    torch.Tensor
        float ``(B, 1, height, width)`` on ``boxes``' device.
    """
    boxes = boxes.to(torch.float32)
    x = torch.arange(width, device=boxes.device, dtype=torch.float32) + 0.5
    y = torch.arange(height, device=boxes.device, dtype=torch.float32) + 0.5
    inside_x = (x >= boxes[:, 0, None]) & (x < boxes[:, 2, None])  # (B, W)
    inside_y = (y >= boxes[:, 1, None]) & (y < boxes[:, 3, None])  # (B, H)
    inside = inside_y[:, :, None] & inside_x[:, None, :]
    return (1.0 + (weight - 1.0) * inside.to(torch.float32))[:, None]


class VAETask(ImageTask):
    """beta-VAE (Higgins et al., 2017) with a Bernoulli likelihood and a standard normal prior.

    Networks: ``architecture`` of :data:`repscope.models.networks.AUTOENCODERS` for images of
    ``image_shape`` (default: ``infogan-mnist``, the mirrored InfoGAN networks, for 28x28 digits;
    ``conv64``, Burgess et al.'s networks, for 64x64 images).

    Loss per image, averaged over the batch: ``BCE(x, decoder logits)`` summed over the pixels
    ``+ beta * KL(q(z|x) || N(0, I))`` with ``KL = 1/2 sum(mu^2 + sigma^2 - 1 - log sigma^2)``.
    Subclasses change the regulariser by overriding :meth:`regulariser`.

    ``box_weight`` (default 1: off) multiplies the reconstruction term of the pixels inside each image's
    bounding box (the batch field ``box``, :mod:`repscope.data.boxes`), as the CANDLE paper (Reddy et
    al., section 3) proposes when the object is small against a busy background: the object's pixels
    count more without scaling the whole reconstruction term. It applies in training and validation
    steps, whose batches then carry ``box``; the likelihood-based outputs (``encode``, ``decode``) are
    unchanged.
    """

    box_weight_field = "box"
    _boxes: torch.Tensor | None = None

    @dataclass(kw_only=True)
    class Config(ImageTask.Config):
        """beta-VAE's hyper-parameters (the class docstring)."""

        latent_dim: Annotated[int, Field(ge=1)] = 64
        beta: Annotated[float, Field(ge=0)] = 4.0
        lr: float = 1e-3
        image_shape: ImageShape = DIGIT_SHAPE
        architecture: str | None = None  # default: the one for image_shape
        # strict: a number (not a bool, not a string), finite and positive
        box_weight: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] = 1.0

    def check_config(self, config: Any) -> None:
        super().check_config(config)
        config.architecture = config.architecture or default_architecture(config.image_shape)

    def build(self) -> None:
        super().build()
        hp = self.hparams
        if hp.box_weight != 1.0:
            # the subclass's fields (e.g. factors for semi-supervision) plus the boxes
            self.batch_fields = (*type(self).batch_fields, self.box_weight_field)
        self.encoder, self.decoder = build_autoencoder(hp.architecture, hp.image_shape, hp.latent_dim)

    def regulariser(self, mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{"regulariser": beta * KL, "kl": KL}``, each averaged over the batch.

        ``KL(q(z|x) || N(0, I)) = 1/2 sum_j (mu_j^2 + sigma_j^2 - 1 - log sigma_j^2)`` per image, summed
        over the latent dimensions, in nats.

        Parameters
        ----------
        mean : torch.Tensor, shape (B, latent_dim)
            Posterior means ``mu``.
        log_var : torch.Tensor, shape (B, latent_dim)
            Posterior log-variances ``log sigma^2``.
        z : torch.Tensor, shape (B, latent_dim)
            The reparameterised sample; unused here, there for subclasses (e.g. total-correlation terms).

        Returns
        -------
        dict of str to torch.Tensor
            Scalar tensors (with gradients): ``regulariser`` = ``beta * kl``, added to the loss, and ``kl``,
            the batch mean of the KL in nats. Subclasses may add further logged keys.
        """
        kl = 0.5 * (mean.pow(2) + log_var.exp() - 1.0 - log_var).sum(1).mean()
        return {"regulariser": self.hparams.beta * kl, "kl": kl}

    def losses(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """``loss`` = reconstruction + regulariser, and its parts, on float images ``(B, C, H, W)``.

        With one reparameterised sample ``z = mu + sigma * eps``, ``eps ~ N(0, I)`` (the global torch RNG)::

            reconstruction = mean_batch sum_pixels w(p) BCE(x, sigmoid(decoder logits(z)))
            loss           = reconstruction + beta * KL          (see :meth:`regulariser`)

        with ``w(p) = box_weight`` inside the batch's boxes (when a training or validation step set
        them) and 1 elsewhere.

        Parameters
        ----------
        images : torch.Tensor, shape (B, C, H, W)
            float32 pixel intensities in [0, 1] (the Bernoulli targets), on the module's device.

        Returns
        -------
        dict of str to torch.Tensor
            Scalar tensors in nats per image, averaged over the batch, with gradients: ``loss`` (for
            ``beta = 1`` a one-sample estimate of the negative ELBO), ``reconstruction``, and the other keys
            of :meth:`regulariser` (``kl``; ``regulariser`` itself is not returned).
        """
        mean, log_var = self.encoder(images)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)
        logits = self.decoder(z, logits=True)
        per_pixel = F.binary_cross_entropy_with_logits(logits, images, reduction="none")
        if self._boxes is not None:
            per_pixel = per_pixel * box_weight_map(
                self._boxes, images.shape[-2], images.shape[-1], self.hparams.box_weight
            )
        reconstruction = per_pixel.flatten(1).sum(1).mean()
        parts = self.regulariser(mean, log_var, z)
        regulariser = parts.pop("regulariser")
        return {"loss": reconstruction + regulariser, "reconstruction": reconstruction, **parts}

    @contextmanager
    def box_weighting(self, batch: Any) -> Iterator[None]:
        """Within the block, :meth:`losses` weights the reconstruction inside the batch's boxes.

        A no-op when ``box_weight`` is 1. Otherwise the batch must carry the ``box`` field (``(B, 4)``,
        :mod:`repscope.data.boxes`).

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            A training or validation batch; its ``box`` field is read.

        Returns
        -------
        contextlib.AbstractContextManager
            Active for the ``with`` block; the boxes are dropped on leaving it.

        Raises
        ------
        InvalidArgumentError
            When ``box_weight`` is not 1 and the batch has no ``box`` field of shape ``(B, 4)``.
        """
        if self.hparams.box_weight == 1.0:
            yield
            return
        boxes = batch.get(self.box_weight_field) if isinstance(batch, dict) else None
        if boxes is None:
            raise InvalidArgumentError(
                f"box_weight: {self.hparams.box_weight} weights the pixels inside bounding boxes, but the batch "
                f"has no {self.box_weight_field!r} field; use a dataset that gives one (e.g. dsprites) or box_weight 1"
            )
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise InvalidArgumentError(f"box: expected shape (B, 4) (x0, y0, x1, y1), got {tuple(boxes.shape)}")
        previous, self._boxes = self._boxes, boxes
        try:
            yield
        finally:
            self._boxes = previous

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        with self.box_weighting(batch):
            losses = self.losses(batch["image"])
        for key, value in losses.items():
            self._log(f"train_{key}", value, len(batch["image"]))
        return losses["loss"]

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        with self.box_weighting(batch):
            losses = self.losses(batch["image"])
        for key, value in losses.items():
            self._log(f"val_{key}", value, len(batch["image"]))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, **optimiser_options(self))

    def encode(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Posterior means ``(N, latent_dim)`` float32 of ``images`` (uint8 or float in [0, 1]).

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of ``image_shape``: uint8 (0-255) or float in [0, 1], ``(N, H, W)`` grey or
            ``(N, H, W, C)`` colour (channels-first accepted).
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            float32 ``(N, latent_dim)`` posterior means ``mu`` (no sampling).

        Raises
        ------
        InvalidArgumentError
            When ``images`` breaks the image rule of :func:`~repscope.train.tasks.base.check_images`, or
            ``batch_size`` is below 1.
        """
        array = check_images(images, image_shape=self.image_shape)
        with evaluating(self):
            means = [self.encoder(chunk)[0] for chunk in image_batches(array, batch_size, self.device)]
        return torch.cat(means).cpu().numpy().astype(np.float32)

    def decode(self, codes: Any) -> np.ndarray:
        """uint8 images of codes ``(N, latent_dim)``: the decoder's Bernoulli means, ``round(255 p)``.

        Parameters
        ----------
        codes : array-like, shape (N, latent_dim)
            Latent vectors (cast to float32); ``N`` may be 0.

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, H, W)`` grey or ``(N, H, W, C)`` colour images.

        Raises
        ------
        InvalidArgumentError
            When ``codes`` is not 2-D with ``latent_dim`` columns.
        """
        z = torch.as_tensor(np.asarray(codes, dtype=np.float32))
        if z.ndim != 2 or z.shape[1] != self.hparams.latent_dim:
            raise InvalidArgumentError(f"codes: expected shape (N, {self.hparams.latent_dim}), got {tuple(z.shape)}")
        return self._decode(self.decoder, z)

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 images of ``z ~ N(0, I)``: ``(n, H, W)`` grey or ``(n, H, W, C)`` colour.

        Parameters
        ----------
        n : int
            Number of images, 0 or more.
        seed : int, default=0
            Seed of the CPU generator that draws ``z``: the same seed gives the same images.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, H, W)`` or ``(n, H, W, C)``: ``round(255 p)`` of the decoder's Bernoulli means.

        Raises
        ------
        InvalidArgumentError
            When ``n`` is not a non-negative integer or ``seed`` not an integer.
        """
        z = torch.randn(count(n), self.hparams.latent_dim, generator=seeded(seed))
        return self._decode(self.decoder, z)


__all__ = ["VAETask", "box_weight_map"]
