"""CdSprites+ as a torch ``Dataset``: samples generated on the fly, a batch at a time.

``CdSpritesDataset(gen)[i]`` is one sample; a DataLoader made by :func:`cdsprites_loader` fetches a
whole batch with one vectorised call (``__getitems__``), which is what keeps generation ahead of
training (``benchmarks/sprites_throughput.py``). A sample is a dict:

``image``       uint8 ``(3, 64, 64)`` RGB (0-255): a quarter of the bytes of float pixels to pass
                between worker processes and to the device; :func:`image_to_float` gives [0, 1]
``text``        float32 ``(45, 27)`` one-hot characters, zero rows past the caption
``mask``        bool ``(45,)``, True on the caption's characters
``attributes``  int64 ``(L,)`` attribute classes (columns ``ATTRIBUTES[:L]``)
``index``       int64, the sample's index
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from repscope.data.sprites.captions import encode_captions
from repscope.data.sprites.cdsprites import CdSpritesPlus


def to_sample_batch(
    indices: np.ndarray, images: np.ndarray, captions: list[str], table: np.ndarray
) -> dict[str, torch.Tensor]:
    """The batch dict of the module docstring from the arrays of :meth:`CdSpritesPlus.batch`.

    Parameters
    ----------
    indices : numpy.ndarray
        int ``(B,)`` sample indices.
    images : numpy.ndarray
        uint8 ``(B, 64, 64, 3)`` RGB images, 0-255 (channels last).
    captions : list of str
        ``B`` captions of at most 45 characters.
    table : numpy.ndarray
        int ``(B, L)`` attribute table.

    Returns
    -------
    dict of str to torch.Tensor
        ``image`` uint8 ``(B, 3, 64, 64)`` (channels first), ``text`` float32 ``(B, 45, 27)``, ``mask``
        bool ``(B, 45)``, ``attributes`` int64 ``(B, L)``, ``index`` int64 ``(B,)``.

    Raises
    ------
    InvalidArgumentError
        When a caption is too long or holds a character outside the alphabet.
    """
    onehot, mask = encode_captions(captions)
    return {
        "image": torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))),
        "text": torch.from_numpy(onehot.astype(np.float32, copy=False)),
        "mask": torch.from_numpy(mask.astype(bool, copy=False)),
        "attributes": torch.from_numpy(table.astype(np.int64, copy=False)),
        "index": torch.from_numpy(np.asarray(indices, dtype=np.int64)),
    }


def image_to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 images -> float32 in [0, 1] (do it on the device, after the transfer).

    Parameters
    ----------
    images : torch.Tensor
        uint8 images, 0-255, any shape (e.g. ``(B, 3, 64, 64)``); or float images, already in [0, 1].

    Returns
    -------
    torch.Tensor
        float32 of the same shape and device: ``images / 255`` for uint8, float images converted to
        float32 unscaled; ``images`` itself is never modified.
    """
    return images.float().div_(255.0) if images.dtype == torch.uint8 else images.float()


class CdSpritesDataset(Dataset):
    """A torch view of a :class:`CdSpritesPlus` split (deterministic in the index and the seed).

    ``dataset[i]`` is the sample dict of the module docstring; ``dataset.__getitems__(indices)``
    builds a whole batch (leading axis ``B``) with one vectorised call.

    Parameters
    ----------
    generator : CdSpritesPlus
        The generator (one split) to serve.
    """

    def __init__(self, generator: CdSpritesPlus) -> None:
        self.generator = generator

    def __len__(self) -> int:
        return len(self.generator)

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        indices = np.asarray(indices, dtype=np.int64)
        images, captions, table = self.generator.batch(indices)
        return to_sample_batch(indices, images, captions, table)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {key: value[0] for key, value in self.__getitems__([int(index)]).items()}


def _already_batched(batch: Any) -> Any:
    return batch


def cdsprites_loader(
    generator: CdSpritesPlus,
    batch_size: int = 256,
    shuffle: bool = False,
    seed: int = 0,
    num_workers: int = 0,
    drop_last: bool = False,
) -> DataLoader:
    """A DataLoader generating whole batches at once (shuffling seeded by ``seed``).

    Parameters
    ----------
    generator : CdSpritesPlus
        The split to load.
    batch_size : int, default=256
        Samples per batch.
    shuffle : bool, default=False
        Visit the indices in a random order, reproducible from ``seed``.
    seed : int, default=0
        Seed of the shuffling (unused without ``shuffle``).
    num_workers : int, default=0
        Worker processes (persistent when > 0); 0 generates in the calling process.
    drop_last : bool, default=False
        Drop the last, incomplete batch.

    Returns
    -------
    torch.utils.data.DataLoader
        Yields the batch dicts of :func:`to_sample_batch` (``image`` uint8 ``(B, 3, 64, 64)``, ...).
    """
    return DataLoader(
        CdSpritesDataset(generator),
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        generator=torch.Generator().manual_seed(seed) if shuffle else None,
        num_workers=num_workers,
        collate_fn=_already_batched,
        persistent_workers=num_workers > 0,
    )
