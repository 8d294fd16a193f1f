"""How the models of :mod:`repscope.models` are trained: one LightningModule per kind of training.

Every batch is ``(images, targets)``: images float32 ``(B, 1, 28, 28)`` in [0, 1]; targets int64
class labels, float32 regression values, or anything (ignored) for the generative tasks.

Constructors take plain values only (ints, floats, strings, dicts of those) and store them with
``save_hyperparameters``, so a checkpoint loads with ``torch.load(..., weights_only=True)``.

Logged (``on_epoch``): ``train_loss`` and ``val_loss`` by every task, plus

* ``SupervisedTask``: ``val_accuracy`` (classification) or ``val_rmse`` (regression);
* ``VAETask``: ``{train,val}_reconstruction``, ``{train,val}_kl``;
* ``GANTask``: ``train_loss_d``, ``train_loss_g``, ``val_loss_g``;
* ``InfoGANTask``: ``train_loss_d``, ``train_loss_g``, ``train_info`` (and its ``_categorical``,
  ``_continuous``, ``_binary`` parts), ``val_info``, ``val_info_categorical``.

Inference methods (``predict``, ``encode``, ``sample``, ``infer_codes`` ...) run in eval mode without
gradients, on the module's device, and restore the train/eval mode they found. Sampling draws from a
CPU ``torch.Generator`` seeded with ``seed``: the same seed gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F

from repscope.errors import InvalidArgumentError, RepscopeError
from repscope.models.classifiers import KINDS, MLP, LeNet5
from repscope.models.codes import NOISE_KEY, CodeSpec
from repscope.models.mnist_gan import Discriminator, Encoder, Generator, RecognitionHead

EVAL_BATCH = 512
ADAM_BETAS_GAN = (0.5, 0.999)  # Radford et al. (DCGAN), as in Chen et al.'s InfoGAN


# ---------------------------------------------------------------------------------------------
# helpers at the numpy boundary


def check_images(images: Any, name: str = "images") -> np.ndarray:
    """``images`` as a ``(N, 28, 28)`` array: uint8 (0-255) or float in [0, 1]; ``(N, 1, 28, 28)``
    is accepted. Raises :class:`InvalidArgumentError` naming ``name`` otherwise."""
    array = images.detach().cpu().numpy() if torch.is_tensor(images) else np.asarray(images)
    if array.ndim == 4 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 3 or array.shape[1:] != (28, 28):
        raise InvalidArgumentError(f"{name}: expected digits of shape (N, 28, 28), got shape {array.shape}")
    if len(array) == 0:
        raise InvalidArgumentError(f"{name}: no images (N = 0)")
    return check_pixel_values(array, name)


def check_pixel_values(array: np.ndarray, name: str,
                       error: type[RepscopeError] = InvalidArgumentError) -> np.ndarray:
    """The pixel rule every image input shares, whatever its shape: uint8 (0-255), or float / bool
    values that are finite and lie in [0, 1]. Returns ``array`` unchanged; raises ``error`` naming
    ``name`` (an argument, or the file the images came from) otherwise."""
    if array.dtype == np.uint8:
        return array
    if array.dtype.kind not in "fb":
        raise error(f"{name}: expected uint8 (0-255) or float images in [0, 1], got dtype {array.dtype}")
    if not np.isfinite(array).all():
        raise error(f"{name}: NaN or infinite pixel values")
    if array.min() < 0 or array.max() > 1:
        raise error(f"{name}: float images must lie in [0, 1] (pass uint8 for 0-255 intensities); "
                    f"got values in [{array.min():g}, {array.max():g}]")
    return array


def image_batches(images: np.ndarray, batch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    """Float ``(b, 1, 28, 28)`` tensors in [0, 1] on ``device`` from a checked image array."""
    if int(batch_size) < 1:
        raise InvalidArgumentError(f"batch_size: must be at least 1, got {batch_size}")
    for start in range(0, len(images), int(batch_size)):
        chunk = torch.from_numpy(np.ascontiguousarray(images[start : start + int(batch_size)]))
        chunk = chunk.float() / 255.0 if chunk.dtype == torch.uint8 else chunk.float()
        yield chunk.unsqueeze(1).to(device)


def to_uint8(probabilities: torch.Tensor) -> np.ndarray:
    """``(B, 1, 28, 28)`` intensities in [0, 1] -> uint8 ``(B, 28, 28)``, ``round(255 p)``."""
    return torch.round(probabilities * 255.0).clamp(0, 255).to(torch.uint8)[:, 0].cpu().numpy()


def seeded(seed: int) -> torch.Generator:
    if isinstance(seed, bool) or int(seed) != seed:
        raise InvalidArgumentError(f"seed: must be an integer, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


def _count(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise InvalidArgumentError(f"n: must be a non-negative integer, got {n!r}")
    return int(n)


@contextmanager
def evaluating(module: torch.nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside; the module's previous mode restored after."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


def discriminator_loss(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    """``-log D(x) - log(1 - D(G(z)))``, each term averaged over its batch."""
    return (F.binary_cross_entropy_with_logits(real_logits, torch.ones_like(real_logits))
            + F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits)))


def generator_loss(fake_logits: torch.Tensor) -> torch.Tensor:
    """The non-saturating generator loss ``-log D(G(z))`` (Goodfellow et al., 2014)."""
    return F.binary_cross_entropy_with_logits(fake_logits, torch.ones_like(fake_logits))


class _ImageTask(pl.LightningModule):
    """Shared plumbing: logging defaults and decoding latents to uint8 images in chunks."""

    def _log(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        # Lightning's defaults add per-step values in training_step (``<name>_step``, ``<name>_epoch``)
        self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)

    def _decode(self, network: torch.nn.Module, latent: torch.Tensor) -> np.ndarray:
        with evaluating(self):
            chunks = [to_uint8(network(latent[s : s + EVAL_BATCH].to(self.device)))
                      for s in range(0, len(latent), EVAL_BATCH)]
        return np.concatenate(chunks) if chunks else np.zeros((0, 28, 28), np.uint8)


# ---------------------------------------------------------------------------------------------
# supervised


class SupervisedTask(_ImageTask):
    """LeNet-5 or the 784-200-200-L MLP (Castro et al., Appendix D), trained with Adam.

    Classification: cross-entropy on ``num_outputs`` logits, targets int class labels.
    Regression: mean squared error of the single output (``num_outputs`` must be 1), targets float.
    """

    def __init__(self, network: Literal["lenet5", "mlp"] = "lenet5",
                 kind: Literal["classification", "regression"] = "classification",
                 num_outputs: int = 10, lr: float = 1e-3) -> None:
        super().__init__()
        if network not in ("lenet5", "mlp"):
            raise InvalidArgumentError(f"network: must be 'lenet5' or 'mlp', got {network!r}")
        if kind not in KINDS:
            raise InvalidArgumentError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}")
        if kind == "regression" and num_outputs != 1:
            raise InvalidArgumentError(f"num_outputs: regression predicts one value, got num_outputs={num_outputs}")
        if kind == "classification" and num_outputs < 2:
            raise InvalidArgumentError(f"num_outputs: classification needs at least 2 classes, got {num_outputs}")
        self.save_hyperparameters()
        self.network = LeNet5(num_outputs) if network == "lenet5" else MLP(num_outputs)
        self._squared_error = torch.zeros(())
        self._val_count = 0

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.network(images)

    def _step(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, targets = batch[0], batch[1]
        outputs = self(images)
        if self.hparams.kind == "classification":
            return F.cross_entropy(outputs, targets.long()), outputs, targets
        outputs = outputs.squeeze(1)
        return F.mse_loss(outputs, targets.float()), outputs, targets

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss, _, _ = self._step(batch)
        self._log("train_loss", loss, len(batch[0]))
        return loss

    def on_validation_epoch_start(self) -> None:
        self._squared_error, self._val_count = torch.zeros((), device=self.device), 0

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        loss, outputs, targets = self._step(batch)
        n = len(batch[0])
        self._log("val_loss", loss, n)
        if self.hparams.kind == "classification":
            self._log("val_accuracy", (outputs.argmax(1) == targets.long()).float().mean(), n)
        else:
            self._squared_error = self._squared_error + ((outputs - targets.float()) ** 2).sum().detach()
            self._val_count += n

    def on_validation_epoch_end(self) -> None:
        if self.hparams.kind == "regression" and self._val_count:
            # RMSE over all validation digits (not a mean of per-batch RMSEs), summed across devices
            total = self.trainer.strategy.reduce(self._squared_error, reduce_op="sum")
            count = self.trainer.strategy.reduce(torch.tensor(float(self._val_count), device=self.device), reduce_op="sum")
            self.log("val_rmse", torch.sqrt(total / count), prog_bar=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Class indices (int64) or regression values (float32), one per image of ``images``
        (uint8 ``(N, 28, 28)`` or float in [0, 1])."""
        array = check_images(images)
        with evaluating(self):
            outputs = [self(chunk) for chunk in image_batches(array, batch_size, self.device)]
        joined = torch.cat(outputs)
        if self.hparams.kind == "classification":
            return joined.argmax(1).cpu().numpy().astype(np.int64)
        return joined.squeeze(1).cpu().numpy().astype(np.float32)


# ---------------------------------------------------------------------------------------------
# beta-VAE


class VAETask(_ImageTask):
    """beta-VAE (Higgins et al., 2017): the mirrored ``Encoder`` and the InfoGAN ``Generator`` as
    decoder, Bernoulli likelihood.

    Loss per digit, averaged over the batch: ``BCE(x, decoder logits)`` summed over the 784 pixels
    ``+ beta * KL(q(z|x) || N(0, I))`` with ``KL = 1/2 sum(mu^2 + sigma^2 - 1 - log sigma^2)``.
    """

    def __init__(self, latent_dim: int = 64, beta: float = 4.0, lr: float = 1e-3) -> None:
        super().__init__()
        if latent_dim < 1:
            raise InvalidArgumentError(f"latent_dim: must be at least 1, got {latent_dim}")
        if beta < 0:
            raise InvalidArgumentError(f"beta: must be non-negative, got {beta}")
        self.save_hyperparameters()
        self.encoder = Encoder(latent_dim)
        self.decoder = Generator(latent_dim)

    def losses(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        mean, log_var = self.encoder(images)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)
        logits = self.decoder(z, logits=True)
        reconstruction = F.binary_cross_entropy_with_logits(logits, images, reduction="none").flatten(1).sum(1).mean()
        kl = 0.5 * (mean.pow(2) + log_var.exp() - 1.0 - log_var).sum(1).mean()
        return {"loss": reconstruction + self.hparams.beta * kl, "reconstruction": reconstruction, "kl": kl}

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        losses = self.losses(batch[0])
        for key, value in losses.items():
            self._log(f"train_{key}", value, len(batch[0]))
        return losses["loss"]

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        for key, value in self.losses(batch[0]).items():
            self._log(f"val_{key}", value, len(batch[0]))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def encode(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Posterior means ``(N, latent_dim)`` float32 of ``images`` (uint8 or float in [0, 1])."""
        array = check_images(images)
        with evaluating(self):
            means = [self.encoder(chunk)[0] for chunk in image_batches(array, batch_size, self.device)]
        return torch.cat(means).cpu().numpy().astype(np.float32)

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 ``(n, 28, 28)``: the decoder's Bernoulli means for ``z ~ N(0, I)``, ``round(255 p)``."""
        z = torch.randn(_count(n), self.hparams.latent_dim, generator=seeded(seed))
        return self._decode(self.decoder, z)


# ---------------------------------------------------------------------------------------------
# GAN


class GANTask(_ImageTask):
    """Non-saturating GAN (Goodfellow et al., 2014) with the InfoGAN MNIST generator and
    discriminator, ``z ~ N(0, I)``; Adam with betas (0.5, 0.999); one discriminator and one
    generator step per batch (manual optimisation).

    ``val_loss`` is the discriminator loss on the validation digits against as many fakes from
    latents seeded by the batch index (the same fakes every epoch).
    """

    def __init__(self, latent_dim: int = 64, lr_generator: float = 2e-4, lr_discriminator: float = 2e-4) -> None:
        super().__init__()
        if latent_dim < 1:
            raise InvalidArgumentError(f"latent_dim: must be at least 1, got {latent_dim}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = Generator(latent_dim)
        self.discriminator = Discriminator()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr_generator, betas=ADAM_BETAS_GAN),
                torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr_discriminator, betas=ADAM_BETAS_GAN)]

    def training_step(self, batch: Any, batch_idx: int) -> None:
        real = batch[0]
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
        real = batch[0]
        z = torch.randn(len(real), self.hparams.latent_dim, generator=seeded(batch_idx)).to(self.device)
        fake_logits = self.discriminator(self.generator(z))
        self._log("val_loss", discriminator_loss(self.discriminator(real), fake_logits), len(real))
        self._log("val_loss_g", generator_loss(fake_logits), len(real))

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 ``(n, 28, 28)`` generated digits for ``z ~ N(0, I)``, ``round(255 G(z))``."""
        z = torch.randn(_count(n), self.hparams.latent_dim, generator=seeded(seed))
        return self._decode(self.generator, z)


# ---------------------------------------------------------------------------------------------
# InfoGAN


class InfoGANTask(_ImageTask):
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

    def __init__(self, codes: dict[str, Any] | None = None, lr_generator: float = 1e-3,
                 lr_discriminator: float = 2e-4, info_weight: float = 1.0, continuous_weight: float = 1.0,
                 recognition_with: Literal["discriminator", "generator"] = "discriminator") -> None:
        super().__init__()
        if recognition_with not in ("discriminator", "generator"):
            raise InvalidArgumentError(f"recognition_with: must be 'discriminator' or 'generator', got {recognition_with!r}")
        self.code_spec = CodeSpec.from_dict(codes)
        self.save_hyperparameters()
        self.hparams["codes"] = self.code_spec.to_dict()  # complete, so a checkpoint rebuilds it alone
        self.automatic_optimization = False
        self.generator = Generator(self.code_spec.input_dim)
        self.discriminator = Discriminator()
        self.recognition = RecognitionHead(self.code_spec)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        generator, discriminator = [*self.generator.parameters()], [*self.discriminator.parameters()]
        (discriminator if self.hparams.recognition_with == "discriminator" else generator).extend(self.recognition.parameters())
        return [torch.optim.Adam(generator, lr=self.hparams.lr_generator, betas=ADAM_BETAS_GAN),
                torch.optim.Adam(discriminator, lr=self.hparams.lr_discriminator, betas=ADAM_BETAS_GAN)]

    def _fake_terms(self, fake: torch.Tensor, sampled: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict]:
        """Real/fake logits of the fakes and their information loss, from one pass of the trunk."""
        features = self.discriminator.trunk(fake)
        info = self.code_spec.information_loss(self.recognition(features), sampled, self.hparams.continuous_weight)
        return self.discriminator.head(features).squeeze(1), info

    def training_step(self, batch: Any, batch_idx: int) -> None:
        real = batch[0]
        n, weight = len(real), self.hparams.info_weight
        opt_g, opt_d = self.optimizers()
        sampled = self.code_spec.sample(n, device=self.device)
        fake = self.generator(self.code_spec.assemble(sampled))
        fake_logits, info_d = self._fake_terms(fake.detach(), sampled)
        loss_d = discriminator_loss(self.discriminator(real), fake_logits)
        opt_d.zero_grad()
        self.manual_backward(loss_d + weight * info_d["total"] if self.hparams.recognition_with == "discriminator" else loss_d)
        opt_d.step()
        fake_logits, info = self._fake_terms(fake, sampled)
        loss_g = generator_loss(fake_logits)
        objective = loss_g + weight * info["total"]
        opt_g.zero_grad()
        self.manual_backward(objective)
        opt_g.step()
        for name, value in (("train_loss_d", loss_d), ("train_loss_g", loss_g), ("train_loss", objective),
                            *((f"train_info_{k}".replace("_total", ""), v) for k, v in info.items())):
            self._log(name, value.detach(), n)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        real = batch[0]
        sampled = self.code_spec.sample(len(real), generator=seeded(batch_idx), device=self.device)
        fake_logits, info = self._fake_terms(self.generator(self.code_spec.assemble(sampled)), sampled)
        self._log("val_loss", discriminator_loss(self.discriminator(real), fake_logits), len(real))
        self._log("val_info", info["total"], len(real))
        self._log("val_info_categorical", info["categorical"], len(real))

    # -- inference ------------------------------------------------------------------------------------

    def sample_noise(self, n: int, seed: int = 0) -> np.ndarray:
        """float32 ``(n, noise)`` N(0, I) noise: the very noise behind ``sample_with_codes(n, seed)``."""
        return torch.randn(_count(n), self.code_spec.noise, generator=seeded(seed)).numpy()

    def sample_with_codes(self, n: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Digits from codes and noise drawn from the prior: uint8 ``(n, 28, 28)`` images and the
        codes by column name (``code_columns()``): int64 class indices ``0..K-1`` for categorical
        codes, float32 values for continuous and binary (0/1) codes."""
        sampled = self.code_spec.sample(_count(n), generator=seeded(seed))
        images = self._decode(self.generator, self.code_spec.assemble(sampled))
        return images, {c: sampled[c].numpy() for c in self.code_spec.code_columns()}

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 ``(n, 28, 28)`` digits from codes and noise drawn from the prior."""
        return self.sample_with_codes(n, seed)[0]

    def generate(self, codes: Mapping[str, Any], noise: Any) -> np.ndarray:
        """uint8 digits for given codes (by column name, ``(n,)`` each, as ``sample_with_codes``
        returns them) and noise ``(n, noise)``; for latent traversals vary a code, fix the rest."""
        latent = self.code_spec.assemble({**{c: codes[c] for c in codes if c != NOISE_KEY}, NOISE_KEY: noise})
        return self._decode(self.generator, latent)

    def infer_codes(self, images: Any, batch_size: int = EVAL_BATCH) -> dict[str, np.ndarray]:
        """MAP estimates of the codes from the recognition network Q (Castro et al., section 4.2).

        Keys ``code_columns()``: categorical -> arg-max class (int64), continuous -> predicted mean,
        binary -> 1.0 where ``p > 0.5`` else 0.0. Also ``<c>_probabilities`` ``(N, K)`` per
        categorical code, ``<c>_std`` per continuous code, ``<c>_probability`` per binary code.
        """
        array = check_images(images)
        with evaluating(self):
            parameters = torch.cat([self.recognition(self.discriminator.trunk(chunk))
                                    for chunk in image_batches(array, batch_size, self.device)]).cpu()
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
