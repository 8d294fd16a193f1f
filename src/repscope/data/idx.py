"""MNIST IDX files: read, write, validate.

Format (big-endian throughout)::

    bytes 0-1   zero
    byte  2     dtype code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
    byte  3     ndim (>= 1)
    then        ndim dimension sizes, each an unsigned 32-bit integer
    then        prod(dims) values of the dtype, row-major

A file is gzipped when it starts with the gzip magic bytes ``1f 8b`` (the name does not decide
on read); :func:`write_idx` gzips when the name ends in ``.gz``. Gzip output has a zero timestamp
and no stored file name, so writing the same array twice gives the same bytes, and a file this
module wrote reads back and writes again byte for byte.
"""

from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import gzip_bytes, write_bytes_atomic

# IDX dtype code -> big-endian numpy dtype
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODE_OF_KIND = {(dtype.kind, dtype.itemsize): code for code, dtype in IDX_DTYPES.items()}
GZIP_MAGIC = b"\x1f\x8b"
_UINT32_MAX = 2**32 - 1


def _supported_dtypes() -> str:
    return ", ".join(np.dtype(d.newbyteorder("=")).name for d in IDX_DTYPES.values())


def encode_idx(array: np.ndarray, gzip: bool = False) -> bytes:
    """The IDX bytes of ``array`` (gzipped deterministically when ``gzip`` is true).

    Parameters
    ----------
    array : numpy.ndarray
        1 to 255 dimensions, each of size < 2**32, of dtype uint8, int8, int16, int32, float32 or
        float64 (any byte order; written big-endian).
    gzip : bool, default=False
        Gzip the bytes, with a zero timestamp and no file name, so equal arrays give equal bytes.

    Returns
    -------
    bytes
        The 4-byte magic, the ``ndim`` big-endian uint32 sizes, then the values row-major.

    Raises
    ------
    InvalidArgumentError
        When IDX cannot hold the dtype, the number of dimensions or a dimension size.
    """
    array = np.asarray(array)
    code = _CODE_OF_KIND.get((array.dtype.kind, array.dtype.itemsize))
    if code is None:
        raise InvalidArgumentError(f"array: IDX cannot hold dtype {array.dtype}; supported: {_supported_dtypes()}")
    if array.ndim == 0 or array.ndim > 255:
        raise InvalidArgumentError(f"array: IDX needs 1 to 255 dimensions, got {array.ndim}")
    if any(size > _UINT32_MAX for size in array.shape):
        raise InvalidArgumentError(f"array: dimension sizes must fit in 32 bits, got shape {array.shape}")
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    raw = header + np.ascontiguousarray(array, dtype=IDX_DTYPES[code]).tobytes()
    return gzip_bytes(raw) if gzip else raw


def decode_idx(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """The array held by IDX bytes ``data`` (gzipped or not), in native byte order.

    Parameters
    ----------
    data : bytes
        An IDX file's content; gzipped when it starts with ``1f 8b``.
    name : str, default="<bytes>"
        What to call the data (usually the file path) in every error message.

    Returns
    -------
    numpy.ndarray
        A new array of the header's shape and dtype (uint8, int8, int16, int32, float32 or float64),
        native byte order.

    Raises
    ------
    DataFormatError
        When ``data`` is empty, a corrupt gzip stream, not IDX (non-zero first bytes, unknown dtype
        code, zero dimensions), truncated, or longer than its header promises.
    """
    if not data:
        raise DataFormatError(f"{name}: empty file, not an IDX file")
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFormatError(f"{name}: corrupt gzip stream ({exc})") from None
        if not data:
            raise DataFormatError(f"{name}: gzip stream holds no data, not an IDX file")
    if len(data) < 4:
        raise DataFormatError(f"{name}: truncated IDX header: expected at least 4 bytes, found {len(data)}")
    if data[0] != 0 or data[1] != 0:
        raise DataFormatError(
            f"{name}: not an IDX file: the first two bytes must be zero, got {data[0]:#04x} {data[1]:#04x}"
        )
    code, ndim = data[2], data[3]
    if code not in IDX_DTYPES:
        known = ", ".join(f"{c:#04x}" for c in IDX_DTYPES)
        raise DataFormatError(f"{name}: unknown IDX dtype code {code:#04x} (known: {known})")
    if ndim == 0:
        raise DataFormatError(f"{name}: IDX header gives 0 dimensions")
    header_size = 4 + 4 * ndim
    if len(data) < header_size:
        raise DataFormatError(
            f"{name}: truncated IDX header: {ndim} dimensions need {header_size} bytes, found {len(data)}"
        )
    shape = struct.unpack(f">{ndim}I", data[4:header_size])
    dtype = IDX_DTYPES[code]
    expected = math.prod(shape) * dtype.itemsize
    found = len(data) - header_size
    if found < expected:
        raise DataFormatError(
            f"{name}: truncated IDX file: header shape {shape} promises {expected} data bytes, found {found}"
        )
    if found > expected:
        raise DataFormatError(
            f"{name}: {found - expected} bytes of trailing garbage after the {expected} data bytes of shape {shape}"
        )
    values = np.frombuffer(data, dtype=dtype, count=expected // dtype.itemsize, offset=header_size)
    return values.reshape(shape).astype(dtype.newbyteorder("="))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (gzipped or not, told by its first bytes) into a native-order array.

    Parameters
    ----------
    path : str or os.PathLike
        The file; its name does not decide whether it is gzipped.

    Returns
    -------
    numpy.ndarray
        As :func:`decode_idx`, e.g. uint8 ``(N, 28, 28)`` for MNIST images, uint8 ``(N,)`` for labels.

    Raises
    ------
    DataFormatError
        When the file is missing, a directory, or not a valid IDX file (see :func:`decode_idx`).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataFormatError(f"{path}: is a directory, not an IDX file") from None
    return decode_idx(data, name=str(path))


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write ``array`` as IDX, atomically; gzipped (deterministic bytes) when ``path`` ends in ``.gz``.

    An existing file at ``path`` is replaced.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; a ``.gz`` suffix selects gzip.
    array : numpy.ndarray
        What :func:`encode_idx` accepts (1-255 dimensions; uint8, int8, int16, int32, float32 or
        float64).

    Raises
    ------
    InvalidArgumentError
        When IDX cannot hold ``array`` (see :func:`encode_idx`).
    """
    path = Path(path)
    write_bytes_atomic(path, encode_idx(array, gzip=path.suffix == ".gz"))


def check_mnist_pair(
    images: np.ndarray,
    labels: np.ndarray,
    images_name: str = "images",
    labels_name: str = "labels",
    error: type[Exception] = InvalidArgumentError,
) -> None:
    """Raise ``error`` unless images are uint8 (N, H, W) and labels uint8 (N,) with the same N.

    Parameters
    ----------
    images : numpy.ndarray
        Expected uint8 ``(N, H, W)``, pixel intensities 0-255 (28x28 for MNIST).
    labels : numpy.ndarray
        Expected uint8 ``(N,)``.
    images_name, labels_name : str, default="images", "labels"
        What to call the two arrays (e.g. their file paths) in the error message.
    error : type of Exception, default=InvalidArgumentError
        The error class raised, e.g. DataFormatError for arrays read from files.

    Raises
    ------
    InvalidArgumentError
        (or ``error``) When a dtype or number of dimensions is wrong or the counts differ.
    """
    if images.dtype != np.uint8 or images.ndim != 3:
        raise error(f"{images_name}: MNIST images must be uint8 (N, H, W), got {images.dtype} of shape {images.shape}")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise error(f"{labels_name}: MNIST labels must be uint8 (N,), got {labels.dtype} of shape {labels.shape}")
    if len(images) != len(labels):
        raise error(
            f"image and label counts differ: {images_name} holds {len(images)} images, "
            f"{labels_name} holds {len(labels)} labels"
        )


def read_mnist_pair(images_path: str | os.PathLike, labels_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read an MNIST images/labels pair: ``(images uint8 (N, H, W), labels uint8 (N,))``.

    Parameters
    ----------
    images_path, labels_path : str or os.PathLike
        IDX files (gzipped or not), e.g. ``train-images-idx3-ubyte.gz`` and ``train-labels-idx1-ubyte.gz``.

    Returns
    -------
    images : numpy.ndarray
        uint8 ``(N, H, W)``, pixel intensities 0-255.
    labels : numpy.ndarray
        uint8 ``(N,)``.

    Raises
    ------
    DataFormatError
        When a file is missing or invalid, not of those dtypes and shapes, or the counts differ.
    """
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    check_mnist_pair(images, labels, str(images_path), str(labels_path), error=DataFormatError)
    return images, labels


def write_mnist_pair(
    images_path: str | os.PathLike, labels_path: str | os.PathLike, images: np.ndarray, labels: np.ndarray
) -> None:
    """Write uint8 images (N, H, W) and labels (N,) as two IDX files (each atomically).

    Parameters
    ----------
    images_path, labels_path : str or os.PathLike
        Destination files, gzipped when the name ends in ``.gz``; existing files are replaced.
    images : numpy.ndarray
        uint8 ``(N, H, W)``, pixel intensities 0-255.
    labels : numpy.ndarray
        uint8 ``(N,)``.

    Raises
    ------
    InvalidArgumentError
        When the arrays are not of those dtypes and shapes or their counts differ (nothing is written).
    """
    images, labels = np.asarray(images), np.asarray(labels)
    check_mnist_pair(images, labels)
    write_idx(images_path, images)
    write_idx(labels_path, labels)
