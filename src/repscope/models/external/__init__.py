"""Models from outside repscope: load a network from an ``nn.Module``, an import path
``pkg.module:factory``, a TorchScript or ``torch.export`` file, an ONNX file or a repscope run directory
(:func:`load_model`; never an arbitrary pickle), check it on a probe batch (:func:`check_model`), and
drive it by role through numpy interfaces (:func:`role_model`: :class:`ImageEncoder`,
:class:`ImageDecoder`, :class:`ImageClassifier`, :class:`CodeGenerator`).

Modules
-------
``contract``
    :class:`InputContract`: the image shape and pixel range a model reads, recorded in its file.
``loading``
    :func:`load_model`, :class:`LoadedModel`, :func:`parse_model_args`.
``torch_files``
    TorchScript and ``torch.export`` archives (pickles refused unopened); :func:`export_torchscript`.
``onnx_module``
    :class:`OnnxModule` (onnxruntime behind ``nn.Module``); :func:`export_onnx`.
``tensors``
    Images in, outputs read as codes, logits or images.
``adapters``
    The role adapters of images: :class:`ImageEncoder`, :class:`ImageDecoder`, :class:`ImageClassifier`.
``roles``
    :func:`role_model` (a run's task or an adapter by role) and :class:`CodeGenerator`.
``probing``
    :func:`check_model`, :class:`ProbeReport`, :func:`detect_role`.
"""

from __future__ import annotations

from repscope.models.external.adapters import ImageClassifier, ImageDecoder, ImageEncoder, PreparedNetwork
from repscope.models.external.contract import InputContract
from repscope.models.external.loading import LoadedModel, fitted_to_data, load_model, parse_model_args
from repscope.models.external.onnx_module import OnnxModule, export_onnx
from repscope.models.external.probing import ProbeReport, check_model, detect_role
from repscope.models.external.roles import CodeGenerator, role_model
from repscope.models.external.torch_files import export_torchscript

__all__ = [
    "CodeGenerator",
    "ImageClassifier",
    "ImageDecoder",
    "ImageEncoder",
    "InputContract",
    "LoadedModel",
    "OnnxModule",
    "PreparedNetwork",
    "ProbeReport",
    "check_model",
    "detect_role",
    "export_onnx",
    "export_torchscript",
    "fitted_to_data",
    "load_model",
    "parse_model_args",
    "role_model",
]
