"""Training: how models are trained (LightningModules), on what data, and the run directories.

Modules
-------
``repscope.train.tasks``
    LightningModules: ``SupervisedTask`` (LeNet-5 / MLP classification or regression), ``VAETask``
    (beta-VAE), ``GANTask`` (non-saturating GAN), ``InfoGANTask``; each with the inference methods
    of their family's protocol (``predict`` / ``soft_labels``, ``encode`` / ``sample`` / ``decode``).
``repscope.train.config``
    The validated training config (model, data, trainer).
``repscope.train.datamodule``
    A LightningDataModule over in-memory digit arrays.
``repscope.train.fitting``
    Train a config into a run directory (``fit``); load a trained task from a checkpoint (``load_task``).
``repscope.train.reader``
    Read a run directory back: ``open_run(path) -> TrainedRun`` (typed config, metrics, the trained
    task on demand).

``fit``, ``load_task``, ``TrainOutcome`` (``repscope.train.fitting``), ``open_run`` and ``TrainedRun`` are
importable from ``repscope.train`` itself.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it, imported on first use: ``import repscope.train.config``
# (the CLI's config checks) stays light
_EXPORTS = {
    "TrainedRun": "repscope.train.reader",
    "open_run": "repscope.train.reader",
    "TrainOutcome": "repscope.train.fitting",
    "fit": "repscope.train.fitting",
    "load_task": "repscope.train.fitting",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'repscope.train' has no attribute {name!r}")
