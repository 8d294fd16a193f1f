"""The data an encoder is assessed on: images with ground-truth factors, from wherever ``--data`` names.

:func:`load_factor_data` reads

- a registered dataset with a ``factors`` field (``dsprites``, ``candle`` with its ``data_dir``) or an
  ``attributes`` field (``cdsprites``, whose attributes are its factors), loaded with ``params`` as
  ``repscope train``'s ``data.params`` (:mod:`repscope.data.registry`); ``n`` rows of ``split`` are drawn
  in a seeded order, as :func:`repscope.studies.candle.score_arrays.codes_of_run` draws them;
- a dataset folder written by repscope (``dataset.json``: :func:`repscope.data.store.read_dataset`), or a
  folder of CANDLE renders (the ``data_dir`` of the ``candle`` loader);
- a user's ``.npz`` with ``images`` and ``factors`` (and optionally ``factor_names``), read without
  unpickling (:func:`repscope.data.npzfile.read_npz_arrays`);
- in memory (the Python API): an ``(images, factors)`` tuple or a dict with those keys.

Factors that are constant over the rows are dropped (they carry no information, and DCI and SAP cannot
fit them: dSprites' colour). A float factor with more than :data:`CONTINUOUS_BINS` distinct values that
are not all whole numbers is continuous: it is binned into 20 equal-width bins by the package's one
discretiser (:func:`repscope.metrics.disentanglement.discretize.histogram_discretize`, disentanglement_lib's
rule), and a note says so. Every factor must then leave at least 5 rows per class on average
(:func:`repscope.validation.check_factor_classes`: fewer make noise look disentangled).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.npzfile import read_npz_arrays
from repscope.data.registry import DATASETS, dataset_loader
from repscope.data.store import META_FILE, class_columns, read_dataset
from repscope.errors import DataFormatError, InvalidArgumentError, RepscopeError
from repscope.metrics.disentanglement.discretize import histogram_discretize
from repscope.validation import check_factor_classes, check_pixel_values, check_positive_int, check_seed, to_uint8

__all__ = ["CONTINUOUS_BINS", "FactorData", "as_uint8_images", "load_factor_data"]

# bins of a continuous factor: disentanglement_lib's num_bins, the one MIG and IRS's reference mode use
CONTINUOUS_BINS = 20
# the fields of a registered dataset that hold one class per factor, in the order they are looked for
FACTOR_FIELDS = ("factors", "attributes")
OPTION = "--data"


@dataclass(frozen=True)
class FactorData:
    """Images and their ground-truth factor classes.

    Attributes
    ----------
    images : numpy.ndarray
        uint8 ``(N, H, W)`` grey or ``(N, H, W, C)`` colour images, 0-255.
    factors : numpy.ndarray
        int64 ``(N, K)`` factor classes (no factor constant).
    names : tuple of str
        The ``K`` factors' names.
    source : str
        Where the data came from, for the record (``dsprites (test split, 2000 rows, seed 0)``, a path).
    sizes : tuple of int
        Classes per factor (the dataset's, else the largest class + 1).
    dataset : str or None
        The registered dataset the images are of (``dsprites``, ``cdsprites``, ``candle``), which picks the
        judges of CG and the paper's reference values; None for a user's own data.
    params : dict
        That dataset's loader parameters (``level`` of CdSprites+, ``data_dir`` of CANDLE).
    notes : tuple of str
        What was done to the factors (dropped, binned) that a reader must see.
    """

    images: np.ndarray
    factors: np.ndarray
    names: tuple[str, ...]
    source: str
    sizes: tuple[int, ...]
    dataset: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(len(self.factors))


def load_factor_data(
    spec: Any, *, params: dict[str, Any] | None = None, n: int = 2000, seed: int = 0, split: str = "test"
) -> FactorData:
    """The images and factors ``spec`` names (module docstring).

    Parameters
    ----------
    spec : str, pathlib.Path, tuple, dict or FactorData
        A registered dataset name, a dataset folder, an ``.npz`` file, an ``(images, factors)`` tuple or a
        dict with ``images``, ``factors`` and optionally ``factor_names``.
    params : dict, optional
        The registered dataset's loader parameters (as ``data.params`` of ``repscope train``).
    n : int, default=2000
        Rows drawn without replacement, in a seeded order (all of them when fewer).
    seed : int, default=0
        Seed of the draw.
    split : str, default="test"
        The split of a registered dataset to draw from (folders and files have one).

    Returns
    -------
    FactorData

    Raises
    ------
    InvalidArgumentError
        One line naming ``--data``: an unknown name, a dataset without factors, a missing or unknown loader
        parameter, a factor with fewer than 5 rows per class, every factor constant.
    DataFormatError
        One line naming ``--data`` and the file: a missing ``images`` or ``factors`` array, mismatched row
        counts, object (pickled) arrays, images that are not uint8 or floats in [0, 1].
    """
    n = check_positive_int(n, "--n")
    seed = check_seed(seed, "--seed")
    if isinstance(spec, FactorData):
        return spec
    if isinstance(spec, tuple | Mapping):
        images, factors, names = _in_memory(spec)
        return _finished(images, factors, names, "arrays given", None, {}, n, seed, error=InvalidArgumentError)
    if not isinstance(spec, str | Path):
        raise InvalidArgumentError(
            f"{OPTION}: expected a dataset name, a folder, an .npz file or (images, factors), got {type(spec).__name__}"
        )
    path = Path(spec).expanduser()
    if path.is_dir():
        return _from_folder(path, n, seed)
    if path.is_file():
        images, factors, names = _from_npz(path)
        return _finished(images, factors, names, str(path), None, {}, n, seed, error=DataFormatError)
    if str(spec) in DATASETS:
        return _from_registry(str(spec), dict(params or {}), n, seed, split)
    raise InvalidArgumentError(
        f"{OPTION}: {str(spec)!r} is neither a registered dataset ({', '.join(sorted(DATASETS))}) nor an existing "
        "folder or .npz file"
    )


def _in_memory(spec: Any) -> tuple[Any, Any, Any]:
    """``(images, factors, names or None)`` of a tuple or a dict given to the Python API."""
    if isinstance(spec, Mapping):
        missing = [key for key in ("images", "factors") if key not in spec]
        if missing:
            raise InvalidArgumentError(f"{OPTION}: the dict has no {missing[0]!r} (has: {', '.join(map(str, spec))})")
        return spec["images"], spec["factors"], spec.get("factor_names")
    if len(spec) != 2:
        raise InvalidArgumentError(f"{OPTION}: expected an (images, factors) pair, got a tuple of {len(spec)}")
    return spec[0], spec[1], None


def _from_npz(path: Path) -> tuple[np.ndarray, np.ndarray, Any]:
    """``images``, ``factors`` and the optional ``factor_names`` of a user's npz, read without unpickling."""
    try:
        arrays = read_npz_arrays(
            path,
            "'images' (N, H, W[, C]) and 'factors' (N, K), optionally 'factor_names' (K,) strings",
            "numpy.savez(path, images=..., factors=..., factor_names=numpy.array([...]))",
        )
    except DataFormatError as exc:
        raise DataFormatError(f"{OPTION} {exc}") from None
    missing = [key for key in ("images", "factors") if key not in arrays]
    if missing:
        raise DataFormatError(
            f"{OPTION} {path}: no {missing[0]!r} array (has: {', '.join(sorted(arrays)) or 'nothing'})"
        )
    return arrays["images"], arrays["factors"], arrays.get("factor_names")


def _from_folder(path: Path, n: int, seed: int) -> FactorData:
    """A repscope dataset folder (``dataset.json``), else a folder of CANDLE renders."""
    if not (path / META_FILE).is_file():
        return _from_registry("candle", {"data_dir": str(path)}, n, seed, "all")
    try:
        stored = read_dataset(path)
    except RepscopeError as exc:
        raise type(exc)(f"{OPTION} {exc}") from None
    columns = list(class_columns(stored.generator, stored.level))
    rows = _drawn_rows(len(stored), n, seed)
    images = np.asarray(stored.images[np.sort(rows)])[np.argsort(np.argsort(rows))]
    if stored.generator == "dsprites":
        images = images * np.uint8(255)  # the folder stores dSprites as 0/1 masks; the images are 0/255
    factors = stored.factors[columns].to_numpy()[rows]
    params = {} if stored.level is None else {"level": int(stored.level)}
    source = f"{path} ({stored.generator}, {len(rows)} of {len(stored)} rows, seed {seed})"
    return _finished(images, factors, columns, source, stored.generator, params, n, seed, error=DataFormatError)


def _loader_params(name: str, params: dict[str, Any]) -> None:
    """Refuse a parameter the loader ``name`` does not take, or one it needs and was not given."""
    accepted = inspect.signature(dataset_loader(name)).parameters
    unknown = [key for key in params if key not in accepted]
    if unknown:
        raise InvalidArgumentError(f"{OPTION} {name}: unknown parameter {unknown[0]!r}; it takes {', '.join(accepted)}")
    needed = [key for key, p in accepted.items() if p.default is inspect.Parameter.empty and key not in params]
    if needed:
        raise InvalidArgumentError(f"{OPTION} {name}: needs the parameter {needed[0]!r} (e.g. its folder)")


def _from_registry(name: str, params: dict[str, Any], n: int, seed: int, split: str) -> FactorData:
    """``n`` seeded rows of a registered dataset's split (all of a folder's rows for ``split="all"``)."""
    _loader_params(name, params)
    try:
        dataset = dataset_loader(name)(**params)
        present = [key for key in FACTOR_FIELDS if key in dataset.fields]
        if not present:
            raise InvalidArgumentError(f"dataset {name} has no factors field (it has {', '.join(dataset.fields)})")
        field_name = present[0]
        splits = list(dataset.splits) if split == "all" else [split]
        parts = [(part, _drawn_rows(len(dataset.split(part)), n, seed)) for part in splits]
        batches = [dataset.batch(part, rows, ["image", field_name]) for part, rows in parts]
    except RepscopeError as exc:
        raise type(exc)(f"{OPTION} {name}: {exc}") from None
    images = np.concatenate([batch["image"] for batch in batches])
    factors = np.concatenate([batch[field_name] for batch in batches])
    if split == "all":
        order = _drawn_rows(len(factors), n, seed)
        images, factors = images[order], factors[order]
    spec = dataset.field(field_name)
    names = list(spec.names) or [f"factor{k}" for k in range(factors.shape[1])]
    sizes = [dataset.fields[k].classes if k in dataset.fields else None for k in names]
    where = "every split" if split == "all" else f"{split} split"
    source = f"{name} ({where}, {len(factors)} rows, seed {seed})"
    return _finished(images, factors, names, source, name, params, n, seed, InvalidArgumentError, sizes)


def _drawn_rows(size: int, n: int, seed: int) -> np.ndarray:
    """The first ``n`` of a seeded permutation of ``size`` rows (as ``codes_of_run`` draws them)."""
    return np.random.default_rng(seed).permutation(size)[:n]


def as_uint8_images(value: Any, error: type[RepscopeError], where: str) -> np.ndarray:
    """uint8 images ``(N, H, W)`` or ``(N, H, W, C)`` of a batch given in any of the layouts models use.

    Parameters
    ----------
    value : array-like
        uint8 0-255 or float [0, 1] images ``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)``.
    error : type of RepscopeError
        Raised on a bad batch.
    where : str
        Named in the message (``--data FILE``, ``decoder``).

    Returns
    -------
    numpy.ndarray
        uint8 images; a single channel is dropped, channels-first turned channels-last.

    Raises
    ------
    error
        Another shape, an empty batch, or pixels against :func:`repscope.validation.check_pixel_values`.
    """
    array = np.asarray(value)
    if array.ndim == 4 and array.shape[1] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = np.transpose(array, (0, 2, 3, 1))  # channels-first, as torch and the registered datasets give
    if array.ndim == 4 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim not in (3, 4) or 0 in array.shape:
        raise error(f"{where}: 'images' must be (N, H, W) or (N, H, W, C), got shape {array.shape}")
    return to_uint8(check_pixel_values(array, f"{where}: 'images'", error))


def _factor_classes(value: Any, error: type[RepscopeError], where: str) -> tuple[np.ndarray, list[int]]:
    """int64 ``(N, K)`` classes and the columns that were binned (continuous)."""
    array = np.asarray(value)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise error(f"{where}: 'factors' must be (N, K) numbers, got {array.dtype} of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise error(f"{where}: 'factors' holds NaN or infinite values")
    columns, binned = [], []
    for k in range(array.shape[1]):
        column = array[:, k]
        whole = np.all(column == np.round(column))
        if not whole and len(np.unique(column)) > CONTINUOUS_BINS:
            columns.append(histogram_discretize(column[:, None], CONTINUOUS_BINS)[:, 0] - 1)
            binned.append(k)
        elif not whole:
            columns.append(np.unique(column, return_inverse=True)[1])  # few fractional values: one class each
        else:
            columns.append(column.astype(np.int64))
    return np.stack(columns, axis=1).astype(np.int64), binned


def _names(names: Any, count: int, error: type[RepscopeError], where: str) -> list[str]:
    if names is None:
        return [f"factor{k}" for k in range(count)]
    names = [str(name) for name in np.asarray(names).reshape(-1).tolist()]
    if len(names) != count or len(set(names)) != count:
        raise error(f"{where}: 'factor_names' must be {count} distinct names, got {names}")
    return names


def _finished(
    images: Any,
    factors: Any,
    names: Any,
    source: str,
    dataset: str | None,
    params: dict[str, Any],
    n: int,
    seed: int,
    error: type[RepscopeError],
    sizes: list[int | None] | None = None,
) -> FactorData:
    """The checked :class:`FactorData`: ``n`` rows (drawn when more are given), constant factors dropped,
    continuous ones binned, every factor with at least 5 rows per class."""
    where = f"{OPTION} {source}"
    images = as_uint8_images(images, error, where)
    classes, binned = _factor_classes(factors, error, where)
    names = _names(names, classes.shape[1], error, where)
    if len(images) != len(classes):
        raise error(f"{where}: 'images' has {len(images)} rows and 'factors' {len(classes)}; they must match")
    if len(classes) > n and dataset is None:
        rows = _drawn_rows(len(classes), n, seed)
        images, classes = images[rows], classes[rows]
    sizes = list(sizes) if sizes is not None else [None] * len(names)
    notes = [f"factor {names[k]} is continuous: binned into {CONTINUOUS_BINS} equal-width bins" for k in binned]
    for k in binned:
        sizes[k] = CONTINUOUS_BINS
    varying = classes.max(axis=0) > classes.min(axis=0)
    if not varying.any():
        raise error(f"{where}: every factor is constant over the {len(classes)} rows; nothing to assess against")
    if not varying.all():
        dropped = [name for name, keep in zip(names, varying) if not keep]
        notes.append(f"constant factors dropped (no information to capture): {', '.join(dropped)}")
    classes = classes[:, varying]
    names = [name for name, keep in zip(names, varying) if keep]
    sizes = [int(s) if s else int(classes[:, k].max()) + 1 for k, s in enumerate(np.asarray(sizes, object)[varying])]
    try:
        check_factor_classes(classes, where=where)
    except InvalidArgumentError as exc:
        raise error(f"{exc}{'; raise --n' if dataset is not None else ''}") from None
    return FactorData(images, classes, tuple(names), source, tuple(sizes), dataset, dict(params), tuple(notes))
