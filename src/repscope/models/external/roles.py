"""Models by role: the object a role's assessment drives (:func:`role_model`): a repscope run's task, or
an adapter of :mod:`repscope.models.external.adapters`, or a :class:`CodeGenerator` that draws codes from
a prior for a generator network.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.external.adapters import ImageClassifier, ImageDecoder, ImageEncoder
from repscope.models.external.loading import LoadedModel, load_model
from repscope.validation import check_positive_int, check_seed

ROLES = ("encoder", "classifier", "generator", "multimodal")
PRIORS = ("normal", "uniform")


class CodeGenerator:
    """Images of codes drawn from a prior, through a decoder.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The generator, taking ``(B, latent_dim)`` codes.
    latent_dim : int
        Columns of the codes.
    prior : {"normal", "uniform"}, default="normal"
        ``N(0, I)`` or ``U(-1, 1)`` per column.
    **options
        Of :class:`ImageDecoder` (``logits``, ``batch_size``, ``device``, ``progress``).
    """

    def __init__(self, loaded: Any, latent_dim: int, prior: str = "normal", **options: Any) -> None:
        if prior not in PRIORS:
            raise InvalidArgumentError(f"--prior: expected one of {', '.join(PRIORS)}, got {prior!r}")
        self.latent_dim = check_positive_int(latent_dim, "--latent-dim")
        self.prior = prior
        self.decoder = ImageDecoder(loaded, **options)

    def codes(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` codes from the prior, drawn by a CPU generator seeded with ``seed``.

        Parameters
        ----------
        n : int
            Number of codes, at least 1.
        seed : int, default=0
            The seed: the same seed gives the same codes.

        Returns
        -------
        numpy.ndarray
            float32 ``(n, latent_dim)``.
        """
        generator = torch.Generator().manual_seed(check_seed(seed))
        shape = (check_positive_int(n, "n"), self.latent_dim)
        draws = (
            torch.randn(shape, generator=generator)
            if self.prior == "normal"
            else torch.rand(shape, generator=generator) * 2 - 1
        )
        return draws.numpy()

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """uint8 images of ``n`` codes from the prior (:meth:`codes`).

        Parameters
        ----------
        n : int
            Number of images, at least 1.
        seed : int, default=0
            The seed of the codes.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, H, W)`` or ``(n, H, W, C)``.
        """
        return self.decoder.decode(self.codes(n, seed))

    def decode(self, codes: Any) -> np.ndarray:
        """uint8 images of given codes (:meth:`ImageDecoder.decode`).

        Parameters
        ----------
        codes : array-like, shape (N, latent_dim)
            Latent vectors.

        Returns
        -------
        numpy.ndarray
            uint8 images.
        """
        return self.decoder.decode(codes)


# the method a repscope task needs to play each role (the inference protocols of repscope.train.tasks.base)
ROLE_METHODS = {
    "encoder": "encode",
    "classifier": "soft_labels",
    "generator": "sample",
    "decoder": "decode",
    "multimodal": "sample",
}


def run_task(loaded: LoadedModel, role: str) -> Any:
    """A run directory's task, checked to have the method ``role`` needs.

    Parameters
    ----------
    loaded : LoadedModel
        Of kind ``run``.
    role : str
        A key of :data:`ROLE_METHODS`.

    Returns
    -------
    object
        ``loaded.task``.

    Raises
    ------
    InvalidArgumentError
        When the task's family does not play ``role`` (a VAE has no ``soft_labels``).
    """
    method = ROLE_METHODS[role]
    if not callable(getattr(loaded.task, method, None)):
        model = loaded.metadata.get("model_name")
        raise InvalidArgumentError(
            f"--role {role}: the run {loaded.source} trained {model} ({loaded.metadata.get('family')} family), "
            f"which has no {method}(); it cannot be assessed as a {role}"
        )
    return loaded.task


def role_model(loaded: Any, role: str, **options: Any) -> Any:
    """The object a role's assessment drives: a run directory's task, else the role's adapter.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The model.
    role : {"encoder", "classifier", "generator", "decoder", "multimodal"}
        The role (a decoder: :class:`ImageDecoder`, beside an encoder).
    **options
        Of the adapter (``batch_size``, ``device``, ``progress``; ``latent_dim`` and ``prior`` for a
        generator, ``probabilities`` for a classifier, ``logits`` for a generator's decoder).

    Returns
    -------
    object
        The task (kind ``run``), or :class:`ImageEncoder`, :class:`ImageClassifier` or :class:`CodeGenerator`.

    Raises
    ------
    InvalidArgumentError
        For an unknown role, a multimodal role of a model that is not a repscope run, or a generator
        without ``latent_dim``.
    """
    loaded = load_model(loaded)
    if role not in (*ROLES, "decoder"):
        raise InvalidArgumentError(f"--role: expected one of {', '.join(ROLES)}, got {role!r}")
    if loaded.kind == "run":
        return run_task(loaded, role)
    if role == "multimodal":
        raise InvalidArgumentError(
            "--role multimodal: only a repscope run directory of a multimodal VAE can be assessed as one"
        )
    if role == "generator":
        latent_dim = options.pop("latent_dim", None)
        if latent_dim is None:
            raise InvalidArgumentError("--latent-dim: required for a generator (the number of columns of its codes)")
        return CodeGenerator(loaded, latent_dim, **options)
    adapter = {"encoder": ImageEncoder, "classifier": ImageClassifier, "decoder": ImageDecoder}[role]
    return adapter(loaded, **options)


__all__ = ["PRIORS", "ROLES", "ROLE_METHODS", "CodeGenerator", "role_model", "run_task"]
