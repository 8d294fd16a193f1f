"""Batches of any registered dataset as torch tensors: the one LightningDataModule of the framework.

A batch is a dict of named tensors (the fields a task asks for): images become float32 in [0, 1]
(``uint8 / 255``), integers int64, other numbers float32, masks bool. Samples are fetched a whole
batch at a time (``__getitems__``), so a generator draws a batch in one vectorised call and in-memory
arrays are sliced once per batch.

Validation uses the dataset's ``val`` split when it has one, else a seeded hold-out of
``val_fraction`` of ``train``. Shuffling is seeded: the same seed gives the same batches in the same
order, with any number of workers.

Two ways to serve them (``placement``):

* ``loader``: a ``torch.utils.data.DataLoader`` fetches each batch from the dataset (in memory or
  drawn on demand by its generator) and the Trainer copies it to the accelerator (from pinned memory,
  without blocking, on a CUDA device);
* ``device``: every row of a split is converted once and held on the accelerator as tensors (uint8
  where the data are uint8), and each batch is gathered there by index (:class:`DeviceBatches`): no
  per-step host work but a slice and a gather. The row order of every epoch comes from the very
  DataLoader sampler the ``loader`` path uses (same generator, same seed), so both paths give the same
  batches and, on the same device, the same numbers.

``auto`` (the default) takes ``device`` where it pays and fits: one process, no worker processes,
and the rows fit a share of the accelerator's free memory (:data:`DEVICE_MEMORY_SHARE`); on the CPU
only for splits already held in memory (a split drawn on demand would be generated in full first).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader

from repscope.data.datasets import ArraySplit, Dataset
from repscope.errors import InvalidArgumentError
from repscope.validation import check_memory

EVAL_BATCH = 512
PLACEMENTS = ("auto", "loader", "device")
Placement = Literal["auto", "loader", "device"]
# the share of the free accelerator memory (host memory on the CPU) the held rows may take under
# ``auto``: the rest is the model's, its activations' and the optimiser's
DEVICE_MEMORY_SHARE = 0.4
FILL_CHUNK = 4096  # rows converted and copied to the device at a time when a split is placed there


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

    @property
    def in_memory(self) -> bool:
        """Whether the split's rows are held in memory already (not drawn on demand by a generator).

        Returns
        -------
        bool
            True for an :class:`~repscope.data.datasets.ArraySplit`.
        """
        return isinstance(self.dataset.split(self.split), ArraySplit)

    def nbytes_held(self) -> int:
        """Bytes the view's rows take once converted and held as tensors (:class:`DeviceStore`).

        Returns
        -------
        int
            ``len(self)`` times the bytes of one row of every field: uint8 images and masks 1 byte a
            value, other floats 4 (float32), integers 8 (int64).
        """
        total = 0
        for name in self.fields:
            spec = self.dataset.field(name)
            if spec.kind == "image" and np.dtype(spec.dtype) == np.uint8:
                itemsize = 1  # held as uint8, converted per batch
            elif spec.kind == "mask" or np.dtype(spec.dtype) == np.bool_:
                itemsize = 1
            elif np.issubdtype(np.dtype(spec.dtype), np.floating):
                itemsize = 4
            else:
                itemsize = 8
            total += len(self) * int(np.prod(spec.shape, dtype=np.int64)) * itemsize
        return total


class _Rows(torch.utils.data.Dataset):
    """The row numbers ``0..n-1`` themselves: what a DataLoader over it yields is its sampler's order."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitems__(self, indices: list[int]) -> torch.Tensor:
        return torch.as_tensor(indices, dtype=torch.int64)


class DeviceStore:
    """Every row of a :class:`SplitView`, converted once and held on ``device``.

    Images stored as uint8 stay uint8 (a quarter of the memory) and become float32 in [0, 1] per
    batch, by the same ``x.float() / 255`` as :func:`field_to_tensor`; every other field is held in
    the dtype :func:`field_to_tensor` gives it. A batch is ``index_select`` of every field on the
    device: the same values the ``loader`` path gives for the same rows.

    Parameters
    ----------
    view : SplitView
        The rows and fields to hold.
    device : torch.device or str
        Where to hold them.
    progress : callable, optional
        ``progress(description, total)``, a context manager giving ``update(done)``, as
        :func:`repscope.progress.progress_bar` (placing a split drawn on demand generates it).
    """

    def __init__(self, view: SplitView, device: torch.device | str, progress: Any = None) -> None:
        self.device = torch.device(device)
        self.fields, self.length = view.fields, len(view)
        self.as_uint8_images = {
            name for name in view.fields if view.kinds[name] == "image" and view.dataset.field(name).dtype == "uint8"
        }
        self.tensors: dict[str, torch.Tensor] = {}
        description = f"placing {view.dataset.name} {view.split} ({self.length} rows) on {self.device}"
        with progress(description, self.length) if progress is not None else contextlib.nullcontext() as update:
            self._fill(view, update)

    def _fill(self, view: SplitView, update: Any) -> None:
        for start in range(0, self.length, FILL_CHUNK):
            positions = list(range(start, min(start + FILL_CHUNK, self.length)))
            batch = view.dataset.batch(view.split, view.rows[positions], view.fields)
            for name in view.fields:
                if name in self.as_uint8_images:
                    chunk = torch.from_numpy(np.ascontiguousarray(batch[name]))
                else:
                    chunk = field_to_tensor(batch[name], view.kinds[name])
                if name not in self.tensors:
                    self.tensors[name] = torch.empty(
                        (self.length, *chunk.shape[1:]), dtype=chunk.dtype, device=self.device
                    )
                self.tensors[name][start : start + len(positions)].copy_(chunk)
            if update is not None:
                update(start + len(positions))

    def __len__(self) -> int:
        return self.length

    def gather(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """The batch of ``rows``: every field's rows gathered on the device.

        Parameters
        ----------
        rows : torch.Tensor
            int64 row numbers, on :attr:`device`.

        Returns
        -------
        dict of str to torch.Tensor
            Field name to its rows, as :func:`field_to_tensor` gives them (images float32 in [0, 1]).
        """
        out = {}
        for name in self.fields:
            values = self.tensors[name].index_select(0, rows)
            out[name] = values.float() / 255.0 if name in self.as_uint8_images else values
        return out


class DeviceBatches:
    """Batches of a :class:`DeviceStore` in the order of a DataLoader sampler: a Trainer's dataloader.

    Each epoch (each ``iter``) draws the rows' order from a DataLoader over the row numbers that is
    configured as :func:`loader` configures the ``loader`` path's (batch size, shuffling, its seeded
    ``torch.Generator``, ``drop_last``), so the batches are those of the ``loader`` path; each step
    copies its row numbers to the device (a few hundred bytes, no synchronisation) and gathers the
    rows there.

    Parameters
    ----------
    store : DeviceStore
        The rows, on the device.
    batch_size, shuffle, seed, drop_last
        As for :func:`loader`.
    """

    def __init__(
        self, store: DeviceStore, batch_size: int, shuffle: bool = False, seed: int = 0, drop_last: bool = False
    ) -> None:
        self.store = store
        # the loader path's own DataLoader, over the row numbers instead of the rows
        self.order = loader(_Rows(len(store)), batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        # one batch of row numbers at a time, as the loader path draws them: a Trainer stops asking
        # after len(self) batches, and whether the sampler's generator is then drawn once more (the
        # next epoch's order) depends on it, so the order is drawn in step with the training
        for rows in self.order:
            yield self.store.gather(rows.to(self.store.device, non_blocking=True))


def free_memory(device: torch.device) -> int | None:
    """Free bytes on ``device``: the accelerator's (CUDA), the host's available memory (CPU).

    Parameters
    ----------
    device : torch.device
        The device.

    Returns
    -------
    int or None
        Free bytes; None where it cannot be told (another accelerator, no ``sysconf``).
    """
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "cpu":
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    return None


def _already_batched(batch: Any) -> Any:
    return batch


class LazyStartLoader(DataLoader):
    """A DataLoader whose iterator starts at the first batch asked for, not when ``iter`` is called.

    A DataLoader's iterator draws from the loader's ``torch.Generator`` as it is made (the workers'
    base seed) and its sampler draws the epoch's order at the first batch. Lightning makes the first
    epoch's iterator before ``on_train_epoch_start``; after a resume that is the epoch restored from
    the checkpoint, so the base seed came from the freshly seeded generator and the order from the
    restored one: one draw out of step with the uninterrupted run, whose rows then came in another
    order (weights 1.1 apart after three epochs of a beta-VAE). Started lazily, every draw of an
    epoch comes after the callback that restores the generator (``repscope.train.fitting.EpochCheckpoint``),
    as in the uninterrupted run; the number and order of draws are unchanged, so are the batches of
    runs that are not resumed.
    """

    def __iter__(self) -> Iterator[Any]:
        yield from super().__iter__()


def loader(
    view: SplitView | torch.utils.data.Dataset,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    num_workers: int = 0,
    drop_last: bool = False,
    pin_memory: bool = False,
) -> DataLoader:
    """A DataLoader fetching whole batches of ``view`` (shuffling seeded by ``seed``).

    Parameters
    ----------
    view : SplitView or torch.utils.data.Dataset
        The rows to serve (any dataset fetching a batch in one ``__getitems__`` call).
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
    pin_memory : bool, default=False
        Serve batches in page-locked memory, so that their copy to a CUDA device (which Lightning
        makes non-blocking) overlaps the computation.

    Returns
    -------
    torch.utils.data.DataLoader
        Each batch is a dict of field name to tensor (:func:`field_to_tensor`), fetched in one
        ``SplitView.__getitems__`` call; no further collation.
    """
    return LazyStartLoader(
        view,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        generator=torch.Generator().manual_seed(seed) if shuffle else None,
        num_workers=num_workers,
        collate_fn=_already_batched,
        persistent_workers=num_workers > 0,
        pin_memory=pin_memory,
    )


# bytes held per row of a split whatever the data: its int64 row number in a SplitView and, for the
# training split, the hold-out's permutation
ROW_NUMBER_BYTES = 16


def check_split_rows(dataset: Dataset) -> None:
    """Refuse, before any work, splits whose row numbers alone exceed the memory.

    A generated dataset draws its images on demand, so a size such as ``train_size: 1000000000000``
    costs nothing until the splits are indexed: then numpy's ``MemoryError`` named neither the size nor
    its key. Every split's rows are held as int64 row numbers (and the training split's permutation),
    :data:`ROW_NUMBER_BYTES` a row, checked with :func:`repscope.validation.check_memory`.

    Parameters
    ----------
    dataset : Dataset
        The dataset to serve.

    Raises
    ------
    InvalidArgumentError
        ``data: dsprites (train 1,000,000,000,000, test 4 rows) needs at least ... in memory; ...``.
    """
    sizes = {name: len(dataset.split(name)) for name in dataset.splits}
    listed = ", ".join(f"{name} {count:,}" for name, count in sizes.items())
    check_memory(ROW_NUMBER_BYTES * sum(sizes.values()), f"data: {dataset.name} ({listed} rows)")


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
    placement : {"auto", "loader", "device"}
        How batches are served (module docstring): through a DataLoader, from rows held on the
        Trainer's device, or ``auto``, the device where it pays and fits.
    progress : callable, optional
        A progress context (:func:`repscope.progress.progress_bar`) shown while a split is placed on
        the device.
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
        placement: Placement = "auto",
        progress: Any = None,
    ) -> None:
        super().__init__()
        if placement not in PLACEMENTS:
            raise InvalidArgumentError(f"trainer.data_placement: one of {', '.join(PLACEMENTS)}, got {placement!r}")
        self.shuffle, self.placement, self.progress = bool(shuffle), placement, progress
        self._stores: dict[int, DeviceStore] = {}
        self.placed: bool | None = None  # decided when the first loader is asked for
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
        check_split_rows(dataset)
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

    def device(self) -> torch.device:
        """Where the Trainer this module is attached to runs.

        Returns
        -------
        torch.device
            The Trainer's root device; the CPU when no Trainer is attached.
        """
        trainer = getattr(self, "trainer", None)
        return trainer.strategy.root_device if trainer is not None else torch.device("cpu")

    def uses_device(self) -> bool:
        """Whether the batches come from rows held on the device (``placement``, resolved once).

        Returns
        -------
        bool
            True: :class:`DeviceBatches`; False: a DataLoader.

        Raises
        ------
        InvalidArgumentError
            ``placement="device"`` with several processes or worker processes, or rows that do not fit
            the device's free memory.
        """
        if self.placed is None:
            self.placed = self._resolve_placement()
        return self.placed

    def _resolve_placement(self) -> bool:
        if self.placement == "loader":
            return False
        trainer = getattr(self, "trainer", None)
        processes = trainer.world_size if trainer is not None else 1
        views = [v for v in (self.train_set, self.val_set) if v is not None]
        needed = sum(v.nbytes_held() for v in views)
        device = self.device()
        free = free_memory(device)
        if self.placement == "device":
            if processes > 1 or self.num_workers > 0:
                raise InvalidArgumentError(
                    "trainer.data_placement: device serves one process without DataLoader workers "
                    f"(got {processes} processes, num_workers={self.num_workers}); use loader"
                )
            if free is not None and needed > free:
                raise InvalidArgumentError(
                    f"trainer.data_placement: device: the {self.dataset.name} rows need {needed / 2**30:.2f} GiB, "
                    f"{device} has {free / 2**30:.2f} GiB free; use loader"
                )
            return True
        if processes > 1 or self.num_workers > 0 or free is None:
            return False
        if device.type == "cpu" and not all(v.in_memory for v in views):
            return False  # on the CPU a generated split would be drawn in full before the first step
        return needed <= DEVICE_MEMORY_SHARE * free

    def _store(self, view: SplitView) -> DeviceStore:
        key = id(view)
        if key not in self._stores:
            self._stores[key] = DeviceStore(view, self.device(), self.progress)
        return self._stores[key]

    def _serve(self, view: SplitView, batch_size: int, shuffle: bool, drop_last: bool) -> DataLoader | DeviceBatches:
        seed = self.seed if shuffle else 0
        if self.uses_device():
            return DeviceBatches(self._store(view), batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
        # data left on the host go to a CUDA device from pinned memory, copied without blocking
        pinned = self.device().type == "cuda"
        return loader(
            view, batch_size, shuffle, seed, num_workers=self.num_workers, drop_last=drop_last, pin_memory=pinned
        )

    def train_dataloader(self) -> DataLoader | DeviceBatches:
        return self._serve(self.train_set, self.batch_size, self.shuffle, len(self.train_set) > self.batch_size)

    def val_dataloader(self) -> DataLoader | DeviceBatches | list:
        return [] if self.val_set is None else self._serve(self.val_set, EVAL_BATCH, False, False)

    def test_dataloader(self) -> DataLoader | list:
        # the test split is read once, after training: through a DataLoader, never held on the device
        return [] if self.test_set is None else loader(self.test_set, EVAL_BATCH, num_workers=self.num_workers)


__all__ = [
    "DEVICE_MEMORY_SHARE",
    "EVAL_BATCH",
    "PLACEMENTS",
    "ROW_NUMBER_BYTES",
    "DatasetModule",
    "DeviceBatches",
    "DeviceStore",
    "LazyStartLoader",
    "SplitView",
    "check_split_rows",
    "field_to_tensor",
    "free_memory",
    "loader",
]
