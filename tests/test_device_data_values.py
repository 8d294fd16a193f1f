"""Rows served and bytes counted by the data module: which rows the validation split serves (on the
DataLoader path and from rows held on the device), and the memory estimate that ``data_placement: auto``
weighs against the free memory (each field's bytes as held, times the rows of every split held)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.errors import InvalidArgumentError
from repscope.train import datamodule
from repscope.train.datamodule import DatasetModule, DeviceStore

ROWS = 50
# 50 * 0.27 = 13.5: held out by rounding to the nearest, 14 rows (truncation would hold out 13)
VAL_FRACTION, HELD_OUT = 0.27, 14


def tagged_rows(n: int = ROWS) -> Dataset:
    """``n`` rows, each telling which it is: ``tag = 1000 + 3 * row`` and an image whose pixels are ``row``."""
    rows = np.arange(n)
    arrays = {
        "image": np.repeat(rows.astype(np.uint8), 4).reshape(n, 2, 2),
        "tag": (1000 + 3 * rows).astype(np.float32),
        "label": rows % 3,
    }
    fields = {
        "image": FieldSpec("image", (1, 2, 2), "uint8"),
        "tag": FieldSpec("continuous", (), "float32"),
        "label": FieldSpec("categorical", (), "int64", 3),
    }
    return Dataset("tagged", {"train": ArraySplit(arrays, image_shapes={"image": (1, 2, 2)})}, fields, "label")


def served_rows(batches) -> list[int]:
    """The rows a loader serves, read from their tags; each image must hold its own row's pixels."""
    rows = []
    for batch in batches:
        tags = batch["tag"].numpy()
        numbers = ((tags - 1000) / 3).round().astype(int)
        assert np.array_equal(1000 + 3 * numbers, tags)
        # images in [0, 1]: pixel = row / 255, the same row as the tag
        assert "image" not in batch or torch.equal(
            batch["image"],
            (torch.as_tensor(numbers, dtype=torch.float32) / 255.0).reshape(-1, 1, 1, 1).expand(-1, 1, 2, 2),
        )
        rows.extend(numbers.tolist())
    return rows


@pytest.mark.parametrize("placement", ["loader", "device"])
def test_the_validation_split_serves_the_held_out_rows_and_training_the_others(placement):
    data = tagged_rows()
    module = DatasetModule(
        data, ("image", "tag"), batch_size=64, val_fraction=VAL_FRACTION, seed=3, shuffle=False, placement=placement
    )
    assert module.uses_device() == (placement == "device")
    validation = served_rows(module.val_dataloader())
    training = served_rows(module.train_dataloader())
    assert len(validation) == HELD_OUT and len(training) == ROWS - HELD_OUT
    assert not set(validation) & set(training)  # no training row is validated on
    assert sorted(validation + training) == list(range(ROWS))  # and no row is lost
    assert validation == sorted(validation)  # served in the data's order (no shuffling)
    # a seeded draw over the whole split: neither the first nor the last rows, and both halves in it
    assert validation != list(range(HELD_OUT)) and validation != list(range(ROWS - HELD_OUT, ROWS))
    assert min(validation) < ROWS // 2 <= max(validation)
    # every epoch validates on the same rows
    assert served_rows(module.val_dataloader()) == validation


def test_the_hold_out_follows_its_seed():
    def held_out(seed: int) -> list[int]:
        module = DatasetModule(tagged_rows(), ("tag",), val_fraction=VAL_FRACTION, seed=seed, placement="loader")
        return served_rows(module.val_dataloader())

    assert held_out(3) == held_out(3)
    assert held_out(3) != held_out(4)


def test_a_datasets_own_validation_split_is_served_as_it_is():
    data = tagged_rows()
    rows = data.splits["train"].arrays
    data.splits["val"] = ArraySplit({name: values[40:] for name, values in rows.items()}, {"image": (1, 2, 2)})
    for placement in ("loader", "device"):
        module = DatasetModule(data, ("image", "tag"), batch_size=64, seed=3, shuffle=False, placement=placement)
        assert served_rows(module.val_dataloader()) == list(range(40, 50))
        assert served_rows(module.train_dataloader()) == list(range(ROWS))


# ------------------------------------------------------------------------------------------
# the memory estimate behind data_placement: auto

# bytes of one row as held on the device: the uint8 image stays uint8 (1 byte a value), floats become
# float32 (4), integers int64 (8, the uint8 caption characters too), masks bool (1)
BYTES_PER_ROW = {
    "image": 1 * 6 * 5 * 1,  # uint8 (1, 6, 5)
    "pixels": 2 * 3 * 4,  # a float64 image (2, 3), held as float32
    "mask": 4 * 1,  # bool (4,)
    "target": 8,  # int32 label, held as int64
    "value": 3 * 4,  # float64 (3,), held as float32
    "text": 5 * 8,  # uint8 characters, held as int64
}
TRAIN_ROWS, VAL_ROWS = 33, 7
NEEDED = (TRAIN_ROWS + VAL_ROWS) * sum(BYTES_PER_ROW.values())  # 40 * 118 = 4720


def mixed_fields() -> Dataset:
    rng = np.random.default_rng(8)

    def split(n: int) -> ArraySplit:
        arrays = {
            "image": rng.integers(0, 256, size=(n, 6, 5), dtype=np.uint8),
            "pixels": rng.random((n, 2, 3)),
            "mask": rng.random((n, 4)) < 0.5,
            "label": rng.integers(0, 4, size=n).astype(np.int32),
            "value": rng.normal(size=(n, 3)),
            "text": rng.integers(0, 27, size=(n, 5), dtype=np.uint8),
        }
        return ArraySplit(arrays, image_shapes={"image": (1, 6, 5), "pixels": (1, 2, 3)})

    fields = {
        "image": FieldSpec("image", (1, 6, 5), "uint8"),
        "pixels": FieldSpec("image", (1, 2, 3), "float64"),
        "mask": FieldSpec("mask", (4,), "bool"),
        "label": FieldSpec("categorical", (), "int32", 4),
        "value": FieldSpec("continuous", (3,), "float64"),
        "text": FieldSpec("text", (5,), "uint8"),
    }
    return Dataset("mixed", {"train": split(TRAIN_ROWS), "val": split(VAL_ROWS)}, fields, "label")


@pytest.fixture(scope="module")
def mixed() -> Dataset:
    return mixed_fields()


def test_the_bytes_held_are_counted_field_by_field_and_row_by_row(mixed):
    assert sum(BYTES_PER_ROW.values()) == 118 and NEEDED == 4720
    module = DatasetModule(mixed, tuple(BYTES_PER_ROW), placement="loader")
    assert module.train_set.nbytes_held() == TRAIN_ROWS * 118 == 3894
    assert module.val_set.nbytes_held() == VAL_ROWS * 118 == 826
    # what the estimate counts is what the device then holds, tensor by tensor
    for view in (module.train_set, module.val_set):
        store = DeviceStore(view, "cpu")
        held = {name: tensor.numel() * tensor.element_size() for name, tensor in store.tensors.items()}
        assert held == {name: len(view) * size for name, size in BYTES_PER_ROW.items()}


@pytest.mark.parametrize(
    ("free", "on_device"),
    [
        (11_801, True),  # 0.4 * 11,801 = 4,720.4 >= 4,720 bytes: the rows fit the share
        (11_790, False),  # 0.4 * 11,790 = 4,716 < 4,720
        (2**40, True),
        (4_720, False),  # all of the free memory is not the share
    ],
)
def test_auto_places_the_rows_when_they_fit_the_share_of_the_free_memory(mixed, monkeypatch, free, on_device):
    monkeypatch.setattr(datamodule, "free_memory", lambda device: free)
    module = DatasetModule(mixed, tuple(BYTES_PER_ROW), placement="auto")
    assert datamodule.DEVICE_MEMORY_SHARE == 0.4
    assert module.uses_device() is on_device


def test_device_placement_is_refused_only_when_the_rows_exceed_the_free_memory(mixed, monkeypatch):
    monkeypatch.setattr(datamodule, "free_memory", lambda device: NEEDED)
    assert DatasetModule(mixed, tuple(BYTES_PER_ROW), placement="device").uses_device()
    monkeypatch.setattr(datamodule, "free_memory", lambda device: NEEDED - 1)
    with pytest.raises(InvalidArgumentError, match="data_placement: device: the mixed rows need"):
        DatasetModule(mixed, tuple(BYTES_PER_ROW), placement="device").uses_device()
