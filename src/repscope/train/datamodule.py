"""Batches of any registered dataset as torch tensors: the one LightningDataModule of the framework.

A batch is a dict of named tensors (the fields a task asks for): images become float32 in [0, 1]
(``uint8 / 255``), integers int64, other numbers float32, masks bool. Samples are fetched a whole
batch at a time (``__getitems__``), so a generator draws a batch in one vectorised call and in-memory
arrays are sliced once per batch.

Validation uses the dataset's ``val`` split when it has one, else a seeded hold-out of
``val_fraction`` of ``train``. Shuffling is seeded: the same seed gives the same batches in the same
order, with any number of workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader

from repscope.data.datasets import Dataset
from repscope.errors import InvalidArgumentError

EVAL_BATCH = 512


def field_to_tensor(values: np.ndarray, kind: str) -> torch.Tensor:
    """One field's rows as a tensor: images float32 in [0, 1], integers int64, masks bool, else float32.

    Parameters
    ----------
    values : numpy.ndarray
        The rows of one field, ``(B, ...)``, as :meth:`repscope.data.datasets.Dataset.batch` returns them.
    kind : str
        The field's kind (:data:`repscope.data.datasets.FIELD_KINDS`): ``image`` (uint8 pixels, divided
        by 255; float pixels cast to float32 as they are), ``mask``, or any other.

    Returns
    -------
    torch.Tensor
        ``(B, ...)``: float32 in [0, 1] for images, bool for masks; for other kinds float32 from floats,
        bool from bools, int64 from integers. Shares memory with ``values`` where no conversion is needed.
    """
    tensor = torch.from_numpy(np.ascontiguousarray(values))
    if kind == "image":
        return tensor.float() / 255.0 if tensor.dtype == torch.uint8 else tensor.float()
    if kind == "mask":
        return tensor.bool()
    if tensor.dtype.is_floating_point:
        return tensor.float()
    if tensor.dtype == torch.bool:
        return tensor
    return tensor.long()


class SplitView(torch.utils.data.Dataset):
    """Rows ``rows`` of one split of a dataset, served as dicts of tensors of ``fields``."""

    def __init__(self, dataset: Dataset, split: str, fields: Sequence[str], rows: np.ndarray | None = None) -> None:
        self.dataset, self.split, self.fields = dataset, split, tuple(fields)
        self.rows = np.arange(len(dataset.split(split))) if rows is None else np.asarray(rows, dtype=np.int64)
        self.kinds = {name: dataset.field(name).kind for name in self.fields}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = self.dataset.batch(self.split, self.rows[np.asarray(indices, dtype=np.int64)], self.fields)
        return {name: field_to_tensor(batch[name], self.kinds[name]) for name in self.fields}

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {name: value[0] for name, value in self.__getitems__([int(index)]).items()}


def _already_batched(batch: Any) -> Any:
    return batch


def loader(
    view: SplitView,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    num_workers: int = 0,
    drop_last: bool = False,
) -> DataLoader:
    """A DataLoader fetching whole batches of ``view`` (shuffling seeded by ``seed``).

    Parameters
    ----------
    view : SplitView
        The rows to serve.
    batch_size : int
        Samples per batch.
    shuffle : bool, default=False
        Draw the rows in a new random order every epoch, from a ``torch.Generator`` seeded with ``seed``.
    seed : int, default=0
        Seed of the shuffling (unused without ``shuffle``).
    num_workers : int, default=0
        Worker processes (kept alive between epochs when more than 0).
    drop_last : bool, default=False
        Leave out the last, smaller batch.

    Returns
    -------
    torch.utils.data.DataLoader
        Each batch is a dict of field name to tensor (:func:`field_to_tensor`), fetched in one
        ``SplitView.__getitems__`` call; no further collation.
    """
    return DataLoader(
        view,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        generator=torch.Generator().manual_seed(seed) if shuffle else None,
        num_workers=num_workers,
        collate_fn=_already_batched,
        persistent_workers=num_workers > 0,
    )


class DatasetModule(pl.LightningDataModule):
    """Train / validation / test loaders over the ``fields`` of a :class:`Dataset`.

    Parameters
    ----------
    dataset : Dataset
    fields : sequence of str
        What each batch holds (``target`` is the dataset's target field).
    batch_size : int
    val_fraction : float
        Share of ``train`` held out for validation when the dataset has no ``val`` split (seeded).
    seed : int
        Seed of the hold-out and of the shuffling.
    num_workers : int
        DataLoader worker processes.
    shuffle : bool
        Shuffle the training examples each epoch (seeded); False keeps their order.
    """

    def __init__(
        self,
        dataset: Dataset,
        fields: Sequence[str],
        batch_size: int = 64,
        val_fraction: float = 0.1,
        seed: int = 0,
        num_workers: int = 0,
        shuffle: bool = True,
    ) -> None:
        super().__init__()
        self.shuffle = bool(shuffle)
        if "target" in fields and dataset.target is None:
            raise InvalidArgumentError(f"data: dataset {dataset.name} has no target; set data.params.target")
        missing = [name for name in fields if name != "target" and name not in dataset.fields]
        if missing:
            raise InvalidArgumentError(
                f"data: the model reads the field(s) {', '.join(map(repr, missing))}, which dataset {dataset.name} "
                f"does not give (it gives {', '.join(dataset.fields)})"
            )
        self.dataset, self.fields = dataset, tuple(fields)
        self.batch_size, self.seed, self.num_workers = batch_size, seed, num_workers
        n = len(dataset.split("train"))
        if "val" in dataset.splits:
            self.train_set = SplitView(dataset, "train", self.fields)
            self.val_set: SplitView | None = SplitView(dataset, "val", self.fields)
        else:
            order = np.random.default_rng([seed, 17]).permutation(n)
            n_val = int(round(n * val_fraction))
            self.train_set = SplitView(dataset, "train", self.fields, np.sort(order[n_val:]))
            self.val_set = SplitView(dataset, "train", self.fields, np.sort(order[:n_val])) if n_val else None
        self.test_set = SplitView(dataset, "test", self.fields) if "test" in dataset.splits else None

    def train_dataloader(self) -> DataLoader:
        return loader(
            self.train_set,
            self.batch_size,
            shuffle=self.shuffle,
            seed=self.seed,
            num_workers=self.num_workers,
            drop_last=len(self.train_set) > self.batch_size,
        )

    def val_dataloader(self) -> DataLoader | list:
        return [] if self.val_set is None else loader(self.val_set, EVAL_BATCH, num_workers=self.num_workers)

    def test_dataloader(self) -> DataLoader | list:
        return [] if self.test_set is None else loader(self.test_set, EVAL_BATCH, num_workers=self.num_workers)


__all__ = ["DatasetModule", "SplitView", "field_to_tensor", "loader", "EVAL_BATCH"]
