"""The ML4ML assessors themselves and the robust-accuracy baseline's threshold: what the paper's protocol
(:mod:`repscope.studies.invariance.assess`) and the released code's
(:mod:`repscope.studies.invariance.assess_reference`) both fit and score.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def assessors(seed: int = 0) -> dict[str, Any]:
    """The paper's four assessors (scikit-learn), seeded."""
    from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier  # noqa: PLC0415
    from sklearn.linear_model import LinearRegression  # noqa: PLC0415
    from sklearn.tree import DecisionTreeClassifier  # noqa: PLC0415

    return {
        "decision tree": DecisionTreeClassifier(random_state=seed),
        "random forest": RandomForestClassifier(n_estimators=100, random_state=seed),
        "AdaBoost": AdaBoostClassifier(random_state=seed),
        "linear regression": LinearRegression(),
    }


def predict_labels(model: Any, features: np.ndarray) -> np.ndarray:
    """A fitted assessor's 0 / 1 labels: a regressor's output thresholded at 0.5, a classifier's as given.

    Parameters
    ----------
    model : estimator
        A fitted assessor (:func:`assessors`).
    features : numpy.ndarray
        ``(M, F)`` features.

    Returns
    -------
    numpy.ndarray
        ``(M,)`` int labels, 1 = invariant.
    """
    output = model.predict(features)
    return (output >= 0.5).astype(int) if output.dtype.kind == "f" else output.astype(int)


def greedy_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold t on ``scores`` (predict 1 when score >= t) with the best training accuracy,
    searched over the midpoints of the sorted scores (ties: the lowest)."""
    values = np.unique(scores)
    candidates = np.concatenate([[values[0] - 1e-9], (values[1:] + values[:-1]) / 2, [values[-1] + 1e-9]])
    accuracies = [np.mean((scores >= t).astype(int) == labels) for t in candidates]
    return float(candidates[int(np.argmax(accuracies))])


__all__ = ["assessors", "greedy_threshold", "predict_labels"]
