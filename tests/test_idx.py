"""MNIST IDX reading and writing: round trips, hand-built headers, every error path, real files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from repscope.data import idx
from repscope.errors import DataFormatError, InvalidArgumentError

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
needs_fashion = pytest.mark.skipif(
    not (FASHION_DIR / "train-labels-idx1-ubyte.gz").is_file(),
    reason=f"Fashion-MNIST not installed in {FASHION_DIR} (apt-get install dataset-fashion-mnist)",
)

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]


def sample_array(dtype, shape=(4, 3, 5)) -> np.ndarray:
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["a-idx3-ubyte", "a-idx3-ubyte.gz"])
def test_round_trip_is_byte_identical(tmp_path, dtype, name):
    array = sample_array(dtype)
    first, second = tmp_path / name, tmp_path / ("copy-" + name)
    idx.write_idx(first, array)
    back = idx.read_idx(first)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    assert np.array_equal(back, array)
    idx.write_idx(second, back)
    assert first.read_bytes() == second.read_bytes()
    assert (first.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_header_is_big_endian_as_specified():
    array = np.array([[1, 2, 3], [4, 5, 258]], dtype=np.int16)
    data = idx.encode_idx(array)
    assert data[:4] == bytes([0, 0, 0x0B, 2])
    assert struct.unpack(">2I", data[4:12]) == (2, 3)
    assert data[12:] == b"\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x01\x02"
    assert np.array_equal(idx.decode_idx(data), array)


def test_gzip_is_detected_by_magic_not_by_name(tmp_path):
    array = sample_array(np.uint8)
    gzipped_without_suffix = tmp_path / "images-idx3-ubyte"
    gzipped_without_suffix.write_bytes(idx.encode_idx(array, gzip=True))
    raw_with_suffix = tmp_path / "images-idx3-ubyte.gz"
    raw_with_suffix.write_bytes(idx.encode_idx(array))
    assert np.array_equal(idx.read_idx(gzipped_without_suffix), array)
    assert np.array_equal(idx.read_idx(raw_with_suffix), array)


def test_gzip_output_is_deterministic():
    array = sample_array(np.uint8)
    assert idx.encode_idx(array, gzip=True) == idx.encode_idx(array.copy(), gzip=True)
    assert gzip.decompress(idx.encode_idx(array, gzip=True)) == idx.encode_idx(array)


def test_write_rejects_unsupported_arrays(tmp_path):
    with pytest.raises(InvalidArgumentError, match="int64"):
        idx.write_idx(tmp_path / "x.idx", np.zeros(3, dtype=np.int64))
    with pytest.raises(InvalidArgumentError, match="dimensions"):
        idx.write_idx(tmp_path / "x.idx", np.uint8(3))
    assert not list(tmp_path.iterdir())


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


GOOD = idx.encode_idx(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"\x00\x00", "truncated IDX header"),
        (b"\x08\x03" + GOOD[2:], "first two bytes must be zero"),
        (b"\x00\x00\x07\x03" + GOOD[4:], "unknown IDX dtype code 0x07"),
        (b"\x00\x00\x08\x00", "0 dimensions"),
        (GOOD[:10], "truncated IDX header"),
        (GOOD[:-5], "promises 24 data bytes, found 19"),
        (GOOD + b"junk", "4 bytes of trailing garbage"),
        (gzip.compress(GOOD)[:-12], "corrupt gzip stream"),
        (b"\x1f\x8b" + b"not really gzip data", "corrupt gzip stream"),
        (gzip.compress(GOOD[:-1]), "promises 24 data bytes, found 23"),
    ],
    ids=["empty", "short-magic", "magic", "dtype", "ndim0", "short-dims", "truncated", "trailing",
         "gzip-truncated", "gzip-corrupt", "gzip-inner-truncated"],
)
def test_bad_files_raise_data_format_error_naming_the_file(tmp_path, data, message):
    path = write(tmp_path / "broken-idx3-ubyte", data)
    with pytest.raises(DataFormatError, match=message) as caught:
        idx.read_idx(path)
    assert str(path) in str(caught.value)


def test_missing_file_is_a_data_format_error(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        idx.read_idx(tmp_path / "absent.gz")


def test_mnist_pair_round_trip_and_count_mismatch(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["train"]
    images_path, labels_path = tmp_path / "i-idx3-ubyte.gz", tmp_path / "l-idx1-ubyte.gz"
    idx.write_mnist_pair(images_path, labels_path, images, labels)
    read_images, read_labels = idx.read_mnist_pair(images_path, labels_path)
    assert np.array_equal(read_images, images) and np.array_equal(read_labels, labels)

    idx.write_idx(labels_path, labels[:-3])
    with pytest.raises(DataFormatError) as caught:
        idx.read_mnist_pair(images_path, labels_path)
    message = str(caught.value)
    assert str(images_path) in message and str(labels_path) in message
    assert f"{len(images)} images" in message and f"{len(images) - 3} labels" in message


def test_mnist_pair_checks_dimensions(tmp_path, tiny_mnist):
    images, labels = tiny_mnist["train"]
    flat, labels_path = tmp_path / "flat-idx2-ubyte", tmp_path / "l-idx1-ubyte"
    idx.write_idx(flat, images.reshape(len(images), -1))
    idx.write_idx(labels_path, labels)
    with pytest.raises(DataFormatError, match="uint8 \\(N, H, W\\)"):
        idx.read_mnist_pair(flat, labels_path)
    images_path = tmp_path / "i-idx3-ubyte"
    idx.write_idx(images_path, images)
    with pytest.raises(DataFormatError, match="uint8 \\(N,\\)"):
        idx.read_mnist_pair(images_path, flat)
    with pytest.raises(InvalidArgumentError, match="differ"):
        idx.write_mnist_pair(tmp_path / "a", tmp_path / "b", images, labels[:5])
    assert not (tmp_path / "a").exists()


@needs_fashion
def test_real_fashion_mnist_train_labels():
    path = FASHION_DIR / "train-labels-idx1-ubyte.gz"
    labels = idx.read_idx(path)
    assert labels.shape == (60_000,) and labels.dtype == np.uint8
    assert np.array_equal(np.bincount(labels), np.full(10, 6_000))
    # the raw (decompressed) bytes are exactly what encode_idx writes back
    assert idx.encode_idx(labels) == gzip.decompress(path.read_bytes())
