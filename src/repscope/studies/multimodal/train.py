"""``repscope mmvae train`` and ``repscope mmvae sweep``: a multimodal VAE from one YAML file.

The config (:class:`MultimodalConfig`) names the model, its modalities (field, networks, likelihood,
scaling), objective, latent sizes, optimiser, data (dataset, CdSprites+ level, split sizes) and trainer.
It is translated into the framework's :class:`~repscope.train.config.TrainConfig` and trained by
:func:`repscope.train.fitting.fit` (the same run directory as ``repscope train``); on CdSprites+ the run is
then evaluated (:func:`repscope.studies.multimodal.evaluate.evaluate_run`), so one command gives the trained model, its
coherency scores and its report.

.. code-block:: yaml

    model: mmvae              # a registered multimodal VAE (repscope.train.tasks.multimodal.multimodal_models)
    latent_dim: 16
    private_dim: 4            # the models with private latents: each modality's own latent
    objective: elbo           # elbo (with beta), iwae or dreg (with k samples)
    modalities:
      image: {network: fc-image, likelihood: gaussian, scale: 0.75}
      text: {network: text-transformer, likelihood: categorical, mask: mask, pad_class: 0}
    data: {name: cdsprites, level: 1, train_size: 20000, val_size: 1000, test_size: 1000}
    epochs: 10

``--set model=mopoe --set data.level=2`` switches model and level; a sweep is a grid of such overrides.
``epochs`` may be given per CdSprites+ level (``{1: 150, 2: 150, 3: 250, 4: 250, 5: 250}``, the paper's),
and ``per_model`` holds settings of one model over the file's (``{dmvae: {latent_dim: 10}}``: the paper's
DMVAE has 10 shared latents); ``--set`` wins over both, so a grid over ``latent_dim`` still sets it.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from repscope.config import (
    Section,
    apply_overrides,
    read_yaml_mapping,
    reapply_after_quick,
    shipped_config_path,
    shown_key,
    validate_config,
)
from repscope.data.registry import dataset_loader
from repscope.errors import InvalidArgumentError, RepscopeError, shown
from repscope.fileio import rename
from repscope.models.multimodal.networks import MODALITY_NETWORKS
from repscope.resume_check import PLACEMENT_TEXT, differences, refuse_changes, where_the_work_runs
from repscope.studies.multimodal.evaluate import ACCELERATORS as EVALUATION_ACCELERATORS
from repscope.studies.multimodal.evaluate import MIN_N_ANALYSIS, check_evaluation_settings, evaluate_run
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.fitting import fit
from repscope.train.reader import open_run
from repscope.train.tasks.multimodal import multimodal_models
from repscope.validation import Seed

# the config's model settings, in the order they are written; a model gets those its task class declares
MODEL_SETTINGS = (
    "latent_dim",
    "objective",
    "k",
    "beta",
    "prior",
    "optimizer",
    "lr",
    "weight_decay",
    "subsampling",
    "estimator",
    "private_dim",
    "reconstruct",
    "bound",
    "prior_expert",
    "kl_accounting",
)
SHIPPED_CONFIG = "mmvae-cdsprites"
QUICK = {"epochs": 3, "train_size": 3000, "val_size": 200, "test_size": 200, "evaluation_n": 200, "evaluation_k": 10}
CDSPRITES_LEVELS = (1, 2, 3, 4, 5)
# what ``per_model`` may set: the model settings and what a model's networks and training depend on
PER_MODEL_KEYS = (*MODEL_SETTINGS, "batch_size", "epochs")
ORIGIN_COMMAND = "mmvae train"
# what the evaluation's messages call its settings when they come from the config
EVALUATION_SETTING_NAMES = {
    "n": "evaluation.n",
    "k": "evaluation.k",
    "n_analysis": "evaluation.n_analysis",
    "joint_traversal_steps": "evaluation.joint_traversal_steps",
    "accelerator": "trainer.accelerator",
}
EVALUATED_MODALITIES = ("image", "text")  # what the CdSprites+ evaluation reads
REQUIRED_KEYS = ("model", "data")  # what a config file (with --set) must name, as repscope train's


class ModalitySection(Section):
    """One modality: the dataset field it reads, its encoder/decoder pair and how its likelihood scores it.

    ``network`` names the encoder and decoder together (:data:`repscope.models.multimodal.networks.
    MODALITY_NETWORKS`: ``fc-image``, ``conv-image``, ``text-transformer``, ``label``), ``params`` are
    the network's own (widths, layers); ``scale`` is the likelihood's scale (Gaussian sigma, Laplace b)
    and ``weight`` the likelihood scaling of the modality in the loss; ``mask`` names the field of a
    caption's padding mask and ``pad_class`` the character that pads it.
    """

    field: str | None = None
    network: str = "fc-image"
    params: dict[str, Any] = Field(default_factory=dict)
    likelihood: Literal["gaussian", "laplace", "bernoulli", "categorical"] = "gaussian"
    scale: float = Field(0.75, gt=0)
    weight: float = Field(1.0, gt=0)
    mask: str | None = None
    pad_class: int | None = Field(None, ge=0)

    @field_validator("network")
    @classmethod
    def _known_network(cls, value: str) -> str:
        if value not in MODALITY_NETWORKS:
            raise ValueError(f"unknown network {shown(value)}; registered: {', '.join(sorted(MODALITY_NETWORKS))}")
        return value

    def task_spec(self, name: str) -> dict[str, Any]:
        spec = {
            "field": self.field or name,
            "network": self.network,
            "params": dict(self.params),
            "likelihood": self.likelihood,
            "scale": self.scale,
            "weight": self.weight,
        }
        if self.mask is not None:
            spec["mask"] = self.mask
        if self.pad_class is not None:
            spec["pad_class"] = self.pad_class
        return spec


class MultimodalDataSection(Section):
    """The dataset (a registered name), its CdSprites+ level, split sizes and seed; ``params`` holds any
    other keyword of the dataset's loader."""

    name: str = "cdsprites"
    level: int | None = Field(None, ge=1, le=5)
    train_size: int | None = Field(None, ge=1)
    val_size: int | None = Field(None, ge=1)
    test_size: int | None = Field(None, ge=0)
    seed: Seed = 0
    params: dict[str, Any] = Field(default_factory=dict)

    def loader_params(self) -> dict[str, Any]:
        accepted = inspect.signature(dataset_loader(self.name)).parameters
        params = dict(self.params)
        for key in ("level", "train_size", "val_size", "test_size", "seed"):
            value = getattr(self, key)
            if value is None:
                continue
            if key in params:
                raise InvalidArgumentError(f"data.params.{key}: set it as data.{key}, not in data.params")
            if key not in accepted:
                if key == "seed":
                    continue  # a dataset without randomness of its own
                raise InvalidArgumentError(f"data.{key}: dataset {self.name!r} has no {key!r} parameter")
            params[key] = value
        return params


class EvaluationSection(Section):
    """What ``repscope mmvae train`` and a sweep evaluate after training (CdSprites+ runs)."""

    enabled: bool = True
    n: int = Field(1000, ge=1)
    seed: Seed = 0
    analysis: bool = True
    k: int = Field(30, ge=1)
    n_analysis: int = Field(1000, ge=2)
    sample: bool = False  # cross-generate from a posterior sample instead of its mean
    # joint coherency by traversals (A.2.3): values per latent dimension; None: min(n, 1000), 0: none
    joint_traversal_steps: int | None = Field(None, ge=0)

    @field_validator("n_analysis")
    @classmethod
    def _enough_for_the_analysis(cls, value: int, info: ValidationInfo) -> int:
        # the evaluation's own rule (evaluate.check_evaluation_settings), checked here before any training
        if info.data.get("analysis", True) and value < MIN_N_ANALYSIS:
            raise ValueError(
                f"must be >= {MIN_N_ANALYSIS} (a linear probe and a t-SNE need rows), or set evaluation.analysis: false"
            )
        return value


class MultimodalConfig(Section):
    """A multimodal VAE run (module docstring). ``epochs`` sets the trainer's ``max_epochs``."""

    model: str = "mmvae"
    modalities: dict[str, ModalitySection] | None = None
    latent_dim: int = Field(16, ge=1)
    private_dim: int = Field(4, ge=1)
    objective: Literal["elbo", "iwae", "dreg"] = "elbo"
    k: int = Field(1, ge=1)
    beta: float = Field(1.0, ge=0)
    prior: Literal["normal", "laplace"] = "normal"
    optimizer: Literal["adam", "adamw"] = "adam"
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    subsampling: Literal["singles", "all"] = "singles"
    estimator: Literal["stratified", "sampled"] = "stratified"
    # the CdSprites+ authors' toolkit where it differs from the model papers (the defaults are the papers');
    # each model takes its own (repscope.train.tasks.multimodal): MVAE, MMVAE, MoPoE, DMVAE
    reconstruct: Literal["given", "all"] = "given"
    bound: Literal["mixture", "m_elbo"] = "mixture"
    prior_expert: Literal["none", "full_subset"] = "none"
    kl_accounting: Literal["per_source", "toolkit"] = "per_source"
    batch_size: int = Field(64, ge=1)
    # a number, or one per CdSprites+ level ({1: 150, 2: 150, 3: 250, ...}: the paper's, A.2.1)
    epochs: int | dict[int, int] = 10
    seed: Seed = 0
    # settings of one model over the file's own (model name -> {key: value}); --set still wins
    per_model: dict[str, dict[str, Any]] = Field(default_factory=dict)
    data: MultimodalDataSection = Field(default_factory=MultimodalDataSection)
    trainer: TrainerSection = Field(default_factory=TrainerSection)
    val_fraction: float = Field(0.1, ge=0.0, lt=1.0)
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)

    @field_validator("model")
    @classmethod
    def _registered_model(cls, value: str) -> str:
        models = multimodal_models()
        if value not in models:
            raise ValueError(f"unknown multimodal model {shown(value)}; registered: {', '.join(models)}")
        return value

    @field_validator("modalities")
    @classmethod
    def _some_modalities(cls, value: dict[str, ModalitySection] | None) -> dict[str, ModalitySection] | None:
        if value is not None and not value:
            raise ValueError(
                "names no modality; give each one (image: {network: fc-image, ...}, text: ...), or leave the key "
                "out for the model's own"
            )
        return value

    @field_validator("epochs")
    @classmethod
    def _positive_epochs(cls, value: int | dict[int, int]) -> int | dict[int, int]:
        counts = value.values() if isinstance(value, dict) else [value]
        if any(count < 1 for count in counts):
            raise ValueError("epochs must be at least 1")
        if isinstance(value, dict):
            if not value:
                raise ValueError("give a number, or a number per level such as {1: 150, 3: 250}")
            unknown = sorted(set(value) - set(CDSPRITES_LEVELS))
            if unknown:
                raise ValueError(f"levels are 1-5, not {', '.join(map(str, unknown))}")
        return value

    @field_validator("per_model")
    @classmethod
    def _known_models_and_settings(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        models = multimodal_models()
        for model, settings in value.items():
            if model not in models:
                raise ValueError(f"unknown multimodal model {shown(model)}; registered: {', '.join(models)}")
            refused = sorted(set(settings) - set(PER_MODEL_KEYS))
            if refused:
                raise ValueError(
                    f"{model}: {', '.join(refused)} cannot be set per model (the settings that can: "
                    f"{', '.join(PER_MODEL_KEYS)})"
                )
        return value

    def epochs_to_train(self) -> int:
        """The epochs of this run: :attr:`epochs`, or its entry for the data's level.

        Returns
        -------
        int
            Epochs.

        Raises
        ------
        InvalidArgumentError
            When ``epochs`` is given per level and the data's level has no entry (or the data no level).
        """
        if isinstance(self.epochs, int):
            return self.epochs
        if self.data.level is None or self.data.level not in self.epochs:
            given = ", ".join(str(level) for level in sorted(self.epochs))
            raise InvalidArgumentError(
                f"epochs: given for levels {given}, not for data.level {self.data.level}; add the level or "
                "give one number (--epochs N)"
            )
        return self.epochs[self.data.level]

    def train_config(self) -> TrainConfig:
        """The framework's training config for this run.

        Returns
        -------
        TrainConfig
            ``model.name`` = :attr:`model` with the model parameters its task class declares (of
            :data:`MODEL_SETTINGS`), ``data`` with the loader's parameters, the trainer with
            ``max_epochs`` = :meth:`epochs_to_train`.
        """
        declared = multimodal_models()[self.model].config_fields()
        params: dict[str, Any] = {key: getattr(self, key) for key in MODEL_SETTINGS if key in declared}
        if self.modalities is not None:
            params["modalities"] = {name: spec.task_spec(name) for name, spec in self.modalities.items()}
        trainer = self.trainer.model_copy(update={"max_epochs": self.epochs_to_train()})
        return TrainConfig(
            model=Named(name=self.model, params=params),
            data=Named(name=self.data.name, params=self.data.loader_params()),
            trainer=trainer,
            batch_size=self.batch_size,
            val_fraction=self.val_fraction,
            seed=self.seed,
        )


def quick_config(config: MultimodalConfig) -> MultimodalConfig:
    """``--quick``: three epochs on 3,000 samples (200 validation and test), evaluated on 200 (K = 10)."""
    data = config.data.model_copy(
        update={
            "train_size": min(config.data.train_size or QUICK["train_size"], QUICK["train_size"]),
            "val_size": min(config.data.val_size or QUICK["val_size"], QUICK["val_size"]),
            "test_size": min(config.data.test_size or QUICK["test_size"], QUICK["test_size"]),
        }
    )
    evaluation = config.evaluation.model_copy(
        update={
            "n": min(config.evaluation.n, QUICK["evaluation_n"]),
            "n_analysis": min(config.evaluation.n_analysis, QUICK["evaluation_n"]),
            "k": min(config.evaluation.k, QUICK["evaluation_k"]),
        }
    )
    return config.model_copy(
        update={"epochs": min(config.epochs_to_train(), QUICK["epochs"]), "data": data, "evaluation": evaluation}
    )


def resolve_config_path(path: str | Path | None) -> Path:
    """A config file, or the name of a shipped one (``mmvae-cdsprites-paper``); default the CPU config."""
    if path is None:
        return shipped_config_path(SHIPPED_CONFIG)
    path = Path(path)
    if (path.exists() and not path.is_dir()) or path.parent != Path("."):  # a file, a pipe, a shell's <(...)
        return path
    return shipped_config_path(path.name.removesuffix(".yaml"))


def with_model_settings(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """The config file's values with its ``per_model`` settings of the run's model over them (the model as
    ``--set model=...`` makes it), before the overrides: a ``--set`` of the same key still wins.

    Parameters
    ----------
    data : dict
        The config file's mapping.
    overrides : list of str
        The ``key=value`` overrides to come (only ``model=`` is read here).

    Returns
    -------
    dict
        ``data`` with the model's settings merged in (``per_model`` kept, as written).
    """
    per_model = data.get("per_model")
    if not isinstance(per_model, dict) or not per_model:
        return data
    model = data.get("model", MultimodalConfig.model_fields["model"].default)
    for override in overrides:
        key, _, value = override.partition("=")
        if key.strip() == "model":
            model = value.strip()
    settings = per_model.get(model)
    if not isinstance(settings, dict):
        return data  # no settings for this model (a malformed entry is refused by validation)
    return {**data, **{key: value for key, value in settings.items() if key in PER_MODEL_KEYS}}


def load_multimodal_config(
    path: str | Path | None, overrides: list[str] | None = None, quick: bool = False
) -> tuple[MultimodalConfig, str]:
    """CONFIG (default: the shipped CPU config) with ``--set`` overrides, validated, shrunk by ``--quick``.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        A YAML file or the name of a shipped config; default the shipped ``mmvae-cdsprites``.
    overrides : list of str, optional
        ``key=value`` strings (``model=mopoe``, ``data.level=2``).
    quick : bool, default=False
        Shrink to minutes on 2 CPU cores (:func:`quick_config`).

    Returns
    -------
    (MultimodalConfig, str)
        The config and where it came from (for error messages).

    Raises
    ------
    InvalidArgumentError
        On an unknown key, a wrong type, a missing ``model`` or ``data``, an empty ``modalities``, an
        evaluation setting the evaluation would refuse, or a data key the dataset does not take.
    """
    path = resolve_config_path(path)
    data = read_yaml_mapping(path)
    source = f"config {path}"
    data = with_model_settings(data, overrides or [])
    if overrides:
        data = apply_overrides(data, overrides, MultimodalConfig)
        source += " with --set " + " ".join(map(shown_key, overrides))
    # as repscope train: a config names what it trains on what (an empty file would train every default)
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise InvalidArgumentError(
            f"{source}: " + "; ".join(f"missing key {key}" for key in missing) + f" (or leave CONFIG out for the "
            f"shipped {SHIPPED_CONFIG})"
        )
    config = validate_config(data, MultimodalConfig, source)
    if quick:  # --set wins over what --quick chose
        config = reapply_after_quick(quick_config(config), overrides or [], {}, source)
    try:
        config.train_config().check_params(source)
    except InvalidArgumentError as exc:
        message = str(exc)
        raise InvalidArgumentError(message if message.startswith(source) else f"{source}: {message}") from None
    return config, source


def check_evaluation_before_training(config: MultimodalConfig, source: str = "config", device: bool = True) -> None:
    """Refuse, before any training, a run whose evaluation would fail: its settings
    (:func:`~repscope.studies.multimodal.evaluate.check_evaluation_settings`, named by their config keys) and
    modalities other than CdSprites+'s image and text.

    Parameters
    ----------
    config : MultimodalConfig
        The run.
    source : str, default="config"
        Where the config came from, for the messages.
    device : bool, default=True
        Also check that torch sees the accelerator here; False checks its name only (a sweep's driver,
        whose points may run on other machines).

    Raises
    ------
    InvalidArgumentError
        Naming ``source`` and the config key.
    """
    evaluation = config.evaluation
    accelerator = config.trainer.accelerator
    if not device and accelerator in EVALUATION_ACCELERATORS:
        accelerator = "cpu"  # a known name: whether this machine has it is not checked
    try:
        check_evaluation_settings(
            n=evaluation.n,
            k=evaluation.k,
            analysis=evaluation.analysis,
            n_analysis=evaluation.n_analysis,
            joint_traversal_steps=evaluation.joint_traversal_steps,
            accelerator=accelerator,
            names=EVALUATION_SETTING_NAMES,
        )
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"{source}: {exc} (checked before training starts, for the evaluation after it)"
        ) from None
    if config.modalities is not None and sorted(config.modalities) != sorted(EVALUATED_MODALITIES):
        raise InvalidArgumentError(
            f"{source}: modalities: the CdSprites+ evaluation reads {' and '.join(EVALUATED_MODALITIES)}, not "
            f"{', '.join(config.modalities)}; rename them, or set evaluation.enabled=false (--no-evaluate)"
        )


# what a resumed `mmvae train` may change besides where the work runs: how long it trains, and the
# evaluation, which runs again on the weights once training ends
RESUME_MAY_CHANGE = f"epochs, evaluation and where the work runs ({PLACEMENT_TEXT})"


def may_change_on_resume(key: str) -> bool:
    """Whether the dotted key ``key`` of a :class:`MultimodalConfig` may differ when a run is resumed.

    Parameters
    ----------
    key : str
        A dotted key (``epochs``, ``evaluation.n``, ``trainer.logger``, ``latent_dim``).

    Returns
    -------
    bool
        True for ``epochs`` (and its per-level entries), ``trainer.max_epochs``, ``evaluation`` and what
        is under it, and the keys :func:`repscope.resume_check.where_the_work_runs`.
    """
    top = key.split(".", 1)[0]
    return top in ("epochs", "evaluation") or key == "trainer.max_epochs" or where_the_work_runs(key)


def check_same_run(run_dir: Path, config: MultimodalConfig) -> None:
    """Refuse to resume the ``mmvae train`` run in ``run_dir`` with another multimodal config.

    The config the run was started with is the ``origin`` its ``config.yaml`` records; a run without
    one (trained by ``repscope train``) is left to :func:`repscope.train.fitting.fit`'s own check of the
    training config, and so is a run whose ``config.yaml`` cannot be read.

    Parameters
    ----------
    run_dir : pathlib.Path
        The run directory to continue.
    config : MultimodalConfig
        The config given now.

    Raises
    ------
    InvalidArgumentError
        Naming every setting that differs (but those :func:`may_change_on_resume`), with its stored
        and its new value, in the config's own keys (``latent_dim 4, now 8``).
    """
    try:
        origin = open_run(run_dir).origin
    except RepscopeError:
        return
    if not isinstance(origin, dict) or origin.get("command") != ORIGIN_COMMAND:
        return
    stored = origin.get("config")
    if not isinstance(stored, dict):
        return
    try:  # a setting added since the run started takes its default, as the run did
        stored, new_keys = MultimodalConfig.model_validate(stored).model_dump(mode="json"), True
    except ValueError:  # pydantic's ValidationError: compare what the record holds
        new_keys = False
    found = differences(stored, config.model_dump(mode="json"), may_change_on_resume, new_keys=new_keys)
    refuse_changes(found, str(run_dir), RESUME_MAY_CHANGE, verb="trained")


def train_multimodal(
    config: MultimodalConfig,
    out: Path | None = None,
    *,
    resume: bool = False,
    source: str = "config",
    evaluate: bool | None = None,
) -> dict[str, Any]:
    """Train (or continue) one multimodal VAE into a run directory and evaluate it on CdSprites+.

    Parameters
    ----------
    config : MultimodalConfig
        The run.
    out : pathlib.Path, optional
        Run directory (default ``runs/train-<time>``); with ``resume`` the run to continue.
    resume : bool, default=False
        Continue ``out`` from its last checkpoint: the config must be the one it was trained with, but
        for the keys :func:`may_change_on_resume` (:func:`check_same_run`).
    source : str, default="config"
        Where the config came from, for error messages.
    evaluate : bool, optional
        Evaluate coherency after training; default ``config.evaluation.enabled`` on ``cdsprites``.

    Returns
    -------
    dict
        ``run`` (the run directory), ``metrics`` (the training's metrics.json) and ``evaluation`` (the
        coherency results, or None).
    """
    train_config = config.train_config()
    if evaluate is None:
        evaluate = config.evaluation.enabled and config.data.name == "cdsprites"
    if evaluate:
        check_evaluation_before_training(config, source)
    if resume and out is not None:
        check_same_run(Path(out), config)
    outcome = fit(
        train_config,
        out=out,
        resume=resume,
        source=source,
        description=f"training {config.model} on {config.data.name}"
        + (f" level {config.data.level}" if config.data.level else ""),
        # the multimodal config goes into the run's config.yaml, read back as open_run(run).origin
        origin={"command": ORIGIN_COMMAND, "config": config.model_dump(mode="json")},
    )
    run_dir = Path(outcome.run.root)
    evaluation = None
    if evaluate:
        # a run trained just now: an evaluation left by an interrupted earlier attempt is stale
        evaluation = evaluate_run(
            run_dir,
            n=config.evaluation.n,
            seed=config.evaluation.seed,
            k=config.evaluation.k,
            analysis=config.evaluation.analysis,
            n_analysis=config.evaluation.n_analysis,
            sample=config.evaluation.sample,
            joint_traversal_steps=config.evaluation.joint_traversal_steps,
            overwrite=True,
            # where the run trained (a CPU stays a CPU: the same numbers as before)
            accelerator=config.trainer.accelerator,
            trainer=config.trainer,
            setting_names=EVALUATION_SETTING_NAMES,
        )
    return {"run": run_dir, "metrics": outcome.metrics, "evaluation": evaluation}


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """The flat numbers of one trained and evaluated run, for a sweep's summary table.

    Parameters
    ----------
    result : dict
        What :func:`train_multimodal` returns.

    Returns
    -------
    dict
        ``test_loss``, ``fit_seconds``, ``epochs`` and, when evaluated, the coherency values
        (``text_to_image_strict``, ``image_to_text_letters``, ...), log-likelihoods and linear probes.
    """
    metrics = result["metrics"]
    row: dict[str, Any] = {
        "epochs": metrics.get("epochs"),
        "fit_seconds": metrics.get("fit_seconds"),
        "test_loss": metrics.get("test_loss"),
    }
    evaluation = result.get("evaluation") or {}
    for key, value in evaluation.items():
        wanted = key.startswith(("text_to_image_", "image_to_text_", "joint_", "log_likelihood_", "linear_"))
        if wanted and isinstance(value, int | float) and math.isfinite(float(value)):
            row[key] = float(value)
    return row


def sweep_point(
    overrides: list[str],
    run_dir: Path,
    resume: bool,
    config: str | None = None,
    base_overrides: list[str] | None = None,
    quick: bool = False,
) -> dict[str, Any]:
    """One point of a sweep (the target :func:`repscope.sweeps.run_sweep` calls in each worker).

    Parameters
    ----------
    overrides : list of str
        The point's ``key=value`` overrides (after ``base_overrides``).
    run_dir : pathlib.Path
        The point's run directory.
    resume : bool
        The directory holds an interrupted run: continue it from its last checkpoint when it has one,
        else start it again.
    config : str, optional
        The sweep's config file (default: the shipped one).
    base_overrides : list of str, optional
        The sweep's own ``--set`` overrides.
    quick : bool, default=False
        ``--quick``.

    Returns
    -------
    dict
        :func:`summary_row` of the run.
    """
    loaded, source = load_multimodal_config(config, [*(base_overrides or []), *overrides], quick)
    run_dir = Path(run_dir)
    can_resume = resume and (run_dir / "checkpoints" / "last.ckpt").exists() and (run_dir / "config.yaml").exists()
    if resume and not can_resume and run_dir.exists():
        _set_aside(run_dir)  # interrupted before its first checkpoint: nothing to continue
    result = train_multimodal(loaded, out=run_dir, resume=can_resume, source=source)
    return summary_row(result)


def _set_aside(run_dir: Path) -> None:
    # never delete what a user may want to look at: an unfinished start is renamed, not removed
    index = 1
    while run_dir.with_name(f"{run_dir.name}.interrupted-{index}").exists():
        index += 1
    rename(run_dir, run_dir.with_name(f"{run_dir.name}.interrupted-{index}"))


__all__ = [
    "MultimodalConfig",
    "ModalitySection",
    "MultimodalDataSection",
    "load_multimodal_config",
    "quick_config",
    "train_multimodal",
    "check_same_run",
    "may_change_on_resume",
    "check_evaluation_before_training",
    "sweep_point",
    "summary_row",
    "MODEL_SETTINGS",
]
