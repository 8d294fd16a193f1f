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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.validation import check_factors_codes


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

    Returns
    -------
    dict
        ``"cg"``, ``"cg_per_factor"`` (K floats), ``"ice_q"`` and ``"ice_others"`` (K mean ICEs) and
        ``"params"`` (the q_sets and batch size).

    Raises
    ------
    InvalidArgumentError
        When ``factors`` or ``codes`` break :func:`repscope.validation.check_factors_codes`, on a q_set
        out of range, or on probabilities that do not fit the classes.
    """
    factors, codes, sets = _check(factors, codes, q_sets)
    if int(batch_size) < 1:
        raise InvalidArgumentError(f"batch_size: must be >= 1, got {batch_size}")
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
        "params": {"q_sets": sets, "batch_size": int(batch_size)},
    }


__all__ = ["counterfactual_generativeness"]
