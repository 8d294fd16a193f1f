"""DCI: disentanglement, completeness and informativeness (Eastwood & Williams, 2018).

For each ground-truth factor ``k`` a gradient-boosted tree classifier predicts the factor's value from
the ``L`` code variables. The absolute feature importances of the ``K`` classifiers form the importance
matrix ``R`` (``L x K``: one row per code variable, one column per factor), and

* **disentanglement** = ``sum_l rho_l (1 - H_K(P_l))``: ``P_l`` is row ``l`` of ``R`` normalised to sum
  to one, ``H_K`` the entropy in base ``K`` (so in [0, 1]), ``rho_l = sum_k R_lk / sum_lk R_lk`` the
  share of the total importance held by code ``l``. A code that predicts one factor only scores 1, one
  whose importance is spread evenly over all factors scores 0.
* **completeness** = ``sum_k rho_k (1 - H_L(P_k))`` with ``P_k`` column ``k`` of ``R`` normalised,
  ``H_L`` the entropy in base ``L`` and ``rho_k = sum_l R_lk / sum_lk R_lk``: 1 when every factor is
  captured by a single code.
* **informativeness** = the classifiers' accuracy, averaged over factors, on the training rows
  (``dci_informativeness_train``) and on the held-out rows (``dci_informativeness_test``).

The computation follows disentanglement_lib's ``evaluation/metrics/dci.py`` (Locatello et al., 2019),
whose numbers the published DCI tables report:

* one ``sklearn.ensemble.GradientBoostingClassifier`` per factor with sklearn's default parameters
  (100 stages of depth-3 trees, learning rate 0.1, no subsampling);
* importances are ``abs(feature_importances_)``; "informativeness" is accuracy (higher is better);
* entropies are ``scipy.stats.entropy(p + 1e-11, base=...)``: the ``1e-11`` is added to every
  importance before normalising, so a code with no importance at all counts as spread evenly (its
  disentanglement is 0, with weight 0);
* when the whole matrix is zero, the weights ``rho`` are uniform instead of 0 / 0.

Deviations, each for a reason:

* disentanglement_lib samples separate training and test sets from a generator; here the caller passes
  one table and the first ``round(train_fraction * N)`` rows train, the rest test (80/20 by default),
  so shuffle the rows first if they are ordered by factor value.
* the classifiers get ``random_state=seed`` (disentanglement_lib passes none). With ``subsample=1`` and
  ``max_features=None`` the only randomness of a tree is the order in which it tries features, which
  decides between equally good splits; fixing it makes the result reproducible byte for byte.
* with a single factor (``K = 1``) the base-1 entropy is 0 / 0 and disentanglement_lib returns NaN; here
  the normalised entropy of a one-point distribution is taken as 0, so disentanglement is 1 (no code can
  mix factors when there is one). Likewise completeness is 1 with a single code variable (``L = 1``).
* a factor that takes a single value (in all rows, or in the training rows) makes sklearn's classifier
  fail (it needs two classes); here that is an :class:`~repscope.errors.InvalidArgumentError` naming
  the factor column. Drop constant factors (e.g. dSprites' colour) before calling, as
  disentanglement_lib does through its ``latent_factor_indices``.

Classes that occur only in the test rows are never predicted, so they count as errors in
``dci_informativeness_test``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.stats
from joblib import Parallel, delayed
from sklearn.ensemble import GradientBoostingClassifier

from repscope.errors import InvalidArgumentError
from repscope.validation import as_array, check_factors_codes, check_positive_int, check_training_factors

__all__ = ["completeness_from_importance", "dci", "disentanglement_from_importance"]

# disentanglement_lib adds this to every importance before taking entropies (scipy normalises after)
_ENTROPY_EPSILON = 1e-11


def dci(
    factors: Any,
    codes: Any,
    *,
    train_fraction: float = 0.8,
    n_estimators: int = 100,
    seed: int = 0,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """DCI disentanglement, completeness and informativeness of ``codes`` with respect to ``factors``.

    One gradient-boosted tree classifier per factor predicts the factor from all code variables; see the
    module docstring for the formulas and how they follow disentanglement_lib.

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Ground-truth factor values, integer-valued (whole-number floats are accepted): each column is a
        class label for its classifier. No column may be constant
        (:func:`repscope.validation.check_factors_codes`).
    codes : array-like of shape (N, L)
        Finite code values, one row per row of ``factors``.
    train_fraction : float, default 0.8
        The first ``round(train_fraction * N)`` rows train the classifiers, the remaining rows test them.
        Both parts need at least 2 rows, and every factor needs at least two values among the training
        rows. The split is positional: shuffle rows that are sorted by factor value.
    n_estimators : int, default 100
        Boosting stages of each classifier (sklearn's and disentanglement_lib's default is 100; fewer
        is faster and gives other numbers).
    seed : int, default 0
        ``random_state`` of every classifier (see the module docstring); same seed, same result.
    n_jobs : int or None, default None
        Classifiers fitted at once, one per factor, in threads (sklearn's tree building releases the
        GIL: about 1.9x faster on 2 cores). ``None`` or 1 fits them one after another, -1 uses all
        cores (joblib's convention). The result does not depend on it.

    Returns
    -------
    dict
        ``dci_disentanglement``, ``dci_completeness`` (floats in [0, 1]),
        ``dci_informativeness_train``, ``dci_informativeness_test`` (mean accuracies over factors),
        ``accuracy_train_per_factor``, ``accuracy_test_per_factor`` (lists of K accuracies),
        ``importance_matrix`` (L lists of K importances: row = code variable, column = factor) and
        ``params`` (``train_fraction``, ``n_train``, ``n_test``, ``n_estimators``, ``seed``,
        ``classifier``).

    Raises
    ------
    InvalidArgumentError
        When ``factors`` or ``codes`` break :func:`repscope.validation.check_factors_codes` (not 2-D,
        ``factors`` not integer-valued, NaN or infinity, different row counts, a constant factor), a
        split has fewer than 2 rows, a factor is constant over the training rows, or a parameter is out
        of range.

    References
    ----------
    Eastwood & Williams, A framework for the quantitative evaluation of disentangled representations,
    ICLR 2018. Locatello et al., Challenging common assumptions in the unsupervised learning of
    disentangled representations, ICML 2019 (disentanglement_lib).
    """
    factor_labels, code_values = check_factors_codes(factors, codes)
    n_rows = factor_labels.shape[0]
    train_fraction = _check_train_fraction(train_fraction)
    n_estimators = check_positive_int(n_estimators, "n_estimators")
    seed = _check_seed(seed)
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs == 0):
        raise InvalidArgumentError(f"n_jobs: expected None, a positive integer or -1 (all cores), got {n_jobs!r}")

    n_train = int(round(train_fraction * n_rows))
    n_test = n_rows - n_train
    if n_train < 2 or n_test < 2:
        raise InvalidArgumentError(
            f"train_fraction: {train_fraction} of {n_rows} rows gives {n_train} training and {n_test} test rows; "
            "both need at least 2"
        )
    codes_train, codes_test = code_values[:n_train], code_values[n_train:]
    labels_train, labels_test = factor_labels[:n_train], factor_labels[n_train:]
    check_training_factors(labels_train)

    def fit_one(k: int) -> tuple[np.ndarray, float, float]:
        model = GradientBoostingClassifier(n_estimators=n_estimators, random_state=seed)
        model.fit(codes_train, labels_train[:, k])
        accuracy_train = float(np.mean(model.predict(codes_train) == labels_train[:, k]))
        accuracy_test = float(np.mean(model.predict(codes_test) == labels_test[:, k]))
        return np.abs(model.feature_importances_), accuracy_train, accuracy_test

    n_factors = factor_labels.shape[1]
    if n_jobs is None or n_jobs == 1:
        fitted = [fit_one(k) for k in range(n_factors)]
    else:
        fitted = Parallel(n_jobs=int(n_jobs), prefer="threads")(delayed(fit_one)(k) for k in range(n_factors))

    importance = np.stack([importances for importances, _, _ in fitted], axis=1)
    accuracies_train = [accuracy for _, accuracy, _ in fitted]
    accuracies_test = [accuracy for _, _, accuracy in fitted]
    return {
        "dci_disentanglement": disentanglement_from_importance(importance),
        "dci_completeness": completeness_from_importance(importance),
        "dci_informativeness_train": float(np.mean(accuracies_train)),
        "dci_informativeness_test": float(np.mean(accuracies_test)),
        "accuracy_train_per_factor": accuracies_train,
        "accuracy_test_per_factor": accuracies_test,
        "importance_matrix": importance.tolist(),
        "params": {
            "train_fraction": train_fraction,
            "n_train": n_train,
            "n_test": n_test,
            "n_estimators": n_estimators,
            "seed": seed,
            "classifier": "sklearn.ensemble.GradientBoostingClassifier",
        },
    }


def disentanglement_from_importance(importance_matrix: Any) -> float:
    """DCI disentanglement of an importance matrix (rows: code variables, columns: factors).

    ``sum_l rho_l (1 - H_K(P_l))`` with ``P_l`` row ``l`` plus ``1e-11`` normalised to sum to one,
    ``H_K`` the entropy in base ``K`` (the number of columns) and ``rho_l`` row ``l``'s share of the
    matrix total (uniform when the matrix is all zeros), as disentanglement_lib computes it. With one
    column the entropy term is 0 (disentanglement_lib: NaN).

    Parameters
    ----------
    importance_matrix : array-like of shape (L, K)
        Finite, non-negative importances of code ``l`` for factor ``k``.

    Returns
    -------
    float
        In [0, 1]: 1 when each code is important for one factor only, 0 when every code's importance is
        spread evenly over all factors.

    References
    ----------
    Eastwood & Williams, A framework for the quantitative evaluation of disentangled representations,
    ICLR 2018, section 2 ("disentanglement").
    """
    matrix = _importance_array(importance_matrix)
    return _weighted_one_minus_entropy(matrix)


def completeness_from_importance(importance_matrix: Any) -> float:
    """DCI completeness of an importance matrix (rows: code variables, columns: factors).

    ``sum_k rho_k (1 - H_L(P_k))`` with ``P_k`` column ``k`` plus ``1e-11`` normalised to sum to one,
    ``H_L`` the entropy in base ``L`` (the number of rows) and ``rho_k`` column ``k``'s share of the
    matrix total (uniform when the matrix is all zeros), as disentanglement_lib computes it. With one row
    the entropy term is 0 (disentanglement_lib: NaN).

    Parameters
    ----------
    importance_matrix : array-like of shape (L, K)
        Finite, non-negative importances of code ``l`` for factor ``k``.

    Returns
    -------
    float
        In [0, 1]: 1 when each factor is captured by a single code, 0 when every factor's importance is
        spread evenly over all codes.

    References
    ----------
    Eastwood & Williams, A framework for the quantitative evaluation of disentangled representations,
    ICLR 2018, section 2 ("completeness").
    """
    matrix = _importance_array(importance_matrix)
    return _weighted_one_minus_entropy(matrix.T)


def _weighted_one_minus_entropy(matrix: np.ndarray) -> float:
    """``sum_i rho_i (1 - H(P_i))`` over the rows ``i`` of ``matrix``, entropy in base = its column count."""
    n_columns = matrix.shape[1]
    if n_columns == 1:
        # a one-point distribution has entropy 0 in any base; base 1 itself would give 0 / 0
        per_row = np.ones(matrix.shape[0])
    else:
        per_row = 1.0 - scipy.stats.entropy(matrix + _ENTROPY_EPSILON, base=n_columns, axis=1)
    total = matrix.sum()
    weights = matrix.sum(axis=1) / total if total > 0 else np.full(matrix.shape[0], 1.0 / matrix.shape[0])
    return float(np.sum(per_row * weights))


def _importance_array(value: Any) -> np.ndarray:
    matrix = as_array(value, "importance_matrix")
    if matrix.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"importance_matrix: expected numbers, got dtype {matrix.dtype}")
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise InvalidArgumentError(
            f"importance_matrix: expected a non-empty 2-D array (codes x factors), got shape {matrix.shape}"
        )
    matrix = matrix.astype(np.float64)
    if not np.all(np.isfinite(matrix)):
        raise InvalidArgumentError("importance_matrix: holds NaN or infinity")
    if np.any(matrix < 0):
        raise InvalidArgumentError("importance_matrix: holds negative values; importances are non-negative")
    return matrix


def _check_train_fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidArgumentError(f"train_fraction: expected a number in (0, 1), got {value!r}")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise InvalidArgumentError(f"train_fraction: expected a number in (0, 1), got {value}")
    return value


def _check_seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < 2**32:
        raise InvalidArgumentError(f"seed: expected an integer in [0, 2**32), got {value!r}")
    return int(value)
