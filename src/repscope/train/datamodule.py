"""A LightningDataModule over in-memory digit arrays.

Digits are small (28x28): the whole set lives in one float tensor, so a batch is an index into it
and data loading never starves the model (``benchmarks/train_throughput.py`` checks this).
"""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 ``(N, 28, 28)`` (or float in [0, 1]) -> float32 ``(N, 1, 28, 28)`` in [0, 1]."""
    array = np.asarray(images)
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    tensor = tensor.float() / 255.0 if array.dtype == np.uint8 else tensor.float()
    return tensor.reshape(len(array), 1, *array.shape[-2:])


def targets_to_tensor(targets: np.ndarray) -> torch.Tensor:
    array = np.asarray(targets)
    return torch.from_numpy(array.astype(np.float32 if array.dtype.kind == "f" else np.int64))


class ArrayDataModule(pl.LightningDataModule):
    """Train / validation loaders over ``(images, targets)``; validation is a seeded hold-out of
    ``val_fraction`` of the training digits; shuffling is seeded."""

    def __init__(self, images: np.ndarray, targets: np.ndarray, batch_size: int = 64,
                 val_fraction: float = 0.1, seed: int = 0, num_workers: int = 0) -> None:
        super().__init__()
        order = np.random.default_rng([seed, 17]).permutation(len(images))
        n_val = int(round(len(images) * val_fraction))
        self.val_index, self.train_index = np.sort(order[:n_val]), np.sort(order[n_val:])
        x, y = images_to_tensor(images), targets_to_tensor(targets)
        self.train_set = TensorDataset(x[self.train_index], y[self.train_index])
        self.val_set = TensorDataset(x[self.val_index], y[self.val_index]) if n_val else None
        self.batch_size, self.seed, self.num_workers = batch_size, seed, num_workers

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=len(self.train_set) > self.batch_size,
                          generator=generator, num_workers=self.num_workers)

    def val_dataloader(self) -> DataLoader | list:
        if self.val_set is None:
            return []
        return DataLoader(self.val_set, batch_size=512, num_workers=self.num_workers)


def array_loader(images: np.ndarray, targets: np.ndarray | None = None, batch_size: int = 512) -> DataLoader:
    """An ordered loader (evaluation) over images and targets (zeros when None)."""
    if targets is None:
        targets = np.zeros(len(images), dtype=np.int64)
    return DataLoader(TensorDataset(images_to_tensor(images), targets_to_tensor(targets)), batch_size=batch_size)
