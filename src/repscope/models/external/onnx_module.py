"""ONNX models as torch modules: a model from TensorFlow, JAX or any framework that exports ONNX runs
through onnxruntime behind the same ``nn.Module`` interface as a torch model.

onnxruntime is the optional extra ``repscope[onnx]``; it is imported when an ONNX file is opened, never
at import time. Exporting (:func:`export_onnx`) uses torch's own exporter, which needs the ``onnx``
package.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.fileio import atomic_path
from repscope.models.external.contract import InputContract, contract_metadata

INSTALL_HINT = "pip install 'repscope[onnx]'"


def _onnxruntime(option: str) -> Any:
    try:
        import onnxruntime  # noqa: PLC0415 -- an optional extra, loaded only for an .onnx model
    except ImportError:
        raise InvalidArgumentError(f"{option}: running an ONNX model needs onnxruntime: {INSTALL_HINT}") from None
    return onnxruntime


def _static(size: Any) -> int | None:
    return int(size) if isinstance(size, int) and size > 0 else None


class OnnxModule(nn.Module):
    """An ONNX model run by an onnxruntime ``InferenceSession`` on the CPU, as a torch module.

    ``forward`` takes the model's first input as a tensor, runs the session on it (float32 numpy) and
    returns the first output as a float tensor on the input's device. A model exported with a fixed
    batch size runs in chunks of that size (the last one padded with zeros, the padding dropped).
    There are no parameters and no gradients: it is for inference.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.onnx`` file.
    option : str, default="--model"
        The option named in error messages.

    Attributes
    ----------
    metadata : dict of str to str
        The model's ``custom_metadata_map``.
    input_shape : tuple of (int or None)
        The first input's shape; None for a dynamic dimension.
    input_name : str
        The first input's name.

    Raises
    ------
    InvalidArgumentError
        When onnxruntime is not installed, or the file is not a model onnxruntime can load.
    """

    def __init__(self, path: str | os.PathLike, option: str = "--model") -> None:
        super().__init__()
        runtime = _onnxruntime(option)
        self.path = Path(path)
        try:
            self.session = runtime.InferenceSession(str(self.path), providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for a bad file
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise InvalidArgumentError(
                f"{option}: {self.path} is not a readable ONNX model ({type(exc).__name__}: {first})"
            ) from None
        first_input = self.session.get_inputs()[0]
        self.input_name = first_input.name
        self.input_shape = tuple(_static(size) for size in first_input.shape)
        self.metadata = dict(self.session.get_modelmeta().custom_metadata_map)

    @property
    def image_shape(self) -> tuple[int | None, ...] | None:
        """``(C, H, W)`` of the first input where it is 4-D (None for a free dimension), else None."""
        return self.input_shape[1:] if len(self.input_shape) == 4 else None

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        batch = self.input_shape[0] if self.input_shape else None
        return in_fixed_batches(self._run, inputs, batch)

    def _run(self, inputs: torch.Tensor) -> torch.Tensor:
        array = np.ascontiguousarray(inputs.detach().to("cpu", torch.float32).numpy())
        output = self.session.run(None, {self.input_name: array})[0]
        return torch.from_numpy(np.asarray(output)).to(inputs.device)


def in_fixed_batches(
    function: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor, batch: int | None
) -> torch.Tensor:
    """``function(inputs)``, for a model whose graph fixes its batch size to ``batch``.

    Parameters
    ----------
    function : callable
        Takes and returns a tensor whose first dimension is the batch.
    inputs : torch.Tensor
        Any number of rows.
    batch : int or None
        The fixed batch size; None (free) calls ``function`` once.

    Returns
    -------
    torch.Tensor or tuple, list, dict of them
        The outputs of every row, in order: chunks of ``batch`` rows, the last one padded with zeros
        and its padding's outputs dropped.
    """
    if batch is None or len(inputs) == batch:
        return function(inputs)
    outputs = []
    for start in range(0, len(inputs), batch):
        chunk = inputs[start : start + batch]
        padding = inputs.new_zeros((batch - len(chunk), *chunk.shape[1:]))
        outputs.append(_rows(function(torch.cat([chunk, padding])), len(chunk)))
    return _joined(outputs)


def _rows(output: Any, count: int) -> Any:
    """The first ``count`` rows of a tensor, or of each tensor in a tuple, list or dict (an encoder's
    ``(mean, log_var)``)."""
    if isinstance(output, torch.Tensor):
        return output[:count]
    if isinstance(output, dict):
        return {key: _rows(value, count) for key, value in output.items()}
    return type(output)(_rows(value, count) for value in output)


def _joined(outputs: list[Any]) -> Any:
    first = outputs[0]
    if isinstance(first, torch.Tensor):
        return torch.cat(outputs)
    if isinstance(first, dict):
        return {key: _joined([output[key] for output in outputs]) for key in first}
    return type(first)(_joined([output[index] for output in outputs]) for index in range(len(first)))


def export_onnx(module: nn.Module, path: str | os.PathLike, contract: InputContract, example: torch.Tensor) -> Path:
    """Write ``module`` as an ONNX file that records ``contract`` in its metadata.

    The batch dimension is dynamic; the others are fixed by ``example``. ``module`` receives what the
    contract prepares (``contract.prepare`` is not part of the graph): ``example`` is such an input.

    Parameters
    ----------
    module : torch.nn.Module
        The model (put in eval mode for the export, its mode restored after).
    path : str or os.PathLike
        The ``.onnx`` file written (atomically).
    contract : InputContract
        Recorded as ``custom_metadata_map`` entries (:func:`~repscope.models.external.contract.contract_metadata`).
    example : torch.Tensor
        An input batch ``(B, C, H, W)`` the export traces.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import onnx  # noqa: PLC0415 -- needed only to export

    was_training = module.training
    module.eval()
    try:
        with atomic_path(path) as temporary, warnings.catch_warnings():
            # the TorchScript-based exporter: the dynamo one needs onnxscript, which repscope does not install
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                module,
                (example,),
                str(temporary),
                dynamo=False,
                input_names=["images"],
                output_names=["outputs"],
                dynamic_axes={"images": {0: "batch"}, "outputs": {0: "batch"}},
            )
            model = onnx.load(str(temporary))
            for key, value in contract_metadata(contract).items():
                entry = model.metadata_props.add()
                entry.key, entry.value = key, value
            onnx.save(model, str(temporary))
    finally:
        module.train(was_training)
    return Path(path)


__all__ = ["INSTALL_HINT", "OnnxModule", "export_onnx", "in_fixed_batches"]
