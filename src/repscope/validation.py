"""The array and image rules every input of repscope shares, and the one uint8 <-> float conversion.

One module holds them, as scikit-learn's ``utils.validation`` does, so that a digit handed to the
morphometrics, a sprite handed to a classifier and an ``images.npy`` read from a model's outputs
are judged by the same rules and refused with the same messages:

* **pixel values**: uint8 (0-255), or float / bool values that are finite and lie in [0, 1];
  every other dtype (signed or wider integers, object, strings, complex) is refused, since an
  integer array may hold 0-255 intensities or 0/1 masks and guessing which is how silent
  mistakes start;
* **shapes**: a batch is ``(N, *image_shape)`` with ``N >= min_count`` and no zero-size image;
  grey images are 2-D ``(H, W)`` (a singleton channels-first axis ``(N, 1, H, W)`` is dropped, a
  trailing channel axis ``(N, H, W, 1)`` is refused with the shape to pass instead), colour images
  channels-last ``(H, W, 3)`` (channels-first ``(N, 3, H, W)``, what torch decoders return, is
  transposed);
* **conversion**: :func:`to_float01` (uint8 / 255) and :func:`to_uint8` (``round(255 x)``,
  clipped to [0, 255]);
* **factors and codes**: :func:`check_factors_codes`, the one rule every factor/code metric
  (those of :mod:`repscope.metrics.registry`) applies at its boundary;
* **seeds**: :func:`check_seed` and the config type :data:`Seed`, ``[0, 2**32 - 1]`` for every
  ``--seed``, ``seed`` key and ``--set seed=...``;
* **sizes**: :func:`check_array_header` (an array a file's header declares, against the file and the
  memory, before anything is allocated) and :func:`check_memory`, both against :func:`memory_budget`.

Every function is numpy-only: a torch tensor is accepted by duck typing
(``.detach().cpu().numpy()``), so this module imports no framework. Failures raise ``error``
(default :class:`~repscope.errors.InvalidArgumentError`; callers reading a file pass
:class:`~repscope.errors.DataFormatError` and the file's path as ``name``) with a message that
names the argument or file and says what is wrong.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from repscope.errors import DataFormatError, InvalidArgumentError, RepscopeError
from repscope.fileio import bytes_text

__all__ = [
    "SEED_MAX",
    "Seed",
    "MIN_ROWS_PER_CLASS",
    "as_array",
    "check_factor_classes",
    "check_factors_codes",
    "check_array_header",
    "check_image",
    "check_images",
    "check_memory",
    "check_pixel_values",
    "check_positive_int",
    "check_seed",
    "check_training_factors",
    "exact_factor_classes",
    "memory_budget",
    "to_float01",
    "to_uint8",
]

# trailing axis sizes read as a channel axis (grey, RGB, RGBA) rather than as an image width
_CHANNEL_SIZES = (1, 3, 4)


def as_array(value: Any, name: str, error: type[RepscopeError] = InvalidArgumentError) -> np.ndarray:
    """``value`` as a numpy array, without copying an array that already is one.

    Parameters
    ----------
    value : array-like or tensor
        A numpy array, anything :func:`numpy.asarray` takes, or an object with
        ``.detach().cpu().numpy()`` (a torch tensor, by duck typing).
    name : str
        What ``value`` is, for the message (an argument name or a file path).
    error : type of RepscopeError
        Raised when ``value`` cannot be read as an array (a ragged list, for one).

    Returns
    -------
    numpy.ndarray
    """
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        try:
            return np.asarray(value.detach().cpu().numpy())
        except (TypeError, RuntimeError, AttributeError) as exc:
            raise error(f"{name}: cannot read the tensor as an array ({exc})") from None
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise error(f"{name}: cannot read as an array ({exc})") from None


def _check_dtype(array: np.ndarray, name: str, error: type[RepscopeError]) -> np.ndarray:
    if array.dtype != np.uint8 and array.dtype.kind not in "fb":
        raise error(f"{name}: expected uint8 (0-255) or float images in [0, 1], got dtype {array.dtype}")
    return array


def check_pixel_values(array: Any, name: str, error: type[RepscopeError] = InvalidArgumentError) -> np.ndarray:
    """The pixel rule every image input shares, whatever its shape.

    Parameters
    ----------
    array : array-like or tensor
        Pixel values of any shape.
    name : str
        The argument, or the file the pixels came from, named in the message.
    error : type of RepscopeError
        The error raised (InvalidArgumentError for arguments, DataFormatError for files).

    Returns
    -------
    numpy.ndarray
        ``array`` unchanged (no copy of a numpy array) when it is uint8 (0-255), or float / bool
        with finite values in [0, 1].

    Raises
    ------
    error
        Any other dtype (integers other than uint8, object, strings, complex), NaN or infinite
        values, or floats outside [0, 1].
    """
    array = _check_dtype(as_array(array, name, error), name, error)
    if array.dtype == np.uint8:
        return array
    if array.size == 0 or array.dtype.kind == "b":
        return array
    # min / max first: cheaper than isfinite over the whole array, and NaN propagates into them
    low, high = float(np.min(array)), float(np.max(array))
    if not (np.isfinite(low) and np.isfinite(high)):
        raise error(f"{name}: NaN or infinite pixel values")
    if low < 0 or high > 1:
        raise error(
            f"{name}: float images must lie in [0, 1] (pass uint8 for 0-255 intensities); "
            f"got values in [{low:g}, {high:g}]"
        )
    return array


def _shape_text(shape: Sequence[int | None]) -> str:
    parts = [
        "H" if k == 0 and size is None else "W" if k == 1 and size is None else "C" if size is None else str(size)
        for k, size in enumerate(shape)
    ]
    return "(" + ", ".join(parts) + ")"


def _matches(shape: tuple[int, ...], expected: Sequence[int | None]) -> bool:
    return len(shape) == len(expected) and all(e is None or s == e for s, e in zip(shape, expected))


def _normalise_image_shape(image_shape: Sequence[int | None] | None) -> tuple[int | None, ...]:
    if image_shape is None:
        return (None, None)
    try:
        shape = tuple(None if size is None else int(size) for size in image_shape)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"image_shape: expected a tuple of sizes, got {image_shape!r}") from None
    if len(shape) not in (2, 3) or any(size is not None and size < 1 for size in shape):
        raise InvalidArgumentError(
            f"image_shape: expected (H, W) or (H, W, C) with positive sizes, got {image_shape!r}"
        )
    return shape


def check_images(
    images: Any,
    name: str = "images",
    *,
    image_shape: Sequence[int | None] | None = None,
    min_count: int = 1,
    error: type[RepscopeError] = InvalidArgumentError,
) -> np.ndarray:
    """A batch of images ``(N, *image_shape)`` that follows the pixel rule.

    Parameters
    ----------
    images : array-like or tensor
        The batch.
    name : str
        The argument or file named in messages.
    image_shape : tuple, optional
        The shape of one image: ``(H, W)`` for grey images, ``(H, W, C)`` for colour images
        (channels last), e.g. ``(28, 28)`` or ``(64, 64, 3)``. A size given as None is free;
        the default, None, means grey images of any size, ``(None, None)``.
    min_count : int
        The least number of images accepted (default 1: an empty batch is refused).
    error : type of RepscopeError
        The error raised.

    Returns
    -------
    numpy.ndarray
        The batch, shaped ``(N, *image_shape)``: the same array, or a view of it with the
        singleton channel axis of ``(N, 1, H, W)`` dropped (grey images) or with ``(N, C, H, W)``
        transposed to channels-last (colour images). Values are not converted.

    Raises
    ------
    error
        A shape that is not a batch of such images (a trailing channel axis ``(N, H, W, 1)`` for
        grey images is refused with the shape to pass instead, and so is ``(H, W, 1)`` where a
        batch of any-size grey images was expected, which would otherwise read as H images one
        pixel wide), zero-size images, fewer than ``min_count`` images, or pixel values against
        :func:`check_pixel_values`.
    """
    expected = _normalise_image_shape(image_shape)
    array = as_array(images, name, error)
    _check_dtype(array, name, error)  # before any shape talk: a wrong dtype is the first thing to fix
    shape = array.shape
    wanted = "(N, " + _shape_text(expected)[1:]
    if len(expected) == 2:
        if len(shape) == 4 and shape[1] == 1 and _matches(shape[2:], expected):
            array = array[:, 0]
        elif len(shape) == 4 and shape[-1] in _CHANNEL_SIZES and _matches(shape[1:3], expected):
            raise error(
                f"{name}: shape {shape} has a channel axis; grey images are expected, "
                f"pass (N, {shape[1]}, {shape[2]})" + (", e.g. images[..., 0]" if shape[-1] == 1 else "")
            )
        elif len(shape) == 3 and expected[1] is None and shape[-1] in _CHANNEL_SIZES and shape[-1] < shape[-2]:
            raise error(
                f"{name}: shape {shape} looks like one image with a channel axis, not "
                f"{shape[0]} images {shape[1]}x{shape[2]}; pass (N, H, W) grey images, "
                f"e.g. ({shape[0]}, {shape[1]}) for one"
            )
    else:
        channels = expected[2]
        if (
            len(shape) == 4
            and channels is not None
            and shape[1] == channels
            and shape[-1] != channels
            and _matches((shape[2], shape[3], shape[1]), expected)
        ):
            array = np.transpose(array, (0, 2, 3, 1))
    if array.ndim != len(expected) + 1 or not _matches(array.shape[1:], expected):
        alternatives = " (or (N, C, H, W))" if len(expected) == 3 else ""
        raise error(f"{name}: expected images of shape {wanted}{alternatives}, got shape {shape}")
    if any(size == 0 for size in array.shape[1:]):
        raise error(f"{name}: zero-size images (shape {shape}); each image needs at least one pixel")
    if len(array) < min_count:
        raise error(
            f"{name}: expected at least {min_count} image{'s' if min_count != 1 else ''}, "
            f"got {len(array)} (shape {shape})"
        )
    return check_pixel_values(array, name, error)


def check_image(
    image: Any, name: str = "image", *, ndim: int = 2, error: type[RepscopeError] = InvalidArgumentError
) -> np.ndarray:
    """One image: ``(H, W)`` grey (``ndim=2``) or ``(H, W, C)`` colour (``ndim=3``).

    Parameters
    ----------
    image : array-like or tensor
    name : str
        The argument or file named in messages.
    ndim : int
        2 for a grey image, 3 for a channels-last colour image.
    error : type of RepscopeError

    Returns
    -------
    numpy.ndarray
        ``image`` unchanged.

    Raises
    ------
    error
        Another number of axes (``(28, 28, 1)`` for a grey image is refused with the shape to
        pass), a zero-size image, or pixel values against :func:`check_pixel_values`.
    """
    if ndim not in (2, 3):
        raise InvalidArgumentError(f"ndim: must be 2 or 3, got {ndim!r}")
    array = _check_dtype(as_array(image, name, error), name, error)
    if array.ndim != ndim:
        if ndim == 2 and array.ndim == 3 and array.shape[-1] in _CHANNEL_SIZES:
            raise error(
                f"{name}: shape {array.shape} has a channel axis; a grey image is expected, "
                f"pass ({array.shape[0]}, {array.shape[1]})"
            )
        if ndim == 2 and array.ndim == 3 and array.shape[0] == 1:
            raise error(
                f"{name}: shape {array.shape} is a batch or a channels-first image; "
                f"one grey image is expected, pass ({array.shape[1]}, {array.shape[2]})"
            )
        layout = "(H, W)" if ndim == 2 else "(H, W, C)"
        raise error(f"{name}: expected one {ndim}-D image {layout}, got shape {array.shape}")
    if array.size == 0:
        raise error(f"{name}: zero-size image (shape {array.shape}); it needs at least one pixel")
    return check_pixel_values(array, name, error)


def _pixel_array(array: Any, name: str) -> np.ndarray:
    return _check_dtype(as_array(array, name), name, InvalidArgumentError)


def to_float01(array: Any, dtype: Any = np.float32) -> np.ndarray:
    """Pixels as floats in [0, 1]: uint8 is divided by 255, float and bool pass (cast to ``dtype``).

    Parameters
    ----------
    array : array-like or tensor
        uint8, float or bool pixels (run :func:`check_pixel_values` first for untrusted input:
        this conversion does not check the range).
    dtype : numpy float dtype
        float32 by default (what models take); the morphometry pipeline asks for float64.

    Returns
    -------
    numpy.ndarray of ``dtype``
        A new array for uint8 / bool input, or ``array`` itself when it already has ``dtype``.
    """
    array = _pixel_array(array, "images")
    if array.dtype == np.uint8:
        out = array.astype(dtype)
        out /= 255
        return out
    return array.astype(dtype, copy=False)


def to_uint8(array: Any) -> np.ndarray:
    """Pixels as uint8 intensities: ``round(255 x)`` of values clipped to [0, 1] (NaN gives 0).

    Parameters
    ----------
    array : array-like or tensor
        Floats in [0, 1] (values outside are clipped), bool, or uint8 (returned as it is).

    Returns
    -------
    numpy.ndarray of uint8
        Rounding is to the nearest integer, halves to even (``numpy.rint``).
    """
    array = _pixel_array(array, "images")
    if array.dtype == np.uint8:
        return array
    values = np.clip(array.astype(np.float64, copy=False), 0.0, 1.0) * 255.0
    return np.rint(np.nan_to_num(values, nan=0.0)).astype(np.uint8)


# whole-number floats up to this magnitude convert to int64 exactly (float64 has a 53-bit significand)
_MAX_WHOLE_FLOAT = 2.0**53


def _factor_code_matrix(value: Any, name: str, columns: str) -> np.ndarray:
    """``value`` as a 2-D numeric array ``(N, columns)``, refused with a message naming ``name`` otherwise."""
    array = as_array(value, name)
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{name}: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 2:
        advice = f"; pass {name}.reshape(-1, 1) for a single column" if array.ndim == 1 else ""
        raise InvalidArgumentError(
            f"{name}: expected a 2-D array (N samples, {columns}), got shape {array.shape}{advice}"
        )
    if array.shape[1] < 1:
        raise InvalidArgumentError(f"{name}: expected at least one column, got shape {array.shape}")
    return array


def _check_finite(array: np.ndarray, name: str) -> None:
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        row, column = np.argwhere(~np.isfinite(array))[0]
        raise InvalidArgumentError(
            f"{name}: column {column} holds NaN or infinite values (first in row {row}); every value must be finite"
        )


def check_factors_codes(
    factors: Any,
    codes: Any,
    *,
    discrete_factors: bool = True,
    continuous_option: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The (factors, codes) rule every factor/code metric shares, checked at the metric's boundary.

    The rule, and why:

    * **shapes**: ``factors`` is ``(N, K)`` and ``codes`` ``(N, L)``, both 2-D with at least one column
      and the same number of rows. A 1-D array is refused (with the ``reshape`` to pass): ``(N,)``
      could be one column or one sample, and scikit-learn refuses a 1-D ``X`` for the same reason.
    * **samples**: ``N >= 2``; no metric is defined on one sample (a factor cannot vary).
    * **numbers**: bool, integer or float dtypes; no NaN or infinity in either array (the message names
      the column and the first row that holds one).
    * **discrete factors** (``discrete_factors=True``): integer class labels; whole-number floats are
      accepted. Metrics that discretise continuous factors themselves pass ``discrete_factors=False``.
    * **a constant factor is refused**, naming its column: a factor that takes one value in every row
      gives a code nothing to capture, and no metric is defined for it -- MIG divides by its entropy
      ``H(v) = 0``, SAP's and DCI's classifiers need two classes, IRS would score a factor that is never
      intervened on and UC would attribute latents to it. Drop the column (``codes_of_run`` drops
      the factors that are constant over its draw).
    * **a constant code is accepted**: a collapsed latent is a normal outcome of training, and every
      metric defines its share (IRS drops it, its mutual information and SAP score are 0, its DCI
      importance is 0).

    Parameters
    ----------
    factors : array-like or tensor of shape (N, K)
        Ground-truth factor values, one column per factor.
    codes : array-like or tensor of shape (N, L)
        Learned codes, one column per latent.
    discrete_factors : bool, default True
        Require integer-valued factors (class labels).
    continuous_option : str, optional
        The metric's option for continuous factors (e.g. ``"continuous_factors=True"``), named in the
        message that refuses non-integer factors.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``factors`` as int64 (``discrete_factors=True``) or float64, and ``codes`` as float64; the
        values are those given (a whole-number float converts exactly).

    Raises
    ------
    InvalidArgumentError
        When a rule above is broken; the message starts with the argument (``"factors: "`` or
        ``"codes: "``) and names the offending column where there is one.
    """
    factor_array = _factor_code_matrix(factors, "factors", "K factors")
    code_array = _factor_code_matrix(codes, "codes", "L latents")
    num_rows = factor_array.shape[0]
    if code_array.shape[0] != num_rows:
        raise InvalidArgumentError(f"codes: has {code_array.shape[0]} rows but factors has {num_rows}")
    if num_rows < 2:
        raise InvalidArgumentError(f"factors: needs at least 2 rows (samples), got {num_rows}")
    _check_finite(factor_array, "factors")
    _check_finite(code_array, "codes")
    if discrete_factors and factor_array.dtype.kind == "f":
        whole = (factor_array == np.round(factor_array)) & (np.abs(factor_array) < _MAX_WHOLE_FLOAT)
        if not np.all(whole):
            row, column = np.argwhere(~whole)[0]
            option = f"; pass {continuous_option} for continuous factors" if continuous_option else ""
            raise InvalidArgumentError(
                f"factors: column {column} holds {factor_array[row, column].item()} in row {row}; expected integer "
                f"factor classes (whole-number floats are accepted){option}"
            )
    constant = np.flatnonzero(np.all(factor_array == factor_array[:1], axis=0)).tolist()
    if constant:
        values = [factor_array[0, column].item() for column in constant]
        which = (
            f"column {constant[0]} takes the single value {values[0]}"
            if len(constant) == 1
            else f"columns {constant} each take a single value ({', '.join(map(str, values))})"
        )
        raise InvalidArgumentError(
            f"factors: {which} in all {num_rows} rows; a constant factor has nothing for a code to capture and "
            "the metrics are undefined for it: drop the column"
        )
    if discrete_factors:  # an unsigned class past int64 would wrap around in the cast
        factor_array = exact_factor_classes(factor_array, "factors:")
    else:
        factor_array = factor_array.astype(np.float64, copy=False)
    return factor_array, code_array.astype(np.float64, copy=False)


def check_training_factors(factors_train: np.ndarray) -> None:
    """The rule of metrics that fit a classifier per factor on the first rows (DCI, SAP, explicitness).

    Every factor must take at least two values among the training rows: a classifier needs two
    classes. A factor that varies over all rows (:func:`check_factors_codes`) can still be constant in
    the first ones when the rows are sorted by factor value.

    Parameters
    ----------
    factors_train : numpy.ndarray of shape (n_train, K)
        The checked factors' training rows.

    Raises
    ------
    InvalidArgumentError
        Naming the first factor column that takes a single value in the training rows.
    """
    for column in range(factors_train.shape[1]):
        values = np.unique(factors_train[:, column])
        if values.size < 2:
            raise InvalidArgumentError(
                f"factors: column {column} takes the single value {values[0].item()} in the {len(factors_train)} "
                "training rows (the first rows of the array); a classifier needs two classes: pass rows in random "
                "order so that the training rows hold several classes of every factor"
            )


# --------------------------------------------------------------------------------------------
# factor classes read from a file

#: Fewest rows per class, on average over a factor's classes, of a factor read from a file
#: (:func:`check_factor_classes`).
MIN_ROWS_PER_CLASS = 5


def check_factor_classes(factors: np.ndarray, where: str = "factors") -> None:
    """Refuse a factor whose classes are too small for the metrics' estimates.

    The rule, per factor column ``k`` with ``C_k`` distinct classes over ``N`` rows:

    * ``C_k == N`` (each class a single row) is refused: no metric can compare rows within a class (IRS
      then reads 1.0 and the information metrics NaN, whatever the codes);
    * ``N / C_k < MIN_ROWS_PER_CLASS`` (fewer than 5 rows per class on average) is refused.

    Why 5: every metric estimates, per class, what the codes do within it, from that class's rows. IRS
    compares a class's spread (the 0.99-quantile of ``|z - mean|`` over its rows) with the code's overall
    spread; measured on normal noise, the spread read from ``n`` rows is 0.22 of its true value at
    ``n = 2``, 0.38 at 3, 0.46 at 4 and 0.52 at 5, so below 5 rows a class looks less than half as
    spread as it is and pure-noise codes score IRS 0.7 to 0.8 (measured: 0.68 to 0.81 with 5 to 100
    classes of 2 rows, 0.49 to 0.63 at 5 rows). The mutual information of a 20-bin code histogram with
    the classes is biased upward by about ``19 (C_k - 1) / (2 N)`` nats (Miller-Madow), about ``9.5 / n``
    at ``n`` rows per class. The dSprites grid (at least 737,280 / 40 rows per class) and the CANDLE
    factors (thousands of rows per class) are far above the minimum; bin a factor whose classes are
    more than its rows allow.

    ``repscope disentangle score`` applies it to every npz file it reads; the metric functions do not (a
    case worked by hand may rightly have two rows per class), nor does a run directory's draw (``--n``).

    Parameters
    ----------
    factors : numpy.ndarray
        ``(N, K)`` integer factor classes.
    where : str, default="factors"
        Named in the message (the file).

    Raises
    ------
    InvalidArgumentError
        Naming the factor column, its classes, the rows and the minimum.
    """
    factors = np.asarray(factors)
    rows = len(factors)
    if rows == 0:
        raise InvalidArgumentError(f"{where}: 'factors' has no rows")
    for column in range(factors.shape[1]):
        classes = len(np.unique(factors[:, column]))
        if rows > 1 and classes == rows:
            raise InvalidArgumentError(
                f"{where}: 'factors' column {column} has {classes} classes over {rows} rows, each class a single "
                "row; no metric can compare rows within a class (drop the column or bin it)"
            )
        per_class = rows / classes
        if per_class < MIN_ROWS_PER_CLASS:
            raise InvalidArgumentError(
                f"{where}: 'factors' column {column} has {classes} classes over {rows} rows ({per_class:.2f} rows "
                f"per class); at least {MIN_ROWS_PER_CLASS:g} rows per class on average are needed, fewer make "
                "noise look disentangled (bin the factor or add rows)"
            )


def exact_factor_classes(factors: np.ndarray, where: str = "factors") -> np.ndarray:
    """Integer or whole-number float factor classes as int64, refused where int64 would not hold them exactly.

    A float is exact as an integer only up to ``2**53`` (float64's 53-bit significand): ``1e30`` and
    ``2e30`` are two classes as floats, and one value once cast to int64 (the cast overflows). An unsigned
    class above ``2**63 - 1`` wraps around in the same cast. Both are refused, naming the column.

    Parameters
    ----------
    factors : numpy.ndarray
        Integer or whole-number float classes (the caller has refused fractions, NaN and infinities).
    where : str, default="factors"
        Named in the message (``"x.npz: 'factors'"``).

    Returns
    -------
    numpy.ndarray
        ``factors`` as int64, the same classes.

    Raises
    ------
    InvalidArgumentError
        Naming the column, the row and the value beyond the exact range.
    """
    factors = np.asarray(factors)
    if factors.dtype.kind == "f":
        outside = ~(np.abs(factors) < _MAX_WHOLE_FLOAT)
        limit = "the floats within +-2**53 (the whole numbers a float holds exactly)"
    elif factors.dtype.kind == "u":
        outside = factors > np.iinfo(np.int64).max
        limit = "the largest int64, 2**63 - 1"
    else:
        outside = np.zeros(factors.shape, dtype=bool)
    if np.any(outside):
        row, *column = np.argwhere(outside)[0]
        place = f" column {column[0]}" if column else ""
        raise InvalidArgumentError(
            f"{where}{place} holds {factors[(row, *column)].item()} in row {row}, beyond {limit}: two such classes "
            "could become one; number the classes 0, 1, 2, ..."
        )
    return factors.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------------------
# counts


def check_positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """The one rule of a count (sizes, epochs, batch sizes, budgets) given to a Python function.

    Parameters
    ----------
    value : Any
        The count given: an integer of any integer type (a bool is not one).
    name : str
        The argument or key that gave it, for the message.
    allow_none : bool, default=False
        Whether ``None`` (meaning "all" or "the default" where the caller says so) passes through.

    Returns
    -------
    int or None
        ``value`` as a Python int (``None`` when given and allowed).

    Raises
    ------
    InvalidArgumentError
        ``<name>: expected a positive integer, got <value>`` for anything else, 0 and 3.0 included.
        Config schemas use ``Field(ge=1)`` for the same rule, so a config file is refused naming its key.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidArgumentError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# seeds

# the widest range every library a seed reaches accepts: numpy's legacy seeding, scikit-learn's
# random_state and Lightning's seed_everything take [0, 2**32 - 1] (seed_everything silently replaces
# a seed outside it by 0), numpy's SeedSequence only non-negative integers
SEED_MAX = 2**32 - 1


def seed_message(name: str, value: Any) -> str:
    """The one refusal of a seed: ``seed: expected an integer in [0, 4294967295], got -1``."""
    return f"{name}: expected an integer in [0, {SEED_MAX}], got {value!r}"


def check_seed(value: Any, name: str = "seed") -> int:
    """The seed rule every ``--seed`` option, ``seed`` config key and ``--set seed=...`` shares.

    Parameters
    ----------
    value : Any
        The seed given.
    name : str, default="seed"
        The option or key that gave it, for the message (``"--seed"``, ``"data.seed"``).

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    InvalidArgumentError
        When ``value`` is not an integer (a bool is not one) in ``[0, SEED_MAX]`` (``2**32 - 1``), the
        range the libraries behind repscope accept without changing the seed silently.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(seed_message(name, value))
    if not 0 <= int(value) <= SEED_MAX:
        raise InvalidArgumentError(seed_message(name, int(value)))
    return int(value)


def _seed_field(value: Any) -> int:
    # pydantic has turned "7" or 7.0 into an int already; a bool is refused before that (_not_bool)
    if not 0 <= value <= SEED_MAX:
        raise PydanticCustomError("seed_range", "expected an integer in [0, {top}]", {"top": SEED_MAX})
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        raise PydanticCustomError("seed_range", "expected an integer in [0, {top}]", {"top": SEED_MAX})
    return value


#: The type of every ``seed`` key of a config schema: :func:`check_seed`'s rule inside pydantic, so that a
#: config file, ``--set seed=...`` and a Python caller are refused alike, naming the key.
Seed = Annotated[int, BeforeValidator(_not_bool), AfterValidator(_seed_field)]


# --------------------------------------------------------------------------------------------
# array headers

MEMINFO = Path("/proc/meminfo")
CGROUP_DIR = Path("/sys/fs/cgroup")


def memory_budget() -> int | None:
    """Bytes of memory an array read from a file may take: what the machine can give now.

    The smallest of Linux's ``MemAvailable`` (``/proc/meminfo``; elsewhere ``os.sysconf``'s available
    pages times the page size) and, inside a container limited by cgroup v2, ``memory.max`` less
    ``memory.current``.

    Returns
    -------
    int or None
        The budget in bytes; None when the system says nothing (then no array is refused for its size).
    """
    # MemAvailable counts reclaimable caches that the available pages of sysconf do not: prefer it
    available = _meminfo_available() or _sysconf_available()
    room = _cgroup_room()
    found = [value for value in (available, room) if value is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _sysconf_available() -> int | None:
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room() -> int | None:
    try:
        limit = (CGROUP_DIR / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int((CGROUP_DIR / "memory.current").read_text()), 0)
    except (OSError, ValueError):
        return None


def check_memory(needed: int, what: str) -> None:
    """Refuse, before any work, a task that needs more memory than the machine has now.

    Parameters
    ----------
    needed : int
        Bytes the task holds at once (a lower bound: what its arrays alone take).
    what : str
        The task and the option that sized it, for the message (``"--n: 10 pairs"``).

    Raises
    ------
    InvalidArgumentError
        ``WHAT needs at least N bytes (1.2 TB) in memory; M bytes (15.6 GB) are available``, when
        ``needed`` exceeds :func:`memory_budget` (nothing is refused when the budget is unknown).
    """
    budget = memory_budget()
    if budget is not None and needed > budget:
        raise InvalidArgumentError(
            f"{what} needs at least {bytes_text(needed)} in memory; {bytes_text(budget)} are available"
        )


def check_array_header(
    where: str, shape: Sequence[int], dtype: np.dtype, stored_bytes: int | None, in_memory: bool = True
) -> int:
    """The rule for an array declared by a file's header, applied before anything is allocated.

    Parameters
    ----------
    where : str
        The file, and the member of an archive (``"x.npz: member 'codes'"``), for the message.
    shape : sequence of int
        The shape the header declares.
    dtype : numpy.dtype
        The dtype the header declares.
    stored_bytes : int or None
        Bytes of array data the file holds after the header (uncompressed: a zip member's declared size
        less its header); None when unknown.
    in_memory : bool, default=True
        Whether the array will be read into memory (False for a memory map: only the file size counts).

    Returns
    -------
    int
        The bytes the header declares (``prod(shape) * itemsize``; 0 for Python objects, which only
        unpickling could read and ``allow_pickle=False`` refuses unread).

    Raises
    ------
    DataFormatError
        Naming ``where``, the shape, the dtype and the bytes: the header declares more bytes than the file
        holds ("truncated or corrupt"), or more than :func:`memory_budget` for an array read into memory.
    """
    if dtype.hasobject:
        return 0  # pickled objects: numpy.load(allow_pickle=False) refuses them before allocating anything
    nbytes = math.prod(int(size) for size in shape) * int(dtype.itemsize)
    declared = f"its header declares a {dtype} array of shape {tuple(int(s) for s in shape)}: {bytes_text(nbytes)}"
    if stored_bytes is not None and nbytes > stored_bytes:
        raise DataFormatError(f"{where}: truncated or corrupt: {declared}, but it holds {stored_bytes:,} bytes of data")
    budget = memory_budget() if in_memory else None
    if budget is not None and nbytes > budget:
        raise DataFormatError(
            f"{where}: {declared}, more than the {bytes_text(budget)} of memory available; refused before reading"
        )
    return nbytes
