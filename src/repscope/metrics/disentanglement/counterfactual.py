"""Counterfactual Generativeness (CG; Reddy et al., CANDLE, Sec. 4.2, Eqs. 2-5).

CG asks whether intervening on the latents that capture a factor changes that factor in the generated
image, and intervening on the other latents does not. It needs a decoder (latents -> images) and a
classifier of every factor (images -> class probabilities); both are passed as callables, so the
metric stays a function of arrays whatever framework made the model.

For example ``x`` with codes ``z``, factor ``i`` with true class ``k = g_i(x)`` and ``Q_i`` the latents
attributed to factor ``i`` (the top-rho IRS latents, :func:`repscope.metrics.disentanglement.irs.unique_capture`):

* ``baseline(z_l) = argmax_{v in Z_l} |v - z_l|``: the value of latent ``l`` over the dataset that deviates
  most from the example's own (the column's minimum or maximum);
* ``x_Q`` = decode(``z`` with ``z_Q_i`` set to their baselines), ``x_O`` = decode(``z`` with every other
  latent set to its baseline), ``x_0`` = decode(``z``);
* ``ICE_Q = |P(g_i = k | x_0) - P(g_i = k | x_Q)|`` and ``ICE_O = |P(g_i = k | x_0) - P(g_i = k | x_O)|``
  (Eq. 5; the image without intervention is the decoding of the example's own codes);
* ``CG = mean over factors i and examples x of |ICE_Q - ICE_O|`` (Eq. 4): 1 when intervening on ``Q_i``
  flips the classifier's belief in the factor and intervening elsewhere leaves it, 0 when both (or
  neither) change it. The absolute difference cannot tell which of the two sets moved the factor
  (swapping ``Q_i`` with the rest gives the same CG): ``ice_q`` (ideally 1) and ``ice_others`` (ideally 0)
  are returned beside it and say which.

CG is only as good as its judges: a classifier near chance moves its probabilities for reasons that have
nothing to do with the factor, and CG measured with it measures nothing (the paper's classifiers reached
98.9% on CANDLE and 99.5% on dSprites). Given the classifiers' held-out accuracies (``judge_accuracy``),
the result records them with ``judge_ok`` (every one at least ``min_judge_accuracy``, default 0.9) and
``weak_judges``; a weak judge raises a ``RuntimeWarning`` naming it, or, with ``refuse_weak_judges``, an
error before anything is computed.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.validation import check_factors_codes, check_positive_int


def _check(factors: Any, codes: Any, q_sets: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, list]:
    factors, codes = check_factors_codes(factors, codes)
    if len(q_sets) != factors.shape[1]:
        raise InvalidArgumentError(f"q_sets: one set of latents per factor ({factors.shape[1]}), got {len(q_sets)}")
    sets = []
    for i, latents in enumerate(q_sets):
        latents = sorted({int(index) for index in latents})
        if not latents or latents[0] < 0 or latents[-1] >= codes.shape[1]:
            raise InvalidArgumentError(f"q_sets[{i}]: needs latent indices in 0..{codes.shape[1] - 1}, got {latents}")
        sets.append(latents)
    return factors, codes, sets


DEFAULT_MIN_JUDGE_ACCURACY = 0.9


def _check_threshold(min_judge_accuracy: Any) -> float:
    if isinstance(min_judge_accuracy, bool) or not isinstance(min_judge_accuracy, numbers.Real):
        raise InvalidArgumentError(f"min_judge_accuracy: expected a number in [0, 1], got {min_judge_accuracy!r}")
    threshold = float(min_judge_accuracy)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidArgumentError(f"min_judge_accuracy: expected a number in [0, 1], got {threshold}")
    return threshold


def check_judges(
    judge_accuracy: Sequence[float],
    names: Sequence[str],
    min_judge_accuracy: float = DEFAULT_MIN_JUDGE_ACCURACY,
    refuse: bool = False,
) -> dict[str, Any]:
    """Whether the judges of CG (factor classifiers) are accurate enough to judge it.

    Parameters
    ----------
    judge_accuracy : sequence of float
        Held-out accuracy of each factor's classifier, in [0, 1] (NaN when unknown: counted as weak).
    names : sequence of str
        The factors' names, one per accuracy (for the messages).
    min_judge_accuracy : float, default 0.9
        The least accuracy of a judge, in [0, 1].
    refuse : bool, default False
        Raise instead of warning when a judge is weak.

    Returns
    -------
    dict
        ``"judge_accuracy"`` (the K accuracies), ``"judge_ok"`` (bool: every one >= the threshold) and
        ``"weak_judges"`` (the names of those below it or unknown).

    Raises
    ------
    InvalidArgumentError
        When the lengths differ, an accuracy is outside [0, 1], the threshold is outside [0, 1], or,
        with ``refuse``, a judge is weak. Otherwise a weak judge gives a ``RuntimeWarning``.
    """
    threshold = _check_threshold(min_judge_accuracy)
    accuracies = [float(value) for value in judge_accuracy]
    if len(accuracies) != len(names):
        raise InvalidArgumentError(f"judge_accuracy: one accuracy per factor ({len(names)}), got {len(accuracies)}")
    for name, value in zip(names, accuracies):
        if not math.isnan(value) and not 0.0 <= value <= 1.0:
            raise InvalidArgumentError(f"judge_accuracy: {name}: expected an accuracy in [0, 1], got {value}")
    weak = [name for name, value in zip(names, accuracies) if math.isnan(value) or value < threshold]
    if weak:
        listed = ", ".join(f"{name} {value:.3f}" for name, value in zip(names, accuracies) if name in weak)
        message = (
            f"CG judged by weak judges: {listed} (held-out accuracy, below {threshold:g}); "
            "a judge near chance makes CG meaningless (the CANDLE paper's reached 0.989 and 0.995)"
        )
        if refuse:
            raise InvalidArgumentError(f"judge_accuracy: {message}")
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    return {"judge_accuracy": accuracies, "judge_ok": not weak, "weak_judges": weak}


def _true_class_probability(
    predict_proba: Callable[[np.ndarray], Sequence[np.ndarray]], images: np.ndarray, factor: int, classes: np.ndarray
) -> np.ndarray:
    probabilities = np.asarray(predict_proba(images)[factor], dtype=np.float64)
    if probabilities.ndim != 2 or len(probabilities) != len(classes):
        raise InvalidArgumentError(
            f"predict_proba: factor {factor} must give (n, classes) probabilities, got {probabilities.shape}"
        )
    if classes.max() >= probabilities.shape[1]:
        raise InvalidArgumentError(
            f"predict_proba: factor {factor} has class {int(classes.max())} but {probabilities.shape[1]} probabilities"
        )
    return probabilities[np.arange(len(classes)), classes]


def counterfactual_generativeness(
    factors: Any,
    codes: Any,
    q_sets: Sequence[Sequence[int]],
    decode: Callable[[np.ndarray], np.ndarray],
    predict_proba: Callable[[np.ndarray], Sequence[np.ndarray]],
    batch_size: int = 256,
    judge_accuracy: Sequence[float] | None = None,
    min_judge_accuracy: float = DEFAULT_MIN_JUDGE_ACCURACY,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """CG of a representation (module docstring).

    Parameters
    ----------
    factors : array-like of shape (N, K)
        True factor classes of the examples; N >= 2, no column constant
        (:func:`repscope.validation.check_factors_codes`).
    codes : array-like of shape (N, L)
        Their finite codes (the encoder's means); the baselines are taken over these rows.
    q_sets : sequence of K sequences of int
        The latents attributed to each factor (``unique_capture(...)["q_sets"]["rho1"]``).
    decode : callable
        ``(n, L)`` float codes -> ``n`` images (any array ``predict_proba`` takes).
    predict_proba : callable
        ``n`` images -> a sequence of K arrays, factor ``i``'s ``(n, C_i)`` class probabilities.
    batch_size : int, default=256
        Examples decoded at a time.
    judge_accuracy : sequence of K float, optional
        Held-out accuracy of each factor's classifier (``predict_proba``'s judges), recorded in the
        result and checked against ``min_judge_accuracy`` (:func:`check_judges`).
    min_judge_accuracy : float, default=0.9
        The least accuracy of a judge.
    refuse_weak_judges : bool, default=False
        Raise instead of warning when a judge is below ``min_judge_accuracy``.

    Returns
    -------
    dict
        ``"cg"``, ``"cg_per_factor"`` (K floats), ``"ice_q"`` and ``"ice_others"`` (K mean ICEs),
        ``"judge_accuracy"`` (K floats, or None when not given), ``"judge_ok"`` (bool, or None when not
        given), ``"weak_judges"`` (indices of the factors whose judge is weak) and ``"params"`` (the
        q_sets, batch size and ``min_judge_accuracy``).

    Raises
    ------
    InvalidArgumentError
        When ``factors`` or ``codes`` break :func:`repscope.validation.check_factors_codes`, on a q_set
        out of range, on probabilities that do not fit the classes, on a ``judge_accuracy`` of the wrong
        length or range, or on a weak judge with ``refuse_weak_judges``.
    """
    factors, codes, sets = _check(factors, codes, q_sets)
    batch_size = check_positive_int(batch_size, "batch_size")
    threshold = _check_threshold(min_judge_accuracy)
    judges: dict[str, Any] = {"judge_accuracy": None, "judge_ok": None, "weak_judges": []}
    if judge_accuracy is not None:
        names = [f"factor {i}" for i in range(factors.shape[1])]
        judges = check_judges(judge_accuracy, names, min_judge_accuracy, refuse=refuse_weak_judges)
        judges["weak_judges"] = [names.index(name) for name in judges["weak_judges"]]
    low, high = codes.min(axis=0), codes.max(axis=0)
    num_factors, num_latents = factors.shape[1], codes.shape[1]
    total = np.zeros(num_factors)
    ice_q_sum, ice_o_sum = np.zeros(num_factors), np.zeros(num_factors)
    for start in range(0, len(codes), int(batch_size)):
        z = codes[start : start + int(batch_size)]
        truth = factors[start : start + int(batch_size)]
        # the value of each latent over the dataset farthest from the example's own
        baseline = np.where(np.abs(z - low) >= np.abs(z - high), low, high)
        original = decode(z)
        for i, latents in enumerate(sets):
            inside = np.zeros(num_latents, dtype=bool)
            inside[latents] = True
            on_q = np.where(inside, baseline, z)
            on_others = np.where(inside, z, baseline)
            p0 = _true_class_probability(predict_proba, original, i, truth[:, i])
            ice_q = np.abs(p0 - _true_class_probability(predict_proba, decode(on_q), i, truth[:, i]))
            ice_o = np.abs(p0 - _true_class_probability(predict_proba, decode(on_others), i, truth[:, i]))
            total[i] += np.abs(ice_q - ice_o).sum()
            ice_q_sum[i] += ice_q.sum()
            ice_o_sum[i] += ice_o.sum()
    n = len(codes)
    per_factor = total / n
    return {
        "cg": float(per_factor.mean()),
        "cg_per_factor": per_factor.tolist(),
        "ice_q": (ice_q_sum / n).tolist(),
        "ice_others": (ice_o_sum / n).tolist(),
        **judges,
        "params": {"q_sets": sets, "batch_size": int(batch_size), "min_judge_accuracy": threshold},
    }


__all__ = ["DEFAULT_MIN_JUDGE_ACCURACY", "check_judges", "counterfactual_generativeness"]
