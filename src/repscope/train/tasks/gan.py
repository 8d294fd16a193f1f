"""The GAN family: a generator and a discriminator trained against each other (manual optimisation).

Non-saturating GAN (Goodfellow et al., 2014) and InfoGAN (Chen et al., 2016) with the InfoGAN MNIST
networks: 28x28 grey digits. Logged (``on_epoch``): ``train_loss``, ``val_loss`` and

* ``GANTask``: ``train_loss_d``, ``train_loss_g``, ``val_loss_g``;
* ``InfoGANTask``: ``train_loss_d``, ``train_loss_g``, ``train_info`` (and its ``_categorical``,
  ``_continuous``, ``_binary`` parts), ``val_info``, ``val_info_categorical``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from repscope.errors import InvalidArgumentError
from repscope.models.morpho.infogan import Discriminator, Generator, RecognitionHead
from repscope.models.morpho.infogan_codes import NOISE_KEY, CodeSpec
from repscope.train.tasks.base import (
    EVAL_BATCH,
    ImageTask,
    check_images,
    count,
    evaluating,
    image_batches,
    optimiser_options,
    seeded,
)

ADAM_BETAS_GAN = (0.5, 0.999)  # Radford et al. (DCGAN), as in Chen et al.'s InfoGAN


def discriminator_loss(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    """``-log D(x) - log(1 - D(G(z)))``, each term averaged over its batch.

    With ``D = sigmoid(logit)``::

        loss_d = mean_i -log sigmoid(r_i) + mean_j -log(1 - sigmoid(f_j))

    computed from the logits (binary cross-entropy with targets 1 for real, 0 for fake).

    Parameters
    ----------
    real_logits : torch.Tensor, shape (B,)
        Discriminator logits ``r`` (before the sigmoid) of real images.
    fake_logits : torch.Tensor, shape (B',)
        Discriminator logits ``f`` of generated images; ``B'`` may differ from ``B``.

    Returns
    -------
    torch.Tensor
        Scalar loss in nats: the sum of the two batch means.
    """
    return F.binary_cross_entropy_with_logits(
        real_logits, torch.ones_like(real_logits)
    ) + F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits))


def generator_loss(fake_logits: torch.Tensor) -> torch.Tensor:
    """The non-saturating generator loss ``-log D(G(z))`` (Goodfellow et al., 2014).

    ``loss_g = mean_j -log sigmoid(f_j)``, computed from the logits (binary cross-entropy with target 1).

    Parameters
    ----------
    fake_logits : torch.Tensor, shape (B,)
        Discriminator logits ``f`` (before the sigmoid) of generated images.

    Returns
    -------
    torch.Tensor
        Scalar loss in nats, averaged over the batch.
    """
    return F.binary_cross_entropy_with_logits(fake_logits, torch.ones_like(fake_logits))


# ---------------------------------------------------------------------------------------------
# GAN


class GANTask(ImageTask):
    """Non-saturating GAN (Goodfellow et al., 2014) with the InfoGAN MNIST generator and
    discriminator, ``z ~ N(0, I)``; Adam with betas (0.5, 0.999); one discriminator and one
    generator step per batch (manual optimisation).

    ``val_loss`` is the discriminator loss on the validation digits against as many fakes from
    latents seeded by the batch index (the same fakes every epoch).
    """

    @dataclass(kw_only=True)
    class Config(ImageTask.Config):
        latent_dim: Annotated[int, Field(ge=1)] = 64
        lr_generator: float = 2e-4
        lr_discriminator: float = 2e-4

    def build(self) -> None:
        super().build()
        self.automatic_optimization = False
        self.generator = Generator(self.hparams.latent_dim)
        self.discriminator = Discriminator()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        return [
            torch.optim.Adam(
                self.generator.parameters(),
                lr=self.hparams.lr_generator,
                betas=ADAM_BETAS_GAN,
                **optimiser_options(self),
            ),
            torch.optim.Adam(
                self.discriminator.parameters(),
                lr=self.hparams.lr_discriminator,
                betas=ADAM_BETAS_GAN,
                **optimiser_options(self),
            ),
        ]

    def training_step(self, batch: Any, batch_idx: int) -> None:
        real = batch["image"]
        opt_g, opt_d = self.optimizers()
        fake = self.generator(torch.randn(len(real), self.hparams.latent_dim, device=self.device))
        loss_d = discriminator_loss(self.discriminator(real), self.discriminator(fake.detach()))
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        opt_d.step()
        loss_g = generator_loss(self.discriminator(fake))
        opt_g.zero_grad()
        self.manual_backward(loss_g)
        opt_g.step()
        for name, value in (("train_loss_d", loss_d), ("train_loss_g", loss_g), ("train_loss", loss_g)):
            self._log(name, value.detach(), len(real))

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        real = batch["image"]
        z = torch.randn(len(real), self.hparams.latent_dim, generator=seeded(batch_idx)).to(self.device)
        fake_logits = self.discriminator(self.generator(z))
        self._log("val_loss", discriminator_loss(self.discriminator(real), fake_logits), len(real))
        self._log("val_loss_g", generator_loss(fake_logits), len(real))

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 ``(n, 28, 28)`` generated digits for ``z ~ N(0, I)``, ``round(255 G(z))``.

        Parameters
        ----------
        n : int
            Number of digits, 0 or more.
        seed : int, default=0
            Seed of the CPU generator that draws ``z``: the same seed gives the same digits.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, 28, 28)``: ``round(255 G(z))`` of the generator's pixel intensities in [0, 1].

        Raises
        ------
        InvalidArgumentError
            When ``n`` is not a non-negative integer or ``seed`` not an integer.
        """
        z = torch.randn(count(n), self.hparams.latent_dim, generator=seeded(seed))
        return self._decode(self.generator, z)

    def decode(self, codes: Any) -> np.ndarray:
        """uint8 ``(N, 28, 28)`` digits of given latents ``z`` ``(N, latent_dim)``, ``round(255 G(z))``.

        Parameters
        ----------
        codes : array-like, shape (N, latent_dim)
            Generator inputs ``z`` (cast to float32), e.g. a traversal of one dimension; ``N`` may be 0.

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, 28, 28)``.

        Raises
        ------
        InvalidArgumentError
            When ``codes`` is not 2-D with ``latent_dim`` columns, or holds NaN or infinite values.
        """
        z = torch.as_tensor(np.asarray(codes, dtype=np.float32))
        if z.ndim != 2 or z.shape[1] != self.hparams.latent_dim:
            raise InvalidArgumentError(f"codes: expected shape (N, {self.hparams.latent_dim}), got {tuple(z.shape)}")
        if not torch.isfinite(z).all():
            raise InvalidArgumentError("codes: NaN or infinite values")
        return self._decode(self.generator, z)


# ---------------------------------------------------------------------------------------------
# InfoGAN


class InfoGANTask(ImageTask):
    """InfoGAN (Chen et al., 2016): generator input = the codes of ``codes`` (a
    :meth:`CodeSpec.to_dict`; ``None`` is setting A: 10-way categorical, 2 continuous, 62-d noise)
    assembled with the noise; the recognition head Q shares the discriminator trunk.

    ``info`` is :meth:`CodeSpec.information_loss` of the fakes' codes (cross-entropy for categorical,
    Gaussian NLL with predicted mean and log-std for continuous, weighted by ``continuous_weight``,
    BCE for binary). Per batch (manual optimisation, Adam betas (0.5, 0.999)) a discriminator step,
    then a generator step on ``loss_g + info_weight * info``. ``recognition_with`` says which
    optimiser holds Q's head:

    * ``"discriminator"`` (default, as in Chen et al.'s released MNIST code): the discriminator step
      minimises ``loss_d + info_weight * info`` over trunk, real/fake head and Q head, so the shared
      trunk also learns features that recover the codes;
    * ``"generator"``: Q's head is updated with the generator; the discriminator step minimises
      ``loss_d`` alone (the trunk serves Q without training for it; codes are learnt more slowly).

    Logs ``train_loss_d`` and ``train_loss_g`` (the adversarial losses), ``train_info`` (and its
    parts) and ``train_loss`` = the generator step's objective. ``val_loss`` is the discriminator
    loss on validation digits against fakes from codes seeded by the batch index; ``val_info`` the
    information loss on those fakes.
    """

    @dataclass(kw_only=True)
    class Config(ImageTask.Config):
        codes: dict[str, Any] | None = None  # None: setting A; stored complete (CodeSpec.to_dict)
        lr_generator: float = 1e-3
        lr_discriminator: float = 2e-4
        info_weight: float = 1.0
        continuous_weight: float = 1.0
        recognition_with: Literal["discriminator", "generator"] = "discriminator"

    def check_config(self, config: Any) -> None:
        super().check_config(config)
        config.codes = CodeSpec.from_dict(config.codes).to_dict()  # complete, so a checkpoint rebuilds it alone

    def build(self) -> None:
        super().build()
        self.code_spec = CodeSpec.from_dict(self.hparams.codes)
        self.automatic_optimization = False
        self.generator = Generator(self.code_spec.input_dim)
        self.discriminator = Discriminator()
        self.recognition = RecognitionHead(self.code_spec)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        generator, discriminator = [*self.generator.parameters()], [*self.discriminator.parameters()]
        (discriminator if self.hparams.recognition_with == "discriminator" else generator).extend(
            self.recognition.parameters()
        )
        return [
            torch.optim.Adam(generator, lr=self.hparams.lr_generator, betas=ADAM_BETAS_GAN, **optimiser_options(self)),
            torch.optim.Adam(
                discriminator, lr=self.hparams.lr_discriminator, betas=ADAM_BETAS_GAN, **optimiser_options(self)
            ),
        ]

    def _fake_terms(self, fake: torch.Tensor, sampled: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict]:
        """Real/fake logits of the fakes and their information loss, from one pass of the trunk."""
        features = self.discriminator.trunk(fake)
        info = self.code_spec.information_loss(self.recognition(features), sampled, self.hparams.continuous_weight)
        return self.discriminator.head(features).squeeze(1), info

    def training_step(self, batch: Any, batch_idx: int) -> None:
        real = batch["image"]
        n, weight = len(real), self.hparams.info_weight
        opt_g, opt_d = self.optimizers()
        sampled = self.code_spec.sample(n, device=self.device)
        fake = self.generator(self.code_spec.assemble(sampled))
        fake_logits, info_d = self._fake_terms(fake.detach(), sampled)
        loss_d = discriminator_loss(self.discriminator(real), fake_logits)
        opt_d.zero_grad()
        self.manual_backward(
            loss_d + weight * info_d["total"] if self.hparams.recognition_with == "discriminator" else loss_d
        )
        opt_d.step()
        fake_logits, info = self._fake_terms(fake, sampled)
        loss_g = generator_loss(fake_logits)
        objective = loss_g + weight * info["total"]
        opt_g.zero_grad()
        self.manual_backward(objective)
        opt_g.step()
        for name, value in (
            ("train_loss_d", loss_d),
            ("train_loss_g", loss_g),
            ("train_loss", objective),
            *((f"train_info_{k}".replace("_total", ""), v) for k, v in info.items()),
        ):
            self._log(name, value.detach(), n)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        real = batch["image"]
        sampled = self.code_spec.sample(len(real), generator=seeded(batch_idx), device=self.device)
        fake_logits, info = self._fake_terms(self.generator(self.code_spec.assemble(sampled)), sampled)
        self._log("val_loss", discriminator_loss(self.discriminator(real), fake_logits), len(real))
        self._log("val_info", info["total"], len(real))
        self._log("val_info_categorical", info["categorical"], len(real))

    # -- inference ------------------------------------------------------------------------------------

    def sample_noise(self, n: int, seed: int = 0) -> np.ndarray:
        """float32 ``(n, noise)`` N(0, I) noise: the very noise behind ``sample_with_codes(n, seed)``.

        Parameters
        ----------
        n : int
            Number of noise vectors, 0 or more.
        seed : int, default=0
            Seed of the CPU generator.

        Returns
        -------
        numpy.ndarray
            float32 ``(n, noise)``, ``noise`` the noise width of the task's codes (62 in setting A).

        Raises
        ------
        InvalidArgumentError
            When ``n`` is not a non-negative integer or ``seed`` not an integer.
        """
        return torch.randn(count(n), self.code_spec.noise, generator=seeded(seed)).numpy()

    def sample_with_codes(self, n: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Digits from codes and noise drawn from the prior: uint8 ``(n, 28, 28)`` images and the
        codes by column name (``code_columns()``): int64 class indices ``0..K-1`` for categorical
        codes, float32 values for continuous and binary (0/1) codes.

        Prior: categorical codes uniform over ``0..K-1``, continuous codes uniform in [-1, 1), binary
        codes 0 or 1 with probability 1/2 each, noise ``N(0, I)``.

        Parameters
        ----------
        n : int
            Number of digits, 0 or more.
        seed : int, default=0
            Seed of the CPU generator: the same seed gives the same codes, noise and digits.

        Returns
        -------
        images : numpy.ndarray
            uint8 ``(n, 28, 28)``, ``round(255 G(codes, noise))``.
        codes : dict of str to numpy.ndarray
            ``(n,)`` per code column ``c1, c2, ...`` (categorical, then continuous, then binary); the
            noise is not included (see :meth:`sample_noise`).

        Raises
        ------
        InvalidArgumentError
            When ``n`` is not a non-negative integer or ``seed`` not an integer.
        """
        sampled = self.code_spec.sample(count(n), generator=seeded(seed))
        images = self._decode(self.generator, self.code_spec.assemble(sampled))
        return images, {c: sampled[c].numpy() for c in self.code_spec.code_columns()}

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 ``(n, 28, 28)`` digits from codes and noise drawn from the prior.

        Parameters
        ----------
        n : int
            Number of digits, 0 or more.
        seed : int, default=0
            Seed of the CPU generator; the digits are those of ``sample_with_codes(n, seed)``.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, 28, 28)``.

        Raises
        ------
        InvalidArgumentError
            When ``n`` is not a non-negative integer or ``seed`` not an integer.
        """
        return self.sample_with_codes(n, seed)[0]

    def decode(self, codes: Any, noise: Any = None) -> np.ndarray:
        """uint8 digits for given codes and noise; for latent traversals vary a code, fix the rest.

        Parameters
        ----------
        codes : array-like of shape (n, D), or mapping of str to array-like
            The codes in :meth:`encode`'s layout: one column per code of ``code_spec.code_columns()``
            (categorical codes as class indices ``0..K-1``, then continuous values, then binary values);
            or the same by column name, one ``(n,)`` array each, as :meth:`sample_with_codes` returns
            them (a ``"noise"`` entry and other unknown keys are ignored).
        noise : array-like of shape (n, noise), optional
            The noise part of the generator input, e.g. from :meth:`sample_noise`; default zeros (the
            mode of its N(0, I) prior), so ``decode(encode(images))`` shows what the codes alone say.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, 28, 28)``, ``round(255 G(codes, noise))``.

        Raises
        ------
        InvalidArgumentError
            When a code column is missing, a code is not ``(n,)`` (an array not ``(n, D)``), the noise is not
            ``(n, noise)``, a categorical code is not a class index ``0..K-1``, or a value is NaN or infinite.
        """
        columns = self.code_spec.code_columns()
        if isinstance(codes, Mapping):
            by_column = {c: codes[c] for c in codes if c != NOISE_KEY}
            n = len(next(iter(by_column.values()))) if by_column else 0
        else:
            array = np.asarray(codes)
            if array.ndim != 2 or array.shape[1] != len(columns):
                raise InvalidArgumentError(
                    f"codes: expected shape (n, {len(columns)}) (columns {', '.join(columns)}), got {array.shape}"
                )
            by_column, n = {c: array[:, j] for j, c in enumerate(columns)}, len(array)
        if noise is None:
            noise = np.zeros((n, self.code_spec.noise), np.float32)
        latent = self.code_spec.assemble({**by_column, NOISE_KEY: noise})
        return self._decode(self.generator, latent)

    def encode(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The recognition network's codes of ``images`` as one float32 array ``(N, D)``.

        One column per code, in the order of ``code_spec.code_columns()`` (``c1, c2, ...``: categorical,
        then continuous, then binary): the arg-max class index of a categorical code, the predicted mean
        of a continuous code, 0.0 / 1.0 of a binary code -- the values of :meth:`infer_codes` without its
        probabilities and standard deviations. :meth:`decode` takes this layout back.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 28x28 grey digit: uint8 (0-255) or float in [0, 1], ``(N, 28, 28)`` or
            ``(N, 1, 28, 28)``.
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            float32 ``(N, D)``, ``D = len(code_spec.code_columns())``.

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not a batch of 28x28 grey images following the pixel rule, or
            ``batch_size`` is below 1.
        """
        inferred = self.infer_codes(images, batch_size)
        return np.stack([inferred[c].astype(np.float32) for c in self.code_spec.code_columns()], axis=1)

    def infer_codes(self, images: Any, batch_size: int = EVAL_BATCH) -> dict[str, np.ndarray]:
        """MAP estimates of the codes from the recognition network Q (Castro et al., section 4.2), by column
        name and with the recognition network's probabilities and standard deviations (:meth:`encode` is
        the same codes as one array).

        Keys ``code_columns()``: categorical -> arg-max class (int64), continuous -> predicted mean,
        binary -> 1.0 where ``p > 0.5`` else 0.0. Also ``<c>_probabilities`` ``(N, K)`` per
        categorical code, ``<c>_std`` per continuous code, ``<c>_probability`` per binary code.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one 28x28 grey digit: uint8 (0-255) or float in [0, 1], ``(N, 28, 28)`` or
            ``(N, 1, 28, 28)``.
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        dict of str to numpy.ndarray
            Per categorical code ``c``: ``c`` int64 ``(N,)`` and ``c_probabilities`` float32 ``(N, K)``
            (softmax of Q's logits). Per continuous code: ``c`` float32 ``(N,)`` mean and ``c_std``
            float32 ``(N,)`` standard deviation (``exp`` of the log-std, clamped to ``LOG_STD_RANGE``).
            Per binary code: ``c`` float32 ``(N,)`` 0.0 / 1.0 and ``c_probability`` float32 ``(N,)``.

        Raises
        ------
        InvalidArgumentError
            When ``images`` is not a batch of 28x28 grey images following the pixel rule, or
            ``batch_size`` is below 1.
        """
        array = check_images(images)
        with evaluating(self):
            parameters = torch.cat(
                [
                    self.recognition(self.discriminator.trunk(chunk))
                    for chunk in image_batches(array, batch_size, self.device)
                ]
            ).cpu()
        split = self.code_spec.split_parameters(parameters)
        out: dict[str, np.ndarray] = {}
        extras: dict[str, np.ndarray] = {}
        for column in self.code_spec.categorical_columns():
            probabilities = torch.softmax(split[column], dim=1)
            out[column] = probabilities.argmax(1).numpy().astype(np.int64)
            extras[f"{column}_probabilities"] = probabilities.numpy()
        for column in self.code_spec.continuous_columns():
            out[column] = split[column][:, 0].numpy().astype(np.float32)
            extras[f"{column}_std"] = torch.exp(split[column][:, 1]).numpy().astype(np.float32)
        for column in self.code_spec.binary_columns():
            probability = torch.sigmoid(split[column])
            out[column] = (probability > 0.5).float().numpy()
            extras[f"{column}_probability"] = probability.numpy()
        return {**out, **extras}
