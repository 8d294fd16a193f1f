"""The Raw Zero-Shot study (Vargas, Kotyan and Matsuki, Sec. 4): representation metrics and robustness.

For every architecture, ``n + 1`` classifiers train on the dataset: one without each class (its
``n - 1`` outputs never name it) and one on all ``n`` classes. Each model without class ``i`` is shown
class ``i``'s test images and its soft-labels are kept, with the full model's on the same images
(``softlabels/<architecture>.npz``, the layout of :mod:`repscope.data.zeroshot.softlabels`). They are scored by
the paper's DBI (Eq. 3, a within-cluster scatter), scikit-learn's Davies-Bouldin index and the Amalgam
Metric (Eq. 4, and its per-image mean). CapsNet's soft-labels are its capsule lengths normalised to sum to
one (``soft_labels: normalised``, the paper's text) or, with ``soft_labels: reference``, the raw lengths the
authors' code scored (kind ``capsule_lengths``); every other architecture gives its softmax either way.
The full classifier is then attacked by the L0 (pixel) and L-infinity (threshold) black-box attacks
with CMA-ES at thresholds 1, 3, 5 and 10 on test images that every architecture classifies correctly
(``attack.search``: ``art``, the adversarial-robustness-toolbox's search, or ``dqa``, the authors' one
generation of 400 candidates), and Spearman's rank correlation across architectures (exact p-values up
to 10 architectures) says whether the metrics track the attacks' success (Table 1 against Tables 2 and 3).

The ``n + 1`` trainings per architecture (:func:`train_architectures`) and the attacks
(:func:`attack_architectures`) are points of the sweep runner (:mod:`repscope.sweeps`: local workers or Ray,
``models/`` and ``attacks/``), so ``--resume`` continues an interrupted study where it stopped. What they leave
(soft-labels, accuracies, attack successes) goes to
:func:`~repscope.studies.zeroshot.results.compute_zeroshot`, which a Python user calls on soft-labels from any
framework; :func:`~repscope.studies.zeroshot.results.write_zeroshot` and
:func:`~repscope.studies.zeroshot.report.write_zeroshot_report` write the result and its report.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from repscope.data.zeroshot.softlabels import SoftLabels, check_kind, check_soft_labels
from repscope.errors import InvalidArgumentError, RepscopeError
from repscope.fileio import atomic_write, save_npy_atomic, write_text_atomic
from repscope.resume_check import PLACEMENT_TEXT, SPREAD_TEXT, differences, refuse_changes, where_the_work_runs
from repscope.run_directory import RunDirectory, read_config, to_plain
from repscope.studies.common import MemberModel, TrainingSection, check_members
from repscope.studies.zeroshot.results import compute_zeroshot, correlation_table, write_zeroshot
from repscope.train.config import Named, Section, TrainConfig, TrainerSection
from repscope.validation import Seed, check_positive_int

NORMS = ("l0", "linf")


class Architecture(Section):
    """One architecture: a report label, a registered model and its parameters."""

    label: str
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


# one training recipe for every architecture: the batch-normalised nets need the larger rate and its decay
# to settle in 3 epochs (ResNet-20 on 12,000 Fashion-MNIST images: 0.81 test accuracy at Adam's 1e-3,
# 0.87 at 3e-3 with the cosine schedule)
RECIPE = {"lr": 3e-3, "schedule": "cosine"}


def _default_architectures() -> list[Architecture]:
    # the paper's five; the wide ones shrunk so that 55 trainings fit a 2-core CPU (network_params)
    return [
        Architecture(
            label="CapsNet",
            name="capsnet",
            params={**RECIPE, "network_params": {"conv_channels": 64, "primary_types": 8}},
        ),
        Architecture(label="AllConv", name="allconv", params={**RECIPE, "network_params": {"width": 0.25}}),
        Architecture(label="ResNet", name="resnet", params={**RECIPE, "network_params": {"depth": 20}}),
        Architecture(label="NIN", name="nin", params={**RECIPE, "network_params": {"width": 0.25}}),
        Architecture(label="LeNet", name="lenet5", params=dict(RECIPE)),
    ]


class ZeroShotData(Section):
    """The registered classification dataset (``digits`` with ``source: fashion-mnist`` or ``mnist-sample``,
    ``cifar10`` with ``root``)."""

    name: str = "digits"
    params: dict[str, Any] = Field(default_factory=lambda: {"source": "fashion-mnist", "target": "label"})


class AttackSection(Section):
    """The black-box attacks on each full classifier (the paper's Table 1: 100 images, thresholds 1, 3, 5
    and 10, both norms: 800 attacks per architecture)."""

    n: int = Field(100, ge=1)
    thresholds: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    norms: list[Literal["l0", "linf"]] = Field(default_factory=lambda: list(NORMS))
    # CMA-ES generations per image and threshold (the adversarial-robustness-toolbox's max_iter; art only)
    budget: int = Field(100, ge=1)
    # art: the adversarial-robustness-toolbox's search; dqa: the authors' DQA search (one generation of
    # 400 candidates, repscope.studies.zeroshot.attack_study.dqa_attack), whose attacks the paper's Table 1 counts
    search: Literal["art", "dqa"] = "art"
    seed: Seed = 0


class ZeroShotConfig(Section):
    data: ZeroShotData = Field(default_factory=ZeroShotData)
    architectures: list[Architecture] = Field(default_factory=_default_architectures)
    training: TrainingSection = Field(
        default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=3), batch_size=128)
    )
    # test images of each class whose soft-labels are kept (a seeded draw; null: all)
    soft_label_n: int | None = Field(None, ge=2)
    attack: AttackSection = Field(default_factory=AttackSection)
    # soft-labels of each class drawn into the Isomap and t-SNE projections
    projection_n: int = Field(200, ge=5)
    # CapsNet's soft-labels: normalised: its capsule lengths divided by their sum (the paper's text); reference:
    # the raw lengths the authors' code scores (architecture_soft_labels). Other architectures: softmax either way
    soft_labels: Literal["normalised", "reference"] = "normalised"
    # only this architecture (a label or a registered model name): repscope zeroshot evaluate
    arch: str | None = None
    workers: int | None = None
    backend: Literal["local", "ray"] = "local"
    address: str | None = None
    seed: Seed = 0


def quick(config: ZeroShotConfig) -> ZeroShotConfig:
    """Minutes on 2 CPU cores: 1,500 training and 500 test images, one epoch in batches of 32, 4 images
    attacked at thresholds 1 and 10 with 10 CMA-ES generations."""
    out = config.model_copy(deep=True)
    if out.data.name == "digits":
        out.data.params = {**out.data.params, "train_size": 1500, "test_size": 500}
    elif out.data.name == "cifar10":
        out.data.params = {**out.data.params, "train_size": 1500, "test_size": 500}
    else:
        out.training.trainer.limit_train_batches = max(1, 1500 // out.training.batch_size)
    out.training.trainer.max_epochs = 1
    out.training.batch_size = min(out.training.batch_size, 32)  # enough steps in one short epoch to learn
    out.soft_label_n = min(out.soft_label_n or 50, 50)
    out.attack.n, out.attack.thresholds, out.attack.budget = min(out.attack.n, 4), [1, 10], min(out.attack.budget, 10)
    out.projection_n = min(out.projection_n, 50)
    return out


def factory_architecture(
    factory: str, model_args: dict[str, Any] | None = None, label: str | None = None
) -> Architecture:
    """A user's network factory ``pkg.module:factory`` / ``file.py:factory`` as an architecture: the supervised
    model ``classifier`` with ``network`` the import path, trained with the study's recipe (:data:`RECIPE`).

    Parameters
    ----------
    factory : str
        The import path (:func:`repscope.models.networks.build_classifier` calls it with ``num_classes``).
    model_args : dict, optional
        The factory's own keyword arguments (``network_params``).
    label : str, optional
        The architecture's name in the tables; default the factory's name.

    Returns
    -------
    Architecture
    """
    params = {**RECIPE, "network": factory, "network_params": dict(model_args or {})}
    return Architecture(label=label or factory.rpartition(":")[2], name="classifier", params=params)


def chosen_architectures(config: ZeroShotConfig) -> list[Architecture]:
    """The architectures to run: all of the config's, or only ``config.arch`` (a label or a registered model
    name; a registered name outside the config runs with its default parameters; an import path
    ``pkg.module:factory`` is the user's network, :func:`factory_architecture`)."""
    if config.arch is None:
        return list(config.architectures)
    for architecture in config.architectures:
        if config.arch in (architecture.label, architecture.name):
            return [architecture]
    if ":" in config.arch:  # no registered name holds a ':'
        return [factory_architecture(config.arch)]
    from repscope.train.registry import model_entry  # noqa: PLC0415

    entry = model_entry(config.arch)
    if not entry.supervised:
        raise InvalidArgumentError(f"arch: {config.arch!r} is not a classifier")
    return [Architecture(label=config.arch, name=config.arch)]


def training_config(config: ZeroShotConfig, architecture: Architecture, excluded: int | None) -> TrainConfig:
    """The training config of ``architecture`` without class ``excluded`` (None: on every class)."""
    data = Named(
        name="leave-class-out",
        params={"base": config.data.name, "base_params": dict(config.data.params), "excluded": excluded},
    )
    return TrainConfig(
        model=Named(name=architecture.name, params=architecture.params),
        data=data,
        trainer=config.training.trainer,
        batch_size=config.training.batch_size,
        val_fraction=config.training.val_fraction,
        seed=config.seed,
    )


def soft_label_rows(labels: np.ndarray, num_classes: int, limit: int | None, seed: int) -> list[np.ndarray]:
    """The test rows of each class whose soft-labels are kept: all of them, or a seeded draw of ``limit``
    (the same rows for the model without the class and for the full model)."""
    rows = []
    for k in range(num_classes):
        members = np.flatnonzero(labels == k)
        if limit is not None and len(members) > limit:
            members = np.sort(np.random.default_rng([seed, 53, k]).choice(members, size=limit, replace=False))
        rows.append(members)
    return rows


def soft_label_kind(config: ZeroShotConfig, architecture: Architecture) -> str:
    """What ``architecture``'s soft-labels are under ``config.soft_labels``.

    Parameters
    ----------
    config : ZeroShotConfig
        The study's config (its ``soft_labels`` setting).
    architecture : Architecture
        One architecture (its registered model name decides).

    Returns
    -------
    str
        ``capsule_lengths`` for a CapsNet (a model trained by
        :class:`~repscope.train.tasks.capsule.CapsNetTask`) with ``soft_labels: reference``, else
        ``probabilities`` (:mod:`repscope.data.zeroshot.softlabels`).
    """
    from repscope.registry import resolve  # noqa: PLC0415
    from repscope.train.registry import model_entry  # noqa: PLC0415
    from repscope.train.tasks.capsule import CapsNetTask  # noqa: PLC0415

    if config.soft_labels == "reference" and issubclass(resolve(model_entry(architecture.name).task), CapsNetTask):
        return "capsule_lengths"
    return "probabilities"


def architecture_soft_labels(task: Any, images: np.ndarray, kind: str = "probabilities") -> np.ndarray:
    """A trained classifier's soft-labels of ``kind`` on ``images``.

    ``probabilities``: ``task.soft_labels(images)`` (a softmax, or CapsNet's lengths divided by their sum).
    ``capsule_lengths``: a CapsNet's raw capsule lengths, ``task.soft_labels(images, compat="reference")``,
    what the authors' code stores and scores (``shashankkotyan/RepresentationMetrics``,
    ``code/networks/model.py``, ``Model.analyse_raw_zero_shot``: ``self._model.predict(x)``, whose output is
    the Keras ``Length`` layer of ``code/networks/cifar/capsnet.py``, ``CapsNet.network``).

    Parameters
    ----------
    task : SupervisedTask
        A trained classifier.
    images : numpy.ndarray
        Images as ``task.soft_labels`` takes them.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        From :func:`soft_label_kind`.

    Returns
    -------
    numpy.ndarray
        float64 ``(N, outputs)``.

    Raises
    ------
    InvalidArgumentError
        An unknown ``kind``, or ``capsule_lengths`` for a task that is not a CapsNet.
    """
    from repscope.train.tasks.capsule import CapsNetTask  # noqa: PLC0415

    check_kind(kind)
    if kind == "capsule_lengths":
        if not isinstance(task, CapsNetTask):
            raise InvalidArgumentError(f"kind: capsule_lengths needs a CapsNet, got a {type(task).__name__}")
        return task.soft_labels(images, compat="reference")
    return task.soft_labels(images)


def _find(config: ZeroShotConfig, label: str) -> Architecture:
    for architecture in chosen_architectures(config):
        if architecture.label == label:
            return architecture
    raise InvalidArgumentError(f"arch: no architecture labelled {label!r}")


def train_point(overrides: list[str], run_dir: Path, resume: bool, *, config: dict[str, Any]) -> dict[str, Any]:
    """Sweep target: train one model (``arch=<label>``, ``excluded=<class>|full``), keep its soft-labels.

    Writes ``train/`` (the run directory of :func:`repscope.train.fitting.fit`), ``softlabels.npy`` (float32:
    the model without class ``i`` on class ``i``'s kept test images, ``(m_i, n - 1)``; the full model on
    every class's kept images in class order, ``(sum m_i, n)``; of the kind :func:`soft_label_kind`
    gives) and, for the full model, ``correct.npy`` (bool, one per test image of the base: classified
    correctly).
    """
    from repscope.train.fitting import fit  # noqa: PLC0415

    study = ZeroShotConfig(**config)
    settings = dict(item.split("=", 1) for item in overrides)
    architecture = _find(study, settings["arch"])
    excluded = None if settings["excluded"] == "full" else int(settings["excluded"])
    train = training_config(study, architecture, excluded)
    run_dir.mkdir(parents=True, exist_ok=True)
    train_dir = run_dir / "train"
    can_resume = (train_dir / "checkpoints" / "last.ckpt").exists()
    if train_dir.exists() and not can_resume:
        shutil.rmtree(train_dir)  # stopped before its first epoch ended: nothing to continue
    # the sweep's line counts the models; this one shows the epochs of the model training now (lines from
    # each worker process, or a second line of the display on a terminal with one worker)
    without = "on every class" if excluded is None else f"without class {excluded}"
    description = f"training {architecture.label} {without}" + (" (resumed)" if can_resume else "")
    outcome = fit(train, out=train_dir, resume=can_resume, report=False, description=description)
    base = outcome.data.extras["base_dataset"]
    classes = int(outcome.data.extras["base_classes"])
    test = base.arrays("test", ["image", "target"])
    rows = soft_label_rows(test["target"], classes, study.soft_label_n, study.seed)
    task = outcome.task
    kind = soft_label_kind(study, architecture)
    if excluded is not None:
        soft = architecture_soft_labels(task, test["image"][rows[excluded]], kind)
    else:
        soft = architecture_soft_labels(task, test["image"][np.concatenate(rows)], kind)
        predicted = task.predict(test["image"])
        save_npy_atomic(run_dir / "correct.npy", predicted == test["target"])
    save_npy_atomic(run_dir / "softlabels.npy", soft.astype(np.float32))
    return {
        "test_accuracy": outcome.metrics.get("test_accuracy"),
        "fit_seconds": outcome.metrics.get("fit_seconds"),
        "train_images": outcome.metrics.get("n_train"),
    }


def point_overrides(label: str, excluded: int | None) -> tuple[tuple[str, str], ...]:
    return (("arch", label), ("excluded", "full" if excluded is None else str(excluded)))


def attack_point(
    overrides: list[str], run_dir: Path, resume: bool, *, config: dict[str, Any], models: str, images: str
) -> dict[str, Any]:
    """Sweep target: attack the full classifier of ``arch`` with one norm at one threshold on the chosen
    images; writes ``attack.csv`` (per image: success, queries, iterations, predicted class)."""
    from repscope.studies.zeroshot.attack_study import run_attacks  # noqa: PLC0415
    from repscope.train.reader import open_run  # noqa: PLC0415

    study = ZeroShotConfig(**config)
    settings = dict(item.split("=", 1) for item in overrides)
    architecture = _find(study, settings["arch"])
    task = open_run(_point_dir(Path(models), *point_overrides(architecture.label, None)) / "train").task()
    with np.load(images, allow_pickle=False) as chosen:
        batch, labels, index = chosen["images"], chosen["labels"], chosen["index"]
    norm, threshold = settings["norm"], int(settings["threshold"])
    budget, seed, search = study.attack.budget, study.attack.seed, study.attack.search
    table = run_attacks(task, batch, labels, norm, threshold, budget, seed, rows=index, search=search)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / "attack.csv", table.to_csv(index=False))
    return {"successes": int(table["success"].sum()), "images": len(table), "queries": int(table["queries"].sum())}


def _sweep(points: list[Any], target: str, out: Path, common: dict[str, Any], config: ZeroShotConfig, what: str) -> Any:
    from repscope.sweeps import run_sweep  # noqa: PLC0415

    result = run_sweep(
        points,
        target,
        out,
        common=common,
        workers=config.workers,
        backend=config.backend,
        address=config.address,
        description=what,
    )
    if result.failed:
        first = result.failed[0]
        raise RepscopeError(
            f"{len(result.failed)} of {len(points)} {what.split(' (')[0]} failed; {first.name}: {first.error_type}: "
            f"{first.message} (the others are kept: fix it and pass --resume)"
        )
    return result


def check_architectures(config: ZeroShotConfig, source: str) -> None:
    """Every architecture checked before anything trains: distinct labels, parameters its model takes, a
    model that builds for the data (without a class, as it will train)."""
    members = [MemberModel(label=a.label, name=a.name, params=a.params) for a in chosen_architectures(config)]
    check_members(
        members, training_config(config, chosen_architectures(config)[0], 0).data, config.training, config.seed, source
    )
    refused = InvalidArgumentError(f"{source}: attack.thresholds: expected positive pixel values, e.g. [1, 3, 5, 10]")
    if not config.attack.thresholds:
        raise refused
    try:
        for threshold in config.attack.thresholds:
            check_positive_int(threshold, "attack.thresholds")
    except InvalidArgumentError:
        raise refused from None


# what a resumed study may change: where the work runs (how it is spread, the trainer's device and logger)
RESUME_MAY_CHANGE = f"{SPREAD_TEXT} and where the work runs ({PLACEMENT_TEXT})"


def _may_change_on_resume(key: str) -> bool:
    return key == "repscope_version" or where_the_work_runs(key)


def _point_dir(folder: Path, *overrides: tuple[str, str]) -> Path:
    from repscope.sweeps import point_name  # noqa: PLC0415

    return folder / point_name(overrides)


def _open_run(config: ZeroShotConfig, out: Path | None, root: Path, resume: bool) -> RunDirectory:
    """The run directory, refusing ``--resume`` with a config other than the one the run started with."""
    run = RunDirectory.create("zeroshot-study", out=out, root=root, resume=resume, resumable=True)
    as_dict = to_plain(config.model_dump(mode="json"))
    if resume and run.config_path.exists():
        stored = read_config(run.root)
        new_keys = True
        try:  # a setting added since the run started (attack.search, soft_labels) takes its default, as the run did
            settings = {key: value for key, value in stored.items() if key != "repscope_version"}
            stored = to_plain(ZeroShotConfig.model_validate(settings).model_dump(mode="json"))
        except ValueError:  # pydantic's ValidationError: a config of another shape stays as stored
            new_keys = False
        found = differences(stored, as_dict, _may_change_on_resume, new_keys=new_keys)
        refuse_changes(found, str(run.root), RESUME_MAY_CHANGE)
    run.write_config(as_dict)
    return run


@dataclass(frozen=True)
class TrainedArchitectures:
    """What the ``n + 1`` trainings of each architecture leave for the rest of the study, by label.

    Attributes
    ----------
    soft_labels : dict of str to SoftLabels
        The soft-labels of its models without each class and of its full model (checked).
    accuracy : dict of str to float
        Its full model's test accuracy.
    loo_accuracy : dict of str to float
        The mean test accuracy of its models without a class.
    correct : dict of str to numpy.ndarray
        Bool per test image: its full model classifies it correctly.
    """

    soft_labels: dict[str, SoftLabels]
    accuracy: dict[str, float]
    loo_accuracy: dict[str, float]
    correct: dict[str, np.ndarray]


def _test_split(config: ZeroShotConfig) -> tuple[dict[str, np.ndarray], list[str], int]:
    """The base dataset's test images and targets, its class names and its number of classes."""
    from repscope.train.fitting import load_data  # noqa: PLC0415

    dataset = load_data(training_config(config, chosen_architectures(config)[0], None))
    base = dataset.extras["base_dataset"]
    return base.arrays("test", ["image", "target"]), list(dataset.extras["base_names"]), int(base.num_classes)


def train_architectures(
    config: ZeroShotConfig, run: RunDirectory, test_targets: np.ndarray, classes: int, names: list[str]
) -> TrainedArchitectures:
    """The ``n + 1`` trainings of every architecture (sweep points under ``models/``: a resumed run keeps
    the finished ones), gathered into their soft-labels, accuracies and correctly classified test images."""
    from repscope.sweeps import SweepPoint  # noqa: PLC0415

    architectures = chosen_architectures(config)
    counts = [len(r) for r in soft_label_rows(test_targets, classes, config.soft_label_n, config.seed)]
    points = [
        SweepPoint.from_overrides(point_overrides(a.label, excluded))
        for a in architectures
        for excluded in [*range(len(counts)), None]
    ]
    common = {"config": config.model_dump(mode="json")}
    target = "repscope.studies.zeroshot.study:train_point"
    trained = _sweep(points, target, run.path("models"), common, config, "training (n + 1 models each)")
    accuracies = trained.summary.set_index("name")["test_accuracy"]
    models = run.path("models")
    soft_labels, accuracy, loo_accuracy, correct = {}, {}, {}, {}
    for architecture in architectures:
        label = architecture.label
        soft_labels[label] = gather_soft_labels(models, config, architecture, counts, names)
        full_dir = _point_dir(models, *point_overrides(label, None))
        loo_names = [_point_dir(models, *point_overrides(label, i)).name for i in range(len(counts))]
        accuracy[label] = float(accuracies[full_dir.name])
        loo_accuracy[label] = float(np.mean([accuracies[name] for name in loo_names]))
        correct[label] = np.load(full_dir / "correct.npy")
    return TrainedArchitectures(soft_labels, accuracy, loo_accuracy, correct)


def gather_soft_labels(
    models: Path, config: ZeroShotConfig, architecture: Architecture, counts: list[int], names: list[str]
) -> SoftLabels:
    """One architecture's soft-labels from the ``softlabels.npy`` of its training points in ``models``,
    checked as :func:`~repscope.data.zeroshot.softlabels.check_soft_labels` checks them (of the kind
    :func:`soft_label_kind` gives; ``counts``: the kept test images of each class)."""
    full_dir = _point_dir(models, *point_overrides(architecture.label, None))
    full = np.split(np.load(full_dir / "softlabels.npy"), np.cumsum(counts)[:-1])
    loo_dirs = [_point_dir(models, *point_overrides(architecture.label, i)) for i in range(len(counts))]
    loo = [np.load(folder / "softlabels.npy") for folder in loo_dirs]
    return check_soft_labels(loo, full, names, kind=soft_label_kind(config, architecture))


@dataclass(frozen=True)
class StudyAttacks:
    """The attacks on the full classifiers: ``successes`` by ``(label, norm, threshold)``, the test images
    attacked per norm and threshold and the correctly classified ``candidates`` they were drawn from."""

    successes: dict[tuple[str, str, int], int]
    images: int
    candidates: int


def attack_architectures(
    config: ZeroShotConfig, run: RunDirectory, test: dict[str, np.ndarray], correct: dict[str, np.ndarray]
) -> StudyAttacks:
    """Attack every full classifier on the same test images, which every one classifies correctly (sweep
    points under ``attacks/``: a resumed run keeps the finished ones)."""
    images, attacked, candidates = _attack_images(run, config, test, correct)
    return StudyAttacks(_attack_successes(run, config, images, attacked), attacked, candidates)


def _attack_images(
    run: RunDirectory, config: ZeroShotConfig, test: dict[str, np.ndarray], correct: dict[str, np.ndarray]
) -> tuple[Path, int, int]:
    """A seeded draw of ``attack.n`` test images every full classifier gets right, kept in
    ``attacks/images.npz``; returns its path, the images drawn and the candidates."""
    everyone_right = np.logical_and.reduce([correct[a.label] for a in chosen_architectures(config)])
    candidates = np.flatnonzero(everyone_right)
    rng = np.random.default_rng([config.attack.seed, 59])
    chosen = np.sort(rng.choice(candidates, size=min(config.attack.n, len(candidates)), replace=False))
    path = run.path("attacks", "images.npz")
    if not path.exists():  # a resumed run draws the same images (the config is the same)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as handle:
            np.savez(handle, images=test["image"][chosen], labels=test["target"][chosen], index=chosen)
    return path, len(chosen), len(candidates)


def _attack_overrides(label: str, norm: str, threshold: int) -> tuple[tuple[str, str], ...]:
    return (("arch", label), ("norm", norm), ("threshold", str(threshold)))


def _attack_successes(
    run: RunDirectory, config: ZeroShotConfig, images: Path, count: int
) -> dict[tuple[str, str, int], int]:
    """Attack every full classifier (sweep points per architecture, norm and threshold); the successes of each."""
    from repscope.sweeps import SweepPoint  # noqa: PLC0415

    keys = [
        (a.label, norm, threshold)
        for a in chosen_architectures(config)
        for norm in config.attack.norms
        for threshold in config.attack.thresholds
    ]
    points = [SweepPoint.from_overrides(_attack_overrides(*key)) for key in keys]
    common = {"config": config.model_dump(mode="json"), "models": str(run.path("models")), "images": str(images)}
    attacked = _sweep(
        points,
        "repscope.studies.zeroshot.study:attack_point",
        run.path("attacks"),
        common,
        config,
        f"attacks ({count} images each)",
    )
    successes = attacked.summary.set_index("name")["successes"]
    return {key: int(successes[point.name]) for key, point in zip(keys, points)}


def run_zeroshot_study(
    config: ZeroShotConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Run the study (module docstring) into ``out``; return the report's path.

    Five steps: the ``n + 1`` trainings of each architecture (:func:`train_architectures`), the attacks on
    its full classifier (:func:`attack_architectures`), both resumable; then the scores and tables
    (:func:`~repscope.studies.zeroshot.results.compute_zeroshot`), their files
    (:func:`~repscope.studies.zeroshot.results.write_zeroshot`) and the report
    (:func:`~repscope.studies.zeroshot.report.write_zeroshot_report`).
    """
    # the report draws with matplotlib and scikit-learn: imported here, not by every training worker
    from repscope.studies.zeroshot.report import write_zeroshot_report  # noqa: PLC0415

    check_architectures(config, source)
    run = _open_run(config, out, root, resume)
    test, names, classes = _test_split(config)
    trained = train_architectures(config, run, test["target"], classes, names)
    attacked = attack_architectures(config, run, test, trained.correct)
    result = compute_zeroshot(
        trained.soft_labels,
        trained.accuracy,
        trained.loo_accuracy,
        attacked.successes,
        norms=config.attack.norms,
        thresholds=config.attack.thresholds,
        attack_images=attacked.images,
        attack_candidates=attacked.candidates,
        attack_search=config.attack.search,
        soft_label_setting=config.soft_labels,
    )
    write_zeroshot(result, run)
    return write_zeroshot_report(result, run, config, quick)


def run_zeroshot_evaluate(
    config: ZeroShotConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """One architecture (``config.arch``) through the whole test: soft-labels, metrics, attacks."""
    if config.arch is None:
        raise InvalidArgumentError(f"{source}: arch: name the architecture to evaluate")
    return run_zeroshot_study(config, out=out, root=root, source=source, quick=quick, resume=resume)


__all__ = [
    "Architecture",
    "StudyAttacks",
    "TrainedArchitectures",
    "ZeroShotConfig",
    "architecture_soft_labels",
    "attack_architectures",
    "attack_point",
    "correlation_table",
    "factory_architecture",
    "gather_soft_labels",
    "quick",
    "run_zeroshot_evaluate",
    "run_zeroshot_study",
    "soft_label_kind",
    "soft_label_rows",
    "train_architectures",
    "train_point",
]
