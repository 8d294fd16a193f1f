"""The Raw Zero-Shot soft-label file (``softlabels.npz``): what any framework writes for ``repscope zeroshot metrics``.

For a dataset of ``n`` classes the archive holds, for every class ``i = 0 .. n - 1``:

``loo_<i>``
    float ``(m_i, n - 1)``: the soft-labels of the classifier trained without class ``i`` on the ``m_i``
    test images of class ``i`` (output ``j`` is class ``j`` for ``j < i``, class ``j + 1`` otherwise);
``full_<i>``
    float ``(m_i, n)``: the soft-labels of the classifier trained on all ``n`` classes on the same images,
    in the same order.

and optionally ``class_names`` (``n`` strings) and ``kind`` (a string: what the rows are):

``probabilities`` (the default, and what an archive without ``kind`` holds)
    each row a probability vector: finite, non-negative, summing to one (within ``1e-3``, what float16
    storage keeps): softmax outputs, or a CapsNet's capsule lengths divided by their sum;
``capsule_lengths``
    a CapsNet's raw class-capsule lengths, as the authors' Keras ``Length`` layer outputs them
    (``shashankkotyan/RepresentationMetrics``, ``code/networks/cifar/capsnet.py``, ``Length.call``:
    ``sqrt(sum(v**2) + 1e-7)``): each value finite and in ``[0, 1]`` (up to ``1 + 1e-6``: the epsilon in
    the root lifts a unit-length capsule to ``sqrt(1 + 1e-7)``), rows need not sum to one. Both the model
    without class ``i`` and the full model hold lengths.

Every class needs a test image, and at least one class 2 (``MIN_IMAGES``). Nothing is unpickled: the
archive is read with ``allow_pickle=False``, and a member that is not a ``.npy`` array (a pickle, text) is
refused by name.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.npzfile import read_npz_arrays
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_bytes_atomic

ROW_SUM_TOLERANCE = 1e-3
# a squashed capsule is shorter than 1; Keras's epsilon inside the root (and float32) may lift it just above
LENGTH_TOLERANCE = 1e-6
KINDS = ("probabilities", "capsule_lengths")
_KEY = re.compile(r"(loo|full)_(\d+)")
# one image has no scatter, and scikit-learn's Davies-Bouldin index needs more images than classes: at least
# one class needs this many
MIN_IMAGES = 2


def check_kind(kind: Any, where: str = "kind") -> str:
    """``kind`` checked against :data:`KINDS`.

    Parameters
    ----------
    kind : str
        ``probabilities`` or ``capsule_lengths`` (module docstring).
    where : str
        Named in the error message.

    Returns
    -------
    str
        ``kind``.

    Raises
    ------
    InvalidArgumentError
        Any other value.
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidArgumentError(f"{where}: expected probabilities or capsule_lengths, got {kind!r}")
    return kind


@dataclass(frozen=True)
class SoftLabels:
    """The soft-labels of one architecture in the Raw Zero-Shot test.

    Attributes
    ----------
    loo : list of numpy.ndarray
        ``loo[i]``: float64 ``(m_i, n - 1)``, the model trained without class ``i`` on class ``i``'s images.
    full : list of numpy.ndarray
        ``full[i]``: float64 ``(m_i, n)``, the model trained on every class on the same images.
    class_names : tuple of str
        ``n`` names (``"0" .. "n-1"`` when the file gives none).
    kind : str
        What the rows are: ``probabilities`` (rows sum to one) or ``capsule_lengths`` (a CapsNet's raw
        lengths in ``[0, 1]``; module docstring).
    """

    loo: list[np.ndarray]
    full: list[np.ndarray]
    class_names: tuple[str, ...]
    kind: str = "probabilities"

    @property
    def num_classes(self) -> int:
        return len(self.loo)


def check_soft_labels(
    loo: Sequence[Any],
    full: Sequence[Any],
    class_names: Sequence[str] | None = None,
    where: str = "soft-labels",
    kind: str = "probabilities",
) -> SoftLabels:
    """The soft-label arrays checked against the layout of the module docstring.

    Parameters
    ----------
    loo, full : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)`` and ``full[i]`` ``(m_i, n)`` for ``i = 0 .. n - 1``.
    class_names : sequence of str, optional
        ``n`` names.
    where : str
        Named in error messages (the file).
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are: probability vectors (each row sums to one) or raw capsule lengths (each value
        in ``[0, 1]``, rows summing to anything).

    Returns
    -------
    SoftLabels
        float64 copies, with ``kind``.

    Raises
    ------
    InvalidArgumentError
        Naming the key (``loo_3``) and what is wrong: fewer than 3 classes, a missing class, a wrong
        width, differing row counts, no rows, every class a single row (``MIN_IMAGES``), a value that is
        not finite or negative, a row not summing to one (probabilities), a length above one (capsule
        lengths); ``class_names`` of the wrong
        length, or an unknown ``kind``.
    """
    check_kind(kind, f"{where}: kind")
    n = len(loo)
    if n < 3:
        raise InvalidArgumentError(f"{where}: needs soft-labels for at least 3 classes, got {n}")
    if len(full) != n:
        raise InvalidArgumentError(
            f"{where}: {n} loo_<i> arrays but {len(full)} full_<i> arrays; give both for every class"
        )
    checked_loo, checked_full = [], []
    for i in range(n):
        rows = None
        for key, array, width in ((f"loo_{i}", loo[i], n - 1), (f"full_{i}", full[i], n)):
            values = np.asarray(array)
            if values.dtype.kind not in "fiu":
                raise InvalidArgumentError(f"{where}: {key} holds {values.dtype} values, expected numbers")
            values = values.astype(np.float64)
            if values.ndim != 2 or values.shape[1] != width:
                raise InvalidArgumentError(
                    f"{where}: {key} has shape {values.shape}, expected (images, {width}) for {n} classes"
                )
            if len(values) == 0:
                raise InvalidArgumentError(f"{where}: {key} has no rows (class {i} needs test images)")
            if rows is not None and len(values) != rows:
                raise InvalidArgumentError(
                    f"{where}: {key} has {len(values)} rows but loo_{i} has {rows}; both hold the same images"
                )
            rows = len(values)
            if not np.isfinite(values).all() or (values < 0).any():
                expected = "probabilities" if kind == "probabilities" else "capsule lengths in [0, 1]"
                raise InvalidArgumentError(f"{where}: {key} holds negative or non-finite values; expected {expected}")
            if kind == "capsule_lengths":
                row, column = np.unravel_index(int(np.argmax(values)), values.shape)
                if values[row, column] > 1 + LENGTH_TOLERANCE:
                    raise InvalidArgumentError(
                        f"{where}: {key} row {row} holds the length {values[row, column]:.6g} (column {column}), "
                        "above 1; capsule lengths lie in [0, 1] (kind capsule_lengths)"
                    )
            else:
                sums = values.sum(axis=1)
                worst = int(np.argmax(np.abs(sums - 1)))
                if abs(sums[worst] - 1) > ROW_SUM_TOLERANCE:
                    raise InvalidArgumentError(
                        f"{where}: {key} row {worst} sums to {sums[worst]:.6g}, not 1; store soft-labels "
                        "(softmax outputs or normalised capsule lengths), not logits; raw capsule lengths "
                        "are kind capsule_lengths"
                    )
            (checked_loo if key.startswith("loo") else checked_full).append(values)
    if all(len(values) < MIN_IMAGES for values in checked_loo):
        raise InvalidArgumentError(
            f"{where}: every class has a single test image ({n} images for {n} classes); at least one class needs "
            f"{MIN_IMAGES} or more (the Davies-Bouldin index needs more images than classes; one image has no scatter)"
        )
    if class_names is None:
        names = tuple(str(i) for i in range(n))
    else:
        names = tuple(str(name) for name in class_names)
        if len(names) != n:
            raise InvalidArgumentError(f"{where}: class_names holds {len(names)} names for {n} classes")
    return SoftLabels(checked_loo, checked_full, names, kind)


def read_soft_labels(path: str | Path) -> SoftLabels:
    """Read and check a ``softlabels.npz`` (module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        The archive.

    Returns
    -------
    SoftLabels

    Raises
    ------
    InvalidArgumentError
        A missing file.
    DataFormatError
        Not an npz (text, a pickle, a single ``.npy``), a member that is not a ``.npy`` array or needs
        pickle, unknown keys, a class without both keys, a ``kind``
        that is not one of :data:`KINDS`, or any failure of :func:`check_soft_labels`, naming the file
        and the key. An archive without ``kind`` (written before it existed) reads as ``probabilities``.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"{path}: no such file")
    arrays = read_npz_arrays(path, "loo_<i> / full_<i> arrays", "numpy.savez or repscope's write_soft_labels")
    names = arrays.pop("class_names", None)
    kind = _read_kind(path, arrays.pop("kind", None))
    unknown = sorted(key for key in arrays if not _KEY.fullmatch(key))
    if unknown:
        raise DataFormatError(f"{path}: unknown key {unknown[0]!r}; expected loo_<i>, full_<i>, class_names and kind")
    indices = {int(_KEY.fullmatch(key).group(2)) for key in arrays}  # type: ignore[union-attr]
    n = max(indices) + 1 if indices else 0
    for i in range(n):
        for prefix in ("loo", "full"):
            if f"{prefix}_{i}" not in arrays:
                raise DataFormatError(f"{path}: missing key {prefix}_{i} (every class 0..{n - 1} needs loo_ and full_)")
    if names is not None and (names.ndim != 1 or names.dtype.kind not in "US"):
        raise DataFormatError(f"{path}: class_names must be a 1-d array of strings")
    try:
        return check_soft_labels(
            [arrays[f"loo_{i}"] for i in range(n)],
            [arrays[f"full_{i}"] for i in range(n)],
            None if names is None else [str(name) for name in names],
            where=str(path),
            kind=kind,
        )
    except InvalidArgumentError as exc:
        raise DataFormatError(str(exc)) from None


def _read_kind(path: Path, stored: np.ndarray | None) -> str:
    """The archive's ``kind`` member: one string of :data:`KINDS`; none (an older file): probabilities."""
    if stored is None:
        return "probabilities"
    value = str(stored.reshape(-1)[0]) if stored.dtype.kind in "US" and stored.size == 1 else None
    if value not in KINDS:
        shown = value if value is not None else f"a {stored.dtype} array of shape {stored.shape}"
        raise DataFormatError(f"{path}: kind: expected probabilities or capsule_lengths, got {shown!r}")
    return value


def write_soft_labels(
    path: str | Path,
    loo: Sequence[Any],
    full: Sequence[Any],
    class_names: Sequence[str] | None = None,
    kind: str = "probabilities",
) -> Path:
    """Check the arrays and write them as ``softlabels.npz`` (compressed, float32, atomically), with their
    ``kind``.

    Parameters
    ----------
    path : str or pathlib.Path
        The archive to write.
    loo, full, class_names, kind
        As :func:`check_soft_labels`.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    checked = check_soft_labels(loo, full, class_names, kind=kind)
    arrays: dict[str, Any] = {}
    for i in range(checked.num_classes):
        arrays[f"loo_{i}"] = checked.loo[i].astype(np.float32)
        arrays[f"full_{i}"] = checked.full[i].astype(np.float32)
    arrays["class_names"] = np.asarray(checked.class_names, dtype=str)
    arrays["kind"] = np.asarray(checked.kind, dtype=str)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return write_bytes_atomic(path, buffer.getvalue())


__all__ = [
    "KINDS",
    "LENGTH_TOLERANCE",
    "ROW_SUM_TOLERANCE",
    "SoftLabels",
    "check_kind",
    "check_soft_labels",
    "read_soft_labels",
    "write_soft_labels",
]
