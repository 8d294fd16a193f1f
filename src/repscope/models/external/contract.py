"""The input contract of a model from outside: the image shape it reads and the value range of its pixels.

repscope serves images as float ``(B, C, H, W)`` tensors in [0, 1]. A model trained elsewhere may read
0-255 values or standardised ones (``(x - mean) / std`` per channel, torchvision's ``Normalize``); its
:class:`InputContract` says which, and :meth:`InputContract.prepare` maps repscope's images to it, so
every metric sees the model as its author trained it.

A file may carry its contract (:func:`contract_metadata` writes it, :func:`contract_from_metadata` reads
it back): ONNX's ``custom_metadata_map`` keys ``repscope.input_shape``, ``repscope.input_range``,
``repscope.mean``, ``repscope.std``; TorchScript and torch.export archives an extra file
``repscope.json`` holding the same keys. Values the caller gives override the file's
(:func:`merged_contract`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import torch

from repscope.errors import InvalidArgumentError, shown

INPUT_RANGES = ("0-1", "0-255", "standardised")
# the metadata keys (ONNX custom_metadata_map; the keys of repscope.json in a TorchScript or export archive)
METADATA_KEYS = {
    "image_shape": "repscope.input_shape",
    "input_range": "repscope.input_range",
    "mean": "repscope.mean",
    "std": "repscope.std",
}
# the options a user sets each field with (repscope assess), named in messages
FIELD_OPTIONS = {"image_shape": "--input-size", "input_range": "--input-range", "mean": "--mean", "std": "--std"}


def _floats(value: Any, option: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, int | float) else list(value)
    try:
        numbers = tuple(float(item) for item in items)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{option}: expected numbers, got {shown(value)}") from None
    if not numbers or not all(math.isfinite(n) for n in numbers):
        raise InvalidArgumentError(f"{option}: expected one or more finite numbers, got {shown(value)}")
    return numbers


def _shape(value: Any) -> tuple[int, int, int] | None:
    if value is None:
        return None
    try:
        sizes = tuple(int(size) for size in value)
        exact = all(int(size) == size and not isinstance(size, bool) for size in value)
    except (TypeError, ValueError):
        sizes, exact = (), False
    if len(sizes) != 3 or not exact or min(sizes) < 1:
        raise InvalidArgumentError(
            f"--input-size: expected the image shape (channels, height, width) as 3 positive integers, "
            f"got {shown(value)}"
        )
    return sizes  # type: ignore[return-value]


@dataclass(frozen=True)
class InputContract:
    """What a model reads: the shape of one image and the value range of its pixels.

    Parameters
    ----------
    image_shape : tuple of int, optional
        ``(C, H, W)`` of one input image; None where the model or the data decides it.
    input_range : {"0-1", "0-255", "standardised"}, default="0-1"
        ``0-1``: repscope's float images as they are; ``0-255``: times 255; ``standardised``:
        ``(x - mean) / std`` per channel, with ``x`` in [0, 1] (torchvision's convention).
    mean, std : tuple of float, optional
        Per-channel mean and standard deviation in [0, 1] units, of length C or 1; required with
        ``standardised`` and refused otherwise; ``std`` strictly positive.

    Raises
    ------
    InvalidArgumentError
        Naming the option (``--input-size``, ``--input-range``, ``--mean``, ``--std``) of a bad value.
    """

    image_shape: tuple[int, int, int] | None = None
    input_range: str = "0-1"
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "image_shape", _shape(self.image_shape))
        object.__setattr__(self, "mean", _floats(self.mean, "--mean"))
        object.__setattr__(self, "std", _floats(self.std, "--std"))
        if self.input_range not in INPUT_RANGES:
            raise InvalidArgumentError(
                f"--input-range: expected one of {', '.join(INPUT_RANGES)}, got {shown(self.input_range)}"
            )
        standardised = self.input_range == "standardised"
        if standardised and (self.mean is None or self.std is None):
            raise InvalidArgumentError("--mean/--std: both are required with --input-range standardised")
        if not standardised and (self.mean is not None or self.std is not None):
            raise InvalidArgumentError(
                f"--mean/--std: given with --input-range {self.input_range}; they apply to standardised only"
            )
        if self.std is not None and min(self.std) <= 0:
            raise InvalidArgumentError(f"--std: every value must be positive, got {list(self.std)}")
        for name in ("mean", "std"):
            values = getattr(self, name)
            if values is not None and self.image_shape is not None and len(values) not in (1, self.image_shape[0]):
                raise InvalidArgumentError(
                    f"--{name}: expected 1 or {self.image_shape[0]} values (one per channel), got {len(values)}"
                )

    @classmethod
    def from_options(
        cls,
        *,
        size: Sequence[int] | None = None,
        channels: int | None = None,
        input_range: str | None = None,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """The contract fields that command-line options state, for ``load_model(contract=...)``.

        Only what is given is returned, so that a file's recorded contract fills the rest
        (:func:`merged_contract`); a shape given in part (a size without channels) keeps None where it
        is open.

        Parameters
        ----------
        size : (int, int), optional
            ``(H, W)`` (``--input-size``).
        channels : int, optional
            ``C`` (``--channels``).
        input_range : str, optional
            ``--input-range``.
        mean, std : sequence of float, optional
            ``--mean``, ``--std``.

        Returns
        -------
        dict
            Field name -> value of each field stated; ``image_shape`` as ``(C or None, H or None, W or None)``.

        Raises
        ------
        InvalidArgumentError
            When a value breaks the rule of its field (checked once merged, by :class:`InputContract`).
        """
        stated: dict[str, Any] = {}
        if size is not None or channels is not None:
            height, width = (None, None) if size is None else (int(size[0]), int(size[-1]))
            stated["image_shape"] = (None if channels is None else int(channels), height, width)
        for name, value in (("input_range", input_range), ("mean", mean), ("std", std)):
            if value is not None:
                stated[name] = tuple(value) if name != "input_range" else value
        return stated

    def describe(self) -> str:
        """One line for a report: ``images (1, 28, 28), pixels 0-1`` (``standardised with mean ... std ...``).

        Returns
        -------
        str
            The contract in words.
        """
        shape = "images of the data's shape" if self.image_shape is None else f"images {self.image_shape}"
        if self.input_range == "standardised":
            return f"{shape}, pixels standardised with mean {list(self.mean)} and std {list(self.std)}"
        return f"{shape}, pixels {self.input_range}"

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        """repscope's float images in [0, 1] as the model reads them.

        Parameters
        ----------
        images : torch.Tensor, shape (B, C, H, W)
            Float pixel intensities in [0, 1].

        Returns
        -------
        torch.Tensor
            ``images`` (``0-1``), ``255 images`` (``0-255``) or ``(images - mean_c) / std_c`` per channel
            ``c`` (``standardised``), same shape, dtype and device.

        Raises
        ------
        InvalidArgumentError
            When ``mean`` / ``std`` has neither 1 nor C values.
        """
        if self.input_range == "0-1":
            return images
        if self.input_range == "0-255":
            return images * 255.0
        channels = images.shape[1]
        mean, std = (self._per_channel(name, channels, images) for name in ("mean", "std"))
        return (images - mean) / std

    def _per_channel(self, name: str, channels: int, images: torch.Tensor) -> torch.Tensor:
        values = getattr(self, name)
        if len(values) not in (1, channels):
            raise InvalidArgumentError(
                f"--{name}: expected 1 or {channels} values (one per channel), got {len(values)}"
            )
        return torch.tensor(values, dtype=images.dtype, device=images.device).reshape(1, -1, 1, 1)


def contract_metadata(contract: InputContract) -> dict[str, str]:
    """The metadata entries (strings) that record ``contract`` in a model file.

    Parameters
    ----------
    contract : InputContract
        The contract to record.

    Returns
    -------
    dict of str to str
        :data:`METADATA_KEYS` -> JSON text of each field that is set (``repscope.input_range`` always).
    """
    entries = {METADATA_KEYS["input_range"]: json.dumps(contract.input_range)}
    for name in ("image_shape", "mean", "std"):
        value = getattr(contract, name)
        if value is not None:
            entries[METADATA_KEYS[name]] = json.dumps(list(value))
    return entries


def contract_from_metadata(metadata: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The contract fields a model file records (the entries :func:`contract_metadata` writes).

    Parameters
    ----------
    metadata : mapping
        The file's metadata: ``repscope.*`` keys with JSON text (or already decoded) values; other keys
        are ignored.
    source : str
        The file, named in messages.

    Returns
    -------
    dict
        Field name -> value of each field the metadata sets (none: an empty dict).

    Raises
    ------
    InvalidArgumentError
        When an entry is not JSON, naming ``source`` and the key.
    """
    found: dict[str, Any] = {}
    for name, key in METADATA_KEYS.items():
        if key not in metadata:
            continue
        value = metadata[key]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                # a hand-written range ("0-255") need not be quoted
                value = value if name == "input_range" else None
                if value is None:
                    raise InvalidArgumentError(
                        f"--model: {source}: metadata {key} is not JSON: {shown(metadata[key])}"
                    ) from None
        found[name] = tuple(value) if isinstance(value, list) else value
    return found


def explicit_fields(contract: InputContract | Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields a caller set: a mapping's keys, or an :class:`InputContract`'s fields that differ from
    the defaults (a contract cannot say that its ``0-1`` was chosen; pass a mapping to insist on it).

    Parameters
    ----------
    contract : InputContract, mapping or None
        What the caller gave.

    Returns
    -------
    dict
        Field name -> value.

    Raises
    ------
    InvalidArgumentError
        When a mapping holds a key that is not a contract field.
    """
    if contract is None:
        return {}
    if isinstance(contract, InputContract):
        default = InputContract()
        return {
            f.name: getattr(contract, f.name)
            for f in fields(contract)
            if getattr(contract, f.name) != getattr(default, f.name)
        }
    unknown = sorted(set(contract) - {f.name for f in fields(InputContract)})
    if unknown:
        raise InvalidArgumentError(
            f"contract: unknown field {unknown[0]!r}; expected image_shape, input_range, mean, std"
        )
    return dict(contract)


def merged_contract(
    explicit: InputContract | Mapping[str, Any] | None,
    recorded: Mapping[str, Any],
    fixed_shape: Sequence[int | None] | None = None,
    source: str = "the model",
) -> InputContract:
    """The contract of a loaded model: the caller's fields over the file's, checked against a fixed shape.

    Parameters
    ----------
    explicit : InputContract, mapping or None
        What the caller set (:func:`explicit_fields`).
    recorded : mapping
        What the file records (:func:`contract_from_metadata`).
    fixed_shape : sequence of int or None, optional
        ``(C, H, W)`` the model's graph fixes (an ONNX input's static dimensions; None where free).
    source : str
        The model, named in messages.

    Returns
    -------
    InputContract
        ``recorded`` updated by ``explicit``; a fully fixed shape fills an unset ``image_shape``.

    Raises
    ------
    InvalidArgumentError
        When an explicit ``image_shape`` contradicts a fixed dimension (naming ``--input-size``), or the
        merged fields break a rule of :class:`InputContract`.
    """
    given = explicit_fields(explicit)
    values = {**dict(recorded), **given}
    fixed = tuple(fixed_shape) if fixed_shape is not None and len(fixed_shape) == 3 else (None, None, None)
    stated = given.get("image_shape")
    if stated is not None:
        stated = tuple(None if size is None else int(size) for size in stated)
        if any(f is not None and s is not None and f != s for f, s in zip(fixed, stated)):
            raise InvalidArgumentError(
                f"--input-size: {source} fixes its input to (C, H, W) = {_shape_text(fixed)}, got {_shape_text(stated)}"
            )
    values["image_shape"] = _filled_shape(stated, fixed, recorded.get("image_shape"))
    if values.get("input_range", "0-1") != "standardised":
        # a range chosen by the caller drops the file's mean/std rather than contradicting them
        if "input_range" in given:
            values = {k: v for k, v in values.items() if k not in ("mean", "std") or k in given}
    return InputContract(**values)


def _shape_text(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"


def _filled_shape(
    stated: Sequence[int | None] | None, fixed: Sequence[int | None], recorded: Sequence[int] | None
) -> tuple[int, ...] | None:
    """Each of C, H, W from the caller, else the model's fixed shape, else the file's record; a size given
    without its channels is grey (C = 1); None where the height or width stays open."""
    known = tuple(recorded) if recorded is not None else (None, None, None)
    stated = tuple(stated) if stated is not None else (None, None, None)
    shape = [next((v for v in options if v is not None), None) for options in zip(stated, fixed, known)]
    if shape[1] is None or shape[2] is None:
        return None
    return (shape[0] or 1, shape[1], shape[2])


def with_image_shape(contract: InputContract, image_shape: Sequence[int]) -> InputContract:
    """``contract`` with ``image_shape`` set (the data's, where the model leaves it open).

    Parameters
    ----------
    contract : InputContract
        The model's contract.
    image_shape : sequence of int
        ``(C, H, W)``.

    Returns
    -------
    InputContract
        A copy with ``image_shape``.
    """
    return replace(contract, image_shape=tuple(int(s) for s in image_shape))


__all__ = [
    "FIELD_OPTIONS",
    "INPUT_RANGES",
    "METADATA_KEYS",
    "InputContract",
    "contract_from_metadata",
    "contract_metadata",
    "explicit_fields",
    "merged_contract",
    "with_image_shape",
]
