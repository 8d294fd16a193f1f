"""Disentanglement metrics on ground-truth factors and learned codes.

Every registered metric whose function lives in this package is a function of the package under its
registry name (:mod:`repscope.metrics.registry`), imported on first use::

    from repscope.metrics.disentanglement import irs, mig

    mig(factors, codes)["mig"]

``irs`` and ``dci`` are also the names of submodules (:mod:`repscope.metrics.disentanglement.irs`,
:mod:`repscope.metrics.disentanglement.dci`); as attributes of this package they are the functions, and
the modules are imported by their full names (``from repscope.metrics.disentanglement.irs import
unique_capture``).
"""

from __future__ import annotations

import sys
from typing import Any

from repscope.metrics import MetricNamespace, registered_metric
from repscope.metrics.registry import METRICS


def _own_metrics() -> list[str]:
    """The registry names whose functions are defined in this package, in registry order."""
    return [name for name, entry in METRICS.items() if entry.function.startswith(f"{__name__}.")]


# generated from the registry: a metric registered later in this package is public here without a second list
__all__ = _own_metrics()


def __getattr__(name: str) -> Any:
    """The registered metric ``name``, imported from its module on first access (PEP 562)."""
    if name not in _own_metrics():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return registered_metric(globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_own_metrics()})


# the submodules irs and dci do not take the names of the functions irs and dci (MetricNamespace)
sys.modules[__name__].__class__ = MetricNamespace
