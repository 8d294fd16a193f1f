"""Datasets by name: a new dataset is one loader function plus one line here.

Each entry names a function returning a :class:`repscope.data.datasets.Dataset`; its keyword
parameters are what ``data.params`` in a config may set (checked against its signature). Names are
resolved by :func:`repscope.registry.resolve`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from repscope.errors import InvalidArgumentError, shown
from repscope.registry import resolve

DATASETS: dict[str, str] = {
    "digits": "repscope.data.morpho.training_sets:digits_dataset",
    "morpho-mnist": "repscope.data.morpho.training_sets:morpho_mnist_dataset",
    "dsprites": "repscope.data.multimodal.datasets:dsprites_dataset",
    "cdsprites": "repscope.data.multimodal.datasets:cdsprites_dataset",
    "polymnist": "repscope.data.multimodal.polymnist:polymnist_dataset",
    "candle": "repscope.data.candle.dataset:candle_dataset",
    "anomalous": "repscope.data.invariance.anomalies:anomalous_dataset",
    "cifar10": "repscope.data.zeroshot.cifar:cifar10_dataset",
    "leave-class-out": "repscope.data.zeroshot.leave_class_out:leave_class_out_dataset",
}


def dataset_loader(name: str) -> Callable[..., Any]:
    """The loader function registered as ``name``; an unknown name lists the registered ones.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS`.

    Returns
    -------
    callable
        The loader; its keyword parameters are what ``data.params`` may set, and it returns a
        :class:`~repscope.data.datasets.Dataset`.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered.
    """
    if name not in DATASETS:
        raise InvalidArgumentError(
            f"data.name: unknown dataset {shown(name)}; registered: {', '.join(sorted(DATASETS))}"
        )
    return resolve(DATASETS[name])


def loader_arguments(name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every keyword argument the loader ``name`` runs with: ``params`` over the loader's own defaults
    (read from its signature, so no caller copies them).

    Parameters
    ----------
    name : str
        A registered name (see :func:`dataset_loader`).
    params : dict, optional
        The parameters a config sets (``data.params``).

    Returns
    -------
    dict of str to Any
        The defaults, with ``params`` over them.
    """
    defaults = {
        key: parameter.default
        for key, parameter in inspect.signature(dataset_loader(name)).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    return {**defaults, **(params or {})}


def load_dataset(name: str, **params: Any) -> Any:
    """The registered dataset ``name`` loaded with ``params`` (a :class:`~repscope.data.datasets.Dataset`).

    Parameters
    ----------
    name : str
        A registered name (see :func:`dataset_loader`).
    **params
        Keyword arguments of the loader (e.g. ``set="local", target="abnormal"`` for ``morpho-mnist``).

    Returns
    -------
    Dataset
        The loaded dataset.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is not registered, or ``params`` holds a key its loader does not take (and the loader's
        own errors).
    """
    loader = dataset_loader(name)
    parameters = inspect.signature(loader).parameters  # a wrapped loader shows the signature it wraps
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        unknown = sorted(str(key) for key in params if key not in parameters)
        if unknown:
            takes = ", ".join(key for key, p in parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL)
            raise InvalidArgumentError(
                f"data params: dataset {name!r} takes no parameter {unknown[0]!r}; it takes {takes}"
            )
    return loader(**params)
