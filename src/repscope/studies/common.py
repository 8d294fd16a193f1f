"""What the studies share: the data section, training a member model into the study's run directory
(or loading one trained before), the trainer of every other training a study runs, and the ``--quick``
shrinking."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from repscope.errors import InvalidArgumentError
from repscope.run_directory import read_metrics
from repscope.train.config import Named, Section, TrainConfig, TrainerSection
from repscope.train.fitting import build_task, fit, load_data, load_task
from repscope.validation import Seed


class DataSection(Section):
    """Which digits: a source (``repscope data list``) and how it is split and limited."""

    source: str = "mnist-sample"
    data_dir: str | None = None
    seed: Seed = 0
    test_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    train_size: int | None = Field(None, ge=1)
    test_size: int | None = Field(None, ge=1)

    def params(self) -> dict[str, Any]:
        return self.model_dump()


class MorphoDataSection(DataSection):
    """Digits for a study on the Morpho-MNIST sets: ``DataSection`` plus copies of each digit.

    ``copies`` draws each training digit K times, each copy perturbed anew (``repscope morpho build
    --copies``): a small source such as the 5,000-digit ``mnist-sample`` needs it to give the perturbed
    sets enough examples; with full MNIST keep 1. ``plain_render`` is how plain digits are written
    (``rendered``, the published recipe; ``source-bytes`` keeps the source's bytes).
    """

    copies: int = Field(1, ge=1)
    test_copies: int = Field(1, ge=1)
    plain_render: Literal["rendered", "source-bytes"] = "rendered"


class MemberModel(Section):
    """A model a study trains (or loads from ``checkpoint``: a run directory or checkpoint file)."""

    label: str
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    checkpoint: str | None = None


class TrainingSection(Section):
    trainer: TrainerSection = Field(default_factory=TrainerSection)
    batch_size: int = Field(64, ge=1)
    val_fraction: float = Field(0.1, ge=0.0, lt=1.0)


# how a study's member models are optimised, which a training of its own (factor or attribute
# classifiers, judges) does not take over: it trains as it always has, on the study's machines
OWN_TRAINER_FIELDS = {"limit_train_batches": None, "gradient_clip_val": None}


def auxiliary_trainer(trainer: TrainerSection | None, **own: Any) -> TrainerSection:
    """The trainer of a training a study runs besides its member models (factor classifiers, attribute
    classifiers): the study's ``trainer`` (where and how it runs: accelerator, devices, nodes, strategy,
    precision, determinism, logger, and any field the section gains) with what the training sets itself.

    Parameters
    ----------
    trainer : TrainerSection or None
        The study's trainer (its ``--accelerator``, ``--devices``, ... flags); None: the defaults.
    **own
        Fields the training sets itself (``max_epochs``, ``logger``). ``limit_train_batches`` and
        ``gradient_clip_val``, the member models' optimisation, are reset unless given here.

    Returns
    -------
    TrainerSection
        A copy; ``trainer`` is left as it was.
    """
    base = trainer if trainer is not None else TrainerSection()
    return base.model_copy(update={**OWN_TRAINER_FIELDS, **own}, deep=True)


def member_config(member: MemberModel, data: Named, training: TrainingSection, seed: int) -> TrainConfig:
    return TrainConfig(
        model=Named(name=member.name, params=member.params),
        data=data,
        trainer=training.trainer,
        batch_size=training.batch_size,
        val_fraction=training.val_fraction,
        seed=seed,
    )


def train_or_load(
    member: MemberModel,
    data: Named,
    training: TrainingSection,
    seed: int,
    out: Path,
    source: str,
    position: tuple[int, int] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The trained task of ``member`` and its training metrics: loaded from ``member.checkpoint``, or
    trained into ``out`` (a run directory of its own, resumable with ``repscope train --resume``).
    ``position`` ``(k, n)``: the k-th of the study's n models, named in the progress bar."""
    if member.checkpoint:
        path = Path(member.checkpoint)
        task = load_task(path, model=member.name)
        # a run directory, or a checkpoint file in a run's checkpoints/ folder
        metrics = read_metrics(path if path.is_dir() else path.parent.parent)
        return task, {**metrics, "loaded_from": str(path)}
    config = member_config(member, data, training, seed)
    config.check_params(f"{source}: model {member.label!r}")
    description = f"training {member.label}"
    if position is not None:
        description += f" ({position[0]} of {position[1]})"
    outcome = fit(config, out=out, source=f"{source}: model {member.label!r}", description=description)
    outcome.task.eval()
    return outcome.task, outcome.metrics


def slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in label.strip()).strip("-").lower() or "model"


def check_members(members: list[MemberModel], data: Named, training: TrainingSection, seed: int, source: str) -> None:
    """Check every member before a study trains anything: labels that name distinct files, parameters
    the model takes, and batch fields the dataset gives (the model is built once and dropped).

    Raises
    ------
    InvalidArgumentError
        Naming the member's label and the key at fault.
    """
    seen: dict[str, str] = {}
    for member in members:
        key = slug(member.label)
        if key in seen:
            raise InvalidArgumentError(
                f"{source}: models: labels {seen[key]!r} and {member.label!r} name the same run directory {key!r}"
            )
        seen[key] = member.label
    dataset = None
    for member in members:
        if member.checkpoint:
            continue
        config = member_config(member, data, training, seed)
        where = f"{source}: model {member.label!r}"
        config.check_params(where)
        dataset = dataset or load_data(config)
        try:
            build_task(config, dataset)
        except InvalidArgumentError as error:
            raise InvalidArgumentError(f"{where}: {error}") from None
