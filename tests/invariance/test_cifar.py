"""CIFAR-10 binary batches (written here in the published record layout) and VGG13-bn on them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from repscope.data.registry import load_dataset
from repscope.data.zeroshot.cifar import RECORD, cifar10_dataset, read_cifar_batch
from repscope.errors import DataFormatError, InvalidArgumentError


def write_batch(path, labels, rng):
    """Records of 1 label byte + 1,024 red + 1,024 green + 1,024 blue bytes; returns the images."""
    images = rng.integers(0, 256, size=(len(labels), 3, 32, 32), dtype=np.uint8)
    records = np.concatenate([np.asarray(labels, np.uint8)[:, None], images.reshape(len(labels), -1)], axis=1)
    path.write_bytes(records.tobytes())
    return images


@pytest.fixture
def cifar_folder(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    train = [write_batch(folder / f"data_batch_{k}.bin", np.arange(10) % 10, rng) for k in (1, 2)]
    test = write_batch(folder / "test_batch.bin", [3, 1, 4, 1, 5, 9], rng)
    return tmp_path, np.concatenate(train), test


def test_records_read_back_exactly_with_the_red_plane_first(cifar_folder, tmp_path):
    parent, train, test = cifar_folder
    images, labels = read_cifar_batch(parent / "cifar-10-batches-bin" / "test_batch.bin")
    assert np.array_equal(images, test) and labels.tolist() == [3, 1, 4, 1, 5, 9]
    red = np.zeros(RECORD, np.uint8)
    red[1 : 1 + 1024] = 255  # the first 1,024 pixel bytes are the red channel
    (tmp_path / "red.bin").write_bytes(red.tobytes())
    image = read_cifar_batch(tmp_path / "red.bin")[0][0]
    assert (image[0] == 255).all() and (image[1:] == 0).all()
    (tmp_path / "short.bin").write_bytes(red.tobytes()[:-1])
    with pytest.raises(DataFormatError, match="not a whole number"):
        read_cifar_batch(tmp_path / "short.bin")
    red[0] = 12
    (tmp_path / "label.bin").write_bytes(red.tobytes())
    with pytest.raises(DataFormatError, match="label 12"):
        read_cifar_batch(tmp_path / "label.bin")


def test_the_registered_dataset_finds_the_folder_and_samples(cifar_folder, tmp_path):
    parent, train, _ = cifar_folder
    dataset = load_dataset("cifar10", data_dir=str(parent))  # the parent of cifar-10-batches-bin works too
    assert len(dataset.split("train")) == 20 and len(dataset.split("test")) == 6
    batch = dataset.batch("train", np.arange(20), ["image", "target"])
    assert np.array_equal(batch["image"], train) and batch["target"].tolist() == list(range(10)) * 2
    small = cifar10_dataset(str(parent), train_size=5, seed=1)
    assert len(small.split("train")) == 5
    with pytest.raises(InvalidArgumentError, match="test_batch.bin"):
        cifar10_dataset(str(tmp_path / "nowhere"))


def test_vgg13_bn_on_cifar_through_the_invariance_test(cifar_folder, tmp_path, tmp_path_factory, capsys):
    from repscope.cli import main
    from repscope.models.morpho.baselines import VGG13BN

    parent, _, _ = cifar_folder
    torch.manual_seed(0)
    model = VGG13BN()
    assert sum(p.numel() for p in model.parameters()) == 9_416_010  # the CIFAR VGG-13 with batch norm
    torch.save(model.state_dict(), tmp_path / "vgg.pt")
    out = tmp_path_factory.mktemp("runs") / "test"  # not inside the data folder: an --out there is refused
    args = ["invariance", "test", "--model", str(tmp_path / "vgg.pt"), "--arch", "vgg13-bn", "--data", "cifar10"]
    args += ["--data-param", f"data_dir={parent}", "--transform", "brightness", "--steps", "3", "--out", str(out)]
    try:
        main(args)
    except SystemExit as exit_:
        assert exit_.code in (0, None), capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["examples"] == 6 and len(metrics["features"]) == 5
    assert np.load(out / "matrices" / "max_at_CONV-2.npy").shape == (3, 3)
