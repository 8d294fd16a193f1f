"""Which classifier an invariance test (or an attack) runs on, and its test examples: a repscope run
directory, a Lightning checkpoint, a ``state_dict`` with its network, or a model from outside repscope
(``pkg.module:factory``, TorchScript, ``torch.export``, ONNX) loaded by :mod:`repscope.models.external`.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from repscope.errors import DataFormatError, InvalidArgumentError


def is_outside_source(model: str | Path, arch: str | None = None) -> bool:
    """Whether ``model`` is a model from outside repscope (:func:`load_outside_classifier`): an import path
    ``pkg.module:factory`` / ``file.py:factory``, or a model file (TorchScript, ``torch.export``, ONNX) given
    without ``--arch``; not a run directory, a ``.ckpt`` or a state_dict file with ``--arch``."""
    path = Path(model)
    if path.is_dir():
        return False
    if path.is_file():
        return path.suffix.lower() != ".ckpt" and arch is None
    return ":" in str(model)


def _refuse_pickle(path: Path) -> None:
    """A torch file that is no TorchScript or ``torch.export`` archive refused unopened (the loader's
    :func:`~repscope.models.external.torch_files.archive_kind`), naming this command's route for a state_dict."""
    from repscope.models.external.loading import TORCH_SUFFIXES  # noqa: PLC0415
    from repscope.models.external.torch_files import archive_kind  # noqa: PLC0415

    if path.suffix.lower() not in TORCH_SUFFIXES:
        return
    try:
        archive_kind(path, "--model")
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(
            f"{exc}; or, for a state_dict file, --arch NETWORK (a registered network or pkg.module:factory)"
        ) from None


def load_outside_classifier(
    model: str | Path,
    data: str | None,
    data_params: dict[str, Any] | None = None,
    *,
    model_args: dict[str, Any] | None = None,
    weights: str | Path | None = None,
) -> tuple[Any, Any, str, dict[str, Any]]:
    """A classifier from outside repscope, checked on a probe batch of the data before any work.

    The model is loaded by :func:`repscope.models.external.load_model` (never an arbitrary pickle), the
    dataset's image shape fills its input contract where the model states none, and four test images go
    through it (:func:`repscope.models.external.check_model`: finite outputs, one logit per class).

    Parameters
    ----------
    model : str or Path
        ``pkg.module:factory``, ``file.py:factory``, a TorchScript / ``torch.export`` file (``.pt``,
        ``.pt2``) or an ``.onnx`` file.
    data : str
        Registered classification dataset (required: the model does not say what it was trained on).
    data_params : dict, optional
        The dataset's parameters.
    model_args : dict, optional
        The factory's keyword arguments (``--model-arg``).
    weights : str or Path, optional
        A state_dict for the factory's network (``--weights``).

    Returns
    -------
    tuple
        ``(classifier, dataset, dataset name, dataset params)``; the classifier is a
        :class:`repscope.models.external.ImageClassifier` (``predict``, ``soft_labels``, ``network``).

    Raises
    ------
    InvalidArgumentError
        One line: ``--data`` missing or without a class target, a pickle (refused unopened), a source the
        loader refuses, data of another image size than the model's, a model that fails the probe.
    """
    from repscope.data.registry import load_dataset  # noqa: PLC0415
    from repscope.models.external import ImageClassifier, check_model, fitted_to_data, load_model  # noqa: PLC0415

    path = Path(model)
    if path.is_file():
        _refuse_pickle(path)
    if data is None:
        raise InvalidArgumentError(
            f"--data: required with --model {model} (the registered dataset to test it on; only a run directory "
            "knows its own)"
        )
    loaded = load_model(str(model), model_args=model_args, weights=weights, option="--model")
    params = dict(data_params or {})
    dataset = load_dataset(data, **params)
    if dataset.target_kind != "classification":
        raise InvalidArgumentError(f"--data {data}: needs a class target to test a classifier")
    loaded = fitted_to_data(loaded, tuple(dataset.field("image").shape), data)
    probe = dataset.batch("test", np.arange(min(4, len(dataset.split("test")))), ["image"])["image"]
    report = check_model(loaded, "classifier", images=probe, num_classes=dataset.num_classes)
    return ImageClassifier(loaded, probabilities=report.outputs_are_probabilities), dataset, data, params


def _refuse_factory_options(path: Path, model_args: dict[str, Any] | None, weights: Any) -> None:
    """``--model-arg`` and ``--weights`` belong to a factory; a run, a ``.ckpt`` or a state_dict has its weights."""
    what = "a run directory" if path.is_dir() else f"the file {path}"
    if model_args:
        raise InvalidArgumentError(f"--model-arg: only --model pkg.module:factory takes arguments; the model is {what}")
    if weights is not None:
        raise InvalidArgumentError(
            f"--weights: only --model pkg.module:factory takes weights; the model is {what} (a state_dict file "
            "goes to --model, with --arch)"
        )


def load_classifier(
    model: str | Path,
    arch: str | None = None,
    data: str | None = None,
    data_params: dict[str, Any] | None = None,
    *,
    model_args: dict[str, Any] | None = None,
    weights: str | Path | None = None,
) -> tuple[nn.Module, Any, str, dict[str, Any]]:
    """The network to test, and the dataset (name, params) whose test split it is tested on.

    Parameters
    ----------
    model : str or Path
        A run directory of ``repscope train``; a Lightning checkpoint (``.ckpt``; ``arch`` = the registered
        model, e.g. ``cnn5``); a plain ``state_dict`` file (``arch`` = a classifier network, registered or
        ``pkg.module:factory``; ``data`` required for the image shape and classes); or a model from outside
        (:func:`load_outside_classifier`: ``pkg.module:factory``, ``file.py:factory``, a TorchScript /
        ``torch.export`` file or an ``.onnx`` file without ``arch``; ``data`` required).
    arch : str, optional
        See ``model``.
    data : str, optional
        Registered dataset; default the run's own (from its ``config.yaml``).
    data_params : dict, optional
        The dataset's parameters (default the run's, when ``data`` is omitted).
    model_args, weights : optional
        A factory's keyword arguments and state_dict file (:func:`load_outside_classifier`).

    Returns
    -------
    tuple
        ``(network in eval mode, dataset, dataset name, dataset params)``; the dataset is loaded once. The
        network takes float ``(B, C, H, W)`` images in [0, 1] and returns logits (a model from outside:
        :attr:`repscope.models.external.ImageClassifier.network`, its input contract applied inside).

    Raises
    ------
    InvalidArgumentError
        A missing file, a state_dict without ``arch`` and ``data``, a run without a dataset, a model from
        outside without ``data`` or failing its probe, ``model_args`` / ``weights`` for a source that is no
        factory.
    DataFormatError
        An empty file, a file torch will not load with ``weights_only=True`` or that holds no state_dict
        (refused before the dataset loads), an unreadable checkpoint, or weights that do not fit the network.
    """
    path = Path(model)
    if not path.exists() and not is_outside_source(model, arch):
        raise InvalidArgumentError(f"--model {path}: no such file or run directory")
    if path.is_file() and path.stat().st_size == 0:
        raise DataFormatError(f"--model {path}: the file is empty")
    if is_outside_source(model, arch):
        classifier, dataset, data, params = load_outside_classifier(
            model, data, data_params, model_args=model_args, weights=weights
        )
        return classifier.network.eval(), dataset, data, params
    _refuse_factory_options(path, model_args, weights)
    return _load_repscope_classifier(path, arch, data, dict(data_params or {}))


def _load_repscope_classifier(
    path: Path, arch: str | None, data: str | None, params: dict[str, Any]
) -> tuple[nn.Module, Any, str, dict[str, Any]]:
    """:func:`load_classifier` of a run directory, a ``.ckpt`` or a state_dict file with ``arch``."""
    from repscope.data.registry import load_dataset  # noqa: PLC0415
    from repscope.models.networks import build_classifier  # noqa: PLC0415

    if path.is_dir():
        from repscope.train.reader import open_run  # noqa: PLC0415

        run = open_run(path)
        if arch is not None and arch != run.model_name:
            raise InvalidArgumentError(f"--arch {arch!r}: the run {path} trained model {run.model_name!r}")
        if data is None:  # the run's own data, with the parameters given overriding its own
            data, params = run.data_name, {**run.data_params, **params}
        return run.task().network.eval(), load_dataset(data, **params), data, params
    if path.suffix == ".ckpt":
        from repscope.train.fitting import load_task  # noqa: PLC0415 -- Lightning: only a checkpoint needs it

        task = load_task(path, model=arch)
        if data is None:
            raise InvalidArgumentError(f"--model {path}: say which data to test on (--data)")
        return task.network.eval(), load_dataset(data, **params), data, params
    if arch is None or data is None:
        raise InvalidArgumentError(f"--model {path}: a state_dict file needs --arch (a network) and --data")
    try:  # read the weights before the dataset: a file that is no state_dict is refused at once
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError, OSError, ValueError, AttributeError, TypeError) as exc:
        raise DataFormatError(
            f"--model {path}: not a state_dict file torch loads with weights_only=True "
            f"({' '.join(str(exc).split())[:200]})"
        ) from None
    if not isinstance(state, dict) or not state:
        raise DataFormatError(f"--model {path}: not a state_dict (a mapping of parameter names to tensors)")
    dataset = load_dataset(data, **params)
    network = build_classifier(arch, dataset.field("image").shape, dataset.num_classes or 1)
    try:
        network.load_state_dict(state.get("state_dict", state) if isinstance(state, dict) else state)
    except (RuntimeError, OSError, AttributeError, KeyError, ValueError) as exc:
        raise DataFormatError(
            f"--model {path}: not weights of network {arch!r} ({' '.join(str(exc).split())[:300]})"
        ) from None
    return network.eval(), dataset, data, params


def draw_test_examples(dataset: Any, n: int, seed: Any) -> dict[str, np.ndarray]:
    """A seeded draw of ``n`` test examples (all when fewer), in index order: ``image`` and ``target``.

    Parameters
    ----------
    dataset : Dataset
        A dataset with a class target.
    n : int
        Examples.
    seed : int or sequence of int
        Seed of the draw.

    Returns
    -------
    dict of str to numpy.ndarray
        ``image``, ``target`` and ``index`` (the rows of the test split).
    """
    total = len(dataset.split("test"))
    rows = np.sort(np.random.default_rng(seed).choice(total, size=min(int(n), total), replace=False))
    return {**dataset.batch("test", rows, ["image", "target"]), "index": rows}
