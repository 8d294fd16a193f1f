"""Training: how models are trained (LightningModules), on what data, and the run directories.

Modules
-------
``repscope.train.tasks``
    LightningModules: ``SupervisedTask`` (LeNet-5 / MLP classification or regression), ``VAETask``
    (beta-VAE), ``GANTask`` (non-saturating GAN), ``InfoGANTask``; each with the inference methods
    the studies use (``predict``, ``encode``, ``sample``, ``infer_codes`` ...).
``repscope.train.config``
    The validated training config (model, data, trainer).
``repscope.train.datamodule``
    A LightningDataModule over in-memory digit arrays.
``repscope.train.run``
    Train a config into a run directory (``fit``); load a trained task from a checkpoint (``load_task``).
``repscope.train.reader``
    Read a run directory back: ``open_run(path) -> TrainedRun`` (typed config, metrics, the trained
    task on demand); exported here as ``repscope.train.open_run`` and ``repscope.train.TrainedRun``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainedRun", "open_run"]


def __getattr__(name: str) -> Any:
    # imported on first use: ``import repscope.train.config`` (the CLI's config checks) stays light
    if name in __all__:
        from repscope.train import reader  # noqa: PLC0415

        return getattr(reader, name)
    raise AttributeError(f"module 'repscope.train' has no attribute {name!r}")
