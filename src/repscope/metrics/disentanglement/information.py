"""Information- and predictor-based disentanglement metrics: MIG, SAP, modularity and explicitness.

Each metric takes ``factors`` of shape ``(N, K)`` (integer factor classes, one column per generative
factor) and ``codes`` of shape ``(N, L)`` (finite floats, one column per latent dimension), checked by
:func:`repscope.validation.check_factors_codes` (no constant factor, N >= 2), and returns a dict that
holds its score, the intermediate matrices and the parameters that change its value.

The defaults follow disentanglement_lib (Locatello et al., 2019) so that numbers compare with the
papers that used it:

* codes are discretised per latent by a ``num_bins = 20`` equal-width histogram
  (``np.digitize(z, np.histogram(z, num_bins)[1][:-1])``, bins numbered 1..num_bins:
  :func:`repscope.metrics.disentanglement.discretize.histogram_discretize`);
* mutual information is in nats, with the plug-in (empirical-frequency) estimate of
  ``sklearn.metrics.mutual_info_score``; here it is computed for all (latent, factor) pairs from
  contingency tables built with one ``np.bincount`` per factor;
* where disentanglement_lib draws separate train and test samples, these functions take one array and
  split it by rows: the first ``ceil(N * (1 - test_fraction))`` rows train, the rest test
  (``test_fraction = 0.2``, the 80 % train split of disentanglement_lib's ``split_train_test``). No
  shuffling is done (the result is deterministic), so pass rows in random order — rows sorted by a
  factor would leave classes of that factor out of one side.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import mutual_info_score, roc_auc_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.discretize import histogram_discretize
from repscope.validation import check_factors_codes, check_positive_int, check_training_factors

__all__ = ["mig", "modularity_explicitness", "sap"]

# disentanglement_lib's SAP sets a latent's R^2 to 0 when its variance is below this
_SAP_MIN_VARIANCE = 1e-12


# ----------------------------------------------------------------------------------------------------------------------
# validation and shared steps


def _check_inputs(factors: Any, codes: Any, *, integer_factors: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(factors, codes)`` as 2-D float64 arrays after the rule every factor/code metric shares
    (:func:`repscope.validation.check_factors_codes`)."""
    factors_array, codes_array = check_factors_codes(
        factors, codes, discrete_factors=integer_factors, continuous_option="continuous_factors=True"
    )
    # the histograms, contingency tables and classifiers below have always worked on float64 factors
    return factors_array.astype(np.float64, copy=False), codes_array


def _split(num_rows: int, test_fraction: Any) -> int:
    """Number of training rows: ``ceil(N * (1 - test_fraction))``, leaving at least one row on each side."""
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float | np.floating):
        raise InvalidArgumentError(f"test_fraction: expected a number in (0, 1), got {test_fraction!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise InvalidArgumentError(f"test_fraction: expected a number strictly between 0 and 1, got {test_fraction!r}")
    # round() absorbs float error such as 1000 * 0.8 = 800.0000000000001
    num_train = math.ceil(round(num_rows * (1.0 - float(test_fraction)), 9))
    if not 1 <= num_train < num_rows:
        raise InvalidArgumentError(
            f"test_fraction: {test_fraction} leaves {num_train} training and {num_rows - num_train} test rows "
            f"of N={num_rows}; both must be at least 1"
        )
    return num_train


def _class_indices(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, labels recoded as 0..(k - 1) in ascending order, and the number of classes k of each column.

    Integer columns with a small range (histogram bins, factor classes) are recoded through a lookup
    table in linear time; others through ``np.unique``.
    """
    indices = np.empty(labels.shape, dtype=np.int64)
    sizes = np.empty(labels.shape[1], dtype=np.int64)
    for column in range(labels.shape[1]):
        values = labels[:, column]
        if values.dtype.kind == "f" and np.all(np.abs(values) < 2**53) and np.all(values == np.round(values)):
            values = values.astype(np.int64)  # whole-number floats (checked factor classes) take the fast path
        if values.dtype.kind in "iu" and values.size and int(values.max()) - int(values.min()) <= 4 * values.size:
            shifted = values - values.min()
            present = np.bincount(shifted) > 0
            lookup = np.cumsum(present) - 1
            indices[:, column] = lookup[shifted]
            sizes[column] = lookup[-1] + 1
        else:
            classes, indices[:, column] = np.unique(values, return_inverse=True)
            sizes[column] = classes.size
    return indices, sizes


def _entropy(labels: np.ndarray) -> np.ndarray:
    """Plug-in entropy in nats of each column of ``labels`` (``mutual_info_score(y, y)``)."""
    indices, _ = _class_indices(labels)
    entropies = np.empty(labels.shape[1])
    for column in range(labels.shape[1]):
        probabilities = np.bincount(indices[:, column]) / labels.shape[0]
        probabilities = probabilities[probabilities > 0]
        entropies[column] = -np.sum(probabilities * np.log(probabilities))
    return entropies


def _mutual_information(discrete_codes: np.ndarray, factor_labels: np.ndarray) -> np.ndarray:
    """Plug-in mutual information in nats between every code column and every factor column, shape (L, K).

    ``I(z; v) = sum_{a,b} p(a, b) log(p(a, b) / (p(a) p(b)))`` over the joint frequencies ``p(a, b)`` of the
    contingency table, which holds the same value as ``sklearn.metrics.mutual_info_score(v, z)``
    (clipped at 0 as sklearn does). One ``np.bincount`` per factor fills the tables of all latents at once.
    """
    num_rows, num_codes = discrete_codes.shape
    code_indices, code_sizes = _class_indices(discrete_codes)
    factor_indices, factor_sizes = _class_indices(factor_labels)
    max_code_size = int(code_sizes.max())
    latent_offsets = np.arange(num_codes, dtype=np.int64) * max_code_size
    information = np.empty((num_codes, factor_labels.shape[1]))
    code_cells = code_indices + latent_offsets
    cells = np.empty_like(code_cells)  # reused for every factor: in place beats fresh temporaries
    for factor in range(factor_labels.shape[1]):
        size = int(factor_sizes[factor])
        # cell of each (row, latent): ((latent * max_code_size) + code class) * size + factor class
        np.multiply(code_cells, size, out=cells)
        cells += factor_indices[:, factor, None]
        joint = np.bincount(cells.ravel(), minlength=num_codes * max_code_size * size)
        joint = joint.reshape(num_codes, max_code_size, size) / num_rows
        code_marginal = joint.sum(axis=2, keepdims=True)
        factor_marginal = joint.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = joint * np.log(joint / (code_marginal * factor_marginal))
        information[:, factor] = np.where(joint > 0, terms, 0.0).sum(axis=(1, 2))
    return np.clip(information, 0.0, None)


def _prepare_mig(factors: Any, codes: Any, num_bins: Any, continuous_factors: bool):
    num_bins = check_positive_int(num_bins, "num_bins")
    factors, codes = _check_inputs(factors, codes, integer_factors=not continuous_factors)
    factor_labels = histogram_discretize(factors, num_bins) if continuous_factors else factors
    return factor_labels, histogram_discretize(codes, num_bins), num_bins


def _mig_from_matrix(information: np.ndarray, entropy: np.ndarray) -> np.ndarray:
    if information.shape[0] < 2:
        top_two = np.vstack([information[0], np.zeros_like(information[0])])
    else:
        top_two = -np.sort(-information, axis=0)[:2]
    return (top_two[0] - top_two[1]) / entropy


# ----------------------------------------------------------------------------------------------------------------------
# MIG


def mig(factors: Any, codes: Any, num_bins: int = 20, continuous_factors: bool = False) -> dict[str, Any]:
    """Mutual Information Gap (Chen et al., 2018), as computed by disentanglement_lib.

    Each latent ``z_i`` is discretised by a ``num_bins``-bin equal-width histogram over its range; with
    ``I(z_i; v_k)`` the plug-in mutual information in nats and ``H(v_k)`` the plug-in entropy of factor
    ``v_k``::

        MIG_k = (I(z_(1); v_k) - I(z_(2); v_k)) / H(v_k),     MIG = mean_k MIG_k

    where ``z_(1)`` and ``z_(2)`` are the latents with the largest and second-largest information about
    ``v_k``. Scores lie in [0, 1]; 1 means one latent alone carries everything about each factor.

    With ``continuous_factors=True`` (not in disentanglement_lib, which assumes discrete factors) each
    factor is discretised by the same ``num_bins``-bin histogram rule as the codes, and both
    ``I`` and ``H`` use the discretised factor: ``I(z; v_bin) <= H(v_bin)``, so the score stays in [0, 1]
    and is the MIG of the factor measured to ``num_bins`` levels. (A differential entropy would be
    negative or arbitrary in scale for a factor in small units, and would not bound the ratio.)

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Ground-truth factor classes (integers; whole-number floats accepted), or any finite values with
        ``continuous_factors=True``. No column may be constant.
    codes : array-like of shape (N, L)
        Finite latent codes, e.g. the encoder means.
    num_bins : int, default 20
        Histogram bins per latent (and per factor with ``continuous_factors=True``); 20 in
        disentanglement_lib.
    continuous_factors : bool, default False
        Treat factors as continuous and discretise them as described above.

    Returns
    -------
    dict
        ``mig`` (float), ``mig_per_factor`` (list of K floats), ``mutual_information`` (L x K list of
        lists, nats), ``entropy`` (list of K floats, nats, of the factors as used), and ``params``
        (``num_bins``, ``continuous_factors``, ``discretization``).

    Raises
    ------
    InvalidArgumentError
        When the arrays have wrong shapes or different row counts, hold NaN or infinity, ``factors`` are
        not integers (with ``continuous_factors=False``), a factor is constant, or ``num_bins < 1``.

    References
    ----------
    Chen, Li, Grosse, Duvenaud. Isolating Sources of Disentanglement in Variational Autoencoders.
    NeurIPS 2018. Locatello et al. Challenging Common Assumptions in the Unsupervised Learning of
    Disentangled Representations, ICML 2019 (disentanglement_lib ``mig.py``).
    """
    factor_labels, discrete_codes, num_bins = _prepare_mig(factors, codes, num_bins, continuous_factors)
    information = _mutual_information(discrete_codes, factor_labels)
    entropy = _entropy(factor_labels)
    per_factor = _mig_from_matrix(information, entropy)
    return {
        "mig": float(np.mean(per_factor)),
        "mig_per_factor": per_factor.tolist(),
        "mutual_information": information.tolist(),
        "entropy": entropy.tolist(),
        "params": {
            "num_bins": num_bins,
            "continuous_factors": bool(continuous_factors),
            "discretization": "histogram",
        },
    }


def _mig_reference(factors: Any, codes: Any, num_bins: int = 20, continuous_factors: bool = False) -> dict[str, Any]:
    """Straightforward double loop over (latent, factor) with ``sklearn.metrics.mutual_info_score``.

    Kept to check :func:`mig`'s vectorised contingency tables (tests, benchmarks); same result keys.
    """
    factor_labels, discrete_codes, num_bins = _prepare_mig(factors, codes, num_bins, continuous_factors)
    num_codes, num_factors = discrete_codes.shape[1], factor_labels.shape[1]
    information = np.zeros((num_codes, num_factors))
    for latent in range(num_codes):
        for factor in range(num_factors):
            information[latent, factor] = mutual_info_score(factor_labels[:, factor], discrete_codes[:, latent])
    entropy = np.array([mutual_info_score(factor_labels[:, k], factor_labels[:, k]) for k in range(num_factors)])
    per_factor = _mig_from_matrix(information, entropy)
    return {
        "mig": float(np.mean(per_factor)),
        "mig_per_factor": per_factor.tolist(),
        "mutual_information": information.tolist(),
        "entropy": entropy.tolist(),
        "params": {"num_bins": num_bins, "continuous_factors": bool(continuous_factors), "discretization": "histogram"},
    }


# ----------------------------------------------------------------------------------------------------------------------
# SAP


def _top_two_gap(scores: np.ndarray) -> np.ndarray:
    """Per column (factor), largest minus second-largest entry (the largest itself with a single latent)."""
    if scores.shape[0] < 2:
        return scores[0].copy()
    top_two = -np.sort(-scores, axis=0)[:2]
    return top_two[0] - top_two[1]


def sap(factors: Any, codes: Any, continuous_factors: bool = False, test_fraction: float = 0.2) -> dict[str, Any]:
    """Separated Attribute Predictability (Kumar et al., 2018), as computed by disentanglement_lib.

    A score matrix ``S`` of shape (L, K) rates how well each single latent ``z_i`` predicts each factor
    ``v_k``:

    * discrete factors (default): a ``sklearn.svm.LinearSVC(C=0.01, class_weight="balanced")`` is fitted
      on the training rows of ``z_i`` alone and ``S[i, k]`` is its accuracy on the test rows;
    * continuous factors: ``S[i, k] = cov(z_i, v_k)^2 / (var(z_i) var(v_k))`` (the R^2 of a linear fit,
      ``ddof=1``) on the training rows, 0 where ``var(z_i) <= 1e-12``. The test rows are not used,
      as in disentanglement_lib.

    ``SAP_k = S_(1)k - S_(2)k`` (largest minus second-largest entry of column k), ``SAP = mean_k SAP_k``.

    The first ``ceil(N * (1 - test_fraction))`` rows train and the rest test, without shuffling (see
    the module docstring): pass rows in random order.

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Ground-truth factor classes (integers; whole-number floats accepted), or any finite values with
        ``continuous_factors=True``. No column may be constant, nor (discrete) in the training rows.
    codes : array-like of shape (N, L)
        Finite latent codes.
    continuous_factors : bool, default False
        Score by R^2 instead of classification accuracy.
    test_fraction : float, default 0.2
        Fraction of rows (the last ones) held out for testing.

    Returns
    -------
    dict
        ``sap`` (float), ``sap_per_factor`` (list of K floats), ``score_matrix`` (L x K list of lists),
        ``num_train`` and ``num_test`` (ints), and ``params`` (``continuous_factors``, ``test_fraction``,
        ``svm_C``, ``split``).

    Raises
    ------
    InvalidArgumentError
        On the input errors of :func:`mig`, a ``test_fraction`` outside (0, 1) or leaving a side empty,
        and a discrete factor with a single class in the training rows.

    References
    ----------
    Kumar, Sattigeri, Balakrishnan. Variational Inference of Disentangled Latent Concepts from
    Unlabeled Observations. ICLR 2018. disentanglement_lib ``sap_score.py``.
    """
    factors, codes = _check_inputs(factors, codes, integer_factors=not continuous_factors)
    num_train = _split(codes.shape[0], test_fraction)
    codes_train, codes_test = codes[:num_train], codes[num_train:]
    factors_train, factors_test = factors[:num_train], factors[num_train:]
    num_codes, num_factors = codes.shape[1], factors.shape[1]
    scores = np.zeros((num_codes, num_factors))
    if continuous_factors:
        code_variance = codes_train.var(axis=0, ddof=1)
        factor_variance = factors_train.var(axis=0, ddof=1)
        centred_codes = codes_train - codes_train.mean(axis=0)
        centred_factors = factors_train - factors_train.mean(axis=0)
        covariance = centred_codes.T @ centred_factors / (num_train - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r_squared = covariance**2 / np.outer(code_variance, factor_variance)
        scores = np.where(code_variance[:, None] > _SAP_MIN_VARIANCE, r_squared, 0.0)
        scores = np.nan_to_num(scores, nan=0.0, posinf=0.0)
    else:
        check_training_factors(factors_train)
        for latent in range(num_codes):
            for factor in range(num_factors):
                classifier = LinearSVC(C=0.01, class_weight="balanced", random_state=0)
                classifier.fit(codes_train[:, latent, None], factors_train[:, factor])
                predictions = classifier.predict(codes_test[:, latent, None])
                scores[latent, factor] = np.mean(predictions == factors_test[:, factor])
    per_factor = _top_two_gap(scores)
    return {
        "sap": float(np.mean(per_factor)),
        "sap_per_factor": per_factor.tolist(),
        "score_matrix": scores.tolist(),
        "num_train": int(num_train),
        "num_test": int(codes.shape[0] - num_train),
        "params": {
            "continuous_factors": bool(continuous_factors),
            "test_fraction": float(test_fraction),
            "svm_C": 0.01,
            "split": "first rows train, last rows test",
        },
    }


# ----------------------------------------------------------------------------------------------------------------------
# modularity and explicitness


def _modularity(information: np.ndarray) -> np.ndarray:
    """Per latent, ``1 - delta`` with ``delta = sum_{k != k*} I_k^2 / ((K - 1) I_k*^2)``; 0 where ``I_k* = 0``."""
    squared = information**2
    largest = squared.max(axis=1)
    num_factors = information.shape[1]
    if num_factors == 1:
        # a single factor: every informative latent matches the template exactly
        return np.where(largest == 0.0, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        deviation = (squared.sum(axis=1) - largest) / (largest * (num_factors - 1))
    scores = 1.0 - deviation
    return np.where(largest == 0.0, 0.0, scores)


def _roc_auc_per_class(labels: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> float:
    """Mean over classes of the one-vs-rest ROC AUC of the class's probability column.

    disentanglement_lib scores ``roc_auc_score(MultiLabelBinarizer(labels), probabilities)`` (a macro
    average over the class columns); a class absent from ``labels`` (or the only class present) has no
    defined AUC and is left out of the mean here instead of failing.
    """
    aucs = []
    for column, label in enumerate(classes):
        positives = labels == label
        if 0 < positives.sum() < labels.size:
            aucs.append(roc_auc_score(positives, probabilities[:, column]))
    return float(np.mean(aucs)) if aucs else float("nan")


def modularity_explicitness(factors: Any, codes: Any, num_bins: int = 20, test_fraction: float = 0.2) -> dict[str, Any]:
    """Modularity and explicitness (Ridgeway and Mozer, 2018), as computed by disentanglement_lib.

    **Modularity.** On the training rows, with ``I`` the (L, K) plug-in mutual information between the
    ``num_bins``-histogram-discretised latents and the factors, each latent is compared with the ideal
    template that keeps only its most informative factor ``k*``::

        delta_i = sum_{k != k*} I[i, k]^2 / ((K - 1) I[i, k*]^2),    modularity_i = 1 - delta_i

    (0 for a latent with no information), and ``modularity_score = mean_i modularity_i``.

    **Explicitness.** Codes are standardised with the training rows' mean and standard deviation
    (``ddof=0``). Per factor, a one-vs-rest L2 logistic regression (``C=1``, liblinear: the
    ``LogisticRegression()`` default of the scikit-learn that disentanglement_lib ran on) is fitted on all
    latents of the training rows; the factor's explicitness is the mean over its classes of the ROC AUC
    of that class's predicted probability, on the training rows and on the test rows.
    ``explicitness_score_train/test`` average it over factors.

    The first ``ceil(N * (1 - test_fraction))`` rows train and the rest test, without shuffling.

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Ground-truth factor classes (integers; whole-number floats accepted); no column constant, in all
        rows or in the training rows.
    codes : array-like of shape (N, L)
        Finite latent codes.
    num_bins : int, default 20
        Histogram bins per latent for the mutual information.
    test_fraction : float, default 0.2
        Fraction of rows (the last ones) held out for testing.

    Returns
    -------
    dict
        ``modularity_score``, ``explicitness_score_train``, ``explicitness_score_test`` (floats),
        ``modularity_per_code`` (list of L), ``explicitness_per_factor_train`` / ``_test`` (lists of K),
        ``mutual_information`` (L x K, nats, training rows), ``num_train``, ``num_test``, and ``params``
        (``num_bins``, ``test_fraction``, ``classifier``, ``split``).

    Raises
    ------
    InvalidArgumentError
        On the input errors of :func:`mig` and :func:`sap`.

    References
    ----------
    Ridgeway, Mozer. Learning Deep Disentangled Embeddings With the F-Statistic Loss. NeurIPS 2018.
    disentanglement_lib ``modularity_explicitness.py``.
    """
    num_bins = check_positive_int(num_bins, "num_bins")
    factors, codes = _check_inputs(factors, codes)
    num_train = _split(codes.shape[0], test_fraction)
    codes_train, codes_test = codes[:num_train], codes[num_train:]
    factors_train, factors_test = factors[:num_train], factors[num_train:]
    check_training_factors(factors_train)

    information = _mutual_information(histogram_discretize(codes_train, num_bins), factors_train)
    modularity_per_code = _modularity(information)

    mean = codes_train.mean(axis=0)
    std = codes_train.std(axis=0)
    # a constant latent would divide by zero; it carries nothing, so leave it centred at 0
    std = np.where(std > 0, std, 1.0)
    normalized_train = (codes_train - mean) / std
    normalized_test = (codes_test - mean) / std
    explicitness_train = np.empty(factors.shape[1])
    explicitness_test = np.empty(factors.shape[1])
    for factor in range(factors.shape[1]):
        classifier = OneVsRestClassifier(LogisticRegression(C=1.0, solver="liblinear"))
        classifier.fit(normalized_train, factors_train[:, factor])
        explicitness_train[factor] = _roc_auc_per_class(
            factors_train[:, factor], classifier.predict_proba(normalized_train), classifier.classes_
        )
        explicitness_test[factor] = _roc_auc_per_class(
            factors_test[:, factor], classifier.predict_proba(normalized_test), classifier.classes_
        )
    return {
        "modularity_score": float(np.mean(modularity_per_code)),
        "explicitness_score_train": float(np.nanmean(explicitness_train)),
        "explicitness_score_test": float(np.nanmean(explicitness_test)),
        "modularity_per_code": modularity_per_code.tolist(),
        "explicitness_per_factor_train": explicitness_train.tolist(),
        "explicitness_per_factor_test": explicitness_test.tolist(),
        "mutual_information": information.tolist(),
        "num_train": int(num_train),
        "num_test": int(codes.shape[0] - num_train),
        "params": {
            "num_bins": num_bins,
            "test_fraction": float(test_fraction),
            "classifier": "one-vs-rest LogisticRegression(C=1, liblinear) on train-standardised codes",
            "split": "first rows train, last rows test",
        },
    }
