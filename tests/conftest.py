"""Shared fixtures: a tiny MNIST-format dataset and an isolated REPSCOPE_HOME."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.idx import write_mnist_pair

TINY_COUNTS = {"train": 30, "t10k": 12}


def make_tiny_mnist(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{split: (images uint8 (n, 28, 28), labels uint8 (n,))}`` of random pixels, labels cycling 0..9."""
    rng = np.random.default_rng(seed)
    return {
        split: (rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8), (np.arange(n) % 10).astype(np.uint8))
        for split, n in TINY_COUNTS.items()
    }


@pytest.fixture
def tiny_mnist():
    return make_tiny_mnist()


@pytest.fixture
def tiny_mnist_dir(tmp_path, tiny_mnist):
    """A directory holding the four standard gzipped MNIST files of ``tiny_mnist``."""
    directory = tmp_path / "tiny-mnist"
    for split, (images, labels) in tiny_mnist.items():
        write_mnist_pair(directory / f"{split}-images-idx3-ubyte.gz", directory / f"{split}-labels-idx1-ubyte.gz", images, labels)
    return directory


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """REPSCOPE_HOME pointed at an empty temporary directory."""
    home = tmp_path / "repscope-home"
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    return home
