"""ML4ML assessors for a model repository (Secs. V-C, VI, Table IV).

**Assessors.** Decision tree, random forest, AdaBoost and linear regression (thresholded at 0.5)
on the 5 x 16 features, by the paper's protocol: 3-fold cross-validation repeated 10 times on a
balanced draw (as many variant as invariant models), mean and std of the test-fold accuracy. The
baseline is the robust accuracy (Eq. 1) with a threshold chosen by a greedy search on the training folds.
They learn the labels of :mod:`repscope.studies.invariance.labels` (the guideline's rules, or human labels
in our coding: 1 = invariant) and are saved by :mod:`repscope.studies.invariance.assessor_files`.

**Reference protocol** (``compat="reference"``): the authors' released code's cross-validation, in
:mod:`repscope.studies.invariance.assess_reference`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_json_atomic, write_text_atomic
from repscope.studies.invariance.assess_reference import (
    evaluate_assessors_reference,
    reference_assessors,
    reference_holdout,
)
from repscope.studies.invariance.assessor_files import ASSESSOR_FILE, save_assessors
from repscope.studies.invariance.assessor_models import assessors, greedy_threshold, predict_labels
from repscope.studies.invariance.labels import repository_labels
from repscope.validation import check_positive_int


def read_repository(repo: str | Path, features_file: str = "features.json") -> pd.DataFrame:
    """One row per finished model of a repository: its name, settings, accuracies, curves and features.

    Parameters
    ----------
    repo : str or Path
        A folder written by ``repscope invariance repo build``.
    features_file : str, default "features.json"
        Each model's features: ``features.json`` (the paper's), or ``features_reference.json`` (the
        released code's, of a repository built with ``compat: reference``).

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, the settings, ``accuracy``, ``robust_accuracy``, ``val_loss`` (list) and one
        column per feature (``modality:feature``), sorted by name.

    Raises
    ------
    InvalidArgumentError
        When the folder holds no finished model.
    DataFormatError
        Naming a model's unreadable metadata or features.
    """
    repo = Path(repo)
    rows = []
    for folder in sorted(p for p in repo.glob("*/metadata.json")):
        try:
            metadata = json.loads(folder.read_text())
            features = json.loads((folder.parent / features_file).read_text())
        except (OSError, ValueError) as exc:
            raise DataFormatError(f"{folder.parent}: unreadable metadata or features ({exc})") from None
        row = {"name": folder.parent.name, **metadata["settings"]}
        row.update(accuracy=metadata["accuracy"], robust_accuracy=metadata["robust_accuracy"])
        row["val_loss"] = metadata.get("curves", {}).get("val_loss", [])
        row.update({f"{m}:{k}": v for m, values in features.items() for k, v in values.items()})
        rows.append(row)
    if not rows:
        raise InvalidArgumentError(f"repository {repo}: no finished model (metadata.json); build it first")
    return pd.DataFrame(rows)


def feature_matrix(table: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The ``modality:feature`` columns as a float matrix (NaN and infinities set to 0)."""
    columns = [c for c in table.columns if ":" in c]
    values = np.nan_to_num(table[columns].to_numpy(dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    return values, columns


def evaluate_assessors(
    features: np.ndarray, labels: Any, robust: Any, folds: int = 3, repeats: int = 10, seed: int = 0
) -> pd.DataFrame:
    """Table IV: each assessor's and the robust-accuracy baseline's accuracy, mean and std over
    ``repeats`` x ``folds`` test folds of balanced draws.

    Parameters
    ----------
    features : numpy.ndarray
        ``(M, F)`` features of the models.
    labels : array-like
        ``(M,)`` 0 (variant) / 1 (invariant).
    robust : array-like
        ``(M,)`` robust accuracies (the baseline's score).
    folds, repeats, seed
        The protocol.

    Returns
    -------
    pandas.DataFrame
        ``assessor``, ``mean``, ``std``, ``folds`` (count) and ``balanced_models``.

    Raises
    ------
    InvalidArgumentError
        When either class has fewer models than ``folds``.
    """
    from sklearn.base import clone  # noqa: PLC0415
    from sklearn.model_selection import StratifiedKFold  # noqa: PLC0415

    labels, robust = np.asarray(labels, int), np.asarray(robust, float)
    per_class = min(int((labels == 0).sum()), int((labels == 1).sum()))
    if per_class < folds:
        raise InvalidArgumentError(
            f"labels: {int((labels == 1).sum())} invariant and {int((labels == 0).sum())} variant models; "
            f"{folds}-fold assessment needs {folds} of each (build a larger repository, or relabel it: "
            "repscope invariance repo label --min-accuracy for a harder dataset, then --labels)"
        )
    from repscope.progress import progress_bar  # noqa: PLC0415

    scores: dict[str, list[float]] = {name: [] for name in [*assessors(), "robust accuracy (baseline)"]}
    description = f"cross-validating {len(scores) - 1} assessors on {2 * per_class} models ({repeats} x {folds} folds)"
    with progress_bar(description, total=repeats * folds) as update:
        for repeat in range(repeats):
            rng = np.random.default_rng([seed, repeat])
            rows = np.concatenate([rng.choice(np.flatnonzero(labels == c), per_class, replace=False) for c in (0, 1)])
            splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed * 1000 + repeat)
            for train, test in splitter.split(rows, labels[rows]):
                train, test = rows[train], rows[test]
                for name, model in assessors(seed + repeat).items():
                    fitted = clone(model).fit(features[train], labels[train])
                    scores[name].append(float(np.mean(predict_labels(fitted, features[test]) == labels[test])))
                threshold = greedy_threshold(robust[train], labels[train])
                baseline = (robust[test] >= threshold).astype(int)
                scores["robust accuracy (baseline)"].append(float(np.mean(baseline == labels[test])))
                update(len(scores["robust accuracy (baseline)"]))
    return pd.DataFrame(
        [
            {"assessor": name, "mean": np.mean(v), "std": np.std(v), "folds": len(v), "balanced_models": 2 * per_class}
            for name, v in scores.items()
        ]
    )


@dataclass(frozen=True)
class AssessorsResult:
    """Table IV of a repository and the four assessors fitted on every labelled model.

    Attributes
    ----------
    table : pandas.DataFrame
        The Table IV rows (:func:`evaluate_assessors` or
        :func:`~repscope.studies.invariance.assess_reference.evaluate_assessors_reference`), with a
        ``compat`` column.
    labels : pandas.DataFrame
        The labels trained with, in our coding: ``name``, ``label`` (1 invariant), ``label_coding``; the rule
        labels also ``reasons``.
    assessors : dict of str to estimator
        Each assessor fitted on every labelled model.
    columns : tuple of str
        The features (``modality:feature``) the assessors read, in order.
    transform : str
        The family the repository was tested with.
    compat : {"paper", "reference"}
        The protocol of ``table`` and of the fitted linear regression.
    models : int
        Labelled models.
    invariant : int
        Of them, labelled invariant.
    repeats : int
        Repeats of the 3-fold protocol.
    holdout_models : tuple of str, optional
        ``compat="reference"``: the fixed hold-out fold, sorted by name.
    feature_source : str
        The file each model's features came from (``features.json`` or ``features_reference.json``).
    repository_compat : str
        The compat mode the repository was built with.
    """

    table: pd.DataFrame
    labels: pd.DataFrame
    assessors: dict[str, Any]
    columns: tuple[str, ...]
    transform: str
    compat: str
    models: int
    invariant: int
    repeats: int
    holdout_models: tuple[str, ...] | None = None
    feature_source: str = "features.json"
    repository_compat: str = "paper"


def read_repository_config(repo: Path) -> dict[str, Any]:
    """The settings a repository was built with (``repository.json``), or an empty mapping without one."""
    path = repo / "repository.json"
    return json.loads(path.read_text()).get("config", {}) if path.exists() else {}


def check_assessment(repo: Path, stored: dict[str, Any], transform: str, compat: str, repeats: Any) -> None:
    """Refuse a family the repository was not tested with, an unknown protocol, or a count of repeats that
    is no positive integer."""
    if stored.get("transform", transform) != transform:
        raise InvalidArgumentError(f"--transform {transform}: repository {repo} was tested with {stored['transform']}")
    if compat not in ("paper", "reference"):
        raise InvalidArgumentError(f"--compat {compat}: expected paper or reference")
    check_positive_int(repeats, "--repeats")


def read_labelled_repository(
    repo: Path, labels_file: Path | None, label_coding: str | None, compat: str
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The models' table, their labels and the file their features come from.

    The labels come from ``labels_file`` or the rules, which read the paper's features; with
    ``compat="reference"`` on a repository built with ``compat: reference`` (every model has
    ``features_reference.json``) the table then holds the released code's features.

    Returns
    -------
    tuple
        ``(table, labels, feature source)``: :func:`read_repository`,
        :func:`~repscope.studies.invariance.labels.repository_labels` and ``features.json`` or
        ``features_reference.json``.
    """
    table = read_repository(repo)
    labels = repository_labels(repo, table, labels_file, label_coding)
    feature_source = "features.json"
    if compat == "reference" and all(
        (p.parent / "features_reference.json").exists() for p in repo.glob("*/metadata.json")
    ):
        feature_source = "features_reference.json"
        table = read_repository(repo, feature_source)
    return table, labels, feature_source


def check_holdout(holdout: Any, names: Any, repo: Path) -> None:
    """Refuse a hold-out model the repository does not hold, naming it."""
    unknown = sorted(set(holdout) - set(names))
    if unknown:
        raise InvalidArgumentError(f"holdout: no model {unknown[0]} in repository {repo}")


def compute_assessors(
    table: pd.DataFrame,
    labels: pd.DataFrame,
    transform: str,
    compat: str = "paper",
    holdout: Any = None,
    repeats: int = 10,
    seed: int = 0,
    feature_source: str = "features.json",
    repository_compat: str = "paper",
) -> AssessorsResult:
    """Table IV on labelled models, then each assessor fitted on all of them; reads and writes nothing.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model (:func:`read_repository`): ``name``, ``robust_accuracy`` and the
        ``modality:feature`` columns.
    labels : pandas.DataFrame
        ``name`` and ``label`` (1 invariant, our coding), e.g.
        :func:`~repscope.studies.invariance.labels.repository_labels`.
    transform : str
        The family the models were tested with (recorded).
    compat : {"paper", "reference"}
        ``paper``: :func:`evaluate_assessors`; ``reference``: the released code's protocol
        (:func:`~repscope.studies.invariance.assess_reference.evaluate_assessors_reference`) and its linear
        regression on L2-normalised rows for the fitted assessors too.
    holdout : array-like of str, optional
        ``compat="reference"``: the hold-out models' names (default
        :func:`~repscope.studies.invariance.assess_reference.reference_holdout`).
    repeats, seed
        The protocol's repeats and seed.
    feature_source, repository_compat : str
        Where the features came from (recorded).

    Returns
    -------
    AssessorsResult
    """
    merged = table.merge(labels[["name", "label"]], on="name")
    features, columns = feature_matrix(merged)
    holdout_models = None
    if compat == "reference":
        if holdout is None:
            mask = reference_holdout(merged["name"])
        else:
            mask = merged["name"].isin(set(holdout)).to_numpy()
        result = evaluate_assessors_reference(
            features, merged["label"], merged["robust_accuracy"], mask, repeats=repeats, seed=seed
        )
        models = reference_assessors(seed)
        holdout_models = tuple(sorted(merged["name"][mask].tolist()))
    else:
        result = evaluate_assessors(features, merged["label"], merged["robust_accuracy"], repeats=repeats, seed=seed)
        result["compat"] = "paper"
        models = assessors(seed)
    fitted = {name: model.fit(features, merged["label"]) for name, model in models.items()}
    return AssessorsResult(
        table=result,
        labels=labels,
        assessors=fitted,
        columns=tuple(columns),
        transform=transform,
        compat=compat,
        models=len(merged),
        invariant=int(merged["label"].sum()),
        repeats=repeats,
        holdout_models=holdout_models,
        feature_source=feature_source,
        repository_compat=repository_compat,
    )


def assessors_summary(result: AssessorsResult) -> dict[str, Any]:
    """What ``assessors.json`` holds: the family, the features read, the label counts and the provenance."""
    summary = {"transform": result.transform, "columns": list(result.columns), "models": result.models}
    summary.update(invariant=result.invariant, compat=result.compat, repository_compat=result.repository_compat)
    summary["features"] = result.feature_source
    summary["label_coding"] = "ours"
    if result.holdout_models is not None:
        summary["holdout_models"] = list(result.holdout_models)
    return summary


def write_assessors(result: AssessorsResult, out: Path) -> None:
    """Write ``table4.csv``, ``labels.csv``, ``assessors.skops`` and ``assessors.json`` to ``out``.

    Parameters
    ----------
    result : AssessorsResult
        :func:`compute_assessors`.
    out : Path
        The folder (created when missing).
    """
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "table4.csv", result.table.to_csv(index=False))
    write_text_atomic(out / "labels.csv", result.labels.to_csv(index=False))
    payload = {
        "assessors": result.assessors,
        "columns": list(result.columns),
        "transform": result.transform,
        "compat": result.compat,
    }
    save_assessors(out / ASSESSOR_FILE, payload)
    write_json_atomic(out / "assessors.json", assessors_summary(result))


def assessors_report(result: AssessorsResult, repo: Path, labels_file: Path | None = None) -> Any:
    """The HTML report of :func:`train_assessors`: the labels, the protocol, Table IV and the rules failed.

    Parameters
    ----------
    result : AssessorsResult
        :func:`compute_assessors`.
    repo : Path
        The repository (named in the subtitle).
    labels_file : Path, optional
        Where the labels came from (default: the rules).

    Returns
    -------
    repscope.report.Report
    """
    from repscope.report import Report  # noqa: PLC0415

    report = Report(f"ML4ML assessors: {result.transform}", subtitle=f"repository {repo}, {result.models} models")
    repeats = result.repeats
    protocol = (
        f"Accuracy over {repeats} repeats of 3-fold cross-validation on balanced draws (mean and std of the "
        f"{3 * repeats} fold accuracies)"
        if result.compat == "paper"
        else f"The released code's protocol (compat reference): {len(result.holdout_models or ())} fixed hold-out "
        f"models as one fold, the others cut into two random halves, {repeats} repeats; mean of the per-repeat "
        "3-fold means and their largest deviation from it"
    )
    report.add_paragraph(
        f"{result.invariant} of {result.models} models labelled invariant "
        f"({'from ' + str(labels_file) if labels_file else 'by the rules'}; 1 = invariant). {protocol}; the "
        "baseline thresholds the robust accuracy (Eq. 1) by a greedy search on the training folds. Features: "
        f"{result.feature_source} of a repository built with compat {result.repository_compat}."
    )
    report.add_table(result.table, title="Table IV layout")
    if "reasons" in result.labels.columns:
        reasons = result.labels["reasons"].fillna("").str.split("; ").explode()
        counts = reasons[reasons != ""].value_counts().rename_axis("rule failed").reset_index(name="models")
        report.add_table(counts, title="Why models were labelled variant")
    return report


def train_assessors(
    repo: str | Path,
    out: Path,
    transform: str,
    labels_file: Path | None = None,
    seed: int = 0,
    compat: str = "paper",
    label_coding: str | None = None,
    holdout: Any = None,
    repeats: int = 10,
) -> pd.DataFrame:
    """Evaluate the assessors on a repository (Table IV), then fit each on every labelled model and save it.

    Reads the repository (:func:`read_labelled_repository`), computes (:func:`compute_assessors`), writes
    (:func:`write_assessors`) and writes the report (:func:`assessors_report`).

    Parameters
    ----------
    repo : str or Path
        The repository.
    out : Path
        Folder for ``table4.csv``, ``labels.csv``, ``assessors.skops``, ``assessors.json`` and ``report.html``.
    transform : str
        The family the repository was tested with (checked against it).
    labels_file : Path, optional
        Human labels (``name``, ``label``, and ``label_coding`` unless ``label_coding`` says it); default
        the rule labels.
    seed : int
        Seed of the protocol.
    compat : {"paper", "reference"}
        ``paper``: 10 x 3-fold cross-validation on balanced draws, mean and std
        (:func:`evaluate_assessors`); ``reference``: the released code's protocol, mean and max deviation
        (:func:`evaluate_assessors_reference`), and its linear regression on L2-normalised rows for the
        saved assessors too.
    label_coding : {"ours", "paper"}, optional
        The coding of ``labels_file`` when it has no ``label_coding`` column.
    holdout : array-like of str, optional
        ``compat="reference"``: the names of the hold-out models (default :func:`reference_holdout`).
    repeats : int, default 10
        Repeats of the 3-fold protocol (the paper's 10).

    Returns
    -------
    pandas.DataFrame
        The Table IV rows (with a ``compat`` column).
    """
    repo = Path(repo)
    stored = read_repository_config(repo)
    check_assessment(repo, stored, transform, compat, repeats)
    table, labels, feature_source = read_labelled_repository(repo, labels_file, label_coding, compat)
    if compat == "reference" and holdout is not None:
        check_holdout(holdout, table["name"], repo)
    result = compute_assessors(
        table,
        labels,
        transform,
        compat=compat,
        holdout=holdout,
        repeats=repeats,
        seed=seed,
        feature_source=feature_source,
        repository_compat=stored.get("compat", "paper"),
    )
    write_assessors(result, out)
    assessors_report(result, repo, labels_file).write(out / "report.html")
    return result.table


__all__ = [
    "AssessorsResult",
    "assessors_report",
    "assessors_summary",
    "check_assessment",
    "check_holdout",
    "compute_assessors",
    "evaluate_assessors",
    "feature_matrix",
    "read_labelled_repository",
    "read_repository",
    "read_repository_config",
    "train_assessors",
    "write_assessors",
]
