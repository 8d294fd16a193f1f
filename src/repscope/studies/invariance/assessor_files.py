"""The saved ML4ML assessors: ``assessors.skops`` written and read back safely, and their verdict on a model.

The file is in the skops format, whose loader accepts only allow-listed types, so a crafted file cannot run
code (pickles, the former ``assessors.joblib``, are refused); ``repscope invariance assess train`` writes it,
``repscope invariance test --assessor`` reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import atomic_path
from repscope.studies.invariance.assessor_models import predict_labels

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
    "TRUSTED_TYPES",
    "assessor_verdict",
    "check_assessors",
    "load_assessors",
    "save_assessors",
    "verdict",
]
