"""Factor/code metrics by name: a new metric is its function plus one entry here.

Every entry is a disentanglement metric in the package's convention,
``metric(factors, codes, **params) -> dict``: ground-truth ``factors`` ``(N, K)`` and learned ``codes``
``(N, L)``, checked by :func:`repscope.validation.check_factors_codes`, and a dict of scores, matrices
and the ``params`` that change its value. A metric that needs more than the two arrays (CG needs a
decoder and a factor classifier) lists its further inputs, so a caller holding only arrays can pick the
metrics it can compute (:func:`metric_names` with ``inputs``).

The CLI's ``--metric`` choices and help texts are generated from this registry; a metric name appears
here and nowhere else. Functions are named by ``"module:function"`` and imported on first use, so
listing the names imports no scikit-learn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from repscope.errors import InvalidArgumentError, shown
from repscope.registry import resolve

__all__ = ["ARRAY_INPUTS", "METRICS", "MetricEntry", "metric", "metric_entry", "metric_names"]

# what every registered metric takes; a metric with no further inputs can score any (factors, codes) pair
ARRAY_INPUTS: tuple[str, ...] = ("factors", "codes")


@dataclass(frozen=True)
class MetricEntry:
    """One registered metric.

    Attributes
    ----------
    function : str
        ``"module:function"`` of the pure function (numpy arrays in, dict out; no torch).
    summary : str
        One line for help texts: what the score measures.
    paper : str
        The paper that defines it (the function's docstring states the formula and how it follows it).
    inputs : tuple of str
        The function's positional inputs, ``("factors", "codes", ...)``.
    """

    function: str
    summary: str
    paper: str
    inputs: tuple[str, ...] = ARRAY_INPUTS

    def load(self) -> Callable[..., dict[str, Any]]:
        """The metric function, its module imported now.

        Returns
        -------
        callable
            ``function(factors, codes, *further_inputs, **params) -> dict``.
        """
        return resolve(self.function)


_DISENTANGLEMENT = "repscope.metrics.disentanglement"

METRICS: dict[str, MetricEntry] = {
    "irs": MetricEntry(
        f"{_DISENTANGLEMENT}.irs:irs",
        "Interventional Robustness Score: how little each latent moves while one factor is held fixed",
        "Suter et al., Robustly disentangled causal mechanisms, ICML 2019",
    ),
    "uc": MetricEntry(
        f"{_DISENTANGLEMENT}.irs:unique_capture",
        "Unconfoundedness: factors captured by disjoint sets of latents (top-rho IRS latents), rho 1 and 2",
        "Reddy et al., On causally disentangled representations (CANDLE), AAAI 2022, Eq. 1",
    ),
    "cg": MetricEntry(
        f"{_DISENTANGLEMENT}.counterfactual:counterfactual_generativeness",
        "Counterfactual Generativeness: intervening on a factor's latents changes that factor in the decoded image",
        "Reddy et al., On causally disentangled representations (CANDLE), AAAI 2022, Eqs. 2-5",
        inputs=(*ARRAY_INPUTS, "q_sets", "decode", "predict_proba"),
    ),
    "mig": MetricEntry(
        f"{_DISENTANGLEMENT}.information:mig",
        "Mutual Information Gap: the two latents most informative about each factor, their gap over its entropy",
        "Chen et al., Isolating sources of disentanglement in VAEs, NeurIPS 2018",
    ),
    "dci": MetricEntry(
        f"{_DISENTANGLEMENT}.dci:dci",
        "DCI disentanglement, completeness and informativeness of gradient-boosted trees' importances",
        "Eastwood & Williams, A framework for the quantitative evaluation of disentangled representations, ICLR 2018",
    ),
    "sap": MetricEntry(
        f"{_DISENTANGLEMENT}.information:sap",
        "Separated Attribute Predictability: the two latents that best predict each factor alone, their gap",
        "Kumar et al., Variational inference of disentangled latent concepts from unlabeled observations, ICLR 2018",
    ),
    "modularity_explicitness": MetricEntry(
        f"{_DISENTANGLEMENT}.information:modularity_explicitness",
        "Modularity (each latent informs about one factor) and explicitness (ROC AUC of a linear classifier)",
        "Ridgeway & Mozer, Learning deep disentangled embeddings with the F-statistic loss, NeurIPS 2018",
    ),
}


def metric_names(inputs: Sequence[str] | None = None) -> list[str]:
    """The registered metric names, in registry order.

    Parameters
    ----------
    inputs : sequence of str, optional
        Only the metrics computable from these inputs (every one of a metric's ``inputs`` among them);
        ``ARRAY_INPUTS`` gives those that score a plain ``(factors, codes)`` pair. Default: all.

    Returns
    -------
    list of str
    """
    if inputs is None:
        return list(METRICS)
    available = set(inputs)
    return [name for name, entry in METRICS.items() if set(entry.inputs) <= available]


def metric_entry(name: str) -> MetricEntry:
    """The registry entry of ``name``; an unknown name lists the registered ones.

    Parameters
    ----------
    name : str
        A name of :func:`metric_names`.

    Returns
    -------
    MetricEntry

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered.
    """
    if name not in METRICS:
        raise InvalidArgumentError(f"metric: unknown metric {shown(name)}; registered: {', '.join(METRICS)}")
    return METRICS[name]


def metric(name: str) -> Callable[..., dict[str, Any]]:
    """The metric function registered as ``name`` (``metric(factors, codes, **params) -> dict``).

    Parameters
    ----------
    name : str
        A name of :func:`metric_names`.

    Returns
    -------
    callable
        The pure function; its further inputs, if any, are the entry's ``inputs``.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered (the message lists the registered names).
    """
    return metric_entry(name).load()
