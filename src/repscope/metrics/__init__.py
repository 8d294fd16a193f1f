"""Metrics: pure functions on numpy arrays and pandas tables (no torch, no model classes).

Any model's codes, samples and measurements can be scored here as plain arrays, whatever framework
produced them. Each function's docstring states its formula and the paper it follows.

- :mod:`repscope.metrics.mmd`: kernel two-sample tests on morphometrics (sample diversity).
- :mod:`repscope.metrics.replicas`: groups of near-replicas among samples (mode collapse).
- :mod:`repscope.metrics.partial_correlation`: partial correlations of latent codes with factors
  (disentanglement); :func:`partial_correlation_metric` in the ``metric(factors, codes, **params) -> dict``
  convention.
- :mod:`repscope.metrics.coherency`: cross- and joint-coherency (Strict / Features / Letters) of
  CdSprites+ image/caption pairs.
"""

from repscope.metrics.mmd import mmd_linear_test, mmd_quadratic_test, scott_bandwidths
from repscope.metrics.partial_correlation import (
    code_partial_correlations,
    partial_correlation,
    partial_correlation_metric,
)
from repscope.metrics.replicas import near_replicas

__all__ = [
    "code_partial_correlations",
    "mmd_linear_test",
    "mmd_quadratic_test",
    "near_replicas",
    "partial_correlation",
    "partial_correlation_metric",
    "scott_bandwidths",
]
