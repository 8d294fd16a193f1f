"""Supervised tasks on Morpho-MNIST (Castro et al., Appendix D, Table 3).

Four models -- kNN (k = 5, distance weighted, L1), SVM (polynomial kernel, C = 100), MLP
784-200-200-L and LeNet-5 -- on three tasks:

* digit recognition: trained on ``plain``, tested on ``plain`` and on ``local`` (the same test
  digits, a third of them swollen and a third fractured): accuracy, %;
* abnormality detection: normal vs perturbed (swollen or fractured) on ``local``: accuracy, %;
* thickness regression on ``global`` (plain, thinned, thickened): RMSE in pixels.

The neural models go through the training stack (each a run directory under ``models/``);
the scikit-learn models see the flattened images scaled to [0, 1].
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.morpho.training_sets import load_morpho_mnist
from repscope.models.morpho.baselines import knn_baseline, svm_baseline
from repscope.progress import progress_bar
from repscope.report import Report
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
    data_params = config.data.params()
    rows: dict[str, dict[str, float]] = {model: {} for model in config.models}
    details = []
    chance: dict[str, float] = {}
    trained, to_train = 0, len(config.tasks) * sum(model not in SKLEARN for model in config.models)
    for task_name in config.tasks:
        train_set, target, test_sets = TASKS[task_name]
        # copies of a plain digit are identical bytes: they add nothing to recognition on PLAIN
        task_params = {**data_params, "copies": 1} if train_set == "plain" else data_params
        data = load_morpho_mnist(set=train_set, target=target, **task_params)
        if data.target_kind == "classification":
            # the score of always answering the commonest training class
            majority = np.bincount(data.train_targets).argmax()
            chance[task_name] = float(np.mean(data.test_targets == majority) * 100.0)
        else:
            # the RMSE of always answering the mean training value
            chance[task_name] = float(np.sqrt(np.mean((data.test_targets - data.train_targets.mean()) ** 2)))
        evaluations: dict[str, Any] = {}  # the test sets, loaded once and only when a model still needs them

        for model in config.models:
            if model not in SKLEARN:
                trained += 1
            step = f"{model}-{task_name}"
            done = load_step(run, step, resume)
            if done is not None:  # evaluated before this run was resumed
                for detail in done:
                    rows[model][COLUMNS[(task_name, detail["tested_on"])]] = detail["value"]
                details.extend(done)
                continue
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
                member = MemberModel(label=f"{model}-{task_name}", name=model)
                task, _ = train_member(
                    member,
                    Named(name="morpho-mnist", params={**task_params, "set": train_set, "target": target}),
                    config.training,
                    config.seed,
                    run.path("models", f"{model}-{task_name}"),
                    source,
                    position=(trained, to_train),
                    resume=resume,
                )
            evaluated = []
            for test_name in test_sets:
                if test_name not in evaluations:
                    evaluations[test_name] = (
                        data
                        if test_name == train_set
                        else load_morpho_mnist(set=test_name, target=target, **task_params)
                    )
                evaluation = evaluations[test_name]
                if model in SKLEARN:
                    described = (
                        f"predicting {len(evaluation.test_images)} {test_name} digits with {model} ({task_name})"
                    )
                    predicted = _predict_sklearn(estimator, evaluation.test_images, described)
                else:
                    predicted = task.predict(evaluation.test_images)
                value = _score(data.target_kind, predicted, evaluation.test_targets)
                rows[model][COLUMNS[(task_name, test_name)]] = value
                evaluated.append(
                    {
                        "model": model,
                        "task": task_name,
                        "trained_on": train_set,
                        "tested_on": test_name,
                        "metric": "accuracy_percent" if data.target_kind == "classification" else "rmse_px",
                        "value": value,
                        "train_digits": n_train,
                        "test_digits": len(evaluation.test_images),
                        "seconds": round(time.perf_counter() - started, 2),
                    }
                )
            save_step(run, step, evaluated)
            details.extend(evaluated)
    columns = [c for key, c in COLUMNS.items() if key[0] in config.tasks]
    table = pd.DataFrame.from_dict(rows, orient="index")[columns].rename_axis("Model").reset_index()
    table["Model"] = table["Model"].map(MODEL_NAMES)
    run.write_table("table3", table)
    run.write_table("details", pd.DataFrame(details))
    run.write_table("table3_vs_paper", paper_comparison(table, columns))

    metrics: dict[str, Any] = {"table3": {row["Model"]: {c: row[c] for c in columns} for _, row in table.iterrows()}}
    recognition = [c for c in columns if c.startswith("Digit recognition")]
    if len(recognition) == 2:
        plain, local = recognition
        metrics["best_plain_recognition"] = table.loc[table[plain].idxmax(), "Model"]
        metrics["every_model_loses_accuracy_on_local"] = bool((table[local] < table[plain]).all())
    metrics["baseline_constant_prediction"] = chance
    metrics["train_digits"] = {d["task"]: d["train_digits"] for d in details}
    metrics["test_digits"] = {d["task"]: d["test_digits"] for d in details}
    run.write_metrics(metrics)

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
    thickness = COLUMNS[("thickness", "global")]
    if thickness in table and "thickness" in chance:
        worse = table.loc[table[thickness] >= chance["thickness"], "Model"].tolist()
        if worse:
            report.add_warning(
                f"Thickness regression: {', '.join(worse)} no better than predicting the mean "
                f"thickness (RMSE {chance['thickness']:.4g} px)"
            )
    report.add_paragraph(
        "Constant-prediction baselines (commonest class, % / mean thickness, RMSE px): "
        + ", ".join(f"{task} {value:.4g}" for task, value in chance.items())
        + ". Two thirds of LOCAL digits are perturbed, so abnormality detection starts from about 67%."
    )
    beside = paper_comparison(table, columns)
    if len(beside):
        report.add_table(
            beside,
            title="Ours beside the paper's Table 3",
            caption=f"Paper: {PAPER_TABLE3_SOURCE}. Ours: {subtitle}. difference = ours - paper (percentage "
            "points for accuracy; pixels for RMSE, where lower is better).",
        )
    report.add_metrics({k: v for k, v in metrics.items() if k != "table3"}, title="Headline", labels=True)
    report.add_table(pd.DataFrame(details), title="Every evaluation")
    return run.write_report(report)
