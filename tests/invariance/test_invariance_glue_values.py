"""The invariance-testing glue checked end to end on values worked out by hand.

A fixed linear classifier on 2x2 images, a brightness family of three factors, and labels that leave one
example wrong at the identity: each example's max softmax probability under each transformation, which
examples are kept, the robust accuracy and a variance-matrix entry are computed here with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from repscope.data.invariance.transforms import TransformFamily
from repscope.studies.invariance.testing import matrices_and_features, model_signals, robust_accuracy

IMAGES = np.array(
    [
        [[0.2, 0.9], [0.4, 0.1]],
        [[0.8, 0.3], [0.6, 0.5]],
        [[0.1, 0.2], [0.9, 0.7]],
        [[0.5, 0.5], [0.2, 0.8]],
        [[0.9, 0.1], [0.3, 0.3]],
    ]
)[:, None]  # (5, 1, 2, 2)
WEIGHT = np.array([[1.5, -0.5, 0.3, 0.2], [-0.7, 1.1, 0.4, -0.3], [0.2, 0.3, -1.2, 1.4]])
BIAS = np.array([0.1, -0.2, 0.3])
FACTORS = (0.2, 1.0, 3.0)  # the identity is the middle one


def classifier() -> nn.Module:
    linear = nn.Linear(4, 3)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(WEIGHT, dtype=torch.float32))
        linear.bias.copy_(torch.tensor(BIAS, dtype=torch.float32))
    return nn.Sequential(nn.Flatten(), linear)


def brightness(images: torch.Tensor, value: float) -> torch.Tensor:
    return (images * value).clamp(0.0, 1.0)


def by_hand():
    """Per (example, transformation): max softmax probability and whether the argmax is the label."""
    maxima = np.empty((len(IMAGES), len(FACTORS)))
    predicted = np.empty((len(IMAGES), len(FACTORS)), dtype=int)
    for step, factor in enumerate(FACTORS):
        flat = np.clip(IMAGES * factor, 0.0, 1.0).reshape(len(IMAGES), -1)
        logits = flat @ WEIGHT.T + BIAS
        probabilities = np.exp(logits - logits.max(1, keepdims=True))
        probabilities /= probabilities.sum(1, keepdims=True)
        maxima[:, step] = probabilities.max(1)
        predicted[:, step] = logits.argmax(1)
    return maxima, predicted


def test_signals_kept_rows_robust_accuracy_and_a_matrix_entry_by_hand():
    maxima, predicted = by_hand()
    labels = predicted[:, 1].copy()
    labels[4] = (labels[4] + 1) % 3  # example 4 is wrong at the identity: dropped with correct_only
    correct = predicted == labels[:, None]
    assert not correct[4, 1] and correct[:4, 1].all()
    # kept examples that a transformation misclassifies: 2 only at the first, 3 only at the last, so
    # keeping by another transformation or by all of them gives other rows
    assert list(correct[2]) == [False, True, True] and list(correct[3]) == [True, True, False]
    family = TransformFamily("brightness", FACTORS, "factor", brightness)
    signals = model_signals(
        classifier(), IMAGES.astype(np.float32), labels, family, modalities=(("max", "CONF"),), correct_only=True,
        progress=False,
    )  # fmt: skip
    kept = np.array([True, True, True, True, False])
    np.testing.assert_array_equal(signals.kept, kept)
    np.testing.assert_array_equal(signals.correct, correct)
    np.testing.assert_allclose(signals.values["max@CONF"], maxima[kept], rtol=1e-5)
    assert robust_accuracy(signals.correct) == pytest.approx(correct.all(axis=1).mean())
    matrices, features = matrices_and_features(signals)
    values = maxima[kept]
    # delta[i, j] = sqrt(mean over kept examples of (v_i - v_j)^2)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        expected = np.sqrt(np.mean((values[:, i] - values[:, j]) ** 2))
        assert matrices["max@CONF"][i, j] == pytest.approx(expected, rel=1e-4)
        assert matrices["max@CONF"][j, i] == pytest.approx(expected, rel=1e-4)
    assert set(features) == {"max@CONF"}
