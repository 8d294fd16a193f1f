"""The multimodal VAE family: MVAE, MMVAE, MoPoE, DMVAE and MMVAE+ trained on any dataset with several modality
fields, one task class each.

:class:`MultimodalVAETask` holds what they share (the modalities, the batches, the loss logging, the
inference methods); each model is a small subclass that declares its own hyper-parameters in a nested
``Config`` (MVAE its ``subsampling``, MMVAE and MoPoE their ``estimator``, DMVAE and MMVAE+ their
``private_dim``; where the CdSprites+ authors' toolkit trains a model otherwise than its paper defines it,
a setting whose default is the paper's: MVAE ``reconstruct``, MMVAE ``bound``, MoPoE ``prior_expert``,
DMVAE ``kl_accounting``), builds its network (:mod:`repscope.models.multimodal`) and states the facts the studies
read (:attr:`~MultimodalVAETask.display_name`, :attr:`~MultimodalVAETask.private_latents`,
:attr:`~MultimodalVAETask.objectives`, :attr:`~MultimodalVAETask.paper_table_rank`). The registry
(:data:`repscope.train.registry.MODELS`) names each class once; :func:`multimodal_models` lists them.

Inference, the family's protocol: :meth:`~MultimodalVAETask.encode` (the shared posterior's mean given
some modalities), :meth:`~MultimodalVAETask.sample` (every modality from the same prior samples),
:meth:`~MultimodalVAETask.decode` (every modality from shared codes), and the family's own
:meth:`~MultimodalVAETask.generate` (cross-generation) and :meth:`~MultimodalVAETask.log_likelihood`.
They run where the model is (``task.to(device)``): the rows go to the device once, every random draw
happens there (a generator seeded on the model's device; on the CPU the same numbers as ever), the
results of every batch stay there and come back to the host once, at the end.

``modalities`` names, per modality, the dataset field it reads, its networks (by name,
:mod:`repscope.models.multimodal.networks`), its likelihood and the field of its padding mask; the
shapes come from the dataset's field descriptions. The default is the CdSprites+ pairing: the image
(``fc-image``, Gaussian, scale 0.75) and the caption (``text-transformer``, categorical).

``mask`` names the field of a modality's padding mask (True on real characters): the encoder sees the
padding as all-zero rows and masks it out of attention. With ``pad_class`` (the caption's space, 0) the
decoder learns to end a caption with two of that class (:data:`END_MARK`; captions hold single spaces
between words), so that a generated caption ends where it writes them; the rest of the padding is
never scored.

The models, their mixing rules and objectives are :mod:`repscope.models.multimodal`'s; this module only
feeds them batches and logs their loss, as the other families do.

A checkpoint records the model's registry name under ``model`` besides the hyper-parameters; a
checkpoint written when every model shared one constructor also holds the settings of the other models
(``private_dim``, ``subsampling``, ``estimator``), which its model never read: the constructor accepts
them, with ``model`` naming the class's own registry name, and leaves them out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal.dmvae import KL_ACCOUNTINGS, PrivateSharedVAE
from repscope.models.multimodal.likelihoods import LIKELIHOODS, PRIORS, log_likelihood, log_normal, log_prior
from repscope.models.multimodal.mmvae_plus import ModalitySpecificMixtureVAE
from repscope.models.multimodal.models import (
    BOUNDS,
    ESTIMATORS,
    OBJECTIVES,
    PRIOR_EXPERTS,
    RECONSTRUCTIONS,
    SUBSAMPLINGS,
    LikelihoodSpec,
    MixtureOfExpertsVAE,
    MixtureOfProductsVAE,
    ProductOfExpertsVAE,
)
from repscope.models.multimodal.networks import build_modality_networks
from repscope.train.registry import MODELS, task_class
from repscope.train.tasks.base import ConfiguredModule, optimiser_options
from repscope.validation import check_positive_int

OPTIMIZERS = ("adam", "adamw")
# the arguments of the one constructor all models shared before each had its class: a checkpoint of that
# time holds them all, also those its model never read
SHARED_CONSTRUCTOR_SETTINGS = ("private_dim", "subsampling", "estimator")

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


class MultimodalVAETask(ConfiguredModule):
    """What the multimodal VAEs share (module docstring); a registered model is a subclass.

    A subclass declares its own hyper-parameters in a nested ``Config`` that extends its parent's, and
    gets a constructor taking every field by keyword (the fields are its signature, so configs'
    ``model.params`` are checked against it). It overrides :meth:`check_config` for rules of its own,
    :meth:`_network` to build its model, and sets the class facts below.

    Parameters
    ----------
    modalities : dict, optional
        Modality name -> ``{field, network, params, likelihood, scale, weight, mask, pad_class}`` (default:
        the CdSprites+ image and caption).
    latent_dim : int, default=16
        Size of the shared latent.
    objective : {"elbo", "iwae", "dreg"}, default="elbo"
        Training objective (one of the model's :attr:`objectives`).
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
    field_specs : dict, optional
        Field name -> ``{"shape": [...], "classes": int}``, given by the framework from the dataset.
    image_shape : sequence of int, optional
        The dataset's image shape (given by the framework; the modalities read their own shapes).
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(ConfiguredModule.Config):
        modalities: dict[str, dict[str, Any]] | None = None
        latent_dim: Annotated[int, Field(ge=1)] = 16
        objective: Literal[OBJECTIVES] = "elbo"
        k: Annotated[int, Field(ge=1)] = 1
        beta: Annotated[float, Field(ge=0)] = 1.0
        lr: float = 1e-3
        prior: Literal[PRIORS] = "normal"
        optimizer: Literal[OPTIMIZERS] = "adam"
        weight_decay: float = 0.0
        field_specs: dict[str, dict[str, Any]] | None = None
        image_shape: list[int] | None = None

    display_name: ClassVar[str] = "multimodal VAE"  # the name in tables and figures
    private_latents: ClassVar[bool] = False  # a modality-specific latent per modality besides the shared one
    objectives: ClassVar[tuple[str, ...]] = OBJECTIVES  # the objectives it trains on
    # its row in Sejnova et al.'s Table 4 (CdSprites+; 0 first), None for a model the paper did not train
    paper_table_rank: ClassVar[int | None] = None
    # the step calls ``net.loss``, never ``net(...)``: the whole loss is one compiled graph
    compiled_methods: ClassVar[tuple[str, ...]] = ("losses",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "__init__" in vars(cls):
            raise TypeError(f"{cls.__name__}: declare its hyper-parameters in a nested Config, not in __init__")
        super().__init_subclass__(**kwargs)

    @classmethod
    def accepted_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        """The hyper-parameters less ``model``, the registry name a checkpoint records (checked to be
        this class's), and, with it, other models' settings that a run's config may carry.

        Parameters
        ----------
        arguments : dict
            The constructor's keyword arguments.

        Returns
        -------
        dict
            Those bound to the ``Config``.

        Raises
        ------
        InvalidArgumentError
            When ``model`` names another model.
        """
        arguments = dict(arguments)
        if "model" in arguments:
            recorded, name = arguments.pop("model"), registered_name(cls)
            if recorded != name:
                raise InvalidArgumentError(
                    f"model: the hyper-parameters are of model {recorded!r}, this is {name or cls.__name__!r}"
                )
            for key in set(SHARED_CONSTRUCTOR_SETTINGS) - set(cls.config_fields()):
                arguments.pop(key, None)  # another model's setting, never read by this one
        return arguments

    def recorded_hyperparameters(self, config: Config) -> dict[str, Any]:
        """Every field, after ``model``: the registry name, so a checkpoint says which model it holds.

        Parameters
        ----------
        config : Config
            The checked hyper-parameters.

        Returns
        -------
        dict
            ``model`` (when the class is registered), then field name -> value.
        """
        name = registered_name(type(self))
        return {**({"model": name} if name else {}), **super().recorded_hyperparameters(config)}

    def check_config(self, config: Config) -> None:
        """Resolve the default modalities and field descriptions and check the modalities' specs (in place).

        A subclass with rules across its fields checks them and calls ``super().check_config(config)``.

        Parameters
        ----------
        config : Config
            The validated hyper-parameters.

        Raises
        ------
        InvalidArgumentError
            When the modalities are fewer than two or a modality's spec has an unknown key or likelihood,
            naming it as ``model.params.modalities.<name>``.
        """
        config.modalities = {name: dict(spec) for name, spec in (config.modalities or CDSPRITES_MODALITIES).items()}
        _check_modalities(config.modalities)
        config.field_specs = config.field_specs or {}

    def _code_size(self) -> int:
        """Size of the code each encoder gives and each decoder reads: the shared latent."""
        return self.hparams.latent_dim

    def _network(
        self, encoders: dict[str, nn.Module], decoders: dict[str, nn.Module], likelihoods: dict[str, LikelihoodSpec]
    ) -> nn.Module:
        """The model over the modalities' networks (:mod:`repscope.models.multimodal`)."""
        raise NotImplementedError(f"{type(self).__name__}: a multimodal VAE subclass builds its network")

    def build(self) -> None:
        """Create every modality's encoder and decoder from ``self.hparams`` (in modality order, so that the
        initial weights are drawn in that order), then the model over them (:meth:`_network`)."""
        modalities, field_specs = self.hparams.modalities, self.hparams.field_specs
        encoders, decoders, likelihoods = {}, {}, {}
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
                spec.get("network", "fc-image"), tuple(field_specs[field]["shape"]), self._code_size(), **params
            )
            likelihoods[name] = LikelihoodSpec(
                spec.get("likelihood", "gaussian"), float(spec.get("scale", 0.75)), float(spec.get("weight", 1.0))
            )
        self.net = self._network(encoders, decoders, likelihoods)
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
                marks = scored & ~characters
                # the pad class one-hot where a mark goes, by torch.where: a boolean-mask assignment would
                # look up the marked positions on the host (a synchronisation with the device every step)
                pad = torch.zeros(inputs[name].shape[-1], dtype=inputs[name].dtype, device=inputs[name].device)
                pad[int(spec["pad_class"])] = 1.0
                targets[name] = torch.where(marks.unsqueeze(-1), pad, inputs[name])
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
        self.log_training("train_loss", losses["loss"], len(next(iter(batch.values()))))
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
        optimiser = torch.optim.AdamW if hp.optimizer == "adamw" else torch.optim.Adam
        return optimiser(self.parameters(), lr=hp.lr, weight_decay=hp.weight_decay, **optimiser_options(self))

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
        self._check_modality_mapping(given)
        unknown = sorted(set(given) - set(self.modalities))
        if unknown:
            known = ", ".join(self.modalities)
            raise InvalidArgumentError(f"given: unknown modality {unknown[0]!r}; modalities: {known}")
        tensors = {name: _as_input(value, self.device) for name, value in given.items()}
        n = len(next(iter(tensors.values())))
        generator = self._generator(seed)
        was_training = self.training
        self.eval()
        chunks: dict[str, list[torch.Tensor]] = {name: [] for name in self.modalities}
        for start in range(0, n, batch_size):
            part = {name: t[start : start + batch_size] for name, t in tensors.items()}
            for name, out in self.net.reconstruct(part, generator=generator, use_mean=not sample).items():
                chunks[name].append(out.float())
        self.train(was_training)
        return {name: _to_host(parts) for name, parts in chunks.items()}

    def _generator(self, seed: int) -> torch.Generator:
        """A generator seeded with ``seed`` on the model's device, so that every draw happens there (a CPU
        generator would need each draw copied over); on the CPU the same numbers as ever."""
        return torch.Generator(device=self.device).manual_seed(int(seed))

    def _check_modality_mapping(self, given: Any) -> None:
        # the image families' encode takes an image batch; this family's takes rows by modality
        if not isinstance(given, Mapping):
            raise InvalidArgumentError(
                f"given: a mapping of modality name -> rows (modalities: {', '.join(self.modalities)}), "
                f"got {type(given).__name__}"
            )

    def _tensors(self, given: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The given rows as input tensors on the model's device, checked."""
        self._check_modality_mapping(given)
        unknown = sorted(set(given) - set(self.modalities))
        if unknown:
            known = ", ".join(self.modalities)
            raise InvalidArgumentError(f"given: unknown modality {unknown[0]!r}; modalities: {known}")
        if not given:
            raise InvalidArgumentError("given: needs at least one modality")
        tensors = {name: _as_input(value, self.device) for name, value in given.items()}
        sizes = {len(t) for t in tensors.values()}
        if len(sizes) != 1:
            raise InvalidArgumentError(f"given: the modalities must have the same number of rows, got {sorted(sizes)}")
        return tensors

    @torch.no_grad()
    def encode(self, given: dict[str, Any], batch_size: int = 256) -> np.ndarray:
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
            self.net.posterior_mean({m: t[i : i + batch_size] for m, t in tensors.items()}).float()
            for i in range(0, n, batch_size)
        ]
        self.train(was_training)
        return _to_host(parts) if parts else np.zeros((0, self.hparams.latent_dim), np.float32)

    @torch.no_grad()
    def decode(self, z: Any, batch_size: int = 256) -> dict[str, np.ndarray]:
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
        codes = codes.to(self.device)
        was_training = self.training
        self.eval()
        chunks: dict[str, list[torch.Tensor]] = {name: [] for name in self.modalities}
        for start in range(0, len(codes), batch_size):
            for name, out in self.net.decode(codes[start : start + batch_size]).items():
                chunks[name].append(out.float())
        self.train(was_training)
        return {name: _to_host(parts) for name, parts in chunks.items() if parts}

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
            Modality name -> its rows (as for :meth:`encode`); a caption's padding (all-zero rows) is its mask.
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
        k = check_positive_int(k, "k")
        generator = self._generator(seed)
        n = len(next(iter(tensors.values())))
        was_training = self.training
        self.eval()
        estimates = []
        for start in range(0, n, batch_size):
            rows = {m: t[start : start + batch_size] for m, t in tensors.items()}
            batch = {}
            for name, value in rows.items():
                spec = self.modalities[name]
                batch[spec.get("field", name)] = value
                if spec.get("mask"):
                    batch[spec["mask"]] = value.abs().sum(-1) > 0  # padding rows are all zero
            inputs, masks, targets = self._inputs_of(batch, list(rows))
            targets = {name: targets.get(name, inputs[name]) for name in scored}
            weights = self.net.log_likelihood_weights(
                inputs, targets, k, {m: masks[m] for m in scored if m in masks}, generator
            )
            estimates.append(torch.logsumexp(weights.double(), 0) - math.log(k))
        self.train(was_training)
        return _to_host(estimates) if estimates else np.zeros(0)

    @torch.no_grad()
    def sample(self, n: int, seed: int = 0) -> dict[str, np.ndarray]:
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
        generator = self._generator(seed)
        shape = (int(n), self.hparams.latent_dim)
        if self.hparams.prior == "normal":
            z = torch.randn(shape, generator=generator, device=self.device)
        else:
            z = _laplace(shape, generator, self.device)
        was_training = self.training
        self.eval()
        out = {name: _to_host([value.float()]) for name, value in self.net.decode(z).items()}
        self.train(was_training)
        return out


class MVAETask(MultimodalVAETask):
    """MVAE (Wu & Goodman 2018): the product of experts, the joint and sub-sampled ELBO terms.

    Parameters
    ----------
    subsampling : {"singles", "all"}, default="singles"
        The ELBO terms besides the joint one: each single modality, or every proper subset.
    reconstruct : {"given", "all"}, default="given"
        What each sub-sampled subset reconstructs: the modalities it was given (Wu & Goodman 2018), or every
        modality, as the CdSprites+ authors' toolkit (``multimodal_compare/models/mmvae_models.py``,
        ``POE.objective``; with ``subsampling="all"`` the toolkit's subsets):
        :class:`~repscope.models.multimodal.models.ProductOfExpertsVAE`.
    **shared
        As for :class:`MultimodalVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(MultimodalVAETask.Config):
        subsampling: Literal[SUBSAMPLINGS] = "singles"
        reconstruct: Literal[RECONSTRUCTIONS] = "given"

    display_name = "MVAE"
    paper_table_rank = 1

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return ProductOfExpertsVAE(
            encoders, decoders, likelihoods, hp.latent_dim, hp.prior, hp.subsampling, hp.reconstruct
        )


class MixtureVAETask(MultimodalVAETask):
    """What MMVAE and MoPoE share: a mixture posterior whose bound is stratified over its components or
    taken of one drawn per example.

    Parameters
    ----------
    estimator : {"stratified", "sampled"}, default="stratified"
        The bound of every mixture component, or of one drawn per example (cheaper).
    **shared
        As for :class:`MultimodalVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(MultimodalVAETask.Config):
        estimator: Literal[ESTIMATORS] = "stratified"

    mixture: ClassVar[type[nn.Module]]  # the model of repscope.models.multimodal.models

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return self.mixture(encoders, decoders, likelihoods, hp.latent_dim, hp.prior, hp.estimator)


class MMVAETask(MixtureVAETask):
    """MMVAE (Shi et al. 2019): the mixture of the unimodal experts.

    Parameters
    ----------
    bound : {"mixture", "m_elbo"}, default="mixture"
        Shi et al.'s mixture-density bound, or the CdSprites+ authors' toolkit's importance-weighted
        ``m_elbo`` (``multimodal_compare/models/mmvae_models.py``, ``MOE.objective``; two modalities, the
        ``elbo`` objective with ``k = 1``, the normal prior and the stratified estimator):
        :class:`~repscope.models.multimodal.models.MixtureOfExpertsVAE`.
    **shared
        As for :class:`MixtureVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(MixtureVAETask.Config):
        bound: Literal[BOUNDS] = "mixture"

    display_name = "MMVAE"
    paper_table_rank = 0
    mixture = MixtureOfExpertsVAE

    def check_config(self, config: Config) -> None:
        super().check_config(config)
        if config.bound == "m_elbo":
            settings = {
                "objective": (config.objective, "elbo"),
                "k": (config.k, 1),
                "prior": (config.prior, "normal"),
                "estimator": (config.estimator, "stratified"),
                "modalities": (len(config.modalities), 2),
            }
            for key, (value, needed) in settings.items():
                if value != needed:
                    raise InvalidArgumentError(
                        f"model.params.bound: m_elbo (the toolkit's objective) is defined with {key} = {needed!r}, "
                        f"got {value!r}"
                    )

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return MixtureOfExpertsVAE(
            encoders, decoders, likelihoods, hp.latent_dim, hp.prior, hp.estimator, bound=hp.bound
        )


class MoPoETask(MixtureVAETask):
    """MoPoE (Sutter et al. 2021): the mixture of the subsets' products of experts.

    Parameters
    ----------
    prior_expert : {"none", "full_subset"}, default="none"
        Which subsets' products take the prior expert: none (Sutter et al. 2021, eq. 6), or the subset of
        every modality, as the CdSprites+ authors' toolkit (``multimodal_compare/models/mmvae_models.py``,
        ``MoPOE.poe_fusion``): :class:`~repscope.models.multimodal.models.MixtureOfProductsVAE`.
    **shared
        As for :class:`MixtureVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(MixtureVAETask.Config):
        prior_expert: Literal[PRIOR_EXPERTS] = "none"

    display_name = "MoPoE"
    paper_table_rank = 2
    mixture = MixtureOfProductsVAE

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return MixtureOfProductsVAE(
            encoders, decoders, likelihoods, hp.latent_dim, hp.prior, hp.estimator, prior_expert=hp.prior_expert
        )


class PrivateLatentVAETask(MultimodalVAETask):
    """What DMVAE and MMVAE+ share: each modality's encoder and decoder code a private latent of
    ``private_dim`` dimensions besides the shared one (shared first).

    Parameters
    ----------
    private_dim : int, default=4
        Size of each modality's private latent.
    **shared
        As for :class:`MultimodalVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(MultimodalVAETask.Config):
        private_dim: int = 4

    private_latents = True

    def _code_size(self) -> int:
        return self.hparams.latent_dim + self.hparams.private_dim


class DMVAETask(PrivateLatentVAETask):
    """DMVAE (Lee & Pavlovic 2021): shared and private latents, trained on the ELBO with one sample.

    Parameters
    ----------
    kl_accounting : {"per_source", "toolkit"}, default="per_source"
        How often the KL terms count: the private KLs once per source of the shared code (the paper), or as
        the CdSprites+ authors' toolkit (``multimodal_compare/models/mmvae_models.py``,
        ``DMVAE.objective``: each private KL once per other modality, the joint KL once per modality):
        :mod:`repscope.models.multimodal.dmvae`.
    **shared
        As for :class:`PrivateLatentVAETask`.
    """

    @dataclasses.dataclass(kw_only=True)
    class Config(PrivateLatentVAETask.Config):
        kl_accounting: Literal[KL_ACCOUNTINGS] = "per_source"

    display_name = "DMVAE"
    paper_table_rank = 3
    objectives = ("elbo",)

    def check_config(self, config: PrivateLatentVAETask.Config) -> None:
        if config.objective not in self.objectives or int(config.k) != 1:
            raise InvalidArgumentError(
                f"model.params: {self.display_name} trains on the ELBO with k = 1 "
                f"(got {config.objective}, k = {config.k})"
            )
        super().check_config(config)

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return PrivateSharedVAE(
            encoders, decoders, likelihoods, hp.latent_dim, hp.private_dim, hp.prior, kl_accounting=hp.kl_accounting
        )


class MMVAEPlusTask(PrivateLatentVAETask):
    """MMVAE+ (Palumbo et al. 2023): MMVAE with modality-specific latents and an auxiliary prior
    (parameters of :class:`PrivateLatentVAETask`)."""

    display_name = "MMVAE+"

    def _network(self, encoders, decoders, likelihoods):
        hp = self.hparams
        return ModalitySpecificMixtureVAE(encoders, decoders, likelihoods, hp.latent_dim, hp.private_dim, hp.prior)


def multimodal_models() -> dict[str, type[MultimodalVAETask]]:
    """The registered multimodal VAEs, in the registry's order.

    Returns
    -------
    dict of str to type
        Registry name -> task class (a :class:`MultimodalVAETask` subclass).
    """
    return {name: task_class(name) for name, entry in MODELS.items() if entry.family == "multimodal"}


def registered_name(cls: type) -> str | None:
    """The registry name of a multimodal task class, None for a class the registry does not name.

    Parameters
    ----------
    cls : type
        A task class.

    Returns
    -------
    str or None
        The name of the registry entry whose task is ``cls``.
    """
    return next((name for name, task in multimodal_models().items() if task is cls), None)


def _as_input(value: Any, device: torch.device | str = "cpu") -> torch.Tensor:
    # on the device before the conversion: uint8 images cross over in a quarter of the bytes
    tensor = torch.as_tensor(np.asarray(value)).to(device)
    if tensor.dtype == torch.uint8:
        return tensor.float() / 255.0
    return tensor.float() if tensor.dtype.is_floating_point else tensor.long()


def _laplace(shape: tuple[int, int], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    uniform = torch.rand(shape, generator=generator, device=device) - 0.5
    return -torch.sign(uniform) * torch.log1p(-2.0 * uniform.abs())


def _to_host(parts: list[torch.Tensor]) -> np.ndarray:
    """The batches' results joined where they were computed and copied to the host once."""
    return torch.cat(parts).cpu().numpy()


def _check_modalities(modalities: dict[str, dict[str, Any]]) -> None:
    """At least two modalities, each spec of :data:`MODALITY_KEYS` and with a known likelihood."""
    where = "model.params"
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


__all__ = [
    "MultimodalVAETask",
    "MVAETask",
    "MixtureVAETask",
    "MMVAETask",
    "MoPoETask",
    "PrivateLatentVAETask",
    "DMVAETask",
    "MMVAEPlusTask",
    "multimodal_models",
    "registered_name",
    "CDSPRITES_MODALITIES",
]
