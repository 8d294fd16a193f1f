"""Training sets with injected anomalies, for the ML4ML model repository (Sec. V-B).

A registered dataset (``anomalous``) wraps another classification dataset and changes its ``train``
split only; the ``test`` split is the base's:

===========  =================================================================================
none         the base training set
noise        plus ``fraction * N`` images of uniform noise with random labels
leak         plus every test image with its label (test data leaked into training)
impaired     ``fraction * N`` labels replaced by a different, random class
small        a seeded ``fraction * N`` of the training images only
===========  =================================================================================

(Training without shuffling, the paper's fifth anomaly, is the training config's ``shuffle: false``.)
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from repscope.data.datasets import ArraySplit, Dataset
from repscope.errors import InvalidArgumentError

ANOMALIES = ("none", "noise", "leak", "impaired", "small")


def anomalous_dataset(
    base: str = "digits",
    base_params: dict[str, Any] | None = None,
    anomaly: Literal["none", "noise", "leak", "impaired", "small"] = "none",
    fraction: float = 0.2,
    seed: int = 0,
) -> Dataset:
    """A classification dataset whose training split carries one anomaly.

    Parameters
    ----------
    base : str
        The registered dataset (with a class target) to change.
    base_params : dict, optional
        Its parameters.
    anomaly : {"none", "noise", "leak", "impaired", "small"}
        What to do to the training split (module docstring).
    fraction : float
        Share of the training images the anomaly touches (``small``: the share kept).
    seed : int
        Seed of the changes.

    Returns
    -------
    Dataset
        Fields ``image`` and the base's target field; splits ``train`` and ``test``.

    Raises
    ------
    InvalidArgumentError
        An unknown anomaly, a fraction outside (0, 1], or a base without a class target.
    """
    from repscope.data.registry import load_dataset  # noqa: PLC0415 -- the registry lists this module

    if anomaly not in ANOMALIES:
        raise InvalidArgumentError(f"anomaly: expected one of {', '.join(ANOMALIES)}, got {anomaly!r}")
    if not 0 < float(fraction) <= 1:
        raise InvalidArgumentError(f"fraction: expected a number in (0, 1], got {fraction!r}")
    dataset = load_dataset(base, **(base_params or {}))
    if dataset.target_kind != "classification":
        raise InvalidArgumentError(f"base: dataset {base} has no class target (set its target parameter)")
    target, classes = dataset.target, int(dataset.num_classes)
    train = dataset.arrays("train", ["image", target])
    test = dataset.arrays("test", ["image", target])
    images, labels = train["image"], train[target].copy()
    rng = np.random.default_rng([seed, 23])
    count = int(round(float(fraction) * len(labels)))
    if anomaly == "noise":
        noise = rng.integers(0, 256, size=(count, *images.shape[1:]), dtype=np.int64).astype(images.dtype)
        if images.dtype != np.uint8:
            noise = noise / 255.0
        images = np.concatenate([images, noise])
        labels = np.concatenate([labels, rng.integers(0, classes, count).astype(labels.dtype)])
    elif anomaly == "leak":
        images = np.concatenate([images, test["image"]])
        labels = np.concatenate([labels, test[target]])
    elif anomaly == "impaired":
        rows = rng.choice(len(labels), size=count, replace=False)
        labels[rows] = (labels[rows] + rng.integers(1, classes, count)) % classes  # always a wrong class
    elif anomaly == "small":
        rows = np.sort(rng.choice(len(labels), size=max(1, count), replace=False))
        images, labels = images[rows], labels[rows]
    fields = {"image": dataset.field("image"), target: dataset.field(target)}
    return Dataset(
        "anomalous",
        {"train": ArraySplit({"image": images, target: labels}), "test": ArraySplit(test)},
        fields,
        target,
        f"{base} with anomaly {anomaly} (fraction {fraction}): {len(labels)} training images",
    )


__all__ = ["ANOMALIES", "anomalous_dataset"]
