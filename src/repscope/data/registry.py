"""Datasets by name: a new dataset is one loader function plus one line here.

Each entry names a function returning a :class:`repscope.data.training_sets.TrainingSet`; its
keyword parameters are what ``data.params`` in a config may set (checked against its signature).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from repscope.errors import InvalidArgumentError

DATASETS: dict[str, str] = {
    "digits": "repscope.data.training_sets:load_digits",
    "morpho-mnist": "repscope.data.training_sets:load_morpho_mnist",
}


def resolve(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def dataset_loader(name: str) -> Callable[..., Any]:
    if name not in DATASETS:
        raise InvalidArgumentError(f"data.name: unknown dataset {name!r}; registered: {', '.join(sorted(DATASETS))}")
    return resolve(DATASETS[name])
