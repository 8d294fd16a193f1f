"""The dataset contract every area plugs into: named splits of named fields.

A registered dataset (:mod:`repscope.data.registry`) is a :class:`Dataset`: named splits (``train``,
``val``, ``test``; ``val`` may be missing, training then holds out a seeded fraction of ``train``)
whose batches are dicts of named numpy arrays, one row per sample, with a :class:`FieldSpec` for each
field that models and metrics can read:

==============  =====================================================================================
kind            meaning of the field
==============  =====================================================================================
``image``       uint8 pixels 0-255, channels first ``(C, H, W)`` (what torch networks take)
``text``        float32 one-hot characters ``(length, alphabet)``
``mask``        bool ``(length,)``, True on real characters
``categorical`` int64 class index in ``0..classes-1`` (``shape`` ``()``), or a row of them (``(K,)``)
``continuous``  float32 value (``shape`` ``()``) or vector
``index``       int64 index of the sample in its split (or in its generator)
==============  =====================================================================================

One field may be the dataset's *target* (what a supervised model learns): it is also served under the
name ``target``. Splits are either held in memory (:class:`ArraySplit`) or drawn from a generator on
demand (:class:`GeneratorSplit`: any object with ``size`` and ``sample(indices) -> dict``), so a
million-image set never needs to sit in memory.

Nothing here imports torch: :mod:`repscope.train.datamodule` turns batches into tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from repscope.errors import InvalidArgumentError

FieldKind = Literal["image", "text", "mask", "categorical", "continuous", "index"]
FIELD_KINDS: tuple[str, ...] = ("image", "text", "mask", "categorical", "continuous", "index")
TARGET = "target"


@dataclass(frozen=True)
class FieldSpec:
    """What one field of a batch holds.

    Parameters
    ----------
    kind : str
        One of :data:`FIELD_KINDS`.
    shape : tuple of int
        Shape of one sample's value (``()`` for a scalar).
    dtype : str
        numpy dtype name of the values (``uint8`` for images).
    classes : int or None
        Number of classes of a categorical field (None for other kinds).
    names : tuple of str
        Class words of a categorical scalar, or column names of a categorical / continuous row.
    description : str
        One line for people: what the field measures, in which unit.
    """

    kind: FieldKind
    shape: tuple[int, ...]
    dtype: str
    classes: int | None = None
    names: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FIELD_KINDS:
            raise InvalidArgumentError(f"kind: must be one of {', '.join(FIELD_KINDS)}, got {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        """The spec as a plain, YAML/JSON-ready dict.

        Returns
        -------
        dict of str to object
            Keys ``kind`` (str), ``shape`` (list of int), ``dtype`` (str), ``classes`` (int or None),
            ``names`` (list of str) and ``description`` (str).
        """
        return {
            "kind": self.kind,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "classes": self.classes,
            "names": list(self.names),
            "description": self.description,
        }


class Split(Protocol):
    """A split: ``len(split)`` samples, fetched a batch at a time."""

    def __len__(self) -> int: ...

    def batch(self, indices: np.ndarray, fields: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Rows ``indices`` of every field (or of ``fields``), each an array with ``len(indices)`` rows."""
        ...


class SampleGenerator(Protocol):
    """What a generator offers (dSprites, CdSprites+, the coming CANDLE renderer): a size, its factors
    and ``sample(indices)``; the dataset folder writer and the CLI work for any of them."""

    name: str
    size: int
    factor_names: tuple[str, ...]
    factor_sizes: tuple[int, ...]

    def __len__(self) -> int: ...

    def sample(self, indices: np.ndarray) -> dict[str, Any]:
        """The fields of samples ``indices``, one row per index.

        Parameters
        ----------
        indices : numpy.ndarray, shape (N,), int
            Sample indices in ``[0, size)``.

        Returns
        -------
        dict of str to numpy.ndarray
            Field name to an array of ``N`` rows (e.g. ``image`` uint8 ``(N, C, H, W)``, ``index`` int64
            ``(N,)``).
        """
        ...


def _check_indices(indices: Any, size: int) -> np.ndarray:
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise InvalidArgumentError(f"indices: must be integers, got dtype {indices.dtype}")
    indices = indices.astype(np.int64, copy=False)
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise InvalidArgumentError(f"indices: must lie in [0, {size}), got {indices.min()}..{indices.max()}")
    return indices


class ArraySplit:
    """A split held in memory: one array per field, ``len`` rows each.

    Images may be stored channels-last or without their channel axis (``(N, 28, 28)`` digits); give
    ``image_shapes`` (field -> the ``(C, H, W)`` shape batches carry) and batches are reshaped or
    transposed to it, without copying the stored array.
    """

    def __init__(self, arrays: Mapping[str, Any], image_shapes: Mapping[str, tuple[int, ...]] | None = None) -> None:
        if not arrays:
            raise InvalidArgumentError("arrays: a split needs at least one field")
        self.arrays = {name: np.asarray(value) for name, value in arrays.items()}
        lengths = {name: len(value) for name, value in self.arrays.items()}
        if len(set(lengths.values())) != 1:
            raise InvalidArgumentError(f"arrays: fields differ in length: {lengths}")
        self.image_shapes = dict(image_shapes or {})
        self._length = next(iter(lengths.values()))

    def __len__(self) -> int:
        return self._length

    def batch(self, indices: Any, fields: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Rows ``indices`` of every stored field (or of ``fields``).

        Parameters
        ----------
        indices : array-like of int, shape (N,)
            Row indices in ``[0, len(self))``.
        fields : sequence of str, optional
            Field names to return, in this order; default every stored field.

        Returns
        -------
        dict of str to numpy.ndarray
            Field name to its ``N`` rows; fields named in ``image_shapes`` come as ``(N, C, H, W)``.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range, a field is not stored, or stored images do
            not fit their ``image_shapes`` entry.
        """
        indices = _check_indices(indices, len(self))
        names = list(self.arrays) if fields is None else list(fields)
        out = {}
        for name in names:
            if name not in self.arrays:
                raise InvalidArgumentError(f"fields: no field {name!r}; this split has {', '.join(self.arrays)}")
            rows = self.arrays[name][indices]
            if name in self.image_shapes:
                rows = _channels_first(rows, self.image_shapes[name])
            out[name] = rows
        return out


def _channels_first(rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if rows.shape[1:] == tuple(shape):
        return rows
    channels, height, width = shape
    if rows.shape[1:] == (height, width) and channels == 1:
        return rows.reshape(len(rows), 1, height, width)
    if rows.shape[1:] == (height, width, channels):
        return np.ascontiguousarray(rows.transpose(0, 3, 1, 2))
    raise InvalidArgumentError(f"images of shape {rows.shape[1:]} do not fit the field's shape {tuple(shape)}")


class GeneratorSplit:
    """A split drawn on demand from a generator's ``sample(indices)`` (one vectorised call a batch).

    ``indices`` (optional) picks which of the generator's samples form the split, in order: sample
    ``i`` of the split is ``generator.sample([indices[i]])``.
    """

    def __init__(self, generator: Any, indices: Any = None) -> None:
        self.generator = generator
        self.indices = None if indices is None else _check_indices(indices, len(generator))

    def __len__(self) -> int:
        return len(self.generator) if self.indices is None else len(self.indices)

    def batch(self, indices: Any, fields: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Rows ``indices`` of the split, drawn in one ``generator.sample`` call.

        Parameters
        ----------
        indices : array-like of int, shape (N,)
            Indices into the split, in ``[0, len(self))`` (mapped through ``self.indices`` when set).
        fields : sequence of str, optional
            Field names to return, in this order; default every field the generator gives.

        Returns
        -------
        dict of str to numpy.ndarray
            Field name to its ``N`` rows, as the generator's ``sample`` makes them.

        Raises
        ------
        InvalidArgumentError
            When an index is not an integer or out of range, or the generator gives no field named in
            ``fields``.
        """
        indices = _check_indices(indices, len(self))
        chosen = indices if self.indices is None else self.indices[indices]
        sample = self.generator.sample(chosen)
        if fields is None:
            return dict(sample)
        missing = [name for name in fields if name not in sample]
        if missing:
            raise InvalidArgumentError(
                f"fields: the generator gives no {', '.join(missing)}; it gives {', '.join(sample)}"
            )
        return {name: sample[name] for name in fields}


@dataclass
class Dataset:
    """A registered dataset: named splits, the description of every field, and its target.

    Attributes
    ----------
    name : str
        The registry name (``digits``, ``morpho-mnist``, ``dsprites``, ``cdsprites``, ...).
    splits : dict
        ``train`` and ``test``, and ``val`` when the dataset has its own validation samples.
    fields : dict of FieldSpec
        Every field a batch may hold (the target is also served as ``target``).
    target : str or None
        The field a supervised model learns (None: no target, e.g. for generative models).
    description : str
        One line saying what was loaded (source, sizes, seed).
    extras : dict
        Whatever the area keeps beside the batches (e.g. Morpho-MNIST's measured morphometrics).
    """

    name: str
    splits: dict[str, Any]
    fields: dict[str, FieldSpec]
    target: str | None = None
    description: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "train" not in self.splits:
            raise InvalidArgumentError(f"dataset {self.name}: needs a 'train' split, has {', '.join(self.splits)}")
        if self.target is not None and self.target not in self.fields:
            raise InvalidArgumentError(
                f"dataset {self.name}: target {self.target!r} is not one of its fields ({', '.join(self.fields)})"
            )

    def split(self, name: str) -> Any:
        """One split of the dataset.

        Parameters
        ----------
        name : str
            ``"train"``, ``"test"``, or ``"val"`` when the dataset has one (a key of :attr:`splits`).

        Returns
        -------
        ArraySplit or GeneratorSplit
            The split (any object with ``len`` and ``batch(indices, fields)``).

        Raises
        ------
        InvalidArgumentError
            When the dataset has no split ``name``.
        """
        if name not in self.splits:
            raise InvalidArgumentError(f"split: dataset {self.name} has {', '.join(self.splits)}, not {name!r}")
        return self.splits[name]

    def field(self, name: str) -> FieldSpec:
        """The spec of one field.

        Parameters
        ----------
        name : str
            A key of :attr:`fields`, or ``"target"`` for the target field's spec.

        Returns
        -------
        FieldSpec
            The field's kind, shape, dtype, classes and names.

        Raises
        ------
        InvalidArgumentError
            When the dataset has no field ``name`` (or ``"target"`` is asked and there is no target).
        """
        if name == TARGET and self.target is not None:
            return self.fields[self.target]
        if name not in self.fields:
            raise InvalidArgumentError(f"field: dataset {self.name} has {', '.join(self.fields)}, not {name!r}")
        return self.fields[name]

    @property
    def target_kind(self) -> str:
        """``classification``, ``regression`` or ``none``: how the target is learnt."""
        if self.target is None:
            return "none"
        return "classification" if self.fields[self.target].kind == "categorical" else "regression"

    @property
    def num_classes(self) -> int | None:
        return None if self.target is None else self.fields[self.target].classes

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """``(C, H, W)`` of the ``image`` field, None when there is none."""
        spec = self.fields.get("image")
        return None if spec is None else tuple(spec.shape)

    def with_target(self, target: str | None) -> Dataset:
        """The same splits with another field as target (no data copied).

        Parameters
        ----------
        target : str or None
            Name of a field to learn, or None for no target.

        Returns
        -------
        Dataset
            A copy sharing the splits and fields, with ``target`` set.

        Raises
        ------
        InvalidArgumentError
            When ``target`` is not one of the dataset's fields.
        """
        return replace(self, target=target)

    def batch(self, split: str, indices: Any, fields: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Rows ``indices`` of ``split``; the field name ``target`` reads the target field.

        Parameters
        ----------
        split : str
            Split name: ``"train"``, ``"test"``, or ``"val"`` when present.
        indices : array-like of int, shape (N,)
            Row indices in ``[0, len(split))``.
        fields : sequence of str, optional
            Field names to return (``"target"`` allowed); default every field of the split.

        Returns
        -------
        dict of str to numpy.ndarray
            Field name to its ``N`` rows; ``target`` (when asked) is the target field's array.

        Raises
        ------
        InvalidArgumentError
            When the split or a field does not exist, ``target`` is asked without a target, or an index
            is not an integer or out of range.
        """
        names = None if fields is None else [self.target if f == TARGET else f for f in fields]
        if names is not None and None in names:
            raise InvalidArgumentError(f"fields: dataset {self.name} has no target (set data.params.target)")
        rows = self.split(split).batch(indices, names)
        if fields is not None and TARGET in fields:
            rows[TARGET] = rows[self.target]
        return rows

    def arrays(self, split: str, fields: Sequence[str], batch_size: int = 4096) -> dict[str, np.ndarray]:
        """Every row of ``split`` for ``fields``, concatenated (for evaluation on a test split).

        Parameters
        ----------
        split : str
            Split name: ``"train"``, ``"test"``, or ``"val"`` when present.
        fields : sequence of str
            Field names to read (``"target"`` allowed).
        batch_size : int, default=4096
            Rows fetched per :meth:`batch` call.

        Returns
        -------
        dict of str to numpy.ndarray
            Field name to all ``len(split)`` rows, in index order.

        Raises
        ------
        InvalidArgumentError
            When the split is empty or missing, or a field does not exist.
        """
        part = self.split(split)
        chunks = [
            self.batch(split, np.arange(s, min(s + batch_size, len(part))), fields)
            for s in range(0, len(part), batch_size)
        ]
        if not chunks:
            raise InvalidArgumentError(f"split: {split} of dataset {self.name} is empty")
        return {name: np.concatenate([c[name] for c in chunks]) for name in fields}

    def describe(self) -> dict[str, Any]:
        """A plain-dict description (for ``config.yaml``/``metrics.json`` and ``repscope data``).

        Returns
        -------
        dict of str to object
            Keys ``name`` (str), ``target`` (str or None), ``description`` (str), ``splits`` (split name
            to number of samples) and ``fields`` (field name to :meth:`FieldSpec.to_dict`).
        """
        return {
            "name": self.name,
            "target": self.target,
            "description": self.description,
            "splits": {name: len(split) for name, split in self.splits.items()},
            "fields": {name: spec.to_dict() for name, spec in self.fields.items()},
        }


__all__ = ["FieldSpec", "ArraySplit", "GeneratorSplit", "Dataset", "SampleGenerator", "FIELD_KINDS", "TARGET"]
