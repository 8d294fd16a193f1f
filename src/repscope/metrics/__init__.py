"""Metrics: pure functions on numpy arrays and pandas tables (no torch, no model classes).

Any model's codes, samples and measurements can be scored here as plain arrays, whatever framework
produced them. Each function's docstring states its formula and the paper it follows.

Every registered metric is a function of this package under its registry name
(:mod:`repscope.metrics.registry`), in the ``metric(factors, codes, **params) -> dict`` convention::

    import repscope.metrics
    repscope.metrics.mig(factors, codes)["mig"]

- :mod:`repscope.metrics.registry`: the factor/code (disentanglement) metrics by name: ``irs``, ``uc``,
  ``cg``, ``mig``, ``dci``, ``sap``, ``modularity_explicitness`` (:mod:`repscope.metrics.disentanglement`).
- :mod:`repscope.metrics.mmd`: kernel two-sample tests on morphometrics (sample diversity).
- :mod:`repscope.metrics.replicas`: groups of near-replicas among samples (mode collapse).
- :mod:`repscope.metrics.partial_correlations`: partial correlations of latent codes with factors
  (disentanglement); :func:`partial_correlation_metric` in the ``metric(factors, codes, **params) -> dict``
  convention.
- :mod:`repscope.metrics.multimodal.coherency`: cross- and joint-coherency (Strict / Features / Letters) of
  CdSprites+ image/caption pairs.
- :mod:`repscope.metrics.multimodal.toolkit_coherency`: the same by the rules of the CdSprites+ authors' toolkit.
- :mod:`repscope.metrics.zeroshot`: the Raw Zero-Shot metrics on soft-labels (:mod:`repscope.zeroshot`).

The functions are imported from their modules on first use, so that importing this package (the CLI's
help reads the metric registry) loads no numpy, scipy or scikit-learn.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from repscope.metrics.registry import METRICS

# public name -> the module that defines it (the registered metrics come from the registry instead)
_EXPORTS: dict[str, str] = {
    "code_partial_correlations": "repscope.metrics.partial_correlations",
    "mmd_linear_test": "repscope.metrics.mmd",
    "mmd_quadratic_test": "repscope.metrics.mmd",
    "near_replicas": "repscope.metrics.replicas",
    "partial_correlation": "repscope.metrics.partial_correlations",
    "partial_correlation_metric": "repscope.metrics.partial_correlations",
    "scott_bandwidths": "repscope.metrics.mmd",
}

# generated from the registry: a metric registered later is public here without a second list
__all__ = sorted({*_EXPORTS, *METRICS})


class MetricNamespace(types.ModuleType):
    """A package whose registered metric names stay the metrics' functions.

    The import system binds each submodule it loads as an attribute of its package, and
    :mod:`repscope.metrics.disentanglement` has submodules named like metrics (``irs``, ``dci``): once
    ``repscope.metrics.disentanglement.irs`` was imported anywhere, ``from repscope.metrics.disentanglement
    import irs`` would give the module instead of the function. A package of this class does not take that
    binding for a registered name; the submodule stays importable by its full name (``sys.modules``).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in METRICS and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


def registered_metric(namespace: dict[str, Any], name: str) -> Any:
    """The registered metric ``name``, imported now and bound in ``namespace`` (a package's globals).

    Parameters
    ----------
    namespace : dict
        The ``globals()`` of the package that exports it, so that later accesses find it directly.
    name : str
        A registry name (:func:`repscope.metrics.registry.metric_names`).

    Returns
    -------
    callable
        ``metric(factors, codes, **params) -> dict``, the very function the registry resolves.
    """
    function = METRICS[name].load()
    namespace[name] = function
    return function


def __getattr__(name: str) -> Any:
    """The public function ``name``, imported from its module on first access (PEP 562)."""
    if name in METRICS:
        return registered_metric(globals(), name)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    # every name of that module is bound now, so later accesses skip this function (module names
    # differ from function names: importing a submodule binds its own name on this package)
    for exported, source in _EXPORTS.items():
        if source == module.__name__:
            globals()[exported] = getattr(module, exported)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *METRICS})


# a metric registered under the name of a submodule of this package (a later "mmd") keeps its name too
sys.modules[__name__].__class__ = MetricNamespace
