"""Raw Zero-Shot on your soft-labels: the Davies-Bouldin and Amalgam metrics, and the black-box attacks.

Vargas, Kotyan and Matsuki, "Uncovering Why Deep Neural Networks Lack Robustness: Representation Metrics
that Link to Adversarial Attacks" (Sec. 3). A classifier of ``n`` classes is trained ``n`` times, each time
without one class ``i``, and shown class ``i``'s test images: its soft-labels (``n - 1`` entries) say how
it describes the class it never saw. The metrics (:mod:`repscope.metrics.zeroshot`) score how consistent
those descriptions are (DBI, Eq. 3, and the standard Davies-Bouldin index) and how well they match the
proportions of the model trained on all classes (Amalgam Metric, Eq. 4)::

    import repscope.zeroshot

    scores = repscope.zeroshot.soft_label_metrics(loo, full=full)       # one array per class
    scores = repscope.zeroshot.soft_label_metrics(rows, labels, full=full_rows)  # stacked rows
    result = repscope.zeroshot.attack("Linf", predict, images, labels, threshold=5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.metrics.zeroshot import (
    amalgam_metric,
    davies_bouldin_soft_labels,
    rank_correlation,
    raw_zero_shot_dbi,
    zero_shot_scores,
)
from repscope.studies.zeroshot.attacks import NORMS, AttackResult, attack, pixel_attack, threshold_attack
from repscope.validation import as_array

__all__ = [
    "NORMS",
    "AttackResult",
    "amalgam_metric",
    "attack",
    "davies_bouldin_soft_labels",
    "pixel_attack",
    "rank_correlation",
    "raw_zero_shot_dbi",
    "soft_label_metrics",
    "threshold_attack",
    "zero_shot_scores",
]


def _by_class(rows: Any, classes: np.ndarray, count: int, width: int, name: str) -> list[np.ndarray]:
    """Stacked ``(N, width)`` rows split into one array per class ``0 .. count - 1`` (by ``classes``)."""
    array = as_array(rows, name)
    if array.ndim != 2 or array.shape != (len(classes), width):
        raise InvalidArgumentError(
            f"{name}: expected stacked rows of shape ({len(classes)}, {width}) (one per label, {width} classes), "
            f"got shape {array.shape}"
        )
    return [array[classes == k] for k in range(count)]


def _stacked_labels(labels: Any, count: int) -> np.ndarray:
    """``labels`` checked as one class in ``0 .. count - 1`` per row, every class present."""
    array = as_array(labels, "labels")
    numeric = np.issubdtype(array.dtype, np.number) and array.dtype != np.bool_
    if array.ndim != 1 or not numeric or not np.all(np.isfinite(array)) or not np.array_equal(array, np.round(array)):
        raise InvalidArgumentError(f"labels: expected (N,) integer classes, got {array.dtype} of shape {array.shape}")
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= count):
        raise InvalidArgumentError(
            f"labels: expected classes 0 .. {count - 1} (the soft-labels have {count - 1} columns, one per "
            f"class each model knew), got {int(array.min())} .. {int(array.max())}"
        )
    missing = sorted(set(range(count)) - set(array.tolist()))
    if missing:
        raise InvalidArgumentError(f"labels: no soft-labels of class {missing[0]} (every class needs its rows)")
    return array


def _split_stacked(soft_labels: Any, labels: Any, full: Any) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Stacked rows and their labels as the per-class layout of :mod:`repscope.metrics.zeroshot`."""
    columns = as_array(soft_labels, "soft_labels")
    if columns.ndim != 2 or columns.shape[1] < 1:
        raise InvalidArgumentError(
            f"soft_labels: with labels, expected stacked (N, classes - 1) rows, got shape {columns.shape}"
        )
    count = columns.shape[1] + 1
    classes = _stacked_labels(labels, count)
    loo = _by_class(columns, classes, count, count - 1, "soft_labels")
    return loo, None if full is None else _by_class(full, classes, count, count, "full")


def soft_label_metrics(
    soft_labels: Sequence[Any] | Any,
    labels: Any = None,
    full: Sequence[Any] | Any = None,
    *,
    kind: str = "probabilities",
) -> dict[str, Any]:
    """The Raw Zero-Shot metrics of one architecture's leave-one-class-out soft-labels.

    DBI (the paper's Eq. 3, the within-class scatter ``S_i`` averaged over the classes), the standard
    Davies-Bouldin index of the same clusters, and with ``full`` the Amalgam Metric (Eq. 4, ``AM = 1/n
    sum_i ||h'_i - h_i||_1 / (n - 1)``) and its per-image variant; lower is better for each
    (:mod:`repscope.metrics.zeroshot` states every formula).

    Parameters
    ----------
    soft_labels : sequence of array-like, or array-like
        Without ``labels``: ``soft_labels[i]`` ``(m_i, n - 1)``, the model trained without class ``i`` on
        class ``i``'s images. With ``labels``: the same rows stacked, ``(N, n - 1)``, in any order.
    labels : array-like, optional
        ``(N,)``: the class (``0 .. n - 1``) of each stacked row's image, which is also the class its model
        was trained without. Every class needs at least one row.
    full : sequence of array-like, or array-like, optional
        The model trained on all ``n`` classes on the same images: ``full[i]`` ``(m_i, n)``, or with
        ``labels`` the stacked ``(N, n)`` rows in the order of ``soft_labels``. Needed for the Amalgam Metric.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are: probability vectors, or a CapsNet's raw capsule lengths.

    Returns
    -------
    dict
        ``soft_label_kind``, ``dbi``, ``dbi_std``, ``davies_bouldin``, ``dbi_per_class``, ``params``; with
        ``full`` also ``am``, ``am_std``, ``am_per_image``, ``am_per_image_std``, ``am_per_class``,
        ``am_per_image_per_class`` (:func:`repscope.metrics.zeroshot.zero_shot_scores`).

    Raises
    ------
    InvalidArgumentError
        Labels that are not one integer class per row or leave a class without rows, arrays of the wrong
        shape, fewer than 3 classes, or rows that are not probability vectors (capsule lengths in [0, 1]).

    References
    ----------
    Vargas, Kotyan and Matsuki, Uncovering Why Deep Neural Networks Lack Robustness: Representation
    Metrics that Link to Adversarial Attacks, Sec. 3 (Eqs. 3 and 4).
    """
    loo, full_rows = soft_labels, full
    if labels is not None:
        loo, full_rows = _split_stacked(soft_labels, labels, full)
    if full_rows is not None:
        return zero_shot_scores(loo, full_rows, kind)
    dbi = raw_zero_shot_dbi(loo, kind)
    return {
        "soft_label_kind": kind,
        "dbi": dbi["dbi"],
        "dbi_std": dbi["dbi_std"],
        "davies_bouldin": davies_bouldin_soft_labels(loo, kind)["davies_bouldin"],
        "dbi_per_class": dbi["per_class"],
        "params": dbi["params"],
    }
