"""Models by name: a new model is its ``nn.Module`` (or a network line in
:mod:`repscope.models.networks`) plus one line here.

An entry names the task (the LightningModule of its training family, which takes its networks by
name), the constructor arguments fixed by the model's name, and defaults a config may change; the
remaining constructor arguments are what ``model.params`` in a config may set. Families:

* ``supervised`` -- learns the dataset's target: ``kind`` (classification / regression) and
  ``num_outputs`` come from the data;
* ``vae`` and ``gan`` -- learn the images; no target;
* ``multimodal`` -- multimodal VAEs over several fields of the data, one task class per model; the
  task gets every field's shape and classes as ``field_specs``.

Every task that takes ``image_shape`` gets the shape of the dataset's ``image`` field. A family's tasks
share its inference protocol (:mod:`repscope.train.tasks.base`): ``predict`` / ``soft_labels``
(supervised), ``encode`` / ``sample`` / ``decode`` (the VAE family, InfoGAN; a GAN samples and decodes),
and each task declares its hyper-parameters as a ``Config`` that a subclass extends.
``tests/test_contracts.py`` builds, trains a step, saves and reloads every entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from repscope.errors import InvalidArgumentError, shown
from repscope.registry import resolve

Family = Literal["supervised", "vae", "gan", "multimodal"]


@dataclass(frozen=True)
class ModelEntry:
    task: str  # "module:Class" of the LightningModule
    family: Family
    fixed: dict[str, Any] = field(default_factory=dict)  # set by the name; a config may not change them
    defaults: dict[str, Any] = field(default_factory=dict)  # the model's own defaults; a config may change them

    @property
    def supervised(self) -> bool:
        return self.family == "supervised"


MODELS: dict[str, ModelEntry] = {
    "beta-vae": ModelEntry("repscope.train.tasks.vae:VAETask", "vae"),
    "beta-tcvae": ModelEntry("repscope.train.tasks.disentangling_vaes:BetaTCVAETask", "vae"),
    "dip-vae-i": ModelEntry("repscope.train.tasks.disentangling_vaes:DIPVAETask", "vae", {"dip_type": "i"}),
    "dip-vae-ii": ModelEntry("repscope.train.tasks.disentangling_vaes:DIPVAETask", "vae", {"dip_type": "ii"}),
    "factor-vae": ModelEntry("repscope.train.tasks.disentangling_vaes:FactorVAETask", "vae"),
    # semi-supervised variants: factor labels on a seeded 10% of the examples, on the latents assigned to them
    "beta-vae-semi": ModelEntry("repscope.train.tasks.semi_supervised:SemiSupervisedVAETask", "vae"),
    "beta-tcvae-semi": ModelEntry("repscope.train.tasks.semi_supervised:SemiSupervisedBetaTCVAETask", "vae"),
    "dip-vae-i-semi": ModelEntry(
        "repscope.train.tasks.semi_supervised:SemiSupervisedDIPVAETask", "vae", {"dip_type": "i"}
    ),
    "dip-vae-ii-semi": ModelEntry(
        "repscope.train.tasks.semi_supervised:SemiSupervisedDIPVAETask", "vae", {"dip_type": "ii"}
    ),
    "factor-vae-semi": ModelEntry("repscope.train.tasks.semi_supervised:SemiSupervisedFactorVAETask", "vae"),
    "gan": ModelEntry("repscope.train.tasks.gan:GANTask", "gan"),
    "infogan": ModelEntry("repscope.train.tasks.gan:InfoGANTask", "gan"),
    "lenet5": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "lenet5"}),
    # any classifier network, a registered one or a user's import path: model.params.network=pkg.mod:make
    "classifier": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised"),
    # cnn5: the ML4ML authors' CNN5 (their SimpleNet); cnn5-compact: the 3x3 network cnn5 named before
    "cnn5": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "cnn5"}),
    "cnn5-compact": ModelEntry(
        "repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "cnn5-compact"}
    ),
    "vgg13-bn": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "vgg13-bn"}),
    "mlp": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "mlp"}),
    # the Raw Zero-Shot classifiers (with lenet5); network_params shrinks them, e.g. {width: 0.25}
    "allconv": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "allconv"}),
    "nin": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "nin"}),
    "resnet": ModelEntry("repscope.train.tasks.supervised:SupervisedTask", "supervised", {"network": "resnet"}),
    "capsnet": ModelEntry("repscope.train.tasks.capsule:CapsNetTask", "supervised", {"network": "capsnet"}),
    # multimodal VAEs: one task class each (its display name, private latents, objectives: class attributes)
    "mvae": ModelEntry("repscope.train.tasks.multimodal:MVAETask", "multimodal"),
    "mmvae": ModelEntry("repscope.train.tasks.multimodal:MMVAETask", "multimodal"),
    "mopoe": ModelEntry("repscope.train.tasks.multimodal:MoPoETask", "multimodal"),
    "dmvae": ModelEntry("repscope.train.tasks.multimodal:DMVAETask", "multimodal"),
    "mmvae-plus": ModelEntry("repscope.train.tasks.multimodal:MMVAEPlusTask", "multimodal"),
    # CdSprites+ attribute classifiers (one per attribute and level): few epochs, cosine schedule
    "attribute-cnn": ModelEntry(
        "repscope.train.tasks.supervised:SupervisedTask",
        "supervised",
        {"network": "attribute-cnn"},
        {"lr": 2e-3, "schedule": "cosine"},
    ),
    # the factor classifiers CG judges with (dSprites, CANDLE): full-resolution first layer, coordinates
    "factor-cnn": ModelEntry(
        "repscope.train.tasks.supervised:SupervisedTask",
        "supervised",
        {"network": "factor-cnn"},
        {"lr": 2e-3, "schedule": "cosine"},
    ),
}


def model_entry(name: str) -> ModelEntry:
    """The registry entry of model ``name``; an unknown name lists the registered ones.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`.

    Returns
    -------
    ModelEntry

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered (the message names ``model.name``).
    """
    if name not in MODELS:
        raise InvalidArgumentError(f"model.name: unknown model {shown(name)}; registered: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def task_class(name: str) -> Any:
    """The task class (LightningModule) of model ``name``, its module imported now.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`.

    Returns
    -------
    type
        The class its entry names.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered.
    """
    return resolve(model_entry(name).task)
