"""Table V of the ML4ML invariance testing paper: how each variance-matrix feature correlates with the
robust accuracy (Eq. 1) and the accuracy over the models of a repository.

The paper's Table V reports, over its model repository, the correlation of three features (square mean,
discontinuity, overall gradient) at CONF and CONV-1 with the robust accuracy and with the accuracy. It
does not name the statistic; its introduction speaks of the "correlation index" and its bivariate-normal
condition, which is Pearson's, so Pearson's r is the headline here and Spearman's rho (Pearson's r of the
average ranks) stands beside it. Nor does it say which CONV-1 matrix (max or mean): every one present is
given (``max``, ``mean``, and ``max_mean`` in a repository built with ``compat: reference``).
Every feature of every modality is correlated; the Table V cells are a selection of them.

A repository is a folder of ``repscope invariance repo build``: one folder per model holding
``metadata.json`` (``accuracy``, ``robust_accuracy``), ``features.json`` (modality -> feature -> value,
the paper's printed formulas) and ``matrix_<stat>_at_<position>.npy``. With ``compat="reference"`` the
features are recomputed from the matrix files as the authors' released code computes them
(:func:`repscope.metrics.invariance.features.reference_matrix_features`; names end in ``_reference``;
sensitivity is left out, since the subsample matrix is not stored).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from repscope.data.npzfile import check_array_file
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_json_atomic, write_text_atomic

TABLE5_FEATURES = ("squared_value_mean", "discontinuity", "overall_gradient")
# max_mean@CONV-1: the CONV-1 matrix of a repository built with ``compat: reference``
TABLE5_MODALITIES = ("max@CONF", "max@CONV-1", "mean@CONV-1", "max_mean@CONV-1")
TARGETS = ("robust_accuracy", "accuracy")
MIN_MODELS = 3
# The paper's Table V (VGG13bn repository): (feature, position) -> (robust accuracy, accuracy)
PAPER_TABLE5 = {
    "squared_value_mean": {"CONF": (-0.63, -0.12), "CONV-1": (-0.10, -0.03)},
    "discontinuity": {"CONF": (-0.53, -0.06), "CONV-1": (-0.34, -0.11)},
    "overall_gradient": {"CONF": (-0.47, -0.15), "CONV-1": (-0.11, -0.21)},
}


def pearson(x: Any, y: Any) -> float:
    """Pearson's correlation ``sum (x - mean x)(y - mean y) / sqrt(sum (x - mean x)^2 sum (y - mean y)^2)``.

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Finite values, paired.

    Returns
    -------
    float
        In ``[-1, 1]``; NaN when either is constant (the correlation is undefined).

    Raises
    ------
    InvalidArgumentError
        When the lengths differ or fewer than 2 pairs are given.
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise InvalidArgumentError(f"x, y: expected two 1-D arrays of one length >= 2, got {a.shape} and {b.shape}")
    a, b = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    return float("nan") if denominator == 0 else float(np.clip(float(a @ b) / denominator, -1.0, 1.0))


def spearman(x: Any, y: Any) -> float:
    """Spearman's rank correlation: :func:`pearson` of the average ranks (ties share their mean rank).

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Finite values, paired.

    Returns
    -------
    float
        In ``[-1, 1]``; NaN when either is constant.

    Raises
    ------
    InvalidArgumentError
        When the lengths differ or fewer than 2 pairs are given.
    """
    from scipy.stats import rankdata  # noqa: PLC0415

    return pearson(rankdata(np.asarray(x, dtype=np.float64)), rankdata(np.asarray(y, dtype=np.float64)))


def _read_json(path: Path, model: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"model {model}: unreadable {path.name} ({exc})") from None


def _reference_features(folder: Path) -> dict[str, dict[str, float]]:
    from repscope.metrics.invariance.features import reference_matrix_features  # noqa: PLC0415
    from repscope.studies.invariance.commands import check_variance_matrix  # noqa: PLC0415

    files = sorted(folder.glob("matrix_*.npy"))
    if not files:
        raise DataFormatError(f"model {folder.name}: no matrix_*.npy files, needed by --compat reference")
    features = {}
    for path in files:
        check_array_file(path)  # a header declaring more than the file or the memory holds: refused unread
        try:
            matrix = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise DataFormatError(f"model {folder.name}: unreadable {path.name} ({exc})") from None
        if not isinstance(matrix, np.ndarray):  # a zip archive loads as an archive
            matrix.close()
            raise DataFormatError(f"model {folder.name}: {path.name} is not a .npy array (a zip archive)")
        matrix = check_variance_matrix(matrix, f"model {folder.name}: {path}")
        modality = path.stem[len("matrix_") :].replace("_at_", "@")
        with np.errstate(divide="ignore", invalid="ignore"):
            features[modality] = reference_matrix_features(matrix)
    return features


def read_model_table(repo: str | Path, compat: Literal["paper", "reference"] = "paper") -> pd.DataFrame:
    """One row per finished model: ``name``, ``accuracy``, ``robust_accuracy`` and ``modality:feature``.

    Parameters
    ----------
    repo : str or pathlib.Path
        A repository folder (``repscope invariance repo build``).
    compat : {"paper", "reference"}, default="paper"
        ``"paper"``: the features of each model's ``features.json``; ``"reference"``: recomputed from
        its matrix files as the released code computes them (names ``<feature>_reference``).

    Returns
    -------
    pandas.DataFrame
        Sorted by name.

    Raises
    ------
    InvalidArgumentError
        When ``compat`` is not a choice, the folder does not exist or holds fewer than 3 finished models.
    DataFormatError
        Naming the model: unreadable files, or no ``robust_accuracy`` / ``accuracy`` in its metadata.
    """
    if compat not in ("paper", "reference"):
        raise InvalidArgumentError(f"compat: must be one of paper, reference, got {compat!r}")
    repo = Path(repo)
    if not repo.is_dir():
        raise InvalidArgumentError(f"repository {repo}: not a folder")
    rows = []
    for path in sorted(repo.glob("*/metadata.json")):
        model = path.parent.name
        metadata = _read_json(path, model)
        missing = [key for key in TARGETS if not isinstance(metadata.get(key), int | float)]
        if missing:
            raise DataFormatError(
                f"repository {repo}: model {model} has no {' / '.join(missing)} in metadata.json; "
                "correlations need the robust accuracy of every model"
            )
        if compat == "reference":
            features = _reference_features(path.parent)
        else:
            features = _read_json(path.parent / "features.json", model)
        row: dict[str, Any] = {"name": model, **{key: float(metadata[key]) for key in TARGETS}}
        for modality, values in features.items():
            row.update({f"{modality}:{name}": value for name, value in values.items()})
        rows.append(row)
    if len(rows) < MIN_MODELS:
        raise InvalidArgumentError(
            f"repository {repo}: {len(rows)} finished model(s) (metadata.json); correlations need at least {MIN_MODELS}"
        )
    return pd.DataFrame(rows)


def feature_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Pearson's r and Spearman's rho of every ``modality:feature`` column with each target.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`read_model_table`.

    Returns
    -------
    pandas.DataFrame
        ``modality``, ``feature``, ``target`` (``robust_accuracy`` or ``accuracy``), ``pearson``,
        ``spearman`` and ``n`` (models whose feature is finite), one row per feature and target.
    """
    rows = []
    for column in (c for c in table.columns if ":" in c):
        modality, feature = column.split(":", 1)
        values = table[column].to_numpy(dtype=np.float64)
        finite = np.isfinite(values)
        for target in TARGETS:
            x, y = values[finite], table[target].to_numpy(dtype=np.float64)[finite]
            enough = len(x) >= 2
            rows.append(
                {
                    "modality": modality,
                    "feature": feature,
                    "target": target,
                    "pearson": pearson(x, y) if enough else float("nan"),
                    "spearman": spearman(x, y) if enough else float("nan"),
                    "n": int(finite.sum()),
                }
            )
    return pd.DataFrame(rows, columns=["modality", "feature", "target", "pearson", "spearman", "n"])


def table5(correlations: pd.DataFrame, suffix: str = "") -> pd.DataFrame:
    """The Table V cells: rows ``(target, statistic)``, columns ``modality:feature`` of the three features at
    max@CONF and the CONV-1 matrices (max, mean, max_mean; those present).

    Parameters
    ----------
    correlations : pandas.DataFrame
        :func:`feature_correlations`.
    suffix : str, default=""
        Ending of the feature names (``"_reference"`` for the released code's features).

    Returns
    -------
    pandas.DataFrame
        Columns ``target``, ``statistic`` (``pearson``, ``spearman``) and one per cell.
    """
    indexed = correlations.set_index(["modality", "feature", "target"])
    cells = [
        (modality, feature + suffix)
        for feature in TABLE5_FEATURES
        for modality in TABLE5_MODALITIES
        if (modality, feature + suffix, TARGETS[0]) in indexed.index
    ]
    rows = []
    for target in TARGETS:
        for statistic in ("pearson", "spearman"):
            row: dict[str, Any] = {"target": target, "statistic": statistic}
            row.update({f"{m}:{f}": float(indexed.loc[(m, f, target), statistic]) for m, f in cells})
            rows.append(row)
    return pd.DataFrame(rows)


def _finite_or_none(value: Any) -> Any:
    """JSON has no NaN: an undefined correlation (a constant feature) is written as null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


@dataclass(frozen=True)
class CorrelationResult:
    """Table V of a repository: every feature's correlation with the robust accuracy and the accuracy.

    Attributes
    ----------
    compat : {"paper", "reference"}
        Which features: the printed formulas, or the released code's (names ending in ``_reference``).
    names : tuple of str
        The models, in the table's order.
    correlations : pandas.DataFrame
        :func:`feature_correlations`: every feature and target.
    table5 : pandas.DataFrame
        :func:`table5`: the paper's cells.
    """

    compat: str
    names: tuple[str, ...]
    correlations: pd.DataFrame
    table5: pd.DataFrame

    @property
    def models(self) -> int:
        """Models correlated over."""
        return len(self.names)


def compute_correlations(table: pd.DataFrame, compat: Literal["paper", "reference"] = "paper") -> CorrelationResult:
    """Table V from one row per model; reads and writes nothing.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`read_model_table`: ``name``, ``accuracy``, ``robust_accuracy`` and ``modality:feature``.
    compat : {"paper", "reference"}, default="paper"
        Which features the table holds (the Table V cells of the released code's end in ``_reference``).

    Returns
    -------
    CorrelationResult
    """
    correlations = feature_correlations(table)
    cells = table5(correlations, "_reference" if compat == "reference" else "")
    return CorrelationResult(compat, tuple(table["name"].tolist()), correlations, cells)


def correlations_summary(result: CorrelationResult, repo: str | Path) -> dict[str, Any]:
    """What ``correlations.json`` holds: the repository, the models, the statistics, our and the paper's Table V."""
    return {
        "repository": str(Path(repo).resolve()),
        "compat": result.compat,
        "models": result.models,
        "names": list(result.names),
        "statistics": {"pearson": "Pearson's r (headline)", "spearman": "Spearman's rho (average ranks)"},
        "table5": [
            {key: _finite_or_none(value) for key, value in row.items()} for row in result.table5.to_dict("records")
        ],
        "paper_table5": {
            feature: {position: {"robust_accuracy": pair[0], "accuracy": pair[1]} for position, pair in cells.items()}
            for feature, cells in PAPER_TABLE5.items()
        },
    }


def write_correlations(result: CorrelationResult, out: str | Path, repo: str | Path) -> None:
    """Write ``correlations.csv``, ``table5.csv`` and ``correlations.json`` to ``out`` (created if missing).

    Parameters
    ----------
    result : CorrelationResult
        :func:`compute_correlations`.
    out : str or pathlib.Path
        The folder.
    repo : str or pathlib.Path
        The repository (recorded in ``correlations.json``).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "correlations.csv", result.correlations.to_csv(index=False))
    write_text_atomic(out / "table5.csv", result.table5.to_csv(index=False))
    write_json_atomic(out / "correlations.json", correlations_summary(result, repo))


def correlate_repository(
    repo: str | Path, out: str | Path, compat: Literal["paper", "reference"] = "paper"
) -> dict[str, Any]:
    """Table V for a repository: write ``correlations.csv``, ``table5.csv`` and ``correlations.json`` to ``out``.

    Reads the repository (:func:`read_model_table`), computes (:func:`compute_correlations`) and writes
    (:func:`write_correlations`).

    Parameters
    ----------
    repo : str or pathlib.Path
        A repository folder (``repscope invariance repo build``) of at least 3 models.
    out : str or pathlib.Path
        The folder to write (created if missing).
    compat : {"paper", "reference"}, default="paper"
        Which features: the printed formulas (``features.json``) or the released code's, recomputed from
        the matrix files (names ending in ``_reference``).

    Returns
    -------
    dict
        ``models`` (count), ``compat``, ``correlations`` (:func:`feature_correlations`) and ``table5``
        (:func:`table5`).

    Raises
    ------
    InvalidArgumentError, DataFormatError
        As :func:`read_model_table`.
    """
    result = compute_correlations(read_model_table(repo, compat), compat)
    write_correlations(result, out, repo)
    return {
        "models": result.models,
        "compat": result.compat,
        "correlations": result.correlations,
        "table5": result.table5,
    }


__all__ = [
    "PAPER_TABLE5",
    "TABLE5_FEATURES",
    "TABLE5_MODALITIES",
    "CorrelationResult",
    "compute_correlations",
    "correlations_summary",
    "write_correlations",
    "correlate_repository",
    "feature_correlations",
    "pearson",
    "read_model_table",
    "spearman",
    "table5",
]
