"""Fixtures shared by the multimodal tests."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.models.multimodal import experts


@pytest.fixture
def recorded_noise(monkeypatch):
    """Every standard-normal draw the model makes, in order (the hand computation replays them)."""
    draws: list[np.ndarray] = []
    original = experts.random_normal

    def record(shape, generator, dtype, device):
        noise = original(shape, generator, dtype, device)
        draws.append(noise.detach().numpy().copy())
        return noise

    monkeypatch.setattr(experts, "random_normal", record)
    return draws
