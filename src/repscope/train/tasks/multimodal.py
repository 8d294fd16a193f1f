"""The multimodal VAE family: MVAE, MMVAE, MoPoE, DMVAE and MMVAE+ trained on any dataset with several modality
fields.

``modalities`` names, per modality, the dataset field it reads, its networks (by name,
:mod:`repscope.models.multimodal.networks`), its likelihood and the field of its padding mask; the
shapes come from the dataset's field descriptions. The default is the CdSprites+ pairing: the image
(``fc-image``, Gaussian, scale 0.75) and the caption (``text-transformer``, categorical).

``mask`` names the field of a modality's padding mask (True on real characters): the encoder sees the
padding as all-zero rows and masks it out of attention. With ``pad_class`` (the caption's space, 0) the
decoder learns to end a caption with two of that class (:data:`END_MARK`; captions hold single spaces
between words), so that a generated caption ends where it writes them; the rest of the padding is
never scored.

The model, the mixing rules and the objectives are :class:`repscope.models.multimodal.models.MultimodalVAE`;
this module only feeds it batches and logs its loss, as the other families do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal.likelihoods import LIKELIHOODS, PRIORS, log_likelihood, log_normal, log_prior
from repscope.models.multimodal.models import MIXINGS, OBJECTIVES, LikelihoodSpec, MultimodalVAE
from repscope.models.multimodal.networks import build_modality_networks
from repscope.models.multimodal.plus import ModalitySpecificMixtureVAE
from repscope.models.multimodal.private import PrivateSharedVAE

PRIVATE_LATENT_MODELS = ("dmvae", "mmvae-plus")  # models with a modality-specific latent per modality
MODELS = (*MIXINGS, *PRIVATE_LATENT_MODELS)
OPTIMIZERS = ("adam", "adamw")

CDSPRITES_MODALITIES: dict[str, dict[str, Any]] = {
    "image": {"field": "image", "network": "fc-image", "likelihood": "gaussian", "scale": 0.75},
    "text": {
        "field": "text",
        "network": "text-transformer",
        "likelihood": "categorical",
        "mask": "mask",
        "pad_class": 0,
    },
}
END_MARK = 2  # pad characters that end a caption: a caption has single spaces between words
MODALITY_KEYS = ("field", "network", "params", "likelihood", "scale", "weight", "mask", "pad_class")


class MultimodalVAETask(pl.LightningModule):
    """A multimodal VAE on a dataset's modality fields (module docstring).

    Parameters
    ----------
    model : {"mvae", "mmvae", "mopoe", "dmvae", "mmvae-plus"}
        Set by the registry name.
    modalities : dict, optional
        Modality name -> ``{field, network, params, likelihood, scale, weight, mask}`` (default: the
        CdSprites+ image and caption).
    latent_dim : int, default=16
        Size of the shared latent.
    private_dim : int, default=4
        Size of each modality's private latent (``dmvae`` and ``mmvae-plus`` only).
    objective : {"elbo", "iwae", "dreg"}, default="elbo"
        Training objective.
    k : int, default=1
        Samples of z per example (IWAE / DReG).
    beta : float, default=1.0
        KL weight of the ELBO.
    lr : float, default=1e-3
        Adam's learning rate.
    prior : {"normal", "laplace"}, default="normal"
        Latent prior.
    optimizer : {"adam", "adamw"}, default="adam"
        The optimiser (the paper: Adam).
    weight_decay : float, default=0.0
        Its weight decay.
    subsampling : {"singles", "all"}, default="singles"
        MVAE's ELBO terms besides the joint one: each single modality, or every proper subset.
    estimator : {"stratified", "sampled"}, default="stratified"
        MMVAE / MoPoE: the bound of every mixture component, or of one drawn per example (cheaper).
    field_specs : dict, optional
        Field name -> ``{"shape": [...], "classes": int}``, given by the framework from the dataset.
    image_shape : sequence of int, optional
        The dataset's image shape (given by the framework; the modalities read their own shapes).
    """

    def __init__(
        self,
        model: str,
        modalities: dict[str, dict[str, Any]] | None = None,
        latent_dim: int = 16,
        private_dim: int = 4,
        objective: str = "elbo",
        k: int = 1,
        beta: float = 1.0,
        lr: float = 1e-3,
        prior: str = "normal",
        optimizer: str = "adam",
        weight_decay: float = 0.0,
        subsampling: str = "singles",
        estimator: str = "stratified",
        field_specs: dict[str, dict[str, Any]] | None = None,
        image_shape: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        modalities = {name: dict(spec) for name, spec in (modalities or CDSPRITES_MODALITIES).items()}
        _check_settings(model, modalities, latent_dim, objective, k, beta, prior)
        if optimizer not in OPTIMIZERS:
            raise InvalidArgumentError(
                f"model.params.optimizer: must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}"
            )
        field_specs = field_specs or {}
        self.save_hyperparameters(
            {
                "model": model,
                "modalities": modalities,
                "latent_dim": int(latent_dim),
                "private_dim": int(private_dim),
                "objective": objective,
                "k": int(k),
                "beta": float(beta),
                "lr": float(lr),
                "prior": prior,
                "optimizer": optimizer,
                "weight_decay": float(weight_decay),
                "subsampling": subsampling,
                "estimator": estimator,
                "field_specs": field_specs,
                "image_shape": list(image_shape) if image_shape is not None else None,
            }
        )
        encoders, decoders, likelihoods = {}, {}, {}
        # DMVAE's and MMVAE+'s networks code the shared and the private latent together
        network_dim = int(latent_dim) + (int(private_dim) if model in PRIVATE_LATENT_MODELS else 0)
        for name, spec in modalities.items():
            field = spec.get("field", name)
            if field not in field_specs:
                raise InvalidArgumentError(
                    f"model.params.modalities.{name}.field: the data has no field {field!r} "
                    f"(fields: {', '.join(sorted(field_specs)) or 'none given'})"
                )
            params = dict(spec.get("params") or {})
            if spec.get("network") == "label":
                params.setdefault("num_classes", field_specs[field].get("classes"))
            encoders[name], decoders[name] = build_modality_networks(
                spec.get("network", "fc-image"), tuple(field_specs[field]["shape"]), network_dim, **params
            )
            likelihoods[name] = LikelihoodSpec(
                spec.get("likelihood", "gaussian"), float(spec.get("scale", 0.75)), float(spec.get("weight", 1.0))
            )
        if model == "dmvae":
            self.net = PrivateSharedVAE(encoders, decoders, likelihoods, int(latent_dim), int(private_dim), prior)
        elif model == "mmvae-plus":
            self.net = ModalitySpecificMixtureVAE(
                encoders, decoders, likelihoods, int(latent_dim), int(private_dim), prior
            )
        else:
            self.net = MultimodalVAE(
                encoders, decoders, likelihoods, int(latent_dim), model, prior, subsampling, estimator
            )
        self.modalities = modalities
        fields = [spec.get("field", name) for name, spec in modalities.items()]
        fields += [spec["mask"] for spec in modalities.values() if spec.get("mask")]
        self.batch_fields = tuple(dict.fromkeys(fields))

    def _inputs(self, batch: dict[str, torch.Tensor]) -> tuple[dict, dict, dict]:
        return self._inputs_of(batch, list(self.modalities))

    def _inputs_of(self, batch: dict[str, torch.Tensor], names: list[str]) -> tuple[dict, dict, dict]:
        inputs, masks, targets = {}, {}, {}
        for name in names:
            spec = self.modalities[name]
            inputs[name] = batch[spec.get("field", name)]
            if not spec.get("mask"):
                continue
            if spec.get("pad_class") is None:
                masks[name] = batch[spec["mask"]]
            else:
                # the caption ends with END_MARK pad characters, which the decoder must learn to write;
                # the rest of the padding is not scored (scored whole, it outweighs a short caption and
                # the decoder first learns to write nothing but padding)
                characters = batch[spec["mask"]].bool()
                padding_rank = torch.cumsum(~characters, dim=-1)  # 1 on the first padding position
                scored = characters | ((padding_rank >= 1) & (padding_rank <= END_MARK) & ~characters)
                padded = inputs[name].clone()
                marks = scored & ~characters
                padded[marks] = 0.0
                padded[..., int(spec["pad_class"])][marks] = 1.0
                targets[name] = padded
                masks[name] = scored
        return inputs, masks, targets

    def losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``{"loss": minus the objective}``, averaged over the batch, in nats per example.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            The task's :attr:`batch_fields`.

        Returns
        -------
        dict of str to torch.Tensor
            Scalar ``loss`` with gradients.
        """
        inputs, masks, targets = self._inputs(batch)
        hp = self.hparams
        loss = self.net.loss(inputs, objective=hp.objective, k=hp.k, beta=hp.beta, feature_masks=masks, targets=targets)
        return {"loss": loss}

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        losses = self.losses(batch)
        self.log("train_loss", losses["loss"], on_epoch=True, batch_size=len(next(iter(batch.values()))))
        return losses["loss"]

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        losses = self.losses(batch)
        size = len(next(iter(batch.values())))
        self.log("val_loss", losses["loss"], on_epoch=True, batch_size=size)
        for name, value in self.diagnostics(batch).items():
            self.log(f"val_{name}", value, on_epoch=True, batch_size=size)

    @torch.no_grad()
    def diagnostics(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Per modality ``m``: ``recon_m`` = ``-log p(x_m | z)`` with ``z`` the mean of the joint posterior (its
        modality-specific code the modality's own mean), and ``kl_m`` = ``KL(q(z | x_m) || p(z))`` of its unimodal
        shared expert (closed form for the Normal prior, a one-sample estimate for the Laplace prior); nats
        per example, batch means. They show which modality the latent serves as training goes on.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            The task's :attr:`batch_fields`.

        Returns
        -------
        dict of str to torch.Tensor
            Scalars ``recon_<modality>`` and ``kl_<modality>``.
        """
        inputs, masks, targets = self._inputs(batch)
        scored = {**inputs, **targets}
        outputs = self.net.reconstruct(inputs)  # every modality given: the joint posterior's mean
        out = {}
        for name in self.modalities:
            spec = self.net.likelihoods[name]
            value = log_likelihood(spec.kind, outputs[name], scored[name], scale=spec.scale, mask=masks.get(name))
            out[f"recon_{name}"] = -value.mean()
            mu, logvar = self._unimodal_expert(name, inputs[name])
            if self.hparams.prior == "normal":
                kl = 0.5 * (mu**2 + logvar.exp() - 1.0 - logvar).sum(-1)
            else:
                z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
                kl = log_normal(z, mu, logvar) - log_prior("laplace", z)
            out[f"kl_{name}"] = kl.mean()
        return out

    def _unimodal_expert(self, name: str, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.net.encoders[name](rows)
        dim = self.hparams.latent_dim
        return mu[:, :dim], logvar[:, :dim]  # the shared part (private-latent models code it first)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        hp = self.hparams
        optimiser = torch.optim.AdamW if hp.get("optimizer", "adam") == "adamw" else torch.optim.Adam
        return optimiser(self.parameters(), lr=hp.lr, weight_decay=hp.get("weight_decay", 0.0))

    @torch.no_grad()
    def generate(
        self, given: dict[str, Any], seed: int = 0, batch_size: int = 256, sample: bool = False
    ) -> dict[str, np.ndarray]:
        """Every modality decoded from the given ones (cross-generation), from the posterior's mean.

        Parameters
        ----------
        given : dict of str to array-like
            Modality name -> its rows, as the dataset field holds them (uint8 images are divided by 255).
        seed : int, default=0
            Seed of the mixture component chosen per example (MMVAE, MoPoE) and of the samples.
        batch_size : int, default=256
            Examples per forward pass.
        sample : bool, default=False
            Decode a sample of the posterior (``z ~ q(z | given)``, and a missing modality's private code
            from its prior) instead of its mean: a conditional sample, where the mean decodes the average
            of every image the given modalities allow (a blur when they leave position or rotation open).

        Returns
        -------
        dict of str to numpy.ndarray
            Decoder outputs per modality (image means in [0, 1], caption logits), ``N`` rows each.
        """
        unknown = sorted(set(given) - set(self.modalities))
        if unknown:
            known = ", ".join(self.modalities)
            raise InvalidArgumentError(f"given: unknown modality {unknown[0]!r}; modalities: {known}")
        tensors = {name: _as_input(value) for name, value in given.items()}
        n = len(next(iter(tensors.values())))
        generator = torch.Generator().manual_seed(int(seed))
        was_training = self.training
        self.eval()
        chunks: dict[str, list[np.ndarray]] = {name: [] for name in self.modalities}
        for start in range(0, n, batch_size):
            part = {name: t[start : start + batch_size].to(self.device) for name, t in tensors.items()}
            for name, out in self.net.reconstruct(part, generator=generator, use_mean=not sample).items():
                chunks[name].append(out.float().cpu().numpy())
        self.train(was_training)
        return {name: np.concatenate(parts) for name, parts in chunks.items()}

    def _tensors(self, given: dict[str, Any]) -> dict[str, torch.Tensor]:
        unknown = sorted(set(given) - set(self.modalities))
        if unknown:
            known = ", ".join(self.modalities)
            raise InvalidArgumentError(f"given: unknown modality {unknown[0]!r}; modalities: {known}")
        if not given:
            raise InvalidArgumentError("given: needs at least one modality")
        tensors = {name: _as_input(value) for name, value in given.items()}
        sizes = {len(t) for t in tensors.values()}
        if len(sizes) != 1:
            raise InvalidArgumentError(f"given: the modalities must have the same number of rows, got {sorted(sizes)}")
        return tensors

    @torch.no_grad()
    def latents(self, given: dict[str, Any], batch_size: int = 256) -> np.ndarray:
        """The mean of the shared posterior ``q(z | given)`` (a mixture's: its components' average).

        Parameters
        ----------
        given : dict of str to array-like
            Modality name -> its rows, as the dataset field holds them (uint8 images are divided by 255).
        batch_size : int, default=256
            Examples per forward pass.

        Returns
        -------
        numpy.ndarray
            float32 ``(N, latent_dim)``.
        """
        tensors = self._tensors(given)
        n = len(next(iter(tensors.values())))
        was_training = self.training
        self.eval()
        parts = [
            self.net.posterior_mean({m: t[i : i + batch_size].to(self.device) for m, t in tensors.items()})
            for i in range(0, n, batch_size)
        ]
        self.train(was_training)
        return torch.cat(parts).float().cpu().numpy() if parts else np.zeros((0, self.hparams.latent_dim), np.float32)

    @torch.no_grad()
    def decode_latents(self, z: Any, batch_size: int = 256) -> dict[str, np.ndarray]:
        """Every modality decoded from shared latents ``z`` (modality-specific codes at the prior's mean).

        Parameters
        ----------
        z : array-like
            ``(N, latent_dim)`` latents.
        batch_size : int, default=256
            Latents per forward pass.

        Returns
        -------
        dict of str to numpy.ndarray
            Decoder outputs per modality (image means in [0, 1], caption or label logits), ``N`` rows each.
        """
        codes = torch.as_tensor(np.asarray(z, dtype=np.float32))
        if codes.dim() != 2 or codes.shape[1] != self.hparams.latent_dim:
            raise InvalidArgumentError(f"z: expected shape (N, {self.hparams.latent_dim}), got {tuple(codes.shape)}")
        was_training = self.training
        self.eval()
        chunks: dict[str, list[np.ndarray]] = {name: [] for name in self.modalities}
        for start in range(0, len(codes), batch_size):
            for name, out in self.net.decode(codes[start : start + batch_size].to(self.device)).items():
                chunks[name].append(out.float().cpu().numpy())
        self.train(was_training)
        return {name: np.concatenate(parts) for name, parts in chunks.items() if parts}

    @torch.no_grad()
    def log_likelihood(
        self,
        given: dict[str, Any],
        scored: Sequence[str] | None = None,
        k: int = 100,
        seed: int = 0,
        batch_size: int = 64,
    ) -> np.ndarray:
        """Importance-sampled estimate of ``log p(x_S)`` per example, K samples from ``q(z | x_G)``.

        ``log p(x_S) ~= logsumexp_k log w_k - log K``, ``w_k = p(x_S | z_k) p(z_k) / q(z_k | x_G)`` (Burda et
        al. 2016; the estimate is a lower bound in expectation that tightens as K grows). Joint: given =
        scored = every modality; one modality's marginal: given = scored = that one. Captions are scored
        as in training (their characters and the two spaces that end them); likelihood weights are left
        out (a weight is a training choice, not part of the model).

        Parameters
        ----------
        given : dict of str to array-like
            Modality name -> its rows (as for :meth:`latents`); a caption's padding (all-zero rows) is its mask.
        scored : sequence of str, optional
            The modalities whose likelihood is estimated; default the given ones. Each must be given.
        k : int, default=100
            Importance samples per example.
        seed : int, default=0
            Seed of the samples.
        batch_size : int, default=64
            Examples per pass (each with ``k`` samples).

        Returns
        -------
        numpy.ndarray
            float64 ``(N,)`` estimates in nats.
        """
        tensors = self._tensors(given)
        scored = list(given) if scored is None else list(scored)
        missing = sorted(set(scored) - set(given))
        if missing or not scored:
            raise InvalidArgumentError(f"scored: every scored modality must be given; {missing or 'none'} is not")
        if int(k) < 1:
            raise InvalidArgumentError(f"k: must be >= 1, got {k}")
        generator = torch.Generator().manual_seed(int(seed))
        n = len(next(iter(tensors.values())))
        was_training = self.training
        self.eval()
        estimates = []
        for start in range(0, n, batch_size):
            rows = {m: t[start : start + batch_size].to(self.device) for m, t in tensors.items()}
            batch = {}
            for name, value in rows.items():
                spec = self.modalities[name]
                batch[spec.get("field", name)] = value
                if spec.get("mask"):
                    batch[spec["mask"]] = value.abs().sum(-1) > 0  # padding rows are all zero
            inputs, masks, targets = self._inputs_of(batch, list(rows))
            targets = {name: targets.get(name, inputs[name]) for name in scored}
            weights = self.net.log_likelihood_weights(
                inputs, targets, int(k), {m: masks[m] for m in scored if m in masks}, generator
            )
            estimates.append((torch.logsumexp(weights.double(), 0) - math.log(int(k))).cpu().numpy())
        self.train(was_training)
        return np.concatenate(estimates) if estimates else np.zeros(0)

    @torch.no_grad()
    def sample_joint(self, n: int, seed: int = 0) -> dict[str, np.ndarray]:
        """Every modality decoded from the same prior samples ``z ~ p(z)`` (joint generation).

        Parameters
        ----------
        n : int
            Number of samples.
        seed : int, default=0
            Seed of ``z``.

        Returns
        -------
        dict of str to numpy.ndarray
            Decoder outputs per modality, ``n`` rows each, row ``i`` of every modality from the same ``z_i``.
        """
        generator = torch.Generator().manual_seed(int(seed))
        shape = (int(n), self.hparams.latent_dim)
        z = torch.randn(shape, generator=generator) if self.hparams.prior == "normal" else _laplace(shape, generator)
        was_training = self.training
        self.eval()
        out = {name: value.float().cpu().numpy() for name, value in self.net.decode(z.to(self.device)).items()}
        self.train(was_training)
        return out


def _as_input(value: Any) -> torch.Tensor:
    tensor = torch.as_tensor(np.asarray(value))
    if tensor.dtype == torch.uint8:
        return tensor.float() / 255.0
    return tensor.float() if tensor.dtype.is_floating_point else tensor.long()


def _laplace(shape: tuple[int, int], generator: torch.Generator) -> torch.Tensor:
    uniform = torch.rand(shape, generator=generator) - 0.5
    return -torch.sign(uniform) * torch.log1p(-2.0 * uniform.abs())


def _check_settings(model, modalities, latent_dim, objective, k, beta, prior) -> None:
    where = "model.params"
    if model not in MODELS:
        raise InvalidArgumentError(f"model: must be one of {', '.join(MODELS)}, got {model!r}")
    if model == "dmvae" and (objective != "elbo" or int(k) != 1):
        raise InvalidArgumentError(f"{where}: dmvae trains on the ELBO with k = 1 (got {objective}, k = {k})")
    if objective not in OBJECTIVES:
        raise InvalidArgumentError(f"{where}.objective: must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if prior not in PRIORS:
        raise InvalidArgumentError(f"{where}.prior: must be one of {', '.join(PRIORS)}, got {prior!r}")
    if int(latent_dim) < 1 or int(k) < 1 or float(beta) < 0:
        raise InvalidArgumentError(f"{where}: latent_dim and k must be >= 1 and beta >= 0")
    if len(modalities) < 2:
        raise InvalidArgumentError(f"{where}.modalities: a multimodal VAE needs at least two, got {len(modalities)}")
    for name, spec in modalities.items():
        unknown = sorted(set(spec) - set(MODALITY_KEYS))
        if unknown:
            raise InvalidArgumentError(
                f"{where}.modalities.{name}: unknown key {unknown[0]!r}; keys: {', '.join(MODALITY_KEYS)}"
            )
        if spec.get("likelihood", "gaussian") not in LIKELIHOODS:
            raise InvalidArgumentError(
                f"{where}.modalities.{name}.likelihood: must be one of {', '.join(LIKELIHOODS)}, "
                f"got {spec.get('likelihood')!r}"
            )


__all__ = ["MultimodalVAETask", "CDSPRITES_MODALITIES"]
