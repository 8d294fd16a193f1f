"""MNIST IDX reading and writing: round trips, hand-built headers, every error path, real files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from repscope.data import idx
from repscope.errors import DataFormatError, InvalidArgumentError

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
    ids=[
        "empty",
        "short-magic",
        "magic",
        "dtype",
        "ndim0",
        "short-dims",
        "truncated",
        "trailing",
        "gzip-truncated",
        "gzip-corrupt",
        "gzip-inner-truncated",
    ],
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


def test_real_fashion_mnist_labels_and_images(fashion_mnist):
    """The Debian package's files when installed, else the shipped sample of the same files."""
    for split, count in fashion_mnist.counts.items():
        path = fashion_mnist.directory / f"{split}-labels-idx1-ubyte.gz"
        labels = idx.read_idx(path)
        assert labels.shape == (count,) and labels.dtype == np.uint8
        assert labels[:20].tolist() == fashion_mnist.first_labels[split]
        # the raw (decompressed) bytes are exactly what encode_idx writes back
        assert idx.encode_idx(labels) == gzip.decompress(path.read_bytes())
        images = idx.read_idx(fashion_mnist.directory / f"{split}-images-idx3-ubyte.gz")
        assert images.shape == (count, 28, 28) and images.dtype == np.uint8
        assert images.min() == 0 and images.max() == 255
    if fashion_mnist.from_package:
        assert np.array_equal(
            np.bincount(idx.read_idx(fashion_mnist.directory / "train-labels-idx1-ubyte.gz")), np.full(10, 6_000)
        )


# sha256 of the decompressed sample files, taken when they were cut from the package
FASHION_SAMPLE_SHA256 = {
    "train-images-idx3-ubyte.gz": "7a0217dc4446fcb3ba7a0b774f801a8736a8ca12b8195a949a56af9a5f574138",
    "train-labels-idx1-ubyte.gz": "f1f6578fccfdcbdf1df14156453126924fdc9ac78c7b77d08681c92122c7932e",
    "t10k-images-idx3-ubyte.gz": "10011aad7e104ca4844b2f2ec20ea5e697cc6fe044fcdfe102805b0cffb2c8b5",
    "t10k-labels-idx1-ubyte.gz": "825f333513fdd542aa1aa55ded6b697992e3bbc01f304e46fd0126ead73ad4d6",
}


def test_shipped_fashion_sample_is_the_first_records_of_the_real_files(fashion_mnist_sample, fashion_mnist):
    import hashlib

    for name, digest in FASHION_SAMPLE_SHA256.items():
        raw = gzip.decompress((fashion_mnist_sample.directory / name).read_bytes())
        assert hashlib.sha256(raw).hexdigest() == digest, name
        sample = idx.read_idx(fashion_mnist_sample.directory / name)
        assert len(sample) == fashion_mnist_sample.counts[name.split("-")[0]]
        if fashion_mnist.from_package:  # the package at hand: the sample is its first records
            assert np.array_equal(sample, idx.read_idx(fashion_mnist.directory / name)[: len(sample)]), name
