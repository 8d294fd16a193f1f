"""CIFAR-10 from a user's folder, in its binary version (never the pickled Python version).

The binary distribution (``cifar-10-binary.tar.gz``, folder ``cifar-10-batches-bin``) holds
``data_batch_1.bin`` .. ``data_batch_5.bin`` (50,000 training images) and ``test_batch.bin`` (10,000);
each record is 3,073 bytes: the label (0-9), then 1,024 red, 1,024 green and 1,024 blue values of a
32x32 image in row-major order. Reading it is a reshape of the bytes: no code is unpickled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.validation import check_positive_int

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
RECORD = 1 + 3 * 32 * 32
TRAIN_FILES = tuple(f"data_batch_{k}.bin" for k in range(1, 6))
TEST_FILE = "test_batch.bin"


def read_cifar_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The images and labels of one binary CIFAR-10 batch file.

    Parameters
    ----------
    path : str or Path
        A ``*.bin`` file of 3,073-byte records.

    Returns
    -------
    tuple of numpy.ndarray
        uint8 images ``(N, 3, 32, 32)`` and int64 labels ``(N,)``.

    Raises
    ------
    DataFormatError
        Naming the file: unreadable, a size that is not a whole number of records, or a label above 9.
    """
    path = Path(path)
    try:
        raw = np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if raw.size == 0 or raw.size % RECORD:
        raise DataFormatError(f"{path}: {raw.size} bytes is not a whole number of {RECORD}-byte CIFAR-10 records")
    records = raw.reshape(-1, RECORD)
    labels = records[:, 0].astype(np.int64)
    if labels.max() > 9:
        raise DataFormatError(f"{path}: label {int(labels.max())} is not a CIFAR-10 class (0-9)")
    return records[:, 1:].reshape(-1, 3, 32, 32), labels


def _folder(data_dir: str | Path) -> Path:
    data_dir = Path(data_dir).expanduser()
    for candidate in (data_dir, data_dir / "cifar-10-batches-bin"):
        if (candidate / TEST_FILE).exists():
            return candidate
    raise InvalidArgumentError(
        f"data_dir: {data_dir} holds no {TEST_FILE} (the binary CIFAR-10: cifar-10-binary.tar.gz, unpacked)"
    )


def cifar10_dataset(
    data_dir: str, train_size: int | None = None, test_size: int | None = None, seed: int = 0
) -> Dataset:
    """CIFAR-10 (binary version) from ``data_dir``, as a registered dataset with the class as target.

    Parameters
    ----------
    data_dir : str
        The unpacked ``cifar-10-batches-bin`` folder (or its parent).
    train_size, test_size : int, optional
        A seeded sample of this many training / test images.
    seed : int
        Seed of the samples.

    Returns
    -------
    Dataset
        Fields ``image`` (uint8 ``(3, 32, 32)``) and ``label``; splits ``train`` and ``test``.

    Raises
    ------
    InvalidArgumentError
        A folder without the binary files, or a bad limit.
    DataFormatError
        A corrupt batch file.
    """
    folder = _folder(data_dir)
    train_files = [folder / name for name in TRAIN_FILES if (folder / name).exists()]
    if not train_files:
        raise InvalidArgumentError(f"data_dir: {folder} holds no data_batch_*.bin")
    parts = [read_cifar_batch(path) for path in train_files]
    train_images = np.concatenate([images for images, _ in parts])
    train_labels = np.concatenate([labels for _, labels in parts])
    test_images, test_labels = read_cifar_batch(folder / TEST_FILE)
    rng = np.random.default_rng([seed, 29])

    def limit(images: np.ndarray, labels: np.ndarray, count: int | None, name: str) -> ArraySplit:
        if count is not None:
            count = check_positive_int(count, name)
            rows = np.sort(rng.choice(len(labels), size=min(count, len(labels)), replace=False))
            images, labels = images[rows], labels[rows]
        return ArraySplit({"image": images, "label": labels})

    fields = {
        "image": FieldSpec("image", (3, 32, 32), "uint8", description="CIFAR-10 image"),
        "label": FieldSpec("categorical", (), "int64", len(CLASSES), CLASSES, "CIFAR-10 class"),
    }
    splits = {
        "train": limit(train_images, train_labels, train_size, "train_size"),
        "test": limit(test_images, test_labels, test_size, "test_size"),
    }
    return Dataset("cifar10", splits, fields, "label", f"CIFAR-10 (binary) from {folder}")


__all__ = ["CLASSES", "cifar10_dataset", "read_cifar_batch"]
