"""The name resolver every registry shares, and the registries by kind.

A registry entry names the object it registers by a ``"module:attribute"`` string (a dataset's loader,
a model's task, a metric's function, a study's module), so that listing the names (``--help``, an
unknown-name error) imports nothing heavy and a lower layer can name an object of a higher one without
importing it. :func:`resolve` turns such a string into the object when it is first needed.

This module sits in the foundation layer with :mod:`repscope.errors`: it imports no other part of
repscope. :func:`registries` therefore reaches the registries through :func:`resolve` as well.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from repscope.errors import InvalidArgumentError

__all__ = ["REGISTRIES", "registries", "resolve"]

# kind -> the registry's "module:attribute"; the study registry is a tuple of entries, keyed below by their kind
REGISTRIES: dict[str, str] = {
    "models": "repscope.train.registry:MODELS",
    "datasets": "repscope.data.registry:DATASETS",
    "metrics": "repscope.metrics.registry:METRICS",
    "studies": "repscope.studies.registry:STUDIES",
}


def resolve(reference: str) -> Any:
    """The object named by ``"module:attribute"``, importing the module on first use.

    Parameters
    ----------
    reference : str
        ``"module:attribute"``, e.g. ``"repscope.data.multimodal.datasets:dsprites_dataset"``.

    Returns
    -------
    object
        The module's attribute.

    Raises
    ------
    InvalidArgumentError
        When ``reference`` has no ``":"`` between a module and an attribute. (A module that does not
        exist or lacks the attribute raises Python's own ``ImportError`` / ``AttributeError``: that is
        a broken registry line, not a user's mistake.)
    """
    module, separator, attribute = reference.partition(":")
    if not separator or not module or not attribute:
        raise InvalidArgumentError(f"reference: expected 'module:attribute', got {reference!r}")
    return getattr(importlib.import_module(module), attribute)


def registries() -> dict[str, dict[str, Any]]:
    """Every registry of repscope by kind, each as a mapping from a registered name to its entry.

    Returns
    -------
    dict of str to dict
        ``"models"`` (name -> :class:`~repscope.train.registry.ModelEntry`), ``"datasets"`` (name ->
        the loader's ``"module:function"``), ``"metrics"`` (name ->
        :class:`~repscope.metrics.registry.MetricEntry`) and ``"studies"`` (``"<area>-<name>"`` ->
        :class:`~repscope.studies.registry.StudyEntry`). The registries' modules are imported by this
        call, not before.
    """
    found: dict[str, dict[str, Any]] = {}
    for kind, reference in REGISTRIES.items():
        entries = resolve(reference)
        if not isinstance(entries, Mapping):
            entries = {entry.kind: entry for entry in entries}
        found[kind] = dict(entries)
    return found
