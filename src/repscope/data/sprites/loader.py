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


def to_sample_batch(indices: np.ndarray, images: np.ndarray, captions: list[str], table: np.ndarray) -> dict[str, torch.Tensor]:
    onehot, mask = encode_captions(captions)
    return {
        "image": torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))),
        "text": torch.from_numpy(onehot.astype(np.float32, copy=False)),
        "mask": torch.from_numpy(mask.astype(bool, copy=False)),
        "attributes": torch.from_numpy(table.astype(np.int64, copy=False)),
        "index": torch.from_numpy(np.asarray(indices, dtype=np.int64)),
    }


def image_to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 images -> float32 in [0, 1] (do it on the device, after the transfer); float images
    pass as float32, never scaled in place."""
    return images.float().div_(255.0) if images.dtype == torch.uint8 else images.float()


class CdSpritesDataset(Dataset):
    """A torch view of a :class:`CdSpritesPlus` split (deterministic in the index and the seed)."""

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


def cdsprites_loader(generator: CdSpritesPlus, batch_size: int = 256, shuffle: bool = False, seed: int = 0,
                     num_workers: int = 0, drop_last: bool = False) -> DataLoader:
    """A DataLoader generating whole batches at once (shuffling seeded by ``seed``)."""
    return DataLoader(
        CdSpritesDataset(generator), batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
        generator=torch.Generator().manual_seed(seed) if shuffle else None, num_workers=num_workers,
        collate_fn=_already_batched, persistent_workers=num_workers > 0,
    )
