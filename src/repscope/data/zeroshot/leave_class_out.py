"""Leave-one-class-out training sets, for the Raw Zero-Shot test (Vargas et al., Sec. 3).

A registered dataset (``leave-class-out``) wraps another classification dataset and removes one class
from it: the classifier trained on it has ``n - 1`` outputs and never sees the excluded class, whose
test images are then shown to it as an unknown class. Labels above the excluded one move down by one,
so output ``j`` of the ``n - 1`` model is class ``j`` of the base for ``j < excluded`` and class
``j + 1`` otherwise (:func:`kept_classes`). Both splits lose the class, so the run's test accuracy is
the ``n - 1``-class accuracy. ``excluded: null`` gives the base dataset unchanged (the full model that
the Amalgam Metric compares with).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.errors import InvalidArgumentError


def kept_classes(num_classes: int, excluded: int | None) -> list[int]:
    """The base classes of the outputs of a model trained without ``excluded``, in output order.

    Parameters
    ----------
    num_classes : int
        ``n``, the classes of the base dataset.
    excluded : int or None
        The class left out (None: none).

    Returns
    -------
    list of int
        ``[0, ..., n - 1]`` without ``excluded``: output ``j`` stands for base class ``kept[j]``.
    """
    return [k for k in range(int(num_classes)) if k != excluded]


def leave_class_out_dataset(
    base: str = "digits",
    base_params: dict[str, Any] | None = None,
    excluded: int | None = None,
) -> Dataset:
    """The classification dataset ``base`` without the class ``excluded`` (labels remapped to ``n - 1``).

    Parameters
    ----------
    base : str
        The registered dataset with a class target (``digits`` with ``source: fashion-mnist`` or
        ``mnist-sample``, ``cifar10``, ...).
    base_params : dict, optional
        Its parameters.
    excluded : int or None
        The class (``0 .. n - 1``) to leave out of both splits; None keeps every class.

    Returns
    -------
    Dataset
        Named ``leave-class-out``; fields ``image`` and the base's target (``n - 1`` classes, their names
        kept in output order); ``extras``: ``excluded``, ``kept_classes``, ``base_classes`` (``n``),
        ``base_names`` and ``base_dataset`` (the base, loaded).

    Raises
    ------
    InvalidArgumentError
        A base without a class target, fewer than 3 classes, or ``excluded`` outside ``0 .. n - 1``.
    """
    from repscope.data.registry import load_dataset  # noqa: PLC0415 -- the registry lists this module

    dataset = load_dataset(base, **(base_params or {}))
    if dataset.target_kind != "classification":
        raise InvalidArgumentError(f"base: dataset {base} has no class target (set its target parameter)")
    target, classes = dataset.target, int(dataset.num_classes)
    spec = dataset.field(target)
    names = tuple(spec.names) if len(spec.names) == classes else tuple(str(k) for k in range(classes))
    extras = {"excluded": excluded, "kept_classes": kept_classes(classes, excluded), "base_classes": classes}
    extras["base_names"] = list(names)
    extras["base_dataset"] = dataset  # its test split holds the excluded class's images (the unknown class)
    if excluded is None:
        return Dataset(
            "leave-class-out", dataset.splits, dataset.fields, target, f"{dataset.description}; every class", extras
        )
    if classes < 3:
        raise InvalidArgumentError(f"base: dataset {base} has {classes} classes; leaving one out needs at least 3")
    if isinstance(excluded, bool) or not isinstance(excluded, int | np.integer) or not 0 <= excluded < classes:
        raise InvalidArgumentError(f"excluded: expected a class in 0..{classes - 1} or null, got {excluded!r}")
    splits = {}
    for name in dataset.splits:
        arrays = dataset.arrays(name, ["image", target])
        keep = arrays[target] != excluded
        labels = arrays[target][keep]
        # classes above the excluded one move down: the n - 1 outputs stay contiguous
        labels = np.where(labels > excluded, labels - 1, labels).astype(arrays[target].dtype)
        splits[name] = ArraySplit({"image": arrays["image"][keep], target: labels})
    kept_names = tuple(names[k] for k in extras["kept_classes"])
    fields = {
        "image": dataset.field("image"),
        target: FieldSpec("categorical", (), spec.dtype, classes - 1, kept_names, spec.description),
    }
    description = f"{dataset.description}; without class {excluded} ({names[excluded]})"
    return Dataset("leave-class-out", splits, fields, target, description, extras)


__all__ = ["kept_classes", "leave_class_out_dataset"]
