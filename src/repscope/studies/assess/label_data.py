"""Labelled test images for assessing a classifier (``repscope assess --role classifier --data ...``).

:func:`load_label_data` turns what ``--data`` names into one :class:`LabelData`: a seeded draw of ``n``
labelled images, channels first, uint8. ``--data`` may be

- nothing: the 5,000 embedded MNIST digits (``digits`` with ``source: mnist-sample``), the default for
  models of 28x28 grey images;
- a registered dataset with a class target (:data:`repscope.data.registry.DATASETS`: ``digits`` with
  ``source: mnist-sample`` or ``fashion-mnist``, ``cifar10`` with ``data_dir``, ...), its parameters in
  ``params``;
- a ``.npz`` file with ``images`` and ``labels`` (and optionally ``class_names``), read without unpickling
  (:func:`repscope.data.npzfile.read_npz_arrays`);
- a repscope dataset folder (``dataset.json``; the class column named by ``params["target"]``), or a
  folder of MNIST IDX files (read as the ``digits`` source it is);
- arrays in memory: ``(images, labels)`` or a mapping with ``images`` and ``labels``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import DataFormatError, InvalidArgumentError, RepscopeError
from repscope.validation import check_pixel_values, check_positive_int, check_seed, to_uint8

__all__ = ["DEFAULT_DATA", "LabelData", "load_label_data"]

# the data a 28x28 grey model is assessed on when --data is not given
DEFAULT_DATA = ("digits", {"source": "mnist-sample"})
DIGIT_SHAPE = (1, 28, 28)
# axis sizes read as a channel axis (grey, RGB, RGBA)
_CHANNELS = (1, 3, 4)


@dataclass(frozen=True)
class LabelData:
    """Labelled images a classifier is assessed on.

    Attributes
    ----------
    images : numpy.ndarray
        uint8 ``(N, C, H, W)``, channels first (grey images have ``C = 1``): the layout the invariance
        test's transformations and the black-box attacks take.
    labels : numpy.ndarray
        int64 ``(N,)`` classes in ``[0, num_classes)``.
    num_classes : int
        Classes of the task (from the dataset; ``max(labels) + 1`` for arrays and files).
    source : str
        What the images are (``"digits (mnist-sample), test split"``, a file), for the record.
    class_names : tuple of str
        One name per class, or empty.
    rows : numpy.ndarray, optional
        The rows of the source the images are (sorted), when they were drawn from it.
    """

    images: np.ndarray
    labels: np.ndarray
    num_classes: int
    source: str
    class_names: tuple[str, ...] = ()
    rows: np.ndarray | None = None

    def __post_init__(self) -> None:
        images, labels = np.asarray(self.images), np.asarray(self.labels)
        if images.dtype != np.uint8 or images.ndim != 4 or len(images) == 0:
            raise InvalidArgumentError(
                f"--data: LabelData needs uint8 (N, C, H, W) images, got {images.dtype} {images.shape}"
            )
        if labels.shape != (len(images),) or labels.dtype != np.int64:
            raise InvalidArgumentError(f"--data: LabelData needs int64 labels of shape ({len(images)},)")
        if labels.min() < 0 or labels.max() >= self.num_classes:
            raise InvalidArgumentError(
                f"--data: labels must lie in [0, {self.num_classes}), got [{labels.min()}, {labels.max()}]"
            )

    def __len__(self) -> int:
        return len(self.images)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one image."""
        return tuple(int(size) for size in self.images.shape[1:])  # type: ignore[return-value]

    def subset(self, rows: Any) -> LabelData:
        """The images at ``rows`` (their ``rows`` read in the source's numbering)."""
        rows = np.asarray(rows, dtype=np.int64)
        origin = rows if self.rows is None else self.rows[rows]
        return LabelData(self.images[rows], self.labels[rows], self.num_classes, self.source, self.class_names, origin)


def load_label_data(
    spec: Any = None,
    *,
    params: Mapping[str, Any] | None = None,
    n: int = 1000,
    seed: int = 0,
    split: str = "test",
    image_shape: tuple[int, int, int] | None = None,
) -> LabelData:
    """Labelled images for a classifier: a seeded draw of ``n`` of what ``--data`` names (module docstring).

    Parameters
    ----------
    spec : None, str, pathlib.Path, LabelData, tuple or mapping
        ``None`` (the embedded MNIST digits, for a 28x28 grey ``image_shape`` or none), a registered
        dataset name, a ``.npz`` file, a dataset folder, a :class:`LabelData`, ``(images, labels)`` or
        ``{"images": ..., "labels": ...}``. Images: uint8 0-255 or floats in [0, 1] (rounded to uint8),
        ``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)``.
    params : mapping, optional
        The registered dataset's parameters (``{"source": "fashion-mnist"}``, ``{"data_dir": ...}``);
        for a dataset folder, ``target``: the class column of its ``factors.csv``.
    n : int, default=1000
        Images drawn (all of them when fewer), in source order.
    seed : int, default=0
        Seed of the draw.
    split : str, default="test"
        The split of a registered dataset.
    image_shape : tuple of int, optional
        The model's input ``(C, H, W)``: the data must have it (and ``spec=None`` needs 28x28 grey).

    Returns
    -------
    LabelData

    Raises
    ------
    InvalidArgumentError
        Naming ``--data``: an unknown name, a dataset without a class target, arrays that are not labelled
        images, images of another shape than ``image_shape``.
    DataFormatError
        Naming the file: an ``.npz`` without ``images`` and ``labels`` or with unreadable members.
    """
    count = check_positive_int(n, "n")
    seed = check_seed(seed)
    params = dict(params or {})
    if spec is None:
        if image_shape is not None and tuple(image_shape) != DIGIT_SHAPE:
            raise InvalidArgumentError(
                f"--data: needed for a model of {tuple(image_shape)} images (the default, digits, is {DIGIT_SHAPE})"
            )
        spec, params = DEFAULT_DATA[0], {**DEFAULT_DATA[1], **params}
    data = _load(spec, params, split)
    if image_shape is not None and data.image_shape != tuple(image_shape):
        raise InvalidArgumentError(
            f"--data {data.source}: images of shape {data.image_shape}, the model takes {tuple(image_shape)}"
        )
    if count >= len(data):
        return data if data.rows is not None else data.subset(np.arange(len(data)))
    rows = np.sort(np.random.default_rng(seed).choice(len(data), size=count, replace=False))
    return data.subset(rows)


def _load(spec: Any, params: dict[str, Any], split: str) -> LabelData:
    """Every labelled image ``spec`` names (no draw yet)."""
    if isinstance(spec, LabelData):
        return spec
    if isinstance(spec, Mapping) or isinstance(spec, tuple | list):
        images, labels = _array_pair(spec)
        return from_arrays(images, labels, "arrays in memory", InvalidArgumentError, "--data")
    if not isinstance(spec, str | Path):
        raise InvalidArgumentError(
            f"--data: expected a dataset name, a .npz file, a dataset folder or (images, labels), "
            f"got {type(spec).__name__}"
        )
    path = Path(spec)
    if path.suffix == ".npz" or path.is_file():
        return _from_npz(path)
    if path.is_dir():
        return _from_folder(path, params, split)
    from repscope.data.registry import DATASETS  # noqa: PLC0415

    if str(spec) not in DATASETS:
        raise InvalidArgumentError(
            f"--data {spec}: not a registered dataset ({', '.join(sorted(DATASETS))}), "
            f"nor an existing .npz file or dataset folder"
        )
    return _from_registry(str(spec), params, split)


def _array_pair(spec: Any) -> tuple[Any, Any]:
    if isinstance(spec, Mapping):
        if "images" not in spec or "labels" not in spec:
            raise InvalidArgumentError(f"--data: a mapping needs 'images' and 'labels', got keys {sorted(spec)}")
        return spec["images"], spec["labels"]
    if len(spec) != 2:
        raise InvalidArgumentError(f"--data: expected (images, labels), got a sequence of {len(spec)}")
    return spec[0], spec[1]


def from_arrays(
    images: Any,
    labels: Any,
    source: str,
    error: type[RepscopeError] = InvalidArgumentError,
    name: str = "--data",
    num_classes: int | None = None,
    class_names: tuple[str, ...] = (),
) -> LabelData:
    """Labelled images from arrays, checked: images to uint8 ``(N, C, H, W)``, labels to int64.

    Parameters
    ----------
    images : array-like
        uint8 or floats in [0, 1]; ``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)`` with ``C`` in 1, 3, 4
        (channels first when both axes could be channels).
    labels : array-like
        ``(N,)`` non-negative integers (whole-number floats accepted).
    source : str
        What the arrays are, for the record and the messages.
    error : type of RepscopeError
        Raised on bad input (DataFormatError for a file).
    name : str
        How messages name the input (``--data``, ``--data FILE``).
    num_classes : int, optional
        The classes (default ``max(labels) + 1``).
    class_names : tuple of str
        One per class, or empty.

    Returns
    -------
    LabelData
    """
    pixels = check_pixel_values(images, name, error)
    pixels = _channels_first(pixels, name, error)
    classes = _labels(labels, len(pixels), name, error)
    total = int(classes.max()) + 1 if num_classes is None else int(num_classes)
    if classes.max() >= total:
        raise error(f"{name}: label {int(classes.max())} is out of range for {total} classes")
    names = tuple(str(c) for c in class_names) if len(class_names) == total else ()
    return LabelData(to_uint8(pixels), classes, total, source, names)


def _channels_first(pixels: np.ndarray, name: str, error: type[RepscopeError]) -> np.ndarray:
    if pixels.ndim == 3:
        pixels = pixels[:, None]
    elif pixels.ndim == 4 and pixels.shape[1] not in _CHANNELS and pixels.shape[3] in _CHANNELS:
        pixels = np.transpose(pixels, (0, 3, 1, 2))
    elif pixels.ndim != 4 or pixels.shape[1] not in _CHANNELS:
        raise error(
            f"{name}: expected images (N, H, W), (N, H, W, C) or (N, C, H, W) with C in 1, 3, 4, "
            f"got shape {pixels.shape}"
        )
    if len(pixels) == 0 or 0 in pixels.shape[2:]:
        raise error(f"{name}: no images (shape {pixels.shape})")
    return np.ascontiguousarray(pixels)


def _labels(labels: Any, count: int, name: str, error: type[RepscopeError]) -> np.ndarray:
    array = np.asarray(labels)
    if array.shape != (count,):
        raise error(f"{name}: expected {count} labels (one per image), got shape {array.shape}")
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu" or (array < 0).any():
        raise error(f"{name}: labels must be non-negative integer classes, got dtype {array.dtype}")
    return array.astype(np.int64)


def _from_npz(path: Path) -> LabelData:
    from repscope.data.npzfile import read_npz_arrays  # noqa: PLC0415

    where = f"--data {path}"
    if not path.is_file():
        raise InvalidArgumentError(f"{where}: no such file")
    arrays = read_npz_arrays(path, "'images' (N, H, W[, C]) and 'labels' (N,)")
    missing = [key for key in ("images", "labels") if key not in arrays]
    if missing:
        raise DataFormatError(f"{where}: needs members 'images' and 'labels', has {sorted(arrays) or 'none'}")
    names = arrays.get("class_names")
    names = tuple(str(v) for v in names.ravel()) if names is not None and names.dtype.kind == "U" else ()
    return from_arrays(arrays["images"], arrays["labels"], str(path), DataFormatError, where, class_names=names)


def _from_folder(path: Path, params: dict[str, Any], split: str) -> LabelData:
    from repscope.data.store import META_FILE, read_dataset  # noqa: PLC0415

    if not (path / META_FILE).is_file():  # MNIST IDX files: the digits source of that folder
        return _from_registry("digits", {**params, "source": str(path)}, split)
    target = params.get("target")
    dataset = read_dataset(path)
    if target not in dataset.factors.columns:
        raise InvalidArgumentError(
            f"--data {path}: say which column of factors.csv is the class (--data-param target=NAME; "
            f"columns: {', '.join(dataset.factors.columns)})"
        )
    labels = dataset.factors[target].to_numpy()
    images = np.asarray(dataset.images)
    if dataset.generator == "dsprites":  # its images.npy holds 0/1 masks (the store's format), not 0-255 values
        images = images * np.uint8(255)
    return from_arrays(images, labels, f"{path} ({target})", DataFormatError, f"--data {path}")


def _from_registry(name: str, params: dict[str, Any], split: str) -> LabelData:
    from repscope.data.registry import load_dataset  # noqa: PLC0415

    dataset = load_dataset(name, **params)
    if dataset.target_kind != "classification":
        raise InvalidArgumentError(f"--data {name}: has no class target to assess a classifier on")
    spec = dataset.field("target")
    rows = dataset.arrays(split, ["image", "target"])
    shown = ", ".join(f"{key}={value}" for key, value in params.items())
    source = f"{name} ({shown}), {split} split" if shown else f"{name}, {split} split"
    names = tuple(spec.names or ())
    return from_arrays(rows["image"], rows["target"], source, InvalidArgumentError, f"--data {name}",
                       spec.classes, names)  # fmt: skip
