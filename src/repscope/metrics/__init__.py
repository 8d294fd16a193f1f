"""Metrics: pure functions on numpy arrays and pandas tables (no torch, no model classes).

Any model's codes, samples and measurements can be scored here as plain arrays, whatever framework
produced them. Each function's docstring states its formula and the paper it follows.

- :mod:`repscope.metrics.registry`: the factor/code (disentanglement) metrics by name, in the
  ``metric(factors, codes, **params) -> dict`` convention (:mod:`repscope.metrics.disentanglement`).
- :mod:`repscope.metrics.mmd`: kernel two-sample tests on morphometrics (sample diversity).
- :mod:`repscope.metrics.replicas`: groups of near-replicas among samples (mode collapse).
- :mod:`repscope.metrics.partial_correlations`: partial correlations of latent codes with factors
  (disentanglement); :func:`partial_correlation_metric` in the ``metric(factors, codes, **params) -> dict``
  convention.
- :mod:`repscope.metrics.multimodal.coherency`: cross- and joint-coherency (Strict / Features / Letters) of
  CdSprites+ image/caption pairs.
- :mod:`repscope.metrics.multimodal.toolkit_coherency`: the same by the rules of the CdSprites+ authors' toolkit.

The functions below are imported from their modules on first use, so that importing a light module
of this package (the metric registry, read by the CLI's help) does not load scipy and pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "code_partial_correlations": "repscope.metrics.partial_correlations",
    "mmd_linear_test": "repscope.metrics.mmd",
    "mmd_quadratic_test": "repscope.metrics.mmd",
    "near_replicas": "repscope.metrics.replicas",
    "partial_correlation": "repscope.metrics.partial_correlations",
    "partial_correlation_metric": "repscope.metrics.partial_correlations",
    "scott_bandwidths": "repscope.metrics.mmd",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """The public function ``name``, imported from its module on first access (PEP 562)."""
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
    return sorted({*globals(), *_EXPORTS})
