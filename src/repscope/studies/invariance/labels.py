"""Labels of a model repository (Secs. V-C, VI): the guideline's rules, human labels, their agreement.

**Rule labels.** The paper's guideline, as rules on each model's metadata: a model is labelled
*invariant* (1) when its augmentation covers the tested interval, no anomaly was injected, it neither
under-fits (accuracy at the identity at least ``min_accuracy``) nor over-fits (its last validation loss
at most ``overfit_ratio`` times its lowest), and its max@CONF matrix is normal (mean of the meaningful
elements at most ``max_conf_mean``); otherwise *variant* (0), with the failed rules as reasons. The
thresholds are ours: the paper's annotators judged the curves and matrices by eye. Human labels can be
imported from a CSV (``name`` plus one column per annotator); Cohen's kappa per pair of columns and
Fleiss' kappa over all say how far they agree.

**Label coding.** Ours codes 1 = invariant, as Eq. 1 scores robustness (1 fully invariant); the paper
(Sec. VI-A) codes 0 = invariant, 1 = variant. The assessors' accuracy does not care, but the
robust-accuracy baseline predicts 1 for a high robust accuracy, so labels in the paper's coding read as
ours would invert it. Every label file written here carries a ``label_coding`` column (``ours``); a file
read with ``--labels`` must say its coding, by that column or by ``label_coding``, and is converted to ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import DataFormatError, InvalidArgumentError


def rule_labels(
    table: pd.DataFrame, min_accuracy: float = 0.8, overfit_ratio: float = 1.2, max_conf_mean: float = 0.15
) -> pd.DataFrame:
    """The guideline as rules: 1 (invariant) when every rule holds, else 0, with the reasons.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`repscope.studies.invariance.assess.read_repository`.
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
        :func:`repscope.studies.invariance.assess.read_repository`.
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


__all__ = [
    "LABEL_CODINGS",
    "agreement",
    "file_label_coding",
    "fleiss_kappa",
    "repository_labels",
    "rule_labels",
    "to_our_coding",
]
