"""The Raw Zero-Shot soft-label file (``softlabels.npz``): what any framework writes for ``repscope zeroshot metrics``.

For a dataset of ``n`` classes the archive holds, for every class ``i = 0 .. n - 1``:

``loo_<i>``
    float ``(m_i, n - 1)``: the soft-labels of the classifier trained without class ``i`` on the ``m_i``
    test images of class ``i`` (output ``j`` is class ``j`` for ``j < i``, class ``j + 1`` otherwise);
``full_<i>``
    float ``(m_i, n)``: the soft-labels of the classifier trained on all ``n`` classes on the same images,
    in the same order.

and optionally ``class_names`` (``n`` strings). Each row is a probability vector: finite, non-negative,
summing to one (within ``1e-3``, what float16 storage keeps). Nothing is unpickled: the archive is read with
``allow_pickle=False``.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_bytes_atomic

ROW_SUM_TOLERANCE = 1e-3
_KEY = re.compile(r"(loo|full)_(\d+)")


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
    """

    loo: list[np.ndarray]
    full: list[np.ndarray]
    class_names: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        return len(self.loo)


def check_soft_labels(
    loo: Sequence[Any], full: Sequence[Any], class_names: Sequence[str] | None = None, where: str = "soft-labels"
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

    Returns
    -------
    SoftLabels
        float64 copies.

    Raises
    ------
    InvalidArgumentError
        Naming the key (``loo_3``) and what is wrong: fewer than 3 classes, a missing class, a wrong
        width, differing row counts, no rows, a value that is not finite or negative, a row not summing
        to one; or ``class_names`` of the wrong length.
    """
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
                raise InvalidArgumentError(
                    f"{where}: {key} holds negative or non-finite values; expected probabilities"
                )
            sums = values.sum(axis=1)
            worst = int(np.argmax(np.abs(sums - 1)))
            if abs(sums[worst] - 1) > ROW_SUM_TOLERANCE:
                raise InvalidArgumentError(
                    f"{where}: {key} row {worst} sums to {sums[worst]:.6g}, not 1; store soft-labels "
                    "(softmax outputs or normalised capsule lengths), not logits"
                )
            (checked_loo if key.startswith("loo") else checked_full).append(values)
    if class_names is None:
        names = tuple(str(i) for i in range(n))
    else:
        names = tuple(str(name) for name in class_names)
        if len(names) != n:
            raise InvalidArgumentError(f"{where}: class_names holds {len(names)} names for {n} classes")
    return SoftLabels(checked_loo, checked_full, names)


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
        Not a readable npz (or one needing pickle), unknown keys, a class without both keys, or any
        failure of :func:`check_soft_labels`, naming the file and the key.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"{path}: no such file")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFormatError(f"{path}: not a readable .npz archive ({' '.join(str(exc).split())[:160]})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataFormatError(f"{path}: a single array, not an .npz archive of loo_<i> / full_<i> arrays")
    with archive:
        try:
            arrays = {key: archive[key] for key in archive.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DataFormatError(f"{path}: an array cannot be read ({' '.join(str(exc).split())[:160]})") from None
    names = arrays.pop("class_names", None)
    unknown = sorted(key for key in arrays if not _KEY.fullmatch(key))
    if unknown:
        raise DataFormatError(f"{path}: unknown key {unknown[0]!r}; expected loo_<i>, full_<i> and class_names")
    indices = {int(_KEY.fullmatch(key).group(2)) for key in arrays}  # type: ignore[union-attr]
    n = max(indices) + 1 if indices else 0
    for i in range(n):
        for kind in ("loo", "full"):
            if f"{kind}_{i}" not in arrays:
                raise DataFormatError(f"{path}: missing key {kind}_{i} (every class 0..{n - 1} needs loo_ and full_)")
    if names is not None and (names.ndim != 1 or names.dtype.kind not in "US"):
        raise DataFormatError(f"{path}: class_names must be a 1-d array of strings")
    try:
        return check_soft_labels(
            [arrays[f"loo_{i}"] for i in range(n)],
            [arrays[f"full_{i}"] for i in range(n)],
            None if names is None else [str(name) for name in names],
            where=str(path),
        )
    except InvalidArgumentError as exc:
        raise DataFormatError(str(exc)) from None


def write_soft_labels(
    path: str | Path, loo: Sequence[Any], full: Sequence[Any], class_names: Sequence[str] | None = None
) -> Path:
    """Check the arrays and write them as ``softlabels.npz`` (compressed, float32, atomically).

    Parameters
    ----------
    path : str or pathlib.Path
        The archive to write.
    loo, full, class_names
        As :func:`check_soft_labels`.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    checked = check_soft_labels(loo, full, class_names)
    arrays: dict[str, Any] = {}
    for i in range(checked.num_classes):
        arrays[f"loo_{i}"] = checked.loo[i].astype(np.float32)
        arrays[f"full_{i}"] = checked.full[i].astype(np.float32)
    arrays["class_names"] = np.asarray(checked.class_names, dtype=str)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return write_bytes_atomic(path, buffer.getvalue())


__all__ = ["SoftLabels", "check_soft_labels", "read_soft_labels", "write_soft_labels", "ROW_SUM_TOLERANCE"]
