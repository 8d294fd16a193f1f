"""Load a model from outside repscope: :func:`load_model` turns what a user names into a
:class:`LoadedModel` (a torch module or a trained repscope task, and its input contract).

Sources: an ``nn.Module``; ``"pkg.module:factory"`` or ``"path/to/file.py:factory"`` (called with
``model_args``, then given ``weights``, a state_dict loaded with ``weights_only=True``); a TorchScript
or ``torch.export`` file (``.pt``, ``.pt2``); an ONNX file (``.onnx``, run by onnxruntime); a repscope
run directory (a folder with ``config.yaml``). A pickled model is refused without being unpickled
(:func:`~repscope.models.external.torch_files.archive_kind`).

This module sits in the models layer; a run directory is read by the train layer's reader, which it
names by a ``"module:function"`` string resolved when a run is loaded (:data:`RUN_READER`), as the
registries name what lives above them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from repscope.config import parse_assignments
from repscope.errors import InvalidArgumentError, RepscopeError, shown
from repscope.models.external.contract import InputContract, contract_from_metadata, merged_contract, with_image_shape
from repscope.registry import resolve

RUN_READER = "repscope.train.reader:open_run"
MODEL_ENTRY = "repscope.train.registry:model_entry"
TORCH_SUFFIXES = (".pt", ".pt2", ".pth", ".ts", ".ckpt", ".bin")
SOURCES = (
    "an nn.Module, 'pkg.module:factory', 'file.py:factory', a TorchScript or torch.export file (.pt, .pt2), "
    "an .onnx file or a repscope run directory"
)


@dataclass(frozen=True)
class LoadedModel:
    """A model ready for the role adapters (:mod:`repscope.models.external.adapters`).

    Attributes
    ----------
    source : str
        What the user named (a path, an import path, ``<module ClassName>``).
    kind : {"module", "factory", "torchscript", "export", "onnx", "run"}
        How it was loaded.
    module : torch.nn.Module or None
        The network (None for a run directory, whose task is :attr:`task`).
    contract : InputContract
        What the network reads.
    metadata : dict
        What the file recorded (``repscope.*`` keys), the ONNX input shape, a run's model name and family.
    task : object or None
        A run directory's trained task (its ``encode``, ``decode``, ``sample``, ``predict``,
        ``soft_labels``), else None.
    run_dir : pathlib.Path or None
        The run directory, else None.
    """

    source: str
    kind: str
    module: nn.Module | None
    contract: InputContract = field(default_factory=InputContract)
    metadata: dict[str, Any] = field(default_factory=dict)
    task: Any = None
    run_dir: Path | None = None


def parse_model_args(items: Iterable[str]) -> dict[str, Any]:
    """``--model-arg key=value`` strings as the factory's keyword arguments, values read as YAML.

    Parameters
    ----------
    items : iterable of str
        ``key=value`` each; ``3``, ``0.5``, ``true``, ``[1, 2]`` become an int, a float, a bool, a list.

    Returns
    -------
    dict
        Key -> value.

    Raises
    ------
    InvalidArgumentError
        Naming ``--model-arg`` and an item without ``=`` or key, or a key given twice.
    """
    items = list(items)
    keys = [item.partition("=")[0] for item in items]
    repeated = sorted({key for key in keys if key and keys.count(key) > 1})
    if repeated:
        raise InvalidArgumentError(f"--model-arg: key {repeated[0]!r} given twice")
    return parse_assignments(items, "--model-arg")


def load_model(
    source: Any,
    *,
    model_args: Mapping[str, Any] | None = None,
    weights: str | Path | None = None,
    contract: InputContract | Mapping[str, Any] | None = None,
    option: str = "--model",
) -> LoadedModel:
    """Load a model from outside repscope, with its input contract.

    Parameters
    ----------
    source : nn.Module, LoadedModel, str or pathlib.Path
        An ``nn.Module`` instance; a :class:`LoadedModel` (returned as is); ``"pkg.module:factory"`` or
        ``"path/to/file.py:factory"``; a TorchScript / ``torch.export`` file (``.pt``, ``.pt2``); an
        ``.onnx`` file; a repscope run directory.
    model_args : mapping, optional
        Keyword arguments of the factory (:func:`parse_model_args` reads them from the command line).
    weights : str or pathlib.Path, optional
        A state_dict file for a factory's or a module's network (a Lightning checkpoint's
        ``state_dict`` too); loaded with ``weights_only=True``, strictly.
    contract : InputContract or mapping, optional
        The input contract; its set fields override what the file records (a mapping sets exactly its keys).
    option : str, default="--model"
        The option named in error messages.

    Returns
    -------
    LoadedModel

    Raises
    ------
    InvalidArgumentError
        One line naming ``option`` (or ``--weights``, ``--model-arg``, ``--input-size``): a missing file
        or folder, a pickle, an unimportable module, a factory that raises or returns no ``nn.Module``,
        weights that do not fit, an option that does not apply to the source.
    """
    if isinstance(source, LoadedModel):
        return source
    if isinstance(source, nn.Module):
        _apply_weights(source, weights)
        _refuse_model_args(model_args, "an nn.Module")
        name = f"<module {type(source).__name__}>"
        return LoadedModel(name, "module", source, merged_contract(contract, {}, source=name))
    if not isinstance(source, str | Path):
        raise InvalidArgumentError(f"{option}: expected {SOURCES}, got {type(source).__name__}")
    text = str(source)
    path = Path(text).expanduser()
    if path.is_dir():
        return _load_run(path, contract, weights, model_args, option)
    if path.is_file():
        return _load_file(path, contract, weights, model_args, option)
    if ":" in text and not text.endswith(":") and not _looks_like_file(text):
        return _load_factory(text, model_args, weights, contract, option)
    if _looks_like_file(text) or "/" in text or "\\" in text:
        raise InvalidArgumentError(f"{option}: no such file or folder: {text}")
    raise InvalidArgumentError(f"{option}: {shown(text)} is no file, folder or import path; expected {SOURCES}")


def _looks_like_file(text: str) -> bool:
    return Path(text).suffix.lower() in (*TORCH_SUFFIXES, ".onnx", ".py") or text.endswith(("/", "\\"))


def _refuse_model_args(model_args: Mapping[str, Any] | None, what: str) -> None:
    if model_args:
        raise InvalidArgumentError(f"--model-arg: only a factory takes arguments; the model is {what}")


def _refuse_weights(weights: Any, what: str) -> None:
    if weights is not None:
        raise InvalidArgumentError(
            f"--weights: only a factory's or a module's network takes weights; the model is {what}"
        )


def _load_file(path: Path, contract: Any, weights: Any, model_args: Any, option: str) -> LoadedModel:
    from repscope.models.external.torch_files import archive_kind, load_exported, load_torchscript  # noqa: PLC0415

    if path.suffix.lower() == ".onnx":
        _refuse_weights(weights, "an ONNX file")
        _refuse_model_args(model_args, "an ONNX file")
        return _load_onnx(path, contract, option)
    if path.suffix.lower() == ".py":
        raise InvalidArgumentError(f"{option}: name the factory in {path}: {path}:function_name")
    kind = archive_kind(path, option)
    _refuse_weights(weights, f"a {kind} file")
    _refuse_model_args(model_args, f"a {kind} file")
    module, recorded = (load_torchscript if kind == "torchscript" else load_exported)(path, option)
    fields = contract_from_metadata(recorded, str(path))
    return LoadedModel(str(path), kind, module, merged_contract(contract, fields, source=str(path)), dict(recorded))


def _load_onnx(path: Path, contract: Any, option: str) -> LoadedModel:
    from repscope.models.external.onnx_module import OnnxModule  # noqa: PLC0415

    module = OnnxModule(path, option)
    recorded = contract_from_metadata(module.metadata, str(path))
    merged = merged_contract(contract, recorded, module.image_shape, source=str(path))
    metadata = {**module.metadata, "onnx_input_shape": module.input_shape}
    return LoadedModel(str(path), "onnx", module, merged, metadata)


def _load_run(path: Path, contract: Any, weights: Any, model_args: Any, option: str) -> LoadedModel:
    if not (path / "config.yaml").is_file():
        raise InvalidArgumentError(f"{option}: {path} is a folder but not a repscope run directory (no config.yaml)")
    _refuse_weights(weights, "a run directory (its checkpoint holds them)")
    _refuse_model_args(model_args, "a run directory")
    try:
        run = resolve(RUN_READER)(path)
        task = run.task()
        family = resolve(MODEL_ENTRY)(run.model_name).family
    except RepscopeError as exc:
        raise type(exc)(f"{option}: {exc}") from None
    shape = getattr(task, "image_shape", None) or task.hparams.get("image_shape")
    recorded = {"image_shape": tuple(shape)} if shape else {}
    metadata = {"model_name": run.model_name, "family": family, "data_name": run.data_name}
    return LoadedModel(
        str(path), "run", None, merged_contract(contract, recorded, source=str(path)), metadata, task, path
    )


def _import_factory(reference: str, option: str) -> Any:
    module_name, _, attribute = reference.rpartition(":")
    try:
        if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
            module = _import_file(Path(module_name).expanduser(), option)
        else:
            module = importlib.import_module(module_name)
    except RepscopeError:
        raise
    except Exception as exc:  # an import runs the user's code: any exception is theirs to see
        raise InvalidArgumentError(f"{option}: cannot import {module_name!r} ({_first_line(exc)})") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise InvalidArgumentError(f"{option}: module {module_name!r} has no attribute {attribute!r}") from None


def _import_file(path: Path, option: str) -> Any:
    if not path.is_file():
        raise InvalidArgumentError(f"{option}: no such file: {path}")
    # a name of its own per file, so that two users' model.py files do not replace each other
    name = f"repscope_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InvalidArgumentError(f"{option}: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up by name
    # the file's folder on the path while it runs, so that it can import its siblings
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        with contextlib.suppress(ValueError):  # the user's code may have taken it off already
            sys.path.remove(str(path.parent.resolve()))
    return module


def _load_factory(reference: str, model_args: Any, weights: Any, contract: Any, option: str) -> LoadedModel:
    factory = _import_factory(reference, option)
    if not callable(factory):
        raise InvalidArgumentError(f"{option}: {reference} is a {type(factory).__name__}, not a callable factory")
    arguments = dict(model_args or {})
    try:
        module = factory(**arguments)
    except Exception as exc:  # the user's factory: report what it raised, in one line
        raise InvalidArgumentError(f"{option}: factory {reference} raised {_first_line(exc)}") from None
    if not isinstance(module, nn.Module):
        raise InvalidArgumentError(
            f"{option}: factory {reference} returned {type(module).__name__}, not a torch.nn.Module"
        )
    _apply_weights(module, weights)
    metadata = {"model_args": arguments} if arguments else {}
    return LoadedModel(reference, "factory", module, merged_contract(contract, {}, source=reference), metadata)


def _apply_weights(module: nn.Module, weights: str | Path | None) -> None:
    if weights is None:
        return
    path = Path(weights).expanduser()
    if not path.is_file():
        raise InvalidArgumentError(f"--weights: no such file: {path}")
    try:
        stored = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # weights_only refuses any object that is not tensors and containers
        raise InvalidArgumentError(
            f"--weights: {path} is not a state_dict readable with weights_only=True ({_first_line(exc)})"
        ) from None
    if isinstance(stored, Mapping) and isinstance(stored.get("state_dict"), Mapping):
        stored = stored["state_dict"]  # a Lightning checkpoint
    if not isinstance(stored, Mapping) or not all(isinstance(v, torch.Tensor) for v in stored.values()):
        raise InvalidArgumentError(f"--weights: {path} holds a {type(stored).__name__}, not a state_dict of tensors")
    state = _matching_keys(dict(stored), set(module.state_dict()))
    expected = set(module.state_dict())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        what = f"missing key {missing[0]!r}" if missing else f"unexpected key {unexpected[0]!r}"
        counts = f"{len(missing)} missing, {len(unexpected)} unexpected"
        raise InvalidArgumentError(f"--weights: {path} does not fit the model: {what} ({counts})")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:  # a tensor of another shape
        detail = next((line.strip() for line in str(exc).splitlines() if "size mismatch" in line), _first_line(exc))
        raise InvalidArgumentError(f"--weights: {path} does not fit the model: {detail}") from None


def _matching_keys(state: dict[str, torch.Tensor], expected: set[str]) -> dict[str, torch.Tensor]:
    """``state`` with a common prefix (``model.``, ``network.``, ...) stripped where the keys then match
    the module's exactly; otherwise ``state`` as it is (the strict check then names a key)."""
    candidate = state
    while set(candidate) != expected and candidate:
        heads = {key.split(".", 1)[0] for key in candidate}
        if len(heads) != 1 or any("." not in key for key in candidate):
            return state
        head = heads.pop()
        candidate = {key[len(head) + 1 :]: value for key, value in candidate.items()}
    return candidate if set(candidate) == expected else state


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def import_factory(reference: str, option: str = "--model") -> Any:
    """The callable ``reference`` names (``"pkg.module:factory"`` or ``"path/file.py:factory"``), imported now;
    for a model that is not a ``torch.nn.Module`` (the multimodal role's objects).

    Parameters
    ----------
    reference : str
        The import path.
    option : str, default="--model"
        The option that named it, for the messages.

    Returns
    -------
    object
        The attribute (normally a callable).

    Raises
    ------
    InvalidArgumentError
        One line, naming ``option``, when the module cannot be imported or lacks the attribute.
    """
    return _import_factory(reference, option)


def fitted_to_data(loaded: LoadedModel, image_shape: tuple[int, ...], data: Any) -> LoadedModel:
    """``loaded`` reading the data's images: its contract takes the data's ``(C, H, W)`` where it leaves the
    shape open, and a shape it states otherwise is refused (repscope does not resize).

    Parameters
    ----------
    loaded : LoadedModel
        The model; a run directory reads its own data's shape and is returned as is.
    image_shape : tuple of int
        The data's ``(C, H, W)``.
    data : object
        How the data was named (``--data``), for the message.

    Returns
    -------
    LoadedModel

    Raises
    ------
    InvalidArgumentError
        One line naming ``--data``, both shapes and where the model's comes from.
    """
    image_shape = tuple(int(size) for size in image_shape)
    stated = loaded.contract.image_shape
    if loaded.kind == "run":
        return loaded
    if stated is None:
        return replace(loaded, contract=with_image_shape(loaded.contract, image_shape))
    if tuple(stated) != image_shape:
        raise InvalidArgumentError(
            f"--data {data}: its images are (C, H, W) = {image_shape}, the model {loaded.source} reads "
            f"{tuple(stated)} (--input-size / --channels, or its file's record; repscope does not resize)"
        )
    return loaded


__all__ = [
    "LoadedModel",
    "MODEL_ENTRY",
    "RUN_READER",
    "fitted_to_data",
    "import_factory",
    "load_model",
    "parse_model_args",
]
