"""What the ``repscope invariance`` verbs that read a file run: the features of a saved variance matrix,
the rule labels of a repository (with the annotators' agreement). Each loads its inputs, assembles the
result and writes it; the CLI prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.data.npzfile import check_array_file
from repscope.errors import DataFormatError
from repscope.fileio import write_json_atomic, write_text_atomic

# the largest entry a variance matrix file may hold: the features square and sum entries, and an entry near
# the float64 limit (1e308) would turn them into infinities (Infinity in the JSON)
MAX_VARIANCE_ENTRY = 1e100


def check_variance_matrix(array: np.ndarray, source: str) -> np.ndarray:
    """Refuse an array that cannot be a variance matrix, naming ``source`` and what is wrong.

    Parameters
    ----------
    array : numpy.ndarray
        The loaded matrix.
    source : str
        The file (or model and file) for the message.

    Returns
    -------
    numpy.ndarray
        The matrix as float64.

    Raises
    ------
    DataFormatError
        Not real numbers (booleans, complex, objects), not square of at least 3x3, NaN or infinite entries,
        negative entries (a variance is never negative), or entries above :data:`MAX_VARIANCE_ENTRY`.
    """
    if array.dtype.kind not in "iuf":
        raise DataFormatError(f"{source}: expected a matrix of real numbers, got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] < 3:
        raise DataFormatError(f"{source}: expected a square variance matrix of at least 3x3, got shape {array.shape}")
    values = array.astype(np.float64)
    if not np.isfinite(values).all():
        raise DataFormatError(f"{source}: holds {int((~np.isfinite(values)).sum())} NaN or infinite entries")
    if (values < 0).any():
        raise DataFormatError(
            f"{source}: holds {int((values < 0).sum())} negative entries (min {values.min():.3g}); "
            "variances are never negative"
        )
    if values.max() > MAX_VARIANCE_ENTRY:
        raise DataFormatError(
            f"{source}: entry {values.max():.3g} exceeds {MAX_VARIANCE_ENTRY:.0e} (the features would overflow)"
        )
    return values


def read_variance_matrix(path: str | Path) -> np.ndarray:
    """A variance matrix saved with ``numpy.save``, checked by :func:`check_variance_matrix`.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.npy`` file.

    Returns
    -------
    numpy.ndarray
        The matrix (float64).

    Raises
    ------
    DataFormatError
        Naming the file: missing or empty, not a ``.npy`` array (a zip archive such as ``.npz`` or a torch
        file included), or not a variance matrix.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise DataFormatError(f"{path}: the file is empty; expected a .npy variance matrix")
    check_array_file(path)  # a header declaring more than the file or the memory holds: refused unread
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DataFormatError(f"{path}: not a .npy array ({' '.join(str(exc).split())})") from None
    if not isinstance(array, np.ndarray):  # a zip archive (.npz, a torch file) loads as an archive
        array.close()
        raise DataFormatError(f"{path}: not a .npy array (a zip archive); save the matrix with numpy.save")
    return check_variance_matrix(array, str(path))


def matrix_file_features(
    matrix: str | Path, tau: float = 0.15, out: str | Path | None = None, compat: str = "paper"
) -> dict[str, Any]:
    """The features of a variance matrix file (:func:`repscope.metrics.invariance.features.matrix_features`;
    sensitivity needs the model, so 15 of the 16), written as JSON to ``out`` when given.

    Parameters
    ----------
    matrix : str or pathlib.Path
        A square variance matrix saved with ``numpy.save``.
    tau : float, default=0.15
        Threshold of the significant-variance feature.
    out : str or pathlib.Path, optional
        JSON file to write (atomically).
    compat : {"paper", "reference"}, default="paper"
        ``paper``: the printed formulas; ``reference``: the authors' released code (keys end in ``_reference``).

    Returns
    -------
    dict
        ``file``, ``tau``, ``compat`` (with ``compat="reference"`` only) and ``features`` (feature name -> value).
    """
    from repscope.metrics.invariance.features import matrix_features  # noqa: PLC0415

    if compat == "reference":
        values = matrix_features(read_variance_matrix(matrix), tau=tau, compat="reference")
        result = {"file": str(matrix), "tau": tau, "compat": compat, "features": values}
    else:
        result = {"file": str(matrix), "tau": tau, "features": matrix_features(read_variance_matrix(matrix), tau=tau)}
    if out is not None:
        write_json_atomic(out, result)
    return result


def label_repository(
    repo: str | Path,
    out: str | Path,
    human: str | Path | None = None,
    min_accuracy: float = 0.8,
    label_coding: str | None = None,
) -> dict[str, Any]:
    """Label every model of a repository by the guideline's rules and write the labels as CSV; with the
    annotators' labels, their agreement with each other and with the rules.

    Parameters
    ----------
    repo : str or pathlib.Path
        A repository folder (``repscope invariance repo build``).
    out : str or pathlib.Path
        CSV to write: ``name``, ``label`` (1 invariant, 0 variant), reasons.
    human : str or pathlib.Path, optional
        CSV of human labels: ``name`` plus one column per annotator, and a ``label_coding`` column (``ours``:
        1 = invariant; ``paper``: 0 = invariant, the ML4ML paper's) unless ``label_coding`` is given. The
        annotators' labels are converted to ours before they meet the rules: a file in the paper's coding read
        as ours would give each annotator a negative kappa with the rules.
    min_accuracy : float, default=0.8
        Below this test accuracy a model under-fits.
    label_coding : {"ours", "paper"}, optional
        The coding of ``human`` when it has no ``label_coding`` column (they must agree when both are given).

    Returns
    -------
    dict
        ``labels`` (the table written), and with ``human`` ``agreement``: ``cohen`` (``"a vs b" -> kappa``,
        the rules a column named ``rules``) and ``fleiss``.

    Raises
    ------
    DataFormatError
        ``human`` is not a readable CSV or has no ``name`` column.
    InvalidArgumentError
        ``human``'s coding is not stated, or its column and ``label_coding`` disagree, or a label is not 0 / 1.
    """
    from repscope.studies.invariance.assess import read_repository  # noqa: PLC0415
    from repscope.studies.invariance.labels import (  # noqa: PLC0415
        agreement,
        file_label_coding,
        rule_labels,
        to_our_coding,
    )

    given = None
    if human is not None:  # read first: a bad file leaves no labels behind
        try:
            given = pd.read_csv(human)
        except (OSError, ValueError) as exc:
            raise DataFormatError(f"--human {human}: not a readable CSV ({exc})") from None
        if "name" not in given.columns:
            raise DataFormatError(f"--human {human}: needs a name column")
        coding = file_label_coding(given, label_coding, f"--human {human}")
        given = given.drop(columns="label_coding", errors="ignore")
        for annotator in given.columns.drop("name"):
            given[annotator] = to_our_coding(given[annotator], coding)
    labels = rule_labels(read_repository(repo), min_accuracy=min_accuracy)
    write_text_atomic(out, labels.to_csv(index=False))
    result: dict[str, Any] = {"labels": labels}
    if given is not None:
        merged = given.merge(labels[["name", "label"]].rename(columns={"label": "rules"}), on="name")
        result["agreement"] = agreement(merged)
    return result


__all__ = [
    "MAX_VARIANCE_ENTRY",
    "check_variance_matrix",
    "label_repository",
    "matrix_file_features",
    "read_variance_matrix",
]
