"""Labels and ML4ML assessors for a model repository (Secs. V-C, VI, Table IV).

**Rule labels.** The paper's guideline, as rules on each model's metadata: a model is labelled
*invariant* (1) when its augmentation covers the tested interval, no anomaly was injected, it neither
under-fits (accuracy at the identity at least ``min_accuracy``) nor over-fits (its last validation loss
at most ``overfit_ratio`` times its lowest), and its max@CONF matrix is normal (mean of the meaningful
elements at most ``max_conf_mean``); otherwise *variant* (0), with the failed rules as reasons. The
thresholds are ours: the paper's annotators judged the curves and matrices by eye. Human labels can be
imported from a CSV (``name`` plus one column per annotator); Cohen's kappa per pair of columns and
Fleiss' kappa over all say how far they agree.

**Assessors.** Decision tree, random forest, AdaBoost and linear regression (thresholded at 0.5)
on the 5 x 16 features, by the paper's protocol: 3-fold cross-validation repeated 10 times on a
balanced draw (as many variant as invariant models), mean and std of the test-fold accuracy. The
baseline is the robust accuracy (Eq. 1) with a threshold chosen by a greedy search on the training folds.

**Label coding.** Ours codes 1 = invariant, as Eq. 1 scores robustness (1 fully invariant); the paper
(Sec. VI-A) codes 0 = invariant, 1 = variant. The assessors' accuracy does not care, but the
robust-accuracy baseline predicts 1 for a high robust accuracy, so labels in the paper's coding read as
ours would invert it. Every label file written here carries a ``label_coding`` column (``ours``); a file
read with ``--labels`` must say its coding, by that column or by ``label_coding``, and is converted to ours.

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
from repscope.fileio import atomic_path, write_json_atomic, write_text_atomic
from repscope.studies.invariance.assess_reference import (
    evaluate_assessors_reference,
    reference_assessors,
    reference_holdout,
)
from repscope.studies.invariance.assessor_models import assessors, greedy_threshold, predict_labels
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


def rule_labels(
    table: pd.DataFrame, min_accuracy: float = 0.8, overfit_ratio: float = 1.2, max_conf_mean: float = 0.15
) -> pd.DataFrame:
    """The guideline as rules: 1 (invariant) when every rule holds, else 0, with the reasons.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`read_repository`.
    min_accuracy : float
        Below this accuracy at the identity a model under-fits.
    overfit_ratio : float
        A last validation loss above this multiple of the lowest one over-fits.
    max_conf_mean : float
        Above this mean of the max@CONF matrix the matrix is not normal.

    Returns
    -------
    pandas.DataFrame
        ``name``, ``label`` (1 invariant, 0 variant), ``reasons`` (``;``-separated failed rules) and
        ``label_coding`` (``ours``).
    """
    labels = []
    for _, row in table.iterrows():
        reasons = []
        if row["augment"] != "covering":
            reasons.append(f"augmentation {row['augment']}")
        if row["anomaly"] != "none":
            reasons.append(f"anomaly {row['anomaly']}")
        if row["accuracy"] < min_accuracy:
            reasons.append("under-fits")
        losses = list(row["val_loss"]) if isinstance(row["val_loss"], list | tuple) else []
        if len(losses) >= 2 and losses[-1] > overfit_ratio * min(losses):
            reasons.append("over-fits")
        if row.get("max@CONF:mean", 0.0) > max_conf_mean:
            reasons.append("max@CONF matrix not normal")
        labels.append(
            {"name": row["name"], "label": int(not reasons), "reasons": "; ".join(reasons), "label_coding": "ours"}
        )
    return pd.DataFrame(labels, columns=["name", "label", "reasons", "label_coding"])


def fleiss_kappa(ratings: Any) -> float:
    """Fleiss' kappa of ``(subjects, raters)`` category labels.

    kappa = (P_bar - P_e) / (1 - P_e), with P_i = (sum_c n_ic^2 - r) / (r (r - 1)) per subject,
    P_bar their mean and P_e = sum_c p_c^2 over the categories' shares p_c of all ratings.

    Parameters
    ----------
    ratings : array-like of shape (N, R)
        Each subject's category from each of R >= 2 raters.

    Returns
    -------
    float
        1 for full agreement; NaN when every rating is the same category (P_e = 1).
    """
    ratings = np.asarray(ratings)
    if ratings.ndim != 2 or ratings.shape[1] < 2:
        raise InvalidArgumentError(f"ratings: expected (subjects, raters >= 2), got {ratings.shape}")
    categories = np.unique(ratings)
    counts = np.stack([(ratings == c).sum(axis=1) for c in categories], axis=1)
    raters = ratings.shape[1]
    agreement = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    shares = counts.sum(axis=0) / counts.sum()
    expected = float((shares**2).sum())
    return float("nan") if expected == 1 else float((agreement.mean() - expected) / (1 - expected))


def agreement(labels: pd.DataFrame) -> dict[str, Any]:
    """Cohen's kappa per pair of label columns and Fleiss' kappa over all of them.

    Parameters
    ----------
    labels : pandas.DataFrame
        ``name`` and two or more label columns.

    Returns
    -------
    dict
        ``cohen`` (``"a vs b" -> kappa``) and ``fleiss``.
    """
    from sklearn.metrics import cohen_kappa_score  # noqa: PLC0415

    columns = [c for c in labels.columns if c != "name"]
    if len(columns) < 2:
        raise InvalidArgumentError("labels: Cohen's and Fleiss' kappa need two or more label columns")
    cohen = {
        f"{a} vs {b}": float(cohen_kappa_score(labels[a], labels[b]))
        for k, a in enumerate(columns)
        for b in columns[k + 1 :]
    }
    return {"cohen": cohen, "fleiss": fleiss_kappa(labels[columns].to_numpy())}


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


LABEL_CODINGS: dict[str, int] = {"ours": 1, "paper": 0}  # coding -> the value that means invariant


def to_our_coding(labels: Any, label_coding: str) -> np.ndarray:
    """Labels in ``label_coding`` as ours (1 invariant, 0 variant).

    Parameters
    ----------
    labels : array-like
        0 / 1 labels.
    label_coding : {"ours", "paper"}
        ``ours``: 1 = invariant (kept); ``paper``: 0 = invariant (flipped).

    Returns
    -------
    numpy.ndarray
        int labels, 1 = invariant.

    Raises
    ------
    InvalidArgumentError
        An unknown coding, or a label that is not 0 or 1.
    """
    if label_coding not in LABEL_CODINGS:
        raise InvalidArgumentError(f"label_coding: expected one of {', '.join(LABEL_CODINGS)}, got {label_coding!r}")
    values = np.asarray(labels)
    numeric = pd.to_numeric(pd.Series(values.ravel()), errors="coerce").to_numpy()
    bad = ~np.isin(numeric, [0, 1])
    if bad.any():
        raise InvalidArgumentError(f"label: expected 0 or 1, got {values.ravel()[np.flatnonzero(bad)[0]]!r}")
    labels01 = numeric.astype(int).reshape(values.shape)
    return labels01 if LABEL_CODINGS[label_coding] == 1 else 1 - labels01


def file_label_coding(given: pd.DataFrame, label_coding: str | None, source: str) -> str:
    """The coding of a label table: its ``label_coding`` column, or ``label_coding``; they must agree.

    Parameters
    ----------
    given : pandas.DataFrame
        The labels as read.
    label_coding : {"ours", "paper"}, optional
        The coding the caller states.
    source : str
        How messages name the file (e.g. ``--labels FILE``).

    Returns
    -------
    str
        ``ours`` or ``paper``.

    Raises
    ------
    DataFormatError
        Neither says a coding, the column holds mixed or unknown codings, or it contradicts
        ``label_coding``.
    """
    if label_coding is not None and label_coding not in LABEL_CODINGS:
        raise InvalidArgumentError(f"label_coding: expected one of {', '.join(LABEL_CODINGS)}, got {label_coding!r}")
    stated = None
    if "label_coding" in given.columns:
        codings = sorted({str(c).strip() for c in given["label_coding"]})
        if len(codings) != 1 or codings[0] not in LABEL_CODINGS:
            raise DataFormatError(
                f"{source}: column label_coding must hold one of {', '.join(LABEL_CODINGS)} on every row, "
                f"got {', '.join(codings)}"
            )
        stated = codings[0]
    if stated is not None and label_coding is not None and stated != label_coding:
        raise DataFormatError(
            f"{source}: its label_coding column says {stated}, but the label coding given is {label_coding}"
        )
    coding = stated or label_coding
    if coding is None:
        raise DataFormatError(
            f"{source}: say how its labels are coded (a label_coding column, or --label-coding): ours "
            "(1 = invariant) or paper (0 = invariant, as the ML4ML paper codes them)"
        )
    return coding


def repository_labels(
    repo: Path, table: pd.DataFrame, labels_file: Path | None = None, label_coding: str | None = None
) -> pd.DataFrame:
    """The labels to train with, in our coding: ``labels_file`` (``name``, ``label``), else the rules.

    Parameters
    ----------
    repo : Path
        The repository (named in messages).
    table : pandas.DataFrame
        :func:`read_repository`.
    labels_file : Path, optional
        CSV with ``name`` and ``label``, and a ``label_coding`` column unless ``label_coding`` is given.
    label_coding : {"ours", "paper"}, optional
        The file's coding (:func:`file_label_coding`).

    Returns
    -------
    pandas.DataFrame
        ``name``, ``label`` (1 invariant) and ``label_coding`` (``ours``); the rule labels also keep
        ``reasons``.

    Raises
    ------
    DataFormatError
        An unreadable file, missing columns, a model without a label, or no coding said.
    """
    if labels_file is None:
        return rule_labels(table)
    source = f"--labels {labels_file}"
    try:
        given = pd.read_csv(labels_file)
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{source}: not a readable CSV ({exc})") from None
    if not {"name", "label"} <= set(given.columns):
        raise DataFormatError(f"{source}: needs the columns name and label")
    coding = file_label_coding(given, label_coding, source)
    missing = sorted(set(table["name"]) - set(given["name"]))
    if missing:
        raise DataFormatError(f"{source}: no label for model {missing[0]} (and {len(missing) - 1} more)")
    try:
        ours = to_our_coding(given["label"].to_numpy(), coding)
    except InvalidArgumentError as exc:
        raise DataFormatError(f"{source}: {exc}") from None
    return pd.DataFrame({"name": given["name"], "label": ours, "label_coding": "ours"})


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
        ``(table, labels, feature source)``: :func:`read_repository`, :func:`repository_labels` and
        ``features.json`` or ``features_reference.json``.
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
        ``name`` and ``label`` (1 invariant, our coding), e.g. :func:`repository_labels`.
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


ASSESSOR_FILE = "assessors.skops"
"""File name of the saved assessors (skops format: loads only allow-listed types, runs no code)."""

# Types outside skops' default allow-list that the four assessors hold (the fitted trees of the decision
# tree, the random forest and AdaBoost); everything else in a saved file must be on skops' default list.
TRUSTED_TYPES = ("sklearn.tree._tree.Tree",)


def save_assessors(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write fitted assessors in the skops format, atomically (:func:`repscope.fileio.atomic_path`).

    Parameters
    ----------
    path : str or Path
        The file to write (``assessors.skops``).
    payload : dict
        ``assessors`` (name to fitted estimator), ``columns``, ``transform`` and ``compat``.

    Returns
    -------
    Path
        The file written.
    """
    import zipfile  # noqa: PLC0415

    import skops.io as sio  # noqa: PLC0415

    path = Path(path)
    with atomic_path(path) as temporary:
        sio.dump(payload, temporary, compression=zipfile.ZIP_DEFLATED)
    return path


def load_assessors(assessor_file: str | Path) -> dict[str, Any]:
    """Read assessors written by :func:`save_assessors`, refusing any file that is not one.

    Only the types of :data:`TRUSTED_TYPES` and skops' default allow-list are loaded, so a crafted file
    cannot run code; pickles (the former ``assessors.joblib``) are refused.

    Parameters
    ----------
    assessor_file : str or Path
        The ``assessors.skops`` of ``repscope invariance assess train``.

    Returns
    -------
    dict
        ``assessors`` (name to fitted estimator), ``columns`` (list of str), ``transform`` and ``compat``.

    Raises
    ------
    InvalidArgumentError
        A missing file.
    DataFormatError
        An empty file, a pickle, a file of another format, types outside the allow-list, or a payload
        without the expected keys.
    """
    import zipfile  # noqa: PLC0415

    import skops.io as sio  # noqa: PLC0415

    path = Path(assessor_file)
    rerun = "re-run `repscope invariance assess train` to write assessors.skops"
    if not path.is_file():
        raise InvalidArgumentError(f"--assessor {path}: no such file")
    if path.stat().st_size == 0:
        raise DataFormatError(f"--assessor {path}: the file is empty; {rerun}")
    if not zipfile.is_zipfile(path):
        with path.open("rb") as handle:
            head = handle.read(2)
        kind = "a pickle (joblib), which can run code" if head[:1] == b"\x80" else "not a skops file"
        raise DataFormatError(f"--assessor {path}: {kind}; {rerun}")
    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as exc:  # noqa: BLE001 -- any unreadable archive is one message
        raise DataFormatError(f"--assessor {path}: not a skops file ({' '.join(str(exc).split())[:200]})") from None
    extra = sorted(set(untrusted) - set(TRUSTED_TYPES))
    if extra:
        raise DataFormatError(f"--assessor {path}: holds type {extra[0]}, which assessors never hold; {rerun}")
    try:
        saved = sio.load(path, trusted=list(TRUSTED_TYPES))
    except Exception as exc:  # noqa: BLE001 -- a damaged archive is one message
        raise DataFormatError(f"--assessor {path}: unreadable ({' '.join(str(exc).split())[:200]})") from None
    if (
        not isinstance(saved, dict)
        or not isinstance(saved.get("assessors"), dict)
        or not saved["assessors"]
        or not all(hasattr(model, "predict") for model in saved["assessors"].values())
        or not isinstance(saved.get("columns"), list)
        or not all(isinstance(c, str) for c in saved["columns"])
        or not isinstance(saved.get("transform"), str)
    ):
        raise DataFormatError(f"--assessor {path}: not assessors of `repscope invariance assess train`; {rerun}")
    return saved


def verdict(assessor_file: str | Path, features: dict[str, dict[str, float]], transform: str) -> dict[str, int]:
    """Each saved assessor's verdict (1 invariant, 0 variant) on one model's features.

    Parameters
    ----------
    assessor_file : str or Path
        ``assessors.skops`` (read by :func:`load_assessors`: no code runs).
    features : dict
        Modality to feature name to value.
    transform : str
        The family the model was tested with (checked against the assessors').

    Returns
    -------
    dict of str to int
        Assessor name to verdict.
    """
    return assessor_verdict(load_assessors(assessor_file), features, transform, assessor_file)


def assessor_verdict(
    saved: dict[str, Any], features: dict[str, dict[str, float]], transform: str, source: str | Path = "assessors"
) -> dict[str, int]:
    """Each assessor's verdict (1 invariant, 0 variant) on one model's features, from assessors in memory.

    Parameters
    ----------
    saved : dict
        As :func:`load_assessors` returns: ``assessors``, ``columns`` and ``transform``.
    features : dict
        Modality to feature name to value.
    transform : str
        The family the model was tested with (checked against the assessors').
    source : str or Path, default "assessors"
        How messages name the assessors (their file).

    Returns
    -------
    dict of str to int
        Assessor name to verdict.

    Raises
    ------
    InvalidArgumentError
        Assessors of another family, or a feature they read that ``features`` lacks.
    """
    check_assessors(source, saved, transform)
    flat = {f"{m}:{k}": v for m, values in features.items() for k, v in values.items()}
    missing = [c for c in saved["columns"] if c not in flat]
    if missing:
        hint = (
            " (assessors of compat reference need a test with compat reference)"
            if "max_mean@" in missing[0] or missing[0].endswith("_reference")
            else ""
        )
        raise InvalidArgumentError(f"--assessor {source}: needs feature {missing[0]}, which this test lacks{hint}")
    row = np.nan_to_num(np.array([[flat[c] for c in saved["columns"]]], dtype=np.float64), posinf=0.0, neginf=0.0)
    return {name: int(predict_labels(model, row)[0]) for name, model in saved["assessors"].items()}


def check_assessors(assessor_file: str | Path, saved: dict[str, Any], transform: str, modalities: Any = None) -> None:
    """Refuse assessors trained for another family, or on modalities the test does not measure.

    Parameters
    ----------
    assessor_file : str or Path
        The file (for the message).
    saved : dict
        As :func:`load_assessors` returns.
    transform : str
        The family of the test.
    modalities : iterable of str, optional
        The modalities the test measures (e.g. ``max@CONF``); each column ``modality:feature`` of the
        assessors must name one of them.

    Returns
    -------
    None
    """
    if saved.get("transform") != transform:
        raise InvalidArgumentError(f"--assessor {assessor_file}: trained for {saved.get('transform')}, not {transform}")
    if modalities is not None:
        measured = set(modalities)
        missing = [c for c in saved["columns"] if c.split(":", 1)[0] not in measured]
        if missing:
            hint = (
                " (assessors of compat reference need a test with compat reference)"
                if "max_mean@" in missing[0]
                else " (assessors of compat paper need a test with compat paper)"
            )
            raise InvalidArgumentError(
                f"--assessor {assessor_file}: needs feature {missing[0]}, which this test lacks{hint}"
            )


__all__ = [
    "ASSESSOR_FILE",
    "AssessorsResult",
    "assessor_verdict",
    "assessors_report",
    "assessors_summary",
    "check_assessment",
    "check_holdout",
    "compute_assessors",
    "predict_labels",
    "read_labelled_repository",
    "read_repository_config",
    "write_assessors",
    "TRUSTED_TYPES",
    "check_assessors",
    "load_assessors",
    "save_assessors",
    "LABEL_CODINGS",
    "file_label_coding",
    "to_our_coding",
    "agreement",
    "repository_labels",
    "train_assessors",
    "verdict",
    "assessors",
    "evaluate_assessors",
    "feature_matrix",
    "fleiss_kappa",
    "greedy_threshold",
    "read_repository",
    "rule_labels",
]
