"""Table IV by the ML4ML authors' released code (``compat="reference"``).

Zukang-Liao/ML4ML-invariance-testing, ``ML4MLassessor.py``, ``ml4ml`` and its ``__main__`` block. A
fixed hold-out set of models is always one fold; in each of 10 repeats the other ("regular") models are
shuffled and cut into two halves, and the three folds are: train on the regular models and test on the
hold-out, train on half 1 + hold-out and test on half 2, train on half 2 + hold-out and test on half 1.
No balanced draw. Linear regression fits the features with each row scaled to unit L2 norm
(``sklearn.preprocessing.normalize(X, axis=1)``) and thresholds at 0.5. A repeat's score is the mean of
its three fold accuracies; the table gives the mean of the 10 repeat scores and, as the paper's "+-",
their largest deviation from that mean (``max(|max - mean|, |mean - min|)``), not a standard deviation.
The released code has no baseline; ours is scored on the same folds. The released code's estimators are
unseeded scikit-learn defaults; here the tree, forest and AdaBoost take ``random_state = seed + repeat``.
The reference draws its hold-out models (``t1``-``t50``) apart from the regular ones; here the hold-out
is the last third of the repository by model name (each model's settings are a seeded random draw, so
this is a random third), unless a mask is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import InvalidArgumentError
from repscope.studies.invariance.assessor_models import assessors, greedy_threshold, predict_labels


def max_deviation(scores: Any) -> float:
    """The paper's "+-" as the released code computes it: ``max(|max - mean|, |mean - min|)`` of the scores.

    Parameters
    ----------
    scores : array-like
        One score per repeat (Zukang-Liao/ML4ML-invariance-testing, ``ML4MLassessor.py``, ``__main__``).

    Returns
    -------
    float
    """
    scores = np.asarray(scores, float)
    if scores.size == 0:
        raise InvalidArgumentError("scores: no score to take a deviation of")
    mean = scores.mean()
    return float(max(abs(scores.max() - mean), abs(mean - scores.min())))


def reference_holdout(names: Any) -> np.ndarray:
    """The default fixed hold-out fold of the reference protocol: the last third of the models by name.

    Parameters
    ----------
    names : array-like of str
        The models' names.

    Returns
    -------
    numpy.ndarray
        bool mask, ``len(names) // 3`` True.
    """
    names = np.asarray(names, dtype=object)
    order = np.argsort(names, kind="stable")
    mask = np.zeros(len(names), bool)
    size = len(names) // 3
    if size:
        mask[order[-size:]] = True
    return mask


def reference_folds(holdout: Any, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """One repeat's three (train, test) folds of the released code (``ML4MLassessor.py``, ``ml4ml``).

    The regular models (not in ``holdout``) are permuted by ``rng`` and cut at ``len // 2``: ``fold1``
    the first part, ``fold2`` the rest; ``fold3`` is the hold-out. Folds: (regular, hold-out),
    (fold1 + hold-out, fold2), (fold2 + hold-out, fold1).

    Parameters
    ----------
    holdout : array-like of bool
        The fixed hold-out models.
    rng : numpy.random.Generator
        Draws the permutation.

    Returns
    -------
    list of (train rows, test rows)
    """
    holdout = np.asarray(holdout, bool)
    regular, fixed = np.flatnonzero(~holdout), np.flatnonzero(holdout)
    if len(fixed) < 1 or len(regular) < 2:
        raise InvalidArgumentError(
            f"holdout: the reference protocol needs at least 1 hold-out and 2 regular models, got {len(fixed)} "
            f"and {len(regular)}"
        )
    order = regular[rng.permutation(len(regular))]
    fold1, fold2 = order[: len(order) // 2], order[len(order) // 2 :]
    return [
        (regular, fixed),
        (np.concatenate([fold1, fixed]), fold2),
        (np.concatenate([fold2, fixed]), fold1),
    ]


def reference_assessors(seed: int = 0) -> dict[str, Any]:
    """The four assessors as the released code fits them: scikit-learn defaults, and linear regression on
    rows scaled to unit L2 norm (``normalize(X, axis=1)``); seeded here, unseeded there.

    Parameters
    ----------
    seed : int
        ``random_state`` of the tree ensembles and the tree.

    Returns
    -------
    dict of str to estimator
    """
    from sklearn.pipeline import make_pipeline  # noqa: PLC0415
    from sklearn.preprocessing import Normalizer  # noqa: PLC0415

    models = assessors(seed)
    models["linear regression"] = make_pipeline(Normalizer(norm="l2"), models["linear regression"])
    return models


def evaluate_assessors_reference(
    features: np.ndarray, labels: Any, robust: Any, holdout: Any, repeats: int = 10, seed: int = 0
) -> pd.DataFrame:
    """Table IV by the released code's protocol (module docstring): a fixed hold-out fold, two random
    halves of the other models, the mean and max deviation of the per-repeat 3-fold means.

    Parameters
    ----------
    features : numpy.ndarray
        ``(M, F)`` features of the models.
    labels : array-like
        ``(M,)`` 1 (invariant) / 0 (variant), our coding.
    robust : array-like
        ``(M,)`` robust accuracies (the baseline's score).
    holdout : array-like of bool
        ``(M,)`` the fixed hold-out fold (:func:`reference_holdout` by default in
        :func:`repscope.studies.invariance.assess.train_assessors`).
    repeats : int, default 10
        Repeats (the reference's 10).
    seed : int, default 0
        Seeds repeat ``r``'s permutation (``numpy.random.default_rng([seed, r])``) and the assessors.

    Returns
    -------
    pandas.DataFrame
        ``assessor``, ``mean``, ``max_deviation``, ``repeats``, ``folds`` (fold scores), ``models``,
        ``holdout_models`` and ``compat`` (``reference``).
    """
    from sklearn.base import clone  # noqa: PLC0415

    labels, robust = np.asarray(labels, int), np.asarray(robust, float)
    holdout = np.asarray(holdout, bool)
    if len(holdout) != len(labels) or len(features) != len(labels):
        raise InvalidArgumentError(
            f"holdout: features, labels and holdout must cover the same {len(labels)} models, got "
            f"{len(features)} and {len(holdout)}"
        )
    names = [*assessors(), "robust accuracy (baseline)"]
    per_repeat: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        fold_scores: dict[str, list[float]] = {name: [] for name in names}
        for train, test in reference_folds(holdout, np.random.default_rng([seed, repeat])):
            for name, model in reference_assessors(seed + repeat).items():
                fitted = clone(model).fit(features[train], labels[train])
                fold_scores[name].append(float(np.mean(predict_labels(fitted, features[test]) == labels[test])))
            threshold = greedy_threshold(robust[train], labels[train])
            baseline = (robust[test] >= threshold).astype(int)
            fold_scores["robust accuracy (baseline)"].append(float(np.mean(baseline == labels[test])))
        for name in names:
            per_repeat[name].append(float(np.mean(fold_scores[name])))
    return pd.DataFrame(
        [
            {
                "assessor": name,
                "mean": float(np.mean(v)),
                "max_deviation": max_deviation(v),
                "repeats": len(v),
                "folds": 3 * len(v),
                "models": len(labels),
                "holdout_models": int(holdout.sum()),
                "compat": "reference",
            }
            for name, v in per_repeat.items()
        ]
    )


__all__ = [
    "evaluate_assessors_reference",
    "max_deviation",
    "reference_assessors",
    "reference_folds",
    "reference_holdout",
]
