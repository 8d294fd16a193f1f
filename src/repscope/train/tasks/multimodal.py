"""The multimodal VAE family: MVAE, MMVAE and MoPoE trained on any dataset with several modality fields.

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

from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal.likelihoods import LIKELIHOODS, PRIORS
from repscope.models.multimodal.models import MIXINGS, OBJECTIVES, LikelihoodSpec, MultimodalVAE
from repscope.models.multimodal.networks import build_modality_networks
from repscope.models.multimodal.private import PrivateSharedVAE

MODELS = (*MIXINGS, "dmvae")

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
    model : {"mvae", "mmvae", "mopoe", "dmvae"}
        Set by the registry name.
    modalities : dict, optional
        Modality name -> ``{field, network, params, likelihood, scale, weight, mask}`` (default: the
        CdSprites+ image and caption).
    latent_dim : int, default=16
        Size of the shared latent.
    private_dim : int, default=4
        Size of each modality's private latent (``dmvae`` only).
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
        field_specs: dict[str, dict[str, Any]] | None = None,
        image_shape: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        modalities = {name: dict(spec) for name, spec in (modalities or CDSPRITES_MODALITIES).items()}
        _check_settings(model, modalities, latent_dim, objective, k, beta, prior)
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
                "field_specs": field_specs,
                "image_shape": list(image_shape) if image_shape is not None else None,
            }
        )
        encoders, decoders, likelihoods = {}, {}, {}
        # DMVAE's networks code the shared and the private latent together
        network_dim = int(latent_dim) + (int(private_dim) if model == "dmvae" else 0)
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
        else:
            self.net = MultimodalVAE(encoders, decoders, likelihoods, int(latent_dim), model, prior)
        self.modalities = modalities
        fields = [spec.get("field", name) for name, spec in modalities.items()]
        fields += [spec["mask"] for spec in modalities.values() if spec.get("mask")]
        self.batch_fields = tuple(dict.fromkeys(fields))

    def _inputs(self, batch: dict[str, torch.Tensor]) -> tuple[dict, dict, dict]:
        inputs, masks, targets = {}, {}, {}
        for name, spec in self.modalities.items():
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
        self.log("val_loss", losses["loss"], on_epoch=True, batch_size=len(next(iter(batch.values()))))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    @torch.no_grad()
    def generate(self, given: dict[str, Any], seed: int = 0, batch_size: int = 256) -> dict[str, np.ndarray]:
        """Every modality decoded from the given ones (cross-generation), from the posterior's mean.

        Parameters
        ----------
        given : dict of str to array-like
            Modality name -> its rows, as the dataset field holds them (uint8 images are divided by 255).
        seed : int, default=0
            Seed of the mixture component chosen per example (MMVAE, MoPoE).
        batch_size : int, default=256
            Examples per forward pass.

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
            for name, out in self.net.reconstruct(part, generator=generator).items():
                chunks[name].append(out.float().cpu().numpy())
        self.train(was_training)
        return {name: np.concatenate(parts) for name, parts in chunks.items()}

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
