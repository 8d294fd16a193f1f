"""Shared fixtures: a tiny MNIST-format dataset, an isolated REPSCOPE_HOME, and Fashion-MNIST (the
Debian package when installed, else the real sample shipped in ``tests/data/fashion-mnist-sample``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from repscope.data.idx import write_mnist_pair

TINY_COUNTS = {"train": 30, "t10k": 12}


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread_per_test_worker():
    """Under pytest-xdist, one torch (and BLAS, OpenMP) thread per worker process.

    ``make test`` runs two workers on two cores; with torch's default of one thread per core each,
    every parallel operator waits at a barrier for a thread the other worker has descheduled
    (:mod:`repscope.resources` measured 10.7-17.4 s instead of 1.3-1.5 s per 2,048 images beside a busy
    process). Measured here: single tests of the multimodal toy models took 6-100 s from run to run
    with two threads per worker. A test that needs another count sets it and restores this one.

    The same holds for the other thread pools a worker runs: numpy's and scipy's OpenBLAS and
    scikit-learn's OpenMP (t-SNE, Isomap, k-means, the MMD's matrix products), whose idle threads
    spin as well; they are loaded here, so that the limit reaches them, and held to one thread.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import scipy.linalg  # noqa: F401 -- loads scipy's OpenBLAS before the limit
        import sklearn.utils._openmp_helpers  # noqa: F401 -- loads scikit-learn's OpenMP runtime
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(1)
        threadpool_limits(limits=1)


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
        write_mnist_pair(
            directory / f"{split}-images-idx3-ubyte.gz", directory / f"{split}-labels-idx1-ubyte.gz", images, labels
        )
    return directory


@pytest.fixture
def run_cli(capsys):
    """``run_cli(args) -> (exit status, stdout, stderr)``: the ``repscope`` entry point on ``args``."""
    from repscope.cli import main

    def run(args: list[str]) -> tuple[int, str, str]:
        try:
            main(args)
            code = 0
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """REPSCOPE_HOME pointed at an empty temporary directory."""
    home = tmp_path / "repscope-home"
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    return home


FASHION_PACKAGE_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_SAMPLE_DIR = Path(__file__).parent / "data" / "fashion-mnist-sample"
FASHION_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
# the first 20 labels of each Fashion-MNIST split, read from the original files
FASHION_FIRST_LABELS = {
    "train": [9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9, 5, 5, 7, 9, 1, 0, 6, 4],
    "t10k": [9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5, 7, 3, 4, 1, 2, 4, 8, 0],
}


def fashion_package_installed() -> bool:
    return all((FASHION_PACKAGE_DIR / name).is_file() for name in FASHION_FILES)


@dataclass(frozen=True)
class FashionMnist:
    """Where Fashion-MNIST files are, and how many of each split they hold."""

    directory: Path
    counts: dict[str, int]
    from_package: bool
    first_labels = FASHION_FIRST_LABELS


FASHION_PACKAGE = FashionMnist(FASHION_PACKAGE_DIR, {"train": 60_000, "t10k": 10_000}, True)
FASHION_SAMPLE = FashionMnist(FASHION_SAMPLE_DIR, {"train": 200, "t10k": 100}, False)


@pytest.fixture
def fashion_mnist() -> FashionMnist:
    """The Debian package's Fashion-MNIST when installed, else the shipped sample: never skipped."""
    return FASHION_PACKAGE if fashion_package_installed() else FASHION_SAMPLE


@pytest.fixture
def fashion_mnist_sample() -> FashionMnist:
    """The real Fashion-MNIST sample shipped with the tests (always there)."""
    return FASHION_SAMPLE
