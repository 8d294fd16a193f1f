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
    Train a config into a run directory; load trained tasks from checkpoints.
"""
