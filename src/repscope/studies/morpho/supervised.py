"""Supervised tasks on Morpho-MNIST (Castro et al., Appendix D, Table 3).

Four models -- kNN (k = 5, distance weighted, L1), SVM (polynomial kernel, C = 100), MLP
784-200-200-L and LeNet-5 -- on three tasks:

* digit recognition: trained on ``plain``, tested on ``plain`` and on ``local`` (the same test
  digits, a third of them swollen and a third fractured): accuracy, %;
* abnormality detection: normal vs perturbed (swollen or fractured) on ``local``: accuracy, %;
* thickness regression on ``global`` (plain, thinned, thickened): RMSE in pixels.

The neural models go through the training stack (each a run directory under ``models/``);
the scikit-learn models see the flattened images scaled to [0, 1].

The study runs in steps: :func:`train_networks` (the neural models, resumable), :func:`compute_supervised`
(trained networks in, a :class:`SupervisedResult` out; the scikit-learn models are fitted there; no
files), :func:`write_supervised` (tables, ``metrics.json``) and :func:`report_supervised`
(``report.html``). Each (model, task) evaluation is recorded as it finishes (``steps/``), so that
``--resume`` keeps it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.morpho.training_sets import load_morpho_mnist
from repscope.errors import InvalidArgumentError
from repscope.models.morpho.baselines import knn_baseline, svm_baseline
from repscope.progress import progress_bar
from repscope.report import Report
from repscope.run_directory import RunDirectory
from repscope.studies.common import MemberModel, MorphoDataSection, TrainingSection
from repscope.studies.morpho.resume import load_step, open_study_run, save_step, train_member
from repscope.train.config import Named, Section, TrainerSection
from repscope.validation import Seed

TASKS = {
    "recognition": ("plain", "label", ("plain", "local")),
    "abnormality": ("local", "abnormal", ("local",)),
    "thickness": ("global", "thickness", ("global",)),
}
COLUMNS = {
    ("recognition", "plain"): "Digit recognition PLAIN (%)",
    ("recognition", "local"): "Digit recognition LOCAL (%)",
    ("abnormality", "local"): "Abnormality detection (%)",
    ("thickness", "global"): "Thickness regression (RMSE, px)",
}
SKLEARN = ("knn", "svm")
# Table 3 of Castro et al., "Morpho-MNIST: Quantitative Assessment and Diagnostics for Representation
# Learning" (arXiv:1809.10780, Appendix D), as printed: full MNIST, 60,000 training digits
PAPER_TABLE3_SOURCE = "Castro et al. 2019, Morpho-MNIST, Appendix D, Table 3 (60,000 MNIST training digits)"
PAPER_TABLE3 = {
    "kNN": {
        "Digit recognition PLAIN (%)": 96.25,
        "Digit recognition LOCAL (%)": 95.22,
        "Abnormality detection (%)": 65.10,
        "Thickness regression (RMSE, px)": 0.4674,
    },
    "SVM": {
        "Digit recognition PLAIN (%)": 95.71,
        "Digit recognition LOCAL (%)": 92.47,
        "Abnormality detection (%)": 77.59,
        "Thickness regression (RMSE, px)": 0.3647,
    },
    "MLP": {
        "Digit recognition PLAIN (%)": 97.97,
        "Digit recognition LOCAL (%)": 93.15,
        "Abnormality detection (%)": 88.25,
        "Thickness regression (RMSE, px)": 0.3481,
    },
    "LeNet-5": {
        "Digit recognition PLAIN (%)": 98.95,
        "Digit recognition LOCAL (%)": 95.33,
        "Abnormality detection (%)": 97.53,
        "Thickness regression (RMSE, px)": 0.2790,
    },
}
MODEL_NAMES = {"knn": "kNN", "svm": "SVM", "mlp": "MLP", "lenet5": "LeNet-5"}
# digits a kNN or SVM predicts at a time: the progress counts them
PREDICT_CHUNK = 500


class SupervisedConfig(Section):
    data: MorphoDataSection = Field(default_factory=MorphoDataSection)
    models: list[Literal["knn", "svm", "mlp", "lenet5"]] = ["knn", "svm", "mlp", "lenet5"]
    tasks: list[Literal["recognition", "abnormality", "thickness"]] = list(TASKS)
    training: TrainingSection = Field(default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=20)))
    sklearn_max_train: int | None = Field(None, ge=1, description="cap on kNN/SVM training digits (SVM is quadratic)")
    seed: Seed = 0


def quick(config: SupervisedConfig) -> SupervisedConfig:
    """Minutes on 2 CPU cores with ``mnist-sample``: 4 epochs, one copy of each digit."""
    out = config.model_copy(deep=True)
    out.training.trainer.max_epochs = min(out.training.trainer.max_epochs, 4)
    out.data.copies = 1
    return out


def _sklearn_model(name: str, kind: str) -> Any:
    return knn_baseline(kind) if name == "knn" else svm_baseline(kind)


def _flat(images: np.ndarray) -> np.ndarray:
    return images.reshape(len(images), -1).astype(np.float32) / 255.0


def _distinct_rows(images: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct image, in order."""
    _, first = np.unique(images.reshape(len(images), -1), axis=0, return_index=True)
    return np.sort(first)


def _score(kind: str, predicted: np.ndarray, truth: np.ndarray) -> float:
    if kind == "classification":
        return float(np.mean(predicted == truth) * 100.0)
    return float(np.sqrt(np.mean((np.asarray(predicted, np.float64) - truth) ** 2)))


def paper_comparison(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Our Table 3 beside the paper's printed values (:data:`PAPER_TABLE3`), one row per model and task.

    Parameters
    ----------
    table : pandas.DataFrame
        Our Table 3: a ``Model`` column (kNN, SVM, MLP, LeNet-5) and one column per task of ``columns``.
    columns : list of str
        The task columns to compare (names of :data:`COLUMNS`).

    Returns
    -------
    pandas.DataFrame
        Columns ``model``, ``task``, ``ours``, ``paper``, ``difference`` (ours - paper), in the order of
        ``table``'s rows, then ``columns``.
    """
    records = []
    for _, row in table.iterrows():
        for column in columns:
            paper = PAPER_TABLE3[row["Model"]][column]
            ours = float(row[column])
            records.append(
                {"model": row["Model"], "task": column, "ours": ours, "paper": paper, "difference": ours - paper}
            )
    return pd.DataFrame(records, columns=["model", "task", "ours", "paper", "difference"])


def _fit_sklearn(
    estimator: Any, images: np.ndarray, targets: np.ndarray, description: str, announce: bool = True
) -> Any:
    """Fit a scikit-learn model, which reports nothing while it fits: a one-step progress whose last line
    gives the time it took (1/1) and, with ``announce`` (a fit that takes a while: the SVM), whose first
    line says at once that it started, not after 5 s."""
    with progress_bar(description, total=1, every_seconds=0.0 if announce else None) as update:
        update(0)
        estimator.fit(_flat(images), targets)
        update(1)
    return estimator


def _predict_sklearn(estimator: Any, images: np.ndarray, description: str) -> np.ndarray:
    """Predict in chunks of :data:`PREDICT_CHUNK` digits, counted (kNN spends its time here)."""
    parts = []
    with progress_bar(description, total=len(images)) as update:
        for start in range(0, len(images), PREDICT_CHUNK):
            parts.append(np.asarray(estimator.predict(_flat(images[start : start + PREDICT_CHUNK]))))
            update(min(start + PREDICT_CHUNK, len(images)))
    return np.concatenate(parts) if parts else np.zeros(0)


@dataclass(frozen=True)
class TrainedNetwork:
    """A neural model trained for one task.

    Attributes
    ----------
    task : object
        The trained task (eval mode): ``predict(images)`` gives class indices or values.
    seconds : float
        The time its training (or loading) took, counted into its evaluations' ``seconds``.
    """

    task: Any
    seconds: float


@dataclass(frozen=True)
class SupervisedResult:
    """What the supervised study found (Castro et al., Table 3).

    Attributes
    ----------
    table : pandas.DataFrame
        Table 3: a ``Model`` column (kNN, SVM, MLP, LeNet-5) and one column per task of ``columns``.
    evaluations : list of dict
        Every evaluation of a model on a test set: ``model``, ``task``, ``trained_on``, ``tested_on``,
        ``metric``, ``value``, ``train_digits``, ``test_digits``, ``seconds``.
    chance : dict of str to float
        Per task, the score of a constant prediction (the commonest training class, %; the mean training
        thickness, RMSE px).
    columns : list of str
        The task columns of ``table`` (names of :data:`COLUMNS`).
    """

    table: pd.DataFrame
    evaluations: list[dict[str, Any]]
    chance: dict[str, float]
    columns: list[str]

    @property
    def details(self) -> pd.DataFrame:
        """Every evaluation, one row each."""
        return pd.DataFrame(self.evaluations)

    @property
    def comparison(self) -> pd.DataFrame:
        """Our Table 3 beside the paper's (:func:`paper_comparison`)."""
        return paper_comparison(self.table, self.columns)

    @property
    def metrics(self) -> dict[str, Any]:
        """The headline numbers by name, as ``metrics.json`` holds them."""
        table, columns = self.table, self.columns
        metrics: dict[str, Any] = {
            "table3": {row["Model"]: {c: row[c] for c in columns} for _, row in table.iterrows()}
        }
        recognition = [c for c in columns if c.startswith("Digit recognition")]
        if len(recognition) == 2:
            plain, local = recognition
            metrics["best_plain_recognition"] = table.loc[table[plain].idxmax(), "Model"]
            metrics["every_model_loses_accuracy_on_local"] = bool((table[local] < table[plain]).all())
        metrics["baseline_constant_prediction"] = self.chance
        metrics["train_digits"] = {d["task"]: d["train_digits"] for d in self.evaluations}
        metrics["test_digits"] = {d["task"]: d["test_digits"] for d in self.evaluations}
        return metrics


def run_supervised(
    config: SupervisedConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Run the study and return the path of its ``report.html``.

    Parameters
    ----------
    config : SupervisedConfig
        The study's config.
    out : pathlib.Path, optional
        The run directory (default ``root/morpho-supervised-<time>``).
    root : pathlib.Path
        Parent of the default run directory.
    source : str
        Where the config came from, for messages.
    quick : bool
        A ``--quick`` run (said at the top of the report).
    resume : bool
        Continue the run in ``out``: every (model, task) already evaluated (``steps/``) is kept, a
        network whose training stopped continues from its last checkpoint; the config must be the one
        the run started with.

    Returns
    -------
    pathlib.Path
        The report.
    """
    run = open_study_run("morpho-supervised", config, out, root, resume)
    done = {step: found for step in _steps(config) if (found := load_step(run, step, resume)) is not None}
    networks = train_networks(config, run, source, resume=resume, skip=set(done))
    result = compute_supervised(
        config, networks, done=done, on_evaluated=lambda step, evaluated: save_step(run, step, evaluated)
    )
    write_supervised(result, run)
    return report_supervised(result, config, run, quick=quick)


def _step(model: str, task_name: str) -> str:
    """The name of a (model, task) evaluation: its ``steps/`` record and its network's folder."""
    return f"{model}-{task_name}"


def _steps(config: SupervisedConfig) -> list[str]:
    return [_step(model, task_name) for task_name in config.tasks for model in config.models]


def _task_params(config: SupervisedConfig, train_set: str) -> dict[str, Any]:
    """The dataset parameters of a task trained on ``train_set``."""
    data_params = config.data.params()
    # copies of a plain digit are identical bytes: they add nothing to recognition on PLAIN
    return {**data_params, "copies": 1} if train_set == "plain" else data_params


def train_networks(
    config: SupervisedConfig,
    run: RunDirectory,
    source: str = "config",
    resume: bool = False,
    skip: Collection[str] = (),
) -> dict[str, TrainedNetwork]:
    """Train (or load, or continue) the neural model of every (model, task) but those in ``skip``, each
    into ``models/<model>-<task>`` of ``run``; the progress counts every network of the study, in order.

    Parameters
    ----------
    config : SupervisedConfig
        The study's config.
    run : RunDirectory
        Where the networks go.
    source : str
        Where the config came from, for messages.
    resume : bool
        Load a finished training, continue one that stopped (:func:`~repscope.studies.morpho.resume.train_member`).
    skip : collection of str
        ``<model>-<task>`` evaluations already recorded (a resumed run needs no network for them).

    Returns
    -------
    dict of str to TrainedNetwork
        By ``<model>-<task>``.
    """
    networks = {}
    trained, to_train = 0, len(config.tasks) * sum(model not in SKLEARN for model in config.models)
    for task_name in config.tasks:
        train_set, target, _ = TASKS[task_name]
        data = Named(
            name="morpho-mnist", params={**_task_params(config, train_set), "set": train_set, "target": target}
        )
        for model in config.models:
            if model in SKLEARN:
                continue
            trained += 1
            step = _step(model, task_name)
            if step in skip:
                continue
            started = time.perf_counter()
            task, _ = train_member(
                MemberModel(label=step, name=model),
                data,
                config.training,
                config.seed,
                run.path("models", step),
                source,
                position=(trained, to_train),
                resume=resume,
            )
            networks[step] = TrainedNetwork(task=task, seconds=time.perf_counter() - started)
    return networks


def compute_supervised(
    config: SupervisedConfig,
    networks: Mapping[str, TrainedNetwork],
    done: Mapping[str, list[dict[str, Any]]] | None = None,
    on_evaluated: Callable[[str, list[dict[str, Any]]], None] | None = None,
) -> SupervisedResult:
    """Fit the scikit-learn models, evaluate every model on every test set of its task (no files written).

    Parameters
    ----------
    config : SupervisedConfig
        The study's config: its data, models, tasks and ``sklearn_max_train``.
    networks : mapping of str to TrainedNetwork
        By ``<model>-<task>``, each neural model not in ``done`` (:func:`train_networks`).
    done : mapping of str to list of dict, optional
        Evaluations already recorded (a resumed run), by ``<model>-<task>``: kept as they are.
    on_evaluated : callable, optional
        Called with ``(<model>-<task>, evaluations)`` as each model finishes a task (the run records it).

    Returns
    -------
    SupervisedResult

    Raises
    ------
    InvalidArgumentError
        A neural model's evaluation neither in ``done`` nor in ``networks``.
    """
    done = done or {}
    evaluations: list[dict[str, Any]] = []
    chance: dict[str, float] = {}
    for task_name in config.tasks:
        train_set, target, _ = TASKS[task_name]
        data = load_morpho_mnist(set=train_set, target=target, **_task_params(config, train_set))
        chance[task_name] = constant_prediction_score(data)
        test_data = _test_data_loader(task_name, data, config)
        for model in config.models:
            step = _step(model, task_name)
            if step in done:  # evaluated before this run was resumed
                evaluations.extend(done[step])
                continue
            if model not in SKLEARN and step not in networks:
                raise InvalidArgumentError(f"networks: no trained network {step!r} (train_networks trains them)")
            evaluated = evaluate_model(model, task_name, data, test_data, config, networks.get(step))
            if on_evaluated is not None:
                on_evaluated(step, evaluated)
            evaluations.extend(evaluated)
    columns = [c for key, c in COLUMNS.items() if key[0] in config.tasks]
    rows: dict[str, dict[str, float]] = {model: {} for model in config.models}
    for evaluation in evaluations:
        rows[evaluation["model"]][COLUMNS[(evaluation["task"], evaluation["tested_on"])]] = evaluation["value"]
    table = pd.DataFrame.from_dict(rows, orient="index")[columns].rename_axis("Model").reset_index()
    table["Model"] = table["Model"].map(MODEL_NAMES)
    return SupervisedResult(table=table, evaluations=evaluations, chance=chance, columns=columns)


def constant_prediction_score(data: Any) -> float:
    """The score of a constant prediction on the test digits: the accuracy (%) of always answering the
    commonest training class, or the RMSE of always answering the mean training value.

    Parameters
    ----------
    data : MorphoMNIST
        A task's data (:func:`~repscope.data.morpho.training_sets.load_morpho_mnist`).

    Returns
    -------
    float
    """
    if data.target_kind == "classification":
        majority = np.bincount(data.train_targets).argmax()
        return float(np.mean(data.test_targets == majority) * 100.0)
    return float(np.sqrt(np.mean((data.test_targets - data.train_targets.mean()) ** 2)))


def _test_data_loader(task_name: str, data: Any, config: SupervisedConfig) -> Callable[[str], Any]:
    """The test sets of a task by name, each loaded once and only when a model still needs it."""
    train_set, target, _ = TASKS[task_name]
    task_params = _task_params(config, train_set)
    evaluations: dict[str, Any] = {}

    def test_data(test_name: str) -> Any:
        if test_name not in evaluations:
            evaluations[test_name] = (
                data if test_name == train_set else load_morpho_mnist(set=test_name, target=target, **task_params)
            )
        return evaluations[test_name]

    return test_data


def evaluate_model(
    model: str,
    task_name: str,
    data: Any,
    test_data: Callable[[str], Any],
    config: SupervisedConfig,
    network: TrainedNetwork | None = None,
) -> list[dict[str, Any]]:
    """Evaluate one model on every test set of a task: a scikit-learn model is fitted here on the task's
    distinct training digits, a neural one is the trained ``network``.

    Parameters
    ----------
    model : str
        ``knn``, ``svm``, ``mlp`` or ``lenet5``.
    task_name : str
        A key of :data:`TASKS`.
    data : MorphoMNIST
        The task's training (and own test) data.
    test_data : callable
        The task's test sets by name.
    config : SupervisedConfig
        The study's config (``sklearn_max_train``).
    network : TrainedNetwork, optional
        The trained neural model (required unless ``model`` is a scikit-learn one).

    Returns
    -------
    list of dict
        One evaluation per test set (the records of :attr:`SupervisedResult.evaluations`).
    """
    started = time.perf_counter()
    n_train = len(data.train_images)
    if model in SKLEARN:
        # distinct images only: with copies, a digit drawn plain (or thinned) twice is the same
        # bytes twice, which would only shrink kNN's effective neighbourhood and slow the SVM
        keep = _distinct_rows(data.train_images)[: config.sklearn_max_train]
        n_train = len(keep)
        estimator = _fit_sklearn(
            _sklearn_model(model, data.target_kind),
            data.train_images[keep],
            data.train_targets[keep],
            f"fitting {model} on {n_train} digits ({task_name})",
            announce=model == "svm",  # kNN's fit only stores the digits: its time is in predict
        )
    else:
        started -= network.seconds  # the seconds of an evaluation include the training's
    evaluated = []
    for test_name in TASKS[task_name][2]:
        evaluation = test_data(test_name)
        if model in SKLEARN:
            described = f"predicting {len(evaluation.test_images)} {test_name} digits with {model} ({task_name})"
            predicted = _predict_sklearn(estimator, evaluation.test_images, described)
        else:
            predicted = network.task.predict(evaluation.test_images)
        evaluated.append(
            {
                "model": model,
                "task": task_name,
                "trained_on": TASKS[task_name][0],
                "tested_on": test_name,
                "metric": "accuracy_percent" if data.target_kind == "classification" else "rmse_px",
                "value": _score(data.target_kind, predicted, evaluation.test_targets),
                "train_digits": n_train,
                "test_digits": len(evaluation.test_images),
                "seconds": round(time.perf_counter() - started, 2),
            }
        )
    return evaluated


def write_supervised(result: SupervisedResult, run: RunDirectory) -> None:
    """Write Table 3, every evaluation, Table 3 beside the paper's, and ``metrics.json`` into ``run``.

    Parameters
    ----------
    result : SupervisedResult
        What :func:`compute_supervised` found.
    run : RunDirectory
        The study's run directory.
    """
    run.write_table("table3", result.table)
    run.write_table("details", result.details)
    run.write_table("table3_vs_paper", result.comparison)
    run.write_metrics(result.metrics)


def report_supervised(
    result: SupervisedResult, config: SupervisedConfig, run: RunDirectory, quick: bool = False
) -> Path:
    """Write the study's ``report.html`` from its result.

    Parameters
    ----------
    result : SupervisedResult
        What :func:`compute_supervised` found.
    config : SupervisedConfig
        The study's config (its source, seed and copies, said in the subtitle).
    run : RunDirectory
        The study's run directory.
    quick : bool
        A ``--quick`` run (said at the top of the report).

    Returns
    -------
    pathlib.Path
        The report.
    """
    table, chance = result.table, result.chance
    copies = f"{config.data.copies} {'copy' if config.data.copies == 1 else 'copies'} of each training digit"
    subtitle = f"{config.data.source}, seed {config.seed}, {copies}"
    report = Report("Morpho-MNIST supervised tasks", subtitle=subtitle, quick=quick)
    report.add_paragraph(
        "Digit recognition trained on PLAIN and tested on PLAIN and LOCAL (domain shift); abnormality "
        "detection (normal vs swollen or fractured) on LOCAL; stroke-thickness regression on GLOBAL. "
        "Laid out as Table 3 of the Morpho-MNIST paper (accuracy in %, RMSE in pixels)."
    )
    accuracy_baselines = {
        COLUMNS[key]: chance[key[0]]
        for key in COLUMNS
        if key[0] in chance and key[0] != "thickness" and COLUMNS[key] in table
    }
    report.add_table(
        table, title="Table 3", baseline=accuracy_baselines, baseline_label="constant prediction (commonest class)"
    )
    _add_thickness_warning(report, table, chance)
    report.add_paragraph(
        "Constant-prediction baselines (commonest class, % / mean thickness, RMSE px): "
        + ", ".join(f"{task} {value:.4g}" for task, value in chance.items())
        + ". Two thirds of LOCAL digits are perturbed, so abnormality detection starts from about 67%."
    )
    beside = result.comparison
    if len(beside):
        report.add_table(
            beside,
            title="Ours beside the paper's Table 3",
            caption=f"Paper: {PAPER_TABLE3_SOURCE}. Ours: {subtitle}. difference = ours - paper (percentage "
            "points for accuracy; pixels for RMSE, where lower is better).",
        )
    report.add_metrics({k: v for k, v in result.metrics.items() if k != "table3"}, title="Headline", labels=True)
    report.add_table(result.details, title="Every evaluation")
    return run.write_report(report)


def _add_thickness_warning(report: Report, table: pd.DataFrame, chance: dict[str, float]) -> None:
    """Warn of every model whose thickness regression is no better than predicting the mean thickness."""
    thickness = COLUMNS[("thickness", "global")]
    if thickness in table and "thickness" in chance:
        worse = table.loc[table[thickness] >= chance["thickness"], "Model"].tolist()
        if worse:
            report.add_warning(
                f"Thickness regression: {', '.join(worse)} no better than predicting the mean "
                f"thickness (RMSE {chance['thickness']:.4g} px)"
            )
