"""Torch model files: TorchScript and ``torch.export`` archives are loaded; pickles are refused unopened.

Both formats are zip archives. TorchScript keeps its compiled code under ``code/`` and is loaded by
``torch.jit.load``, whose unpickler rebuilds TorchScript objects only; a ``torch.export`` archive has
an ``archive_format`` member and a serialised graph (``models/*.json``). A ``torch.save`` file of a
whole model is a pickle (a zip with ``data.pkl`` and no code, or a legacy non-zip file): unpickling it
can run any code, so it is refused from its member names alone, before anything in it is read.
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile
from pathlib import Path
from typing import Any

import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.fileio import atomic_path
from repscope.models.external.contract import InputContract, contract_metadata
from repscope.models.external.onnx_module import in_fixed_batches

EXTRA_FILE = "repscope.json"
PICKLE_ADVICE = (
    "save the model with torch.jit.save (TorchScript), torch.export.save or ONNX, or give "
    "--model pkg.module:factory with --weights state_dict.pt"
)


def archive_kind(path: Path, option: str = "--model") -> str:
    """What a ``.pt`` / ``.pt2`` file holds, read from its zip member names only.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    option : str, default="--model"
        The option named in messages.

    Returns
    -------
    str
        ``torchscript`` or ``export``.

    Raises
    ------
    InvalidArgumentError
        When the file is a pickle (``torch.save``; zip or legacy format) or not a torch archive; the file
        is not unpickled.
    """
    if not zipfile.is_zipfile(path):
        raise InvalidArgumentError(
            f"{option}: {path} is not a TorchScript or torch.export archive (a legacy torch.save pickle or another "
            f"format); pickles can run code when loaded and are refused: {PICKLE_ADVICE}"
        )
    with zipfile.ZipFile(path) as archive:
        # members sit in one top folder named after the file: "<name>/code/...", "<name>/archive_format"
        inner = {name.split("/", 1)[1] if "/" in name else name for name in archive.namelist()}
    if "archive_format" in inner or any(name.startswith("models/") and name.endswith(".json") for name in inner):
        return "export"
    if any(name.startswith("code/") for name in inner) and "constants.pkl" in inner:
        return "torchscript"
    if "data.pkl" in inner:
        raise InvalidArgumentError(
            f"{option}: {path} is a torch.save pickle (a whole model or a state_dict), not TorchScript or "
            f"torch.export; pickles can run code when loaded and are refused: {PICKLE_ADVICE}"
        )
    raise InvalidArgumentError(f"{option}: {path} is a zip archive but not a TorchScript or torch.export model")


def _extra_contract(raw: Any, path: Path, option: str) -> dict[str, Any]:
    text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw or "")
    if not text.strip():
        return {}
    try:
        recorded = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidArgumentError(f"{option}: {path}: its {EXTRA_FILE} is not JSON") from None
    if not isinstance(recorded, dict):
        raise InvalidArgumentError(f"{option}: {path}: its {EXTRA_FILE} is not a JSON object")
    return recorded


def load_torchscript(path: Path, option: str = "--model") -> tuple[nn.Module, dict[str, Any]]:
    """A TorchScript module on the CPU and the metadata of its ``repscope.json`` extra file.

    Parameters
    ----------
    path : pathlib.Path
        A file written by ``torch.jit.save``.
    option : str, default="--model"
        The option named in messages.

    Returns
    -------
    tuple
        ``(module, metadata)``; ``metadata`` is empty when the file records none.

    Raises
    ------
    InvalidArgumentError
        When ``torch.jit.load`` fails (its first line is quoted).
    """
    extra = {EXTRA_FILE: ""}
    try:
        with warnings.catch_warnings():
            # torch 2.9+ marks TorchScript deprecated; loading users' existing files is what this is for
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    except Exception as exc:  # torch raises RuntimeError and others for a broken archive
        raise InvalidArgumentError(f"{option}: {path}: TorchScript load failed ({_first_line(exc)})") from None
    return module, _extra_contract(extra[EXTRA_FILE], path, option)


class ExportedModule(nn.Module):
    """The module of a ``torch.export`` program, callable like any ``nn.Module``.

    The exported graph has no train/eval switch (its ``eval()`` raises), so this wrapper's
    :meth:`train` changes only its own flag; an input batch dimension the export fixed is served in
    chunks of that size (:func:`~repscope.models.external.onnx_module.in_fixed_batches`).

    Parameters
    ----------
    program : torch.export.ExportedProgram
        The loaded program.
    """

    def __init__(self, program: Any) -> None:
        super().__init__()
        self.program_module = program.module()
        self.fixed_batch = _fixed_batch(program)

    def train(self, mode: bool = True) -> ExportedModule:
        """Set this wrapper's mode flag only (the exported graph has none).

        Parameters
        ----------
        mode : bool, default=True
            The flag.

        Returns
        -------
        ExportedModule
            ``self``.
        """
        self.training = mode
        return self

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return in_fixed_batches(self.program_module, inputs, self.fixed_batch)


def _fixed_batch(program: Any) -> int | None:
    names = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in names:
            value = node.meta.get("val")
            shape = getattr(value, "shape", None)
            if shape is not None and len(shape) > 0 and isinstance(shape[0], int):
                return int(shape[0])
            return None
    return None


def load_exported(path: Path, option: str = "--model") -> tuple[nn.Module, dict[str, Any]]:
    """A ``torch.export`` archive's module (:class:`ExportedModule`) and its ``repscope.json`` metadata.

    Parameters
    ----------
    path : pathlib.Path
        A file written by ``torch.export.save``.
    option : str, default="--model"
        The option named in messages.

    Returns
    -------
    tuple
        ``(module, metadata)``; ``metadata`` is empty when the archive records none.

    Raises
    ------
    InvalidArgumentError
        When ``torch.export.load`` fails (its first line is quoted).
    """
    extra = {EXTRA_FILE: ""}
    try:
        program = torch.export.load(str(path), extra_files=extra)
    except Exception as exc:  # torch raises several types for a broken or newer archive
        raise InvalidArgumentError(f"{option}: {path}: torch.export load failed ({_first_line(exc)})") from None
    return ExportedModule(program), _extra_contract(extra[EXTRA_FILE], path, option)


def export_torchscript(
    module: nn.Module, path: str | os.PathLike, contract: InputContract, example: torch.Tensor
) -> Path:
    """Write ``module`` as TorchScript (traced on ``example``) with ``contract`` in its ``repscope.json``.

    Parameters
    ----------
    module : torch.nn.Module
        The model (traced in eval mode, its mode restored after).
    path : str or os.PathLike
        The file written (atomically), e.g. ``encoder.pt``.
    contract : InputContract
        Recorded in the extra file ``repscope.json``.
    example : torch.Tensor
        An input batch ``(B, C, H, W)`` as the module reads it.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated from torch 2.9 on
            traced = torch.jit.trace(module, (example,), check_trace=False)
        with atomic_path(path) as temporary, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.jit.save(traced, str(temporary), _extra_files={EXTRA_FILE: json.dumps(contract_metadata(contract))})
    finally:
        module.train(was_training)
    return Path(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


__all__ = [
    "EXTRA_FILE",
    "ExportedModule",
    "archive_kind",
    "export_torchscript",
    "load_exported",
    "load_torchscript",
]
