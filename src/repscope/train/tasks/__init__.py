"""How the models of :mod:`repscope.models` are trained: one small LightningModule per training family.

``repscope.train.tasks.supervised``
    ``SupervisedTask``: a classifier / regressor network (LeNet-5, MLP, the CdSprites+ attribute CNN, the
    Raw Zero-Shot All-CNN-C, Network in Network and ResNet).
``repscope.train.tasks.capsule``
    ``CapsNetTask``: CapsNet (Sabour et al., 2017) with its margin and reconstruction losses.
``repscope.train.tasks.vae``
    ``VAETask``: beta-VAE with any registered encoder / decoder pair (28x28 digits, 64x64 images).
``repscope.train.tasks.disentangling_vaes`` and ``repscope.train.tasks.semi_supervised``
    beta-TCVAE, DIP-VAE, FactorVAE (each a ``VAETask`` with its own regulariser), and their
    semi-supervised variants.
``repscope.train.tasks.gan``
    ``GANTask`` (non-saturating GAN) and ``InfoGANTask`` on 28x28 digits, and their losses.
``repscope.train.tasks.multimodal``
    The multimodal VAEs over several fields of the data.
``repscope.train.tasks.base``
    What they share: hyper-parameters declared as a ``Config`` dataclass that a subclass extends
    (saved and reloaded automatically), the batch and checkpoint conventions, and the inference
    protocol of each family (``Encoder``, ``Generator``, ``Classifier``).
"""

from repscope.train.tasks.base import (
    EVAL_BATCH,
    Classifier,
    Encoder,
    Generator,
    ImageTask,
    check_images,
    check_pixel_values,
    evaluating,
    image_batches,
    seeded,
    to_uint8,
)
from repscope.train.tasks.capsule import CapsNetTask
from repscope.train.tasks.gan import GANTask, InfoGANTask, discriminator_loss, generator_loss
from repscope.train.tasks.supervised import SupervisedTask
from repscope.train.tasks.vae import VAETask

__all__ = [
    "SupervisedTask",
    "CapsNetTask",
    "VAETask",
    "GANTask",
    "InfoGANTask",
    "ImageTask",
    "Encoder",
    "Generator",
    "Classifier",
    "discriminator_loss",
    "generator_loss",
    "check_images",
    "check_pixel_values",
    "image_batches",
    "evaluating",
    "seeded",
    "to_uint8",
    "EVAL_BATCH",
]
