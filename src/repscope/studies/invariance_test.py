"""Invariance testing of one classifier (ML4ML deployment workflow): signals, variance matrices, features.

For a transformation family ``t_0 .. t_n`` (:mod:`repscope.data.invariance_transforms`) and the test
images, every image is transformed ``n + 1`` times and passed through the model once per transformation
(batched); probes (:mod:`repscope.models.probes`) read the signal sets at each position, and a modality
``f@position`` keeps one number per example and transformation, ``f(S)`` with ``f`` max or mean. The
paper's five modalities give five variance matrices (:func:`repscope.metrics.invariance.variance_matrix.
variance_matrix`), each with its 16 features (:mod:`repscope.metrics.invariance.features`, sensitivity
against a seeded 90% subsample of the examples), and the robust accuracy of Eq. 1 (the fraction of
examples classified correctly under every transformation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from repscope.data.invariance_transforms import TransformFamily
from repscope.errors import InvalidArgumentError
from repscope.metrics.invariance.features import matrix_features
from repscope.metrics.invariance.variance_matrix import subsample_rows, variance_matrix
from repscope.models.probes import resolve_positions, signal_sets
from repscope.progress import progress_bar

# the paper's five matrices (Sec. V): max@CONF, max@CONV-1, mean@CONV-1, max@CONV-2, mean@CONV-2
PAPER_MODALITIES: tuple[tuple[str, str], ...] = (
    ("max", "CONF"),
    ("max", "CONV-1"),
    ("mean", "CONV-1"),
    ("max", "CONV-2"),
    ("mean", "CONV-2"),
)
STATISTICS = {"max": lambda s: s.amax(dim=1), "mean": lambda s: s.mean(dim=1)}


def modality_name(statistic: str, position: str) -> str:
    """``"max@CONF"``: how files, tables and features name a modality."""
    return f"{statistic}@{position}"


@dataclass
class InvarianceSignals:
    """Per-example statistics of a model under a family of transformations.

    Attributes
    ----------
    values : dict of str to numpy.ndarray
        Modality -> ``(N, T)`` float64 ``f(S_t(x))``, for the kept examples.
    correct : numpy.ndarray
        ``(N_all, T)`` bool: example classified correctly under each transformation.
    kept : numpy.ndarray
        ``(N_all,)`` bool: the examples the values hold (all, or those correct at the identity).
    family : TransformFamily
        The transformations.
    """

    values: dict[str, np.ndarray]
    correct: np.ndarray
    kept: np.ndarray
    family: TransformFamily
    positions: dict[str, str | None] = field(default_factory=dict)


def model_signals(
    model: nn.Module,
    images: Any,
    labels: Any,
    family: TransformFamily,
    modalities: tuple[tuple[str, str], ...] = PAPER_MODALITIES,
    batch_size: int = 500,
    correct_only: bool = False,
    progress: bool | None = None,
) -> InvarianceSignals:
    """Transform every image ``len(family)`` times, run the model, keep each modality's statistic.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier mapping float images ``(B, C, H, W)`` in [0, 1] to logits.
    images : array-like
        ``(N, C, H, W)`` uint8 or floats in [0, 1].
    labels : array-like
        ``(N,)`` classes.
    family : TransformFamily
        The transformations.
    modalities : tuple of (statistic, position)
        Statistics ``max`` / ``mean`` at positions ``CONF``, ``CONV-1``, ``CONV-2`` or module names.
    batch_size : int
        Images per forward pass.
    correct_only : bool
        Keep only the examples classified correctly at the identity transformation.
    progress : bool, optional
        False shows no bar.

    Returns
    -------
    InvarianceSignals

    Raises
    ------
    InvalidArgumentError
        A bad statistic or position, images and labels of different lengths, or no example left.
    """
    for statistic, _ in modalities:
        if statistic not in STATISTICS:
            raise InvalidArgumentError(f"modality: statistic {statistic!r} is not one of {', '.join(STATISTICS)}")
    positions = resolve_positions(model, list(dict.fromkeys(position for _, position in modalities)))
    pixels = torch.as_tensor(np.asarray(images))
    pixels = pixels.float() / 255.0 if pixels.dtype == torch.uint8 else pixels.float()
    targets = torch.as_tensor(np.asarray(labels)).long()
    if pixels.ndim != 4 or len(pixels) != len(targets) or len(pixels) == 0:
        raise InvalidArgumentError(
            f"images, labels: expected (N, C, H, W) images and N labels, got {tuple(pixels.shape)} and {len(targets)}"
        )
    device = next(model.parameters(), torch.zeros(())).device
    count, steps = len(pixels), len(family)
    values = {modality_name(*m): np.empty((count, steps)) for m in modalities}
    correct = np.empty((count, steps), bool)
    model.eval()
    with progress_bar(f"{family.name}: {steps} transformations of {count} images", count, progress) as update:
        for start in range(0, count, batch_size):
            batch = pixels[start : start + batch_size].to(device)
            rows = slice(start, start + len(batch))
            for step in range(steps):
                logits, signals = signal_sets(model, family.transform(batch, step), positions)
                correct[rows, step] = (logits.argmax(dim=1).cpu() == targets[rows]).numpy()
                for statistic, position in modalities:
                    summary = STATISTICS[statistic](signals[position].double())
                    values[modality_name(statistic, position)][rows, step] = summary.cpu().numpy()
            update(rows.stop)
    identity = steps // 2
    kept = correct[:, identity] if correct_only else np.ones(count, bool)
    if not kept.any():
        raise InvalidArgumentError("correct_only: no test example is classified correctly at the identity")
    return InvarianceSignals({k: v[kept] for k, v in values.items()}, correct, kept, family, positions)


def robust_accuracy(correct: Any) -> float:
    """Eq. 1 with correctness: the fraction of examples classified correctly under every transformation.

    Parameters
    ----------
    correct : array-like of shape (N, T)
        Whether each example is classified correctly under each transformation.

    Returns
    -------
    float
    """
    return float(np.mean(np.all(np.asarray(correct, bool), axis=1)))


def matrices_and_features(
    signals: InvarianceSignals, subsample_fraction: float = 0.9, seed: int = 0, tau: float = 0.15
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, float]]]:
    """Each modality's variance matrix and its 16 features (sensitivity against a seeded subsample).

    Parameters
    ----------
    signals : InvarianceSignals
        :func:`model_signals`.
    subsample_fraction : float, default 0.9
        The sensitivity feature's r.
    seed : int, default 0
        Seed of the subsample.
    tau : float, default 0.15
        The significant-variance threshold.

    Returns
    -------
    tuple of dict
        Modality -> ``(T, T)`` matrix, and modality -> features.
    """
    matrices, features = {}, {}
    for name, values in signals.values.items():
        matrices[name] = variance_matrix(values)
        rows = subsample_rows(len(values), subsample_fraction, seed)
        subsample = variance_matrix(values[rows]) if len(rows) else matrices[name]
        features[name] = matrix_features(matrices[name], subsample, tau=tau)
    return matrices, features


__all__ = [
    "PAPER_MODALITIES",
    "InvarianceSignals",
    "matrices_and_features",
    "model_signals",
    "modality_name",
    "robust_accuracy",
]
