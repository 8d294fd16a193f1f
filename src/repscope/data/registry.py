"""Datasets by name: a new dataset is one loader function plus one line here.

Each entry names a function returning a :class:`repscope.data.datasets.Dataset`; its keyword
parameters are what ``data.params`` in a config may set (checked against its signature).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from repscope.errors import InvalidArgumentError

DATASETS: dict[str, str] = {
    "digits": "repscope.data.morpho.training_sets:digits_dataset",
    "morpho-mnist": "repscope.data.morpho.training_sets:morpho_mnist_dataset",
    "dsprites": "repscope.data.sprites.datasets:dsprites_dataset",
    "cdsprites": "repscope.data.sprites.datasets:cdsprites_dataset",
}


def resolve(reference: str) -> Any:
    """The object named by ``"module:attribute"`` (imported on first use)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def dataset_loader(name: str) -> Callable[..., Any]:
    """The loader function registered as ``name``; an unknown name lists the registered ones."""
    if name not in DATASETS:
        raise InvalidArgumentError(f"data.name: unknown dataset {name!r}; registered: {', '.join(sorted(DATASETS))}")
    return resolve(DATASETS[name])


def load_dataset(name: str, **params: Any) -> Any:
    """The registered dataset ``name`` loaded with ``params`` (a :class:`~repscope.data.datasets.Dataset`)."""
    return dataset_loader(name)(**params)
