"""Invariance testing of your classifier under a family of transformations (ML4ML).

The ML4ML invariance-testing paper (its authors' code: Zukang-Liao/ML4ML-invariance-testing): every
test image is transformed by each member ``t_0 .. t_n`` of a family (rotations, brightness changes,
scalings), the model's signals at the confidence output and its last two convolutions give five variance
matrices, their 16 features each, and the robust accuracy of Eq. 1 (the fraction of images classified
correctly under every transformation). :func:`test` runs it on any classifier::

    import repscope.invariance

    result = repscope.invariance.test(model, images, labels, family="rotation")
    result.robust_accuracy, result.features_table

The model is a ``torch.nn.Module`` mapping float ``(B, C, H, W)`` images in [0, 1] to logits, or anything
:func:`repscope.models.external.load_model` reads (``"pkg.module:factory"``, a TorchScript or ONNX file, a
repscope run directory), whose input contract is applied inside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import nn

from repscope.data.invariance.transforms import FAMILIES, TransformFamily, custom_family, transform_family
from repscope.errors import InvalidArgumentError, shown
from repscope.studies.invariance.testing import COMPAT_MODES, InvarianceTestResult, compute_invariance_test
from repscope.validation import as_array

__all__ = [
    "COMPAT_MODES",
    "FAMILY_NAMES",
    "InvarianceTestResult",
    "TransformFamily",
    "custom_family",
    "test",
    "transform_family",
]

# the registered families' names (rotation, brightness, scale), read from their registry
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)


def _network(model: Any, contract: Any) -> nn.Module:
    """The classifier as a module of float [0, 1] ``(B, C, H, W)`` images returning logits."""
    if isinstance(model, nn.Module) and contract is None:
        return model
    # models from outside go through the one loader, which checks the file and applies the input contract
    from repscope.models.external import ImageClassifier, load_model  # noqa: PLC0415

    if isinstance(model, ImageClassifier):
        return model.network
    return ImageClassifier(load_model(model, contract=contract)).network


def _family(family: str | TransformFamily, half_range: float | None, steps: int) -> TransformFamily:
    """A family by name (the paper's range unless ``half_range``), or the family given."""
    if isinstance(family, TransformFamily):
        return family
    if family not in FAMILIES:
        raise InvalidArgumentError(
            f"family: expected one of {', '.join(FAMILY_NAMES)} or a TransformFamily, got {shown(family)}"
        )
    return transform_family(family, half_range, steps)


def _channels_first(images: Any) -> np.ndarray:
    """``(N, H, W)`` grey images given a channel axis; ``(N, C, H, W)`` as they are."""
    array = as_array(images, "images")
    return array[:, None] if array.ndim == 3 else array


def test(
    model: Any,
    images: Any,
    labels: Any,
    family: str | TransformFamily = "rotation",
    *,
    half_range: float | None = None,
    steps: int = 31,
    compat: str = "paper",
    correct_only: bool = False,
    batch_size: int = 500,
    seed: int = 0,
    contract: Any = None,
    progress: bool | None = None,
) -> InvarianceTestResult:
    """Test a classifier's invariance to a family of transformations; writes nothing.

    Each image ``x`` is transformed by every ``t_j`` of the family; per modality ``f@position`` (``max`` or
    ``mean`` of the signal set at ``CONF``, ``CONV-1``, ``CONV-2``) the values ``f(S_{t_j}(x))`` give the
    variance matrix ``M[j, k] = sqrt(mean_x (f(S_{t_j}(x)) - f(S_{t_k}(x)))^2)`` and its 16 features (ML4ML;
    :func:`repscope.studies.invariance.testing.compute_invariance_test`), and the robust accuracy
    is the fraction of images classified correctly under every ``t_j`` (Eq. 1).

    Parameters
    ----------
    model : torch.nn.Module or str or pathlib.Path or object
        A classifier of float ``(B, C, H, W)`` images in [0, 1] returning logits, or a source
        :func:`repscope.models.external.load_model` reads (its ``ImageClassifier`` too). The paper's
        modalities read its last two convolution layers: a model with fewer fails naming ``CONV-2``.
    images : array-like
        ``(N, C, H, W)`` or grey ``(N, H, W)`` test images, uint8 (0-255) or float in [0, 1].
    labels : array-like
        ``(N,)`` classes.
    family : str or TransformFamily, default="rotation"
        A name of :data:`FAMILY_NAMES` or a family of your own (:func:`custom_family`).
    half_range : float, optional
        A named family's half-range (degrees for rotation, a fraction for brightness and scale); default
        the paper's (15 degrees, 30%, 30%).
    steps : int, default=31
        A named family's transformations (odd, the identity in the middle).
    compat : {"paper", "reference"}, default="paper"
        The paper's five modalities, or the authors' released code's (:data:`COMPAT_MODES`).
    correct_only : bool, default=False
        Keep only the images classified correctly at the identity.
    batch_size : int, default=500
        Images per forward pass.
    seed : int, default=0
        Seed of the sensitivity subsamples of the features.
    contract : repscope.models.external.InputContract, optional
        The model's input (shape, range, mean / std); loads ``model`` through the loader.
    progress : bool, optional
        False shows no progress bar.

    Returns
    -------
    InvarianceTestResult
        Matrices, features, per-image correctness, ``robust_accuracy`` and ``accuracy``.

    Raises
    ------
    InvalidArgumentError
        An unknown family, a bad range or step count, images and labels of different lengths, a model
        without the convolutions the modalities read, or a model the loader refuses.
    """
    transforms = _family(family, half_range, steps)
    network = _network(model, contract)
    return compute_invariance_test(
        network,
        _channels_first(images),
        labels,
        transforms,
        compat=compat,
        correct_only=correct_only,
        batch_size=batch_size,
        seed=seed,
        progress=progress,
    )


# pytest would collect a function named ``test`` imported into a test module; this one is no test case
test.__test__ = False  # type: ignore[attr-defined]
