"""Raw Zero-Shot representation metrics on soft-labels (Vargas, Kotyan and Matsuki, "Uncovering Why Deep
Neural Networks Lack Robustness: Representation Metrics that Link to Adversarial Attacks", Sec. 3).

A classifier is trained ``n`` times, each time without one class ``i``, and shown the test images of
that unknown class; its soft-labels ``e_j`` (``n - 1`` entries) say how it describes the unknown class
with the ones it knows. A classifier trained on all ``n`` classes gives the reference soft-labels ``e'``.
Inputs everywhere: ``loo[i]`` ``(m_i, n - 1)`` and ``full[i]`` ``(m_i, n)`` (the layout of
:mod:`repscope.data.zeroshot.softlabels`); rows are probability vectors, or with ``kind="capsule_lengths"`` a
CapsNet's raw capsule lengths (each in ``[0, 1]``, rows summing to anything).

Raw capsule lengths are what the authors' code scores for CapsNet: ``shashankkotyan/RepresentationMetrics``,
``code/networks/model.py``, ``Model.analyse_raw_zero_shot`` pickles ``self._model.predict(x)`` for each
excluded class, and the CapsNet's model output is its ``Length`` layer (``code/networks/cifar/capsnet.py``,
``CapsNet.network``), not a normalisation of it. The script that turned those pickles into DBI and AM
(``run_stats.py``, commented out of the README) is not released, so nothing shows a renormalisation there:
with ``kind="capsule_lengths"`` every metric reads the lengths as they are and applies the printed
formulas. Eq. 3 (DBI) and the Davies-Bouldin index use the rows ``e`` as they are; Eq. 4 (AM) sums the
model-without-the-class's rows as they are (``h_i``) and normalises only the full model's row without the
class (``e'``, "normalized such that they sum to one"), as it does for probabilities.

- :func:`raw_zero_shot_dbi`: the paper's "DBI" (Eq. 3), a within-cluster scatter (lower = tighter);
- :func:`davies_bouldin_soft_labels`: scikit-learn's standard Davies-Bouldin index of the same clusters;
- :func:`amalgam_metric`: the Amalgam Metric (Eq. 4), with the per-image-mean variant;
- :func:`amalgam_histograms`: ``h'_i`` and ``h_i`` of Eq. 4 (the paper's Figs. 4 and 6);
- :func:`rank_correlation`: Spearman's rank correlation between a metric and attack success across
  architectures (the paper's claim that the metrics track robustness).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata, spearmanr
from sklearn.metrics import davies_bouldin_score

from repscope.errors import InvalidArgumentError


def _checked(
    loo: Sequence[Any], full: Sequence[Any] | None = None, kind: str = "probabilities"
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    from repscope.data.zeroshot.softlabels import check_soft_labels  # noqa: PLC0415 -- data validates the layout

    if full is None:
        # the DBI needs only the loo arrays: give a matching, valid full array for the check (valid for either kind)
        full = [np.full((len(np.asarray(a)), len(loo)), 1.0 / len(loo)) for a in loo]
    checked = check_soft_labels(loo, full, kind=kind)
    return checked.loo, checked.full


def raw_zero_shot_dbi(loo: Sequence[Any], kind: str = "probabilities") -> dict[str, Any]:
    """The paper's "DBI" (Eq. 3): the root mean squared distance of each unknown class's soft-labels to
    their centroid, averaged over the ``n`` classes.

    .. math:: S_i = \\Big(\\frac{1}{m_i} \\sum_{j=1}^{m_i} \\lVert e_j - c_i \\rVert_2^2\\Big)^{1/2},
              \\qquad c_i = \\frac{1}{m_i} \\sum_j e_j, \\qquad \\mathrm{DBI} = \\frac{1}{n} \\sum_i S_i

    This is the within-cluster scatter ``S_i`` of the Davies-Bouldin index (with ``q = 2``), not the
    index itself: it rewards soft-labels of one unknown class that agree with each other, whatever their
    distance to other clusters. Lower is tighter. The paper's Table 2 reports the mean and standard
    deviation over the classes (``std`` here, population, ``ddof = 0``).

    Parameters
    ----------
    loo : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)``: the model trained without class ``i`` on class ``i``'s images.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are (:mod:`repscope.data.zeroshot.softlabels`); raw capsule lengths are read as they are.

    Returns
    -------
    dict
        ``dbi`` (mean of ``S_i``), ``dbi_std``, ``per_class`` (the ``S_i``), ``params`` (``n``, image counts,
        ``soft_label_kind``).
    """
    loo, _ = _checked(loo, kind=kind)
    scatter = np.array([np.sqrt(np.mean(np.sum((e - e.mean(axis=0)) ** 2, axis=1))) for e in loo])
    return {
        "dbi": float(scatter.mean()),
        "dbi_std": float(scatter.std()),
        "per_class": scatter.tolist(),
        "params": {"classes": len(loo), "images": [len(e) for e in loo], "soft_label_kind": kind},
    }


def davies_bouldin_soft_labels(loo: Sequence[Any], kind: str = "probabilities") -> dict[str, Any]:
    """The standard Davies-Bouldin index (Davies and Bouldin, 1979; scikit-learn's
    ``davies_bouldin_score``) of the ``n`` unknown-class clusters of soft-labels.

    The ``n - 1``-entry soft-labels of different models live in different spaces; each is placed in
    the common ``n``-class space by putting a 0 at its excluded class (the model gives that class no
    probability), so cluster ``i`` is ``loo[i]`` with a zero column inserted at ``i``. Then

    .. math:: \\mathrm{DB} = \\frac{1}{n} \\sum_i \\max_{k \\ne i} \\frac{s_i + s_k}{\\lVert c_i - c_k \\rVert_2}

    with ``s_i`` the mean Euclidean distance of cluster ``i``'s points to its centroid ``c_i``. Unlike the
    paper's Eq. 3 it weighs tightness against separation; lower is better.

    Parameters
    ----------
    loo : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)``.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are (:mod:`repscope.data.zeroshot.softlabels`); raw capsule lengths are read as they are.

    Returns
    -------
    dict
        ``davies_bouldin`` and ``params`` (``n``, the embedding rule, ``soft_label_kind``).
    """
    loo, _ = _checked(loo, kind=kind)
    embedded = [np.insert(e, i, 0.0, axis=1) for i, e in enumerate(loo)]
    points = np.concatenate(embedded)
    labels = np.concatenate([np.full(len(e), i) for i, e in enumerate(loo)])
    return {
        "davies_bouldin": float(davies_bouldin_score(points, labels)),
        "params": {"classes": len(loo), "embedding": "zero at the excluded class", "soft_label_kind": kind},
    }


def amalgam_histograms(
    loo: Sequence[Any], full: Sequence[Any], kind: str = "probabilities"
) -> tuple[np.ndarray, np.ndarray]:
    """The summed soft-labels ``h'_i`` and ``h_i`` of Eq. 4, one row per unknown class.

    ``e'`` is the full model's soft-label with entry ``i`` removed and the rest renormalised to sum to
    one (the "amalgam proportion" the ``n - 1`` model should reproduce); ``h'_i = sum_j e'_j`` and
    ``h_i = sum_j e_j`` over class ``i``'s ``m_i`` images. With raw capsule lengths ``e`` is summed as it is
    (its rows need not sum to one) and ``e'`` is renormalised all the same (module docstring).

    Parameters
    ----------
    loo, full : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)`` and ``full[i]`` ``(m_i, n)``.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are (:mod:`repscope.data.zeroshot.softlabels`); raw capsule lengths are read as they are.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``h_prime`` and ``h``, float64 ``(n, n - 1)``; row ``i``, column ``j`` is the known class ``j``
        of the model without ``i`` (base class ``j`` for ``j < i``, ``j + 1`` otherwise).
    """
    loo, full = _checked(loo, full, kind)
    h_prime, h = [], []
    for i, (e, reference) in enumerate(zip(loo, full)):
        rest = np.delete(reference, i, axis=1)
        totals = rest.sum(axis=1, keepdims=True)
        # a full model certain of the unknown class leaves nothing to renormalise: spread it evenly
        # (the proportion is undefined there; a uniform row adds the least information)
        rest = np.divide(rest, totals, out=np.full_like(rest, 1.0 / rest.shape[1]), where=totals > 0)
        h_prime.append(rest.sum(axis=0))
        h.append(e.sum(axis=0))
    return np.array(h_prime), np.array(h)


def amalgam_metric(loo: Sequence[Any], full: Sequence[Any], kind: str = "probabilities") -> dict[str, Any]:
    """The Amalgam Metric (Eq. 4) and its per-image-mean variant.

    .. math:: \\mathrm{AM} = \\frac{1}{n} \\sum_{i=1}^{n} \\frac{\\lVert h'_i - h_i \\rVert_1}{n - 1}

    with ``h'_i``, ``h_i`` the summed soft-labels of :func:`amalgam_histograms`. Because they are sums
    over the ``m_i`` images, AM grows with the number of images: a term is at most ``2 m_i / (n - 1)``.
    The per-image variant divides each ``h`` by ``m_i`` first (``am_per_image``, in ``[0, 2 / (n - 1)]``),
    so sets of different sizes compare; with equal ``m_i`` the two are proportional and rank models alike.

    The paper's Table 3 (AM 101-281 on CIFAR-10) is not Eq. 4 over the 1,000 test images a class: their
    terms would be at most ``2 x 1000 / 9 = 222``, yet ResNet's mean is 281.3 (+- 107.8). The authors'
    released code (``shashankkotyan/RepresentationMetrics``, ``code/networks/model.py``,
    ``Model.analyse_raw_zero_shot``) stores the soft-labels of each excluded class's 5,000 training and
    1,000 test images (``excluded_train.pkl``, ``excluded_test.pkl``; the full model's on all 50,000 and
    10,000), but the script that computed AM from them (``run_stats.py``, named in its README) was never
    released, so which images, sums or normalisation Table 3 used cannot be read from the code. Sums over
    5,000 images a class (bound 1,111) or Eq. 4 without the ``1 / (n - 1)`` over 1,000 (bound 2,000)
    would both allow 281. No value here is comparable in size with Table 3: compare the order of the
    architectures (``am`` and ``am_per_image`` give the same order when every class has the same number
    of images), or ``am_per_image`` between runs.

    Parameters
    ----------
    loo, full : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)`` and ``full[i]`` ``(m_i, n)``.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are (:mod:`repscope.data.zeroshot.softlabels`); raw capsule lengths are read as they are.

    Returns
    -------
    dict
        ``am`` (Eq. 4, sums) and ``am_std`` (over classes, ``ddof = 0``; the paper's Table 3 "±"),
        ``am_per_image`` and ``am_per_image_std``, ``per_class`` and ``per_class_per_image`` (the
        ``||h'_i - h_i||_1 / (n - 1)`` terms), ``params`` (``n``, image counts, ``soft_label_kind``).
    """
    h_prime, h = amalgam_histograms(loo, full, kind)
    n = h_prime.shape[0]
    counts = np.array([len(np.asarray(e)) for e in loo], dtype=np.float64)
    terms = np.abs(h_prime - h).sum(axis=1) / (n - 1)
    per_image = terms / counts
    return {
        "am": float(terms.mean()),
        "am_std": float(terms.std()),
        "am_per_image": float(per_image.mean()),
        "am_per_image_std": float(per_image.std()),
        "per_class": terms.tolist(),
        "per_class_per_image": per_image.tolist(),
        "params": {"classes": n, "images": counts.astype(int).tolist(), "soft_label_kind": kind},
    }


def zero_shot_scores(loo: Sequence[Any], full: Sequence[Any], kind: str = "probabilities") -> dict[str, Any]:
    """Every Raw Zero-Shot score of one architecture: the paper's DBI, the standard Davies-Bouldin
    index, AM and AM per image (see each function), as one flat dict of floats plus the per-class terms.

    Parameters
    ----------
    loo, full : sequence of array-like
        ``loo[i]`` ``(m_i, n - 1)`` and ``full[i]`` ``(m_i, n)``.
    kind : {"probabilities", "capsule_lengths"}, default="probabilities"
        What the rows are (:mod:`repscope.data.zeroshot.softlabels`); raw capsule lengths are read as they are.

    Returns
    -------
    dict
        ``soft_label_kind`` (what the scores were computed on), ``dbi``, ``dbi_std``, ``davies_bouldin``,
        ``am``, ``am_std``, ``am_per_image``, ``am_per_image_std``, ``dbi_per_class``, ``am_per_class``,
        ``am_per_image_per_class``, ``params``.
    """
    dbi = raw_zero_shot_dbi(loo, kind)
    am = amalgam_metric(loo, full, kind)
    return {
        "soft_label_kind": kind,
        "dbi": dbi["dbi"],
        "dbi_std": dbi["dbi_std"],
        "davies_bouldin": davies_bouldin_soft_labels(loo, kind)["davies_bouldin"],
        "am": am["am"],
        "am_std": am["am_std"],
        "am_per_image": am["am_per_image"],
        "am_per_image_std": am["am_per_image_std"],
        "dbi_per_class": dbi["per_class"],
        "am_per_class": am["per_class"],
        "am_per_image_per_class": am["per_class_per_image"],
        "params": am["params"],
    }


# the largest number of models whose p-value enumerates every permutation (10! = 3,628,800 orderings)
EXACT_MAX_N = 10


def _permutations(n: int) -> np.ndarray:
    """Every ordering of ``range(n)``, ``(n!, n)`` int8, built by inserting each next item at every position."""
    orderings = np.zeros((1, 0), dtype=np.int8)
    for item in range(n):
        blocks = [np.insert(orderings, position, item, axis=1) for position in range(item + 1)]
        orderings = np.concatenate(blocks)
    return orderings


def exact_spearman_p_value(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided exact permutation p-value of Spearman's rho for up to :data:`EXACT_MAX_N` pairs.

    Under the null hypothesis every pairing of the ``y`` values with the ``x`` values is equally likely;
    the p-value is the share of the ``n!`` pairings whose ``|rho|`` reaches the observed one. Ranks are
    average ranks (ties share theirs, as :func:`scipy.stats.spearmanr`), doubled and centred so that
    ``rho`` is proportional to the integer sum ``T = sum_i a_i b_{pi(i)}``: the comparison
    ``|T_pi| >= |T|`` is exact, with no float tolerance. Without ties the null distribution is symmetric
    and this equals twice the one-sided p-value.

    Parameters
    ----------
    x, y : sequence of float
        One value per model, in the same order (``3 <= n <=`` :data:`EXACT_MAX_N`, neither constant).

    Returns
    -------
    float
        The exact two-sided p-value, a multiple of ``1 / n!`` (e.g. ``n = 5``, ``rho = 0.9``: 10 / 120).

    Raises
    ------
    InvalidArgumentError
        Lengths that differ, fewer than 3 or more than :data:`EXACT_MAX_N` values.
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or not 3 <= len(a) <= EXACT_MAX_N:
        raise InvalidArgumentError(
            f"x, y: the exact p-value needs 3 to {EXACT_MAX_N} pairs, got shapes {a.shape} and {b.shape}"
        )
    n = len(a)
    # 2 * average rank - (n + 1): integers (half ranks doubled), summing to zero
    centred_x = (2 * rankdata(a) - (n + 1)).astype(np.int16)
    centred_y = (2 * rankdata(b) - (n + 1)).astype(np.int16)
    observed = abs(int(centred_x.astype(np.int64) @ centred_y))
    # int16 is exact here (|T| <= n (n - 1)^2 < 2**15 for n <= 10) and keeps n = 10 at ~110 MB
    statistics = np.abs(centred_y[_permutations(n)] @ centred_x)
    return float(np.count_nonzero(statistics >= observed) / len(statistics))


def rank_correlation(metric: Sequence[float], attack_success: Sequence[float]) -> dict[str, Any]:
    """Spearman's rank correlation between a representation metric and attack success across models.

    For the paper's claim ("easily attacked networks have a lower representation score") a metric where
    lower is better (DBI, AM) should correlate positively with the number of successful attacks.

    The p-value is two-sided. Up to :data:`EXACT_MAX_N` models it is exact
    (:func:`exact_spearman_p_value`: every one of the ``n!`` pairings); with 5 models only ``|rho| = 1``
    reaches ``p < 0.05`` (``p = 2 / 120``; ``rho = 0.9`` gives ``10 / 120 = 0.083``, where the t
    approximation would say 0.037). Beyond that it is scipy's t approximation
    (:func:`scipy.stats.spearmanr`: ``t = rho sqrt((n - 2) / (1 - rho^2))``, Student's t with ``n - 2``
    degrees of freedom).

    Parameters
    ----------
    metric, attack_success : sequence of float
        One value per architecture, in the same order (at least 3).

    Returns
    -------
    dict
        ``rho`` (NaN when either side is constant), ``p_value``, ``p_method`` (``"exact permutation"`` or
        ``"t approximation"``), ``n``.

    Raises
    ------
    InvalidArgumentError
        Fewer than 3 models, lengths that differ, or non-finite values.
    """
    x, y = np.asarray(metric, dtype=np.float64), np.asarray(attack_success, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise InvalidArgumentError(
            f"metric, attack_success: need one value per model each, got {x.shape} and {y.shape}"
        )
    if len(x) < 3:
        raise InvalidArgumentError(f"metric: a rank correlation needs at least 3 models, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InvalidArgumentError("metric, attack_success: values must be finite")
    exact = len(x) <= EXACT_MAX_N
    method = "exact permutation" if exact else "t approximation"
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"rho": float("nan"), "p_value": float("nan"), "p_method": method, "n": len(x)}
    result = spearmanr(x, y)
    p_value = exact_spearman_p_value(x, y) if exact else float(result.pvalue)
    return {"rho": float(result.statistic), "p_value": p_value, "p_method": method, "n": len(x)}


__all__ = [
    "EXACT_MAX_N",
    "amalgam_histograms",
    "amalgam_metric",
    "davies_bouldin_soft_labels",
    "exact_spearman_p_value",
    "rank_correlation",
    "raw_zero_shot_dbi",
    "zero_shot_scores",
]
