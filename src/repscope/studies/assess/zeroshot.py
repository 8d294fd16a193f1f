"""Raw Zero-Shot for a user's architecture: ``repscope assess MODEL --role classifier --zeroshot ...``.

The Raw Zero-Shot test (Vargas, Kotyan and Matsuki, Sec. 3) needs ``n + 1`` trained models of one
architecture on a dataset of ``n`` classes: one without each class and one on all of them. The model
without class ``k`` is shown class ``k``'s test images; its soft-labels are scored by the paper's DBI
(Eq. 3), scikit-learn's Davies-Bouldin index and the Amalgam Metric (Eq. 4), with the full model's
soft-labels on the same images (:mod:`repscope.metrics.zeroshot`). Two sources of those models:

* :class:`ZeroShotFactory`: a network factory ``"pkg.module:factory"`` (or ``"file.py:factory"``) that the
  study's machinery trains ``n + 1`` times (:func:`repscope.studies.zeroshot.study.train_architectures`,
  the ``classifier`` model with the factory as its network; sweep points under ``out/models``,
  so a restart keeps the finished trainings);
* :class:`ZeroShotFolder`: the ``n + 1`` models already trained, as ``full`` plus ``without-<k>`` for
  ``k = 0 .. n - 1`` (each a repscope run directory, or a TorchScript / ``torch.export`` / ONNX file that
  :func:`repscope.models.external.load_model` reads, named ``without-<k>.pt`` ...), or a Raw Zero-Shot study
  run (its ``models/arch-<label>_excluded-<k|full>/train`` run directories).

:func:`zeroshot_assessment` scores them with the study's compute step
(:func:`~repscope.studies.zeroshot.results.compute_zeroshot`) and returns an
:class:`~repscope.studies.assess.assessment.Assessment` whose headline puts each score beside its chance
level (the scores of the same soft-labels with the unknown classes' rows shuffled among the classes) and
a bootstrap interval (images resampled).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.data.zeroshot.softlabels import SoftLabels, check_soft_labels
from repscope.errors import InvalidArgumentError
from repscope.studies.assess.assessment import Assessment, HeadlineRow
from repscope.validation import check_positive_int, check_seed

__all__ = [
    "REPSCOPE_LENET_FASHION",
    "ZeroShotFactory",
    "ZeroShotFolder",
    "folder_soft_labels",
    "soft_label_assessment",
    "zeroshot_assessment",
]

# the headline scores, which way is better, and what they measure
HEADLINE = {
    "dbi": "Raw Zero-Shot DBI (Eq. 3): scatter of each unknown class's soft-labels around their mean; lower = tighter",
    "davies_bouldin": "Davies-Bouldin index of the unknown classes' soft-label clusters; lower = better separated",
    "am_per_image": "Amalgam Metric per image (Eq. 4 / images): distance to the full model's proportions; lower",
    "am": "Amalgam Metric (Eq. 4, summed over images; grows with the images a class); lower",
    "accuracy": "test accuracy of the model trained on every class; higher",
}
# repscope's own LeNet-5 on Fashion-MNIST (README, Raw Zero-Shot "Measured here": the shipped config on 12,000
# training images a model, 3 epochs, the 10,000 test images)
# (AM summed is left out: it grows with the test images a class, 1,000 there)
REPSCOPE_LENET_FASHION = {"dbi": 0.452, "am_per_image": 0.021, "accuracy": 0.814}
REPSCOPE_SOURCE = "repscope LeNet-5 on Fashion-MNIST, 12,000 training images, 3 epochs (README)"
# the paper's LeNet on CIFAR-10 (Table 2); its AM (Table 3) is of another size (metrics.zeroshot.amalgam_metric)
PAPER_SOURCE = "Raw Zero-Shot Table 2, LeNet on CIFAR-10"
_WITHOUT = re.compile(r"without-(\d+)")
_POINT = re.compile(r"arch-(.+)_excluded-(\d+|full)")
_MODEL_SUFFIXES = (".pt", ".pt2", ".onnx", ".ts")


@dataclass(frozen=True)
class ZeroShotFactory:
    """Train ``n + 1`` models of a network factory, then score them.

    Attributes
    ----------
    factory : str
        ``"pkg.module:factory"`` or ``"path/file.py:factory"``, called ``factory(num_classes=k, **model_args)``
        (:mod:`repscope.models.networks`); it must be importable by the training workers too.
    data_name, data_params : str, dict
        A registered classification dataset (``digits`` with ``source: fashion-mnist`` / ``mnist-sample``,
        ``cifar10``); ``fashion-mnist`` is short for ``digits`` on Fashion-MNIST.
    epochs : int
        Training epochs of each model.
    workers, backend : int or None, str
        The sweep runner's workers and backend (``local`` or ``ray``).
    out : pathlib.Path, optional
        The folder of the trainings, a Raw Zero-Shot study run (``repscope assess --out DIR`` gives
        ``DIR/zeroshot``); kept, so that a restart skips the finished models. None: a new
        ``runs/zeroshot-study-<time>`` folder.
    model_args : dict
        The factory's own keyword arguments (``network_params``).
    label : str
        The architecture's name in the tables.
    batch_size : int
        Training batch size.
    trainer : dict
        Further trainer settings of each training (``accelerator``, ``devices``, ``precision``, ...: the
        command's Trainer flags), as the study's ``training.trainer`` takes them.
    """

    factory: str
    data_name: str = "digits"
    data_params: dict[str, Any] = field(default_factory=dict)
    epochs: int = 3
    workers: int | None = None
    backend: str = "local"
    out: Path | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    label: str = "Mine"
    batch_size: int = 128
    trainer: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ZeroShotFolder:
    """The ``n + 1`` models already trained (module docstring for the layouts read).

    Attributes
    ----------
    path : pathlib.Path
        The folder.
    data_name, data_params : str, dict
        The registered classification dataset they were trained on (its test split is scored).
    label : str, optional
        The architecture's label in a study run holding several; default: the only one.
    """

    path: Path
    data_name: str = "digits"
    data_params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None


def _dataset(name: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The registered dataset and parameters of ``name`` (``fashion-mnist``: the study's default data)."""
    if name == "fashion-mnist":
        return "digits", {"source": "fashion-mnist", "target": "label", **params}
    if name == "digits":
        return "digits", {"target": "label", **params}
    return name, dict(params)


def _study_config(source: ZeroShotFactory, seed: int, soft_label_n: int | None, quick: bool) -> Any:
    """The Raw Zero-Shot study's config with the factory as its one architecture."""
    from repscope.studies.zeroshot.study import ZeroShotConfig, ZeroShotData, factory_architecture  # noqa: PLC0415
    from repscope.studies.zeroshot.study import quick as quick_config  # noqa: PLC0415

    check_positive_int(source.epochs, "--zeroshot-epochs")
    check_positive_int(source.batch_size, "batch_size")
    if not isinstance(source.factory, str) or ":" not in source.factory:
        raise InvalidArgumentError(
            f"--zeroshot: expected 'pkg.module:factory' or 'file.py:factory', got {source.factory!r}"
        )
    name, params = _dataset(source.data_name, source.data_params)
    config = ZeroShotConfig(
        data=ZeroShotData(name=name, params=params),
        architectures=[factory_architecture(source.factory, source.model_args, source.label)],
        training={"trainer": {**source.trainer, "max_epochs": source.epochs}, "batch_size": source.batch_size},
        soft_label_n=soft_label_n,
        workers=source.workers,
        backend=source.backend,
        seed=seed,
    )
    return quick_config(config) if quick else config


def _train(source: ZeroShotFactory, seed: int, soft_label_n: int | None, quick: bool) -> tuple[Any, Any, Path]:
    """Train the ``n + 1`` models (the study's sweep, resumable); their soft-labels and accuracies."""
    from repscope.studies.zeroshot.study import _open_run, check_architectures, train_architectures  # noqa: PLC0415

    config = _study_config(source, seed, soft_label_n, quick)
    check_architectures(config, "--zeroshot")  # the factory builds for the data before anything trains
    folder = None if source.out is None else Path(source.out)
    # a folder left by an earlier start is continued: its finished models are kept (the config must match)
    resume = folder is not None and folder.is_dir() and any(folder.iterdir())
    run = _open_run(config, folder, Path("runs"), resume)
    test, names = _test_split(config.data.name, dict(config.data.params))
    trained = train_architectures(config, run, test["target"], len(names), names)
    return config, trained, run.root


def _test_split(name: str, params: dict[str, Any]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The dataset's test images and targets and its class names."""
    from repscope.data.zeroshot.leave_class_out import leave_class_out_dataset  # noqa: PLC0415

    dataset = leave_class_out_dataset(name, params, None)
    base = dataset.extras["base_dataset"]
    return base.arrays("test", ["image", "target"]), list(dataset.extras["base_names"])


def _folder_models(source: ZeroShotFolder) -> tuple[Path, dict[int, Path]]:
    """The full model's path and each excluded class's model path in the folder."""
    root = Path(source.path)
    if not root.is_dir():
        raise InvalidArgumentError(f"--zeroshot: {root} is not a folder of trained models")
    entries = {p.stem if p.suffix in _MODEL_SUFFIXES else p.name: p for p in root.iterdir()}
    if "full" in entries:
        loo = {int(m.group(1)): p for key, p in entries.items() if (m := _WITHOUT.fullmatch(key))}
        return entries["full"], loo
    points = root / "models" if (root / "models").is_dir() else root
    found = [(m.group(1), m.group(2), p) for p in points.iterdir() if (m := _POINT.fullmatch(p.name))]
    labels = sorted({label for label, _, _ in found})
    if not labels:
        raise InvalidArgumentError(
            f"--zeroshot: {root} holds neither full/ and without-<k>/ models nor a Raw Zero-Shot study's models/"
        )
    label = source.label or labels[0]
    if (source.label is None and len(labels) > 1) or label not in labels:
        raise InvalidArgumentError(f"--zeroshot: {root} holds architectures {', '.join(labels)}; name one (label)")
    points_of = {excluded: p / "train" for name, excluded, p in found if name == label}
    if "full" not in points_of:
        raise InvalidArgumentError(f"--zeroshot: {root}: no model of {label} trained on every class")
    return points_of.pop("full"), {int(k): p for k, p in points_of.items()}


def _classifier(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """``images -> soft-labels`` of one stored model: a repscope run's task, else the external loader's."""
    if path.is_dir() and (path / "config.yaml").exists():
        from repscope.train.reader import open_run  # noqa: PLC0415

        return open_run(path).task().soft_labels
    if path.is_dir() and (path / "train" / "config.yaml").exists():
        return _classifier(path / "train")
    from repscope.models.external import ImageClassifier, load_model  # noqa: PLC0415

    return ImageClassifier(load_model(str(path), option="--zeroshot")).soft_labels


def folder_soft_labels(
    source: ZeroShotFolder, soft_label_n: int | None = None, seed: int = 0
) -> tuple[SoftLabels, float, float]:
    """The soft-labels of the folder's ``n + 1`` models on the dataset's test images, and their accuracies.

    Parameters
    ----------
    source : ZeroShotFolder
        The folder and the dataset.
    soft_label_n : int, optional
        Test images of each class kept (a seeded draw, as the study draws them); None: all.
    seed : int, default=0
        Seed of that draw.

    Returns
    -------
    (SoftLabels, float, float)
        The soft-labels (checked), the full model's test accuracy and the mean test accuracy of the models
        without a class (on the other classes' test images).

    Raises
    ------
    InvalidArgumentError
        A folder without the ``n + 1`` models, a model whose outputs do not number ``n - 1`` (``n``) classes.
    """
    from repscope.studies.zeroshot.study import soft_label_rows  # noqa: PLC0415

    check_positive_int(soft_label_n, "soft_label_n", allow_none=True)
    name, params = _dataset(source.data_name, source.data_params)
    test, names = _test_split(name, params)
    images, targets, n = test["image"], np.asarray(test["target"]), len(names)
    full_path, loo_paths = _folder_models(source)
    missing = sorted(set(range(n)) - set(loo_paths))
    if missing:
        raise InvalidArgumentError(
            f"--zeroshot: {source.path}: no model without class {missing[0]} (without-{missing[0]})"
        )
    rows = soft_label_rows(targets, n, soft_label_n, seed)
    full_all = _outputs(_classifier(full_path), images, n, full_path)
    loo, loo_accuracy = [], []
    for k in range(n):
        outputs = _outputs(_classifier(loo_paths[k]), images, n - 1, loo_paths[k])
        loo.append(outputs[rows[k]])
        known = targets != k
        # the model without k numbers the other classes 0 .. n - 2 in order (the study's leave-class-out data)
        remapped = np.where(targets[known] > k, targets[known] - 1, targets[known])
        loo_accuracy.append(float(np.mean(outputs[known].argmax(axis=1) == remapped)))
    soft = check_soft_labels(loo, [full_all[r] for r in rows], names, where=f"--zeroshot {source.path}")
    return soft, float(np.mean(full_all.argmax(axis=1) == targets)), float(np.mean(loo_accuracy))


def _outputs(soft_labels: Callable[[np.ndarray], np.ndarray], images: np.ndarray, width: int, path: Path) -> np.ndarray:
    outputs = np.asarray(soft_labels(images), dtype=np.float64)
    if outputs.ndim != 2 or outputs.shape != (len(images), width):
        raise InvalidArgumentError(
            f"--zeroshot: {path}: expected soft-labels of {width} classes ({len(images)}, {width}), got {outputs.shape}"
        )
    return outputs


def shuffled_soft_labels(soft: SoftLabels, seed: int) -> SoftLabels:
    """The chance reference: the unknown classes' soft-label rows pooled, permuted (seeded) and dealt back in
    the same counts, so that no class is told apart by how its model describes it; the full model's rows stay.

    Parameters
    ----------
    soft : SoftLabels
        The soft-labels.
    seed : int
        Seed of the permutation.

    Returns
    -------
    SoftLabels
        Of the same shapes and kind.
    """
    pooled = np.concatenate(soft.loo)
    order = np.random.default_rng([seed, 71]).permutation(len(pooled))
    parts = np.split(pooled[order], np.cumsum([len(e) for e in soft.loo])[:-1])
    return SoftLabels(list(parts), soft.full, soft.class_names, soft.kind)


def _scores_of_rows(factors: np.ndarray, codes: np.ndarray, classes: int, kind: str) -> dict[str, Any]:
    """:func:`~repscope.metrics.zeroshot.zero_shot_scores` of rows laid out for the bootstrap: ``factors``
    column 0 the unknown class, ``codes`` the model-without-it's row then the full model's."""
    from repscope.metrics.zeroshot import zero_shot_scores  # noqa: PLC0415

    unknown = np.asarray(factors)[:, 0].astype(int)
    loo = [codes[unknown == k, : classes - 1] for k in range(classes)]
    full = [codes[unknown == k, classes - 1 :] for k in range(classes)]
    return zero_shot_scores(loo, full, kind)


def soft_label_intervals(soft: SoftLabels, resamples: int, seed: int) -> dict[str, dict[str, float]]:
    """Percentile bootstrap intervals (95%) of every score: the images resampled with replacement across
    classes (:func:`repscope.metrics.disentanglement.bootstrap.bootstrap_interval`; a resample that leaves
    a class without images is left out and counted as failed)."""
    from repscope.metrics.disentanglement.bootstrap import bootstrap_interval  # noqa: PLC0415

    n = soft.num_classes
    factors = np.concatenate([np.full((len(e), 1), k) for k, e in enumerate(soft.loo)])
    codes = np.concatenate([np.hstack([e, f]) for e, f in zip(soft.loo, soft.full)])
    return bootstrap_interval(_scores_of_rows, factors, codes, resamples, seed=seed, classes=n, kind=soft.kind)


def _references(data_name: str, data_params: dict[str, Any], metric: str) -> dict[str, Any]:
    """The paper's and repscope's values of ``metric`` where the data is theirs (module constants)."""
    found: dict[str, Any] = {}
    if data_name == "cifar10" and metric == "dbi":
        # the report module draws with matplotlib: imported only where its table is read
        from repscope.studies.zeroshot.report import PAPER_TABLES  # noqa: PLC0415

        found = {"paper": PAPER_TABLES["LeNet"]["dbi"], "paper_source": PAPER_SOURCE}
    if data_name == "digits" and data_params.get("source") == "fashion-mnist" and metric in REPSCOPE_LENET_FASHION:
        found |= {"repscope": REPSCOPE_LENET_FASHION[metric], "repscope_source": REPSCOPE_SOURCE}
    return found


def _headline(
    scores: dict[str, Any], chance: dict[str, Any], intervals: dict[str, dict[str, float]], where: tuple[str, dict]
) -> tuple[HeadlineRow, ...]:
    rows = []
    for metric, description in HEADLINE.items():
        interval = intervals.get(metric, {})
        rows.append(
            HeadlineRow(
                assessment="zeroshot",
                metric=metric,
                value=float(scores[metric]),
                chance=None if chance.get(metric) is None else float(chance[metric]),
                ci_low=interval.get("low"),
                ci_high=interval.get("high"),
                description=description,
                **_references(where[0], where[1], metric),
            )
        )
    return tuple(rows)


def _per_class_table(soft: SoftLabels, scores: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "class": range(soft.num_classes),
            "name": list(soft.class_names),
            "images": [len(e) for e in soft.loo],
            "dbi": scores["dbi_per_class"],
            "am": scores["am_per_class"],
            "am_per_image": scores["am_per_image_per_class"],
        }
    )


def soft_label_assessment(
    soft: SoftLabels,
    accuracy: float,
    loo_accuracy: float,
    *,
    model: str,
    data: tuple[str, dict[str, Any]] = ("digits", {}),
    label: str = "Mine",
    seed: int = 0,
    resamples: int = 200,
) -> Assessment:
    """The Raw Zero-Shot assessment of one architecture's soft-labels; writes nothing.

    The scores are :func:`~repscope.studies.zeroshot.results.compute_zeroshot`'s (the paper's DBI, Eq. 3,
    :math:`\\frac{1}{n}\\sum_i (\\frac{1}{m_i}\\sum_j \\lVert e_j - c_i \\rVert^2)^{1/2}`; the Davies-Bouldin
    index; AM, Eq. 4, :math:`\\frac{1}{n}\\sum_i \\lVert h'_i - h_i \\rVert_1 / (n - 1)`, and AM per image);
    chance: the same scores of :func:`shuffled_soft_labels`; intervals: :func:`soft_label_intervals`.

    Parameters
    ----------
    soft : SoftLabels
        ``loo[k]`` ``(m_k, n - 1)`` and ``full[k]`` ``(m_k, n)`` (:mod:`repscope.data.zeroshot.softlabels`).
    accuracy, loo_accuracy : float
        The full model's test accuracy; the mean of the models without a class.
    model : str
        What was assessed, for the record.
    data : (str, dict)
        The registered dataset and its parameters (they decide which reference values apply).
    label : str, default="Mine"
        The architecture's name in the tables.
    seed : int, default=0
        Seed of the chance permutation and of the bootstrap.
    resamples : int, default=200
        Bootstrap resamples (>= 2).

    Returns
    -------
    Assessment
        Role ``classifier``: ``metrics["zeroshot"]`` (every score, ``chance``, ``intervals``), the headline,
        tables ``zeroshot_per_class`` and ``zeroshot_representation``, arrays ``zeroshot_loo_<k>`` and
        ``zeroshot_full_<k>`` (the soft-label file's layout).
    """
    from repscope.metrics.zeroshot import zero_shot_scores  # noqa: PLC0415
    from repscope.studies.zeroshot.results import compute_zeroshot  # noqa: PLC0415

    seed = check_seed(seed)
    check_positive_int(resamples, "resamples")
    result = compute_zeroshot(
        {label: soft}, {label: accuracy}, {label: loo_accuracy}, {}, norms=[], thresholds=[],
        attack_images=0, attack_candidates=0,
    )  # fmt: skip
    scores = {**result.scores[label], "accuracy": float(accuracy), "loo_accuracy": float(loo_accuracy)}
    chance = {**zero_shot_scores(shuffled_soft_labels(soft, seed).loo, soft.full, soft.kind)}
    chance["accuracy"] = 1.0 / soft.num_classes
    intervals = soft_label_intervals(soft, resamples, seed)
    numbers = {key: value for key, value in scores.items() if isinstance(value, float | int | str)}
    metrics = {
        "zeroshot": {
            **numbers,
            "classes": soft.num_classes,
            "chance": {key: chance[key] for key in HEADLINE},
            "intervals": {key: intervals[key] for key in HEADLINE if key in intervals},
        }
    }
    arrays = {f"zeroshot_loo_{k}": e for k, e in enumerate(soft.loo)}
    arrays |= {f"zeroshot_full_{k}": f for k, f in enumerate(soft.full)}
    return Assessment(
        role="classifier",
        model=model,
        data=f"{data[0]} {data[1]}" if data[1] else data[0],
        metrics=metrics,
        headline=_headline(scores, chance, intervals, data),
        tables={"zeroshot_per_class": _per_class_table(soft, scores), "zeroshot_representation": result.representation},
        arrays=arrays,
        settings={"zeroshot": {"seed": seed, "resamples": resamples, "images": [len(e) for e in soft.loo]}},
        notes=(
            "Raw Zero-Shot chance: the unknown classes' soft-labels shuffled among the classes (seeded); intervals: "
            f"95% percentile bootstrap over the test images ({resamples} resamples).",
            "AM (summed) grows with the images a class and is not comparable in size with the paper's Table 3; "
            "compare am_per_image between runs.",
        ),
    )


def zeroshot_assessment(
    source: ZeroShotFactory | ZeroShotFolder,
    *,
    seed: int = 0,
    progress: bool | None = None,
    quick: bool = False,
    soft_label_n: int | None = None,
    resamples: int = 200,
) -> Assessment:
    """Raw Zero-Shot DBI and Amalgam of a user's architecture (module docstring); writes nothing but the
    trainings of a :class:`ZeroShotFactory` (into ``source.out``).

    Parameters
    ----------
    source : ZeroShotFactory or ZeroShotFolder
        A factory to train ``n + 1`` times, or the folder of the ``n + 1`` trained models; each names its data.
    seed : int, default=0
        Seed of the trainings, the test images kept, the chance permutation and the bootstrap.
    progress : bool, optional
        False: no progress bars.
    quick : bool, default=False
        The study's quick variant (1,500 training images, one epoch, 50 test images a class).
    soft_label_n : int, optional
        Test images of each class scored (a seeded draw); None: all (quick: 50).
    resamples : int, default=200
        Bootstrap resamples.

    Returns
    -------
    Assessment
        :func:`soft_label_assessment`'s, with the training folder in ``settings`` for a factory.

    Raises
    ------
    InvalidArgumentError
        A source of another type, a factory that does not build for the data, a folder without the
        ``n + 1`` models or with models of the wrong number of outputs.
    """
    from repscope.progress import quiet_progress  # noqa: PLC0415

    seed = check_seed(seed)
    with quiet_progress(progress is False):
        if isinstance(source, ZeroShotFactory):
            config, trained, folder = _train(source, seed, soft_label_n, quick)
            label = source.label
            soft, accuracy = trained.soft_labels[label], trained.accuracy[label]
            loo_accuracy, model = trained.loo_accuracy[label], source.factory
            data = (config.data.name, dict(config.data.params))
            extra = {"training_dir": str(folder), "epochs": config.training.trainer.max_epochs, "quick": quick}
        elif isinstance(source, ZeroShotFolder):
            count = 50 if quick and soft_label_n is None else soft_label_n
            soft, accuracy, loo_accuracy = folder_soft_labels(source, count, seed)
            label, model = source.label or "Mine", str(source.path)
            data, extra = _dataset(source.data_name, source.data_params), {"models": str(source.path)}
        else:
            raise InvalidArgumentError(
                f"--zeroshot: expected a ZeroShotFactory or ZeroShotFolder, got {type(source).__name__}"
            )
        found = soft_label_assessment(
            soft, accuracy, loo_accuracy, model=model, data=data, label=label, seed=seed, resamples=resamples
        )
    return dataclasses.replace(found, settings={"zeroshot": {**found.settings["zeroshot"], **extra}})
