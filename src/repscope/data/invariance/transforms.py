"""Families of image transformations for invariance testing (ML4ML, Sec. III): t_0 .. t_n over a variable V.

A family samples V over ``[-a, a]`` in ``2k + 1`` steps with the identity in the centre (``t_k``). The
paper's workflows use 31 transformations each:

==========  ===============================  ================================================
rotation    -15 .. 15 degrees, step 1        about the image centre, bilinear, black fill
brightness  -30% .. +30%, step 2%            pixel values times ``1 + V``, clipped to [0, 1]
scale       x0.70 .. x1.30, step 2%          zoom about the image centre, bilinear, black fill
==========  ===============================  ================================================

Images are float tensors ``(B, C, H, W)`` in ``[0, 1]``; a transformation acts on the whole batch at
once (one affine grid and one ``grid_sample``), on the batch's device, with no randomness.
:func:`custom_family` wraps any ``callable(images, value) -> images``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from repscope.errors import InvalidArgumentError, shown
from repscope.validation import check_memory

Apply = Callable[[torch.Tensor, float], torch.Tensor]


@dataclass(frozen=True)
class TransformFamily:
    """Transformations ``t_0 .. t_n`` of a variable ``V`` (``values``), the identity at ``values[n // 2]``.

    Parameters
    ----------
    name : str
        ``rotation``, ``brightness``, ``scale`` or a user's name.
    values : tuple of float
        ``V`` of each transformation, increasing, an odd count.
    unit : str
        How ``values`` read (``"degrees"``, ``"fraction"``, ``"factor"``).
    apply : callable
        ``apply(images, value) -> images`` on a batch ``(B, C, H, W)``.
    """

    name: str
    values: tuple[float, ...]
    unit: str
    apply: Apply

    def __len__(self) -> int:
        return len(self.values)

    def transform(self, images: torch.Tensor, index: int) -> torch.Tensor:
        """Transformation ``t_index`` of a batch.

        Parameters
        ----------
        images : torch.Tensor
            ``(B, C, H, W)`` floats in ``[0, 1]``.
        index : int
            ``0 <= index < len(self)``.

        Returns
        -------
        torch.Tensor
            The transformed batch, same shape and device.
        """
        return self.apply(images, self.values[index])


def _affine(images: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    grid = F.affine_grid(theta.expand(images.shape[0], 2, 3), list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def rotate(images: torch.Tensor, degrees: float) -> torch.Tensor:
    """Rotate a batch by ``degrees`` (counter-clockwise as displayed) about the image centre.

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)``.
    degrees : float
        The angle.

    Returns
    -------
    torch.Tensor
        The rotated batch; pixels from outside the image are 0.
    """
    return images if degrees == 0 else rotate_each(images, degrees)


def zoom(images: torch.Tensor, factor: float) -> torch.Tensor:
    """Scale a batch's content by ``factor`` about the image centre (``> 1`` enlarges).

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)``.
    factor : float
        Positive scale.

    Returns
    -------
    torch.Tensor
        The scaled batch; pixels from outside the image are 0.
    """
    return images if factor == 1 else zoom_each(images, factor)


def brighten(images: torch.Tensor, change: float) -> torch.Tensor:
    """Multiply a batch's pixel values by ``1 + change`` and clip them to ``[0, 1]``.

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)`` in ``[0, 1]``.
    change : float
        Relative change, e.g. ``-0.3`` for -30%.

    Returns
    -------
    torch.Tensor
        The changed batch.
    """
    return images if change == 0 else brighten_each(images, change)


def _per_example(values: torch.Tensor | float, images: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(values, dtype=images.dtype, device=images.device).reshape(-1).expand(images.shape[0])


def rotate_each(images: torch.Tensor, degrees: torch.Tensor) -> torch.Tensor:
    """Rotate each image by its own angle (as :func:`rotate`), in one affine grid.

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)``.
    degrees : torch.Tensor
        ``(B,)`` angles (or one for all).

    Returns
    -------
    torch.Tensor
        The rotated batch.
    """
    angle = torch.deg2rad(_per_example(degrees, images))
    cos, sin = torch.cos(angle), torch.sin(angle)
    height, width = images.shape[-2:]
    zero = torch.zeros_like(cos)
    theta = torch.stack(
        [torch.stack([cos, -sin * height / width, zero], 1), torch.stack([sin * width / height, cos, zero], 1)], 1
    )
    return _affine(images, theta)


def zoom_each(images: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """Scale each image by its own factor (as :func:`zoom`), in one affine grid.

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)``.
    factors : torch.Tensor
        ``(B,)`` positive factors (or one for all).

    Returns
    -------
    torch.Tensor
        The scaled batch.
    """
    inverse = 1.0 / _per_example(factors, images)
    zero = torch.zeros_like(inverse)
    theta = torch.stack([torch.stack([inverse, zero, zero], 1), torch.stack([zero, inverse, zero], 1)], 1)
    return _affine(images, theta)


def brighten_each(images: torch.Tensor, changes: torch.Tensor) -> torch.Tensor:
    """Multiply each image by ``1 + change`` of its own and clip to [0, 1] (as :func:`brighten`).

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)`` in [0, 1].
    changes : torch.Tensor
        ``(B,)`` relative changes (or one for all).

    Returns
    -------
    torch.Tensor
        The changed batch.
    """
    return (images * (1.0 + _per_example(changes, images)).reshape(-1, 1, 1, 1)).clamp(0.0, 1.0)


def shift_each(images: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Move each image by its own whole number of pixels, right and down, repeating the edge pixels into
    what the move leaves empty (a photographed scene continues past its frame; black bands would be a
    feature of their own).

    Parameters
    ----------
    images : torch.Tensor
        ``(B, C, H, W)``.
    offsets : torch.Tensor
        ``(B, 2)`` pixels ``(right, down)``, rounded to the nearest whole pixel, a half to the even one
        (``torch.round``: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2, so that ``-v`` moves as far as ``v``; a uniform
        draw over ``[-a, a]`` then reaches ``+-a`` half as often as the pixels between); negative values
        move left and up.

    Returns
    -------
    torch.Tensor
        The moved batch: ``out[b, :, y, x] = images[b, :, clip(y - down), clip(x - right)]``.
    """
    height, width = images.shape[-2:]
    moves = torch.round(offsets.to(images.device, torch.float32)).long()
    rows = (torch.arange(height, device=images.device)[None, :] - moves[:, 1:2]).clamp(0, height - 1)
    columns = (torch.arange(width, device=images.device)[None, :] - moves[:, 0:1]).clamp(0, width - 1)
    index = torch.arange(len(images), device=images.device)[:, None, None]
    # (B, H, W, C) gathered by whole pixels, so a moved image holds exactly the original values
    moved = images.permute(0, 2, 3, 1)[index, rows[:, :, None], columns[:, None, :]]
    return moved.permute(0, 3, 1, 2)


# per-example versions, for augmentation during training: family -> (transform, identity value, values
# drawn per image); shift draws two, right and down, each from the same ranges
PER_EXAMPLE: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], float, int]] = {
    "rotation": (rotate_each, 0.0, 1),
    "brightness": (brighten_each, 0.0, 1),
    "scale": (zoom_each, 1.0, 1),
    "shift": (shift_each, 0.0, 2),
}


def check_ranges(family: str, ranges: Any) -> list[tuple[float, float]]:
    """Validate augmentation intervals: ``[[low, high], ...]`` of V, each ``low <= high``.

    Parameters
    ----------
    family : str
        ``rotation``, ``brightness`` or ``scale``.
    ranges : list of pairs
        Intervals V is drawn from (several make a range with gaps).

    Returns
    -------
    list of (float, float)

    Raises
    ------
    InvalidArgumentError
        Naming ``augment`` or ``augment_ranges``.
    """
    if family not in PER_EXAMPLE:
        raise InvalidArgumentError(f"augment: expected none or one of {', '.join(PER_EXAMPLE)}, got {family!r}")
    try:
        pairs = [(float(low), float(high)) for low, high in ranges]
    except (TypeError, ValueError):
        pairs = []
    if not pairs or any(not (np.isfinite(low) and np.isfinite(high) and low <= high) for low, high in pairs):
        raise InvalidArgumentError(f"augment_ranges: expected [[low, high], ...] with low <= high, got {ranges!r}")
    if family == "scale" and min(low for low, _ in pairs) <= 0:
        raise InvalidArgumentError(f"augment_ranges: scale factors must be positive, got {ranges!r}")
    return pairs


def draw_values(
    ranges: list[tuple[float, float]], count: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``count`` values uniform over the union of the intervals (an interval's share is its length).

    Parameters
    ----------
    ranges : list of (float, float)
        :func:`check_ranges`.
    count : int
        Values to draw.
    generator : torch.Generator, optional
        Source of randomness (default torch's global one, which the training seed sets).

    Returns
    -------
    torch.Tensor
        ``(count,)`` float32.
    """
    lows = torch.tensor([low for low, _ in ranges])
    widths = torch.tensor([high - low for low, high in ranges])
    weights = widths if float(widths.sum()) > 0 else torch.ones(len(ranges))
    chosen = torch.multinomial(weights, count, replacement=True, generator=generator)
    return lows[chosen] + widths[chosen] * torch.rand(count, generator=generator)


def symmetric_values(half_range: float, steps: int, centre: float = 0.0) -> tuple[float, ...]:
    """``2k + 1`` evenly spaced values over ``[centre - half_range, centre + half_range]``.

    Parameters
    ----------
    half_range : float
        ``a`` (positive).
    steps : int
        An odd count of at least 3.
    centre : float, default 0
        The identity's value (1 for a scale factor).

    Returns
    -------
    tuple of float
        Increasing; the middle one equals ``centre`` exactly.

    Raises
    ------
    InvalidArgumentError
        When ``steps`` is even or below 3 or its ``steps x steps`` variance matrix exceeds the memory, or
        ``half_range`` is not positive.
    """
    if isinstance(steps, bool) or int(steps) != steps or steps < 3 or steps % 2 == 0:
        raise InvalidArgumentError(f"steps: expected an odd number of at least 3 (2k + 1), got {steps!r}")
    # each model position's variance matrix is steps x steps float64: a count no memory holds is refused
    # before a billion values are listed (--steps 1000000001 ran on without a word)
    check_memory(8 * int(steps) ** 2, f"steps: {int(steps):,} transformations (a variance matrix of {int(steps):,}^2)")
    if not half_range > 0:
        raise InvalidArgumentError(f"range: expected a positive half-range, got {half_range!r}")
    k = int(steps) // 2
    # integer multiples of the step, rounded, so that the identity is exact and the labels are clean
    return tuple(round(centre + half_range * i / k, 10) for i in range(-k, k + 1))


def rotation_family(degrees: float = 15.0, steps: int = 31) -> TransformFamily:
    """Rotations over ``[-degrees, degrees]`` (the paper's -15..15, step 1).

    Parameters
    ----------
    degrees : float, default 15
        Half-range.
    steps : int, default 31
        Transformations (odd).

    Returns
    -------
    TransformFamily
    """
    return TransformFamily("rotation", symmetric_values(degrees, steps), "degrees", rotate)


def brightness_family(change: float = 0.30, steps: int = 31) -> TransformFamily:
    """Brightness changes over ``[-change, change]`` (the paper's -30%..+30%, step 2%).

    Parameters
    ----------
    change : float, default 0.30
        Half-range, as a fraction.
    steps : int, default 31
        Transformations (odd).

    Returns
    -------
    TransformFamily
    """
    return TransformFamily("brightness", symmetric_values(change, steps), "fraction", brighten)


def scale_family(change: float = 0.30, steps: int = 31) -> TransformFamily:
    """Scalings by ``1 - change .. 1 + change`` (the paper's x0.70..x1.30, step 2%).

    Parameters
    ----------
    change : float, default 0.30
        Half-range of the factor.
    steps : int, default 31
        Transformations (odd).

    Returns
    -------
    TransformFamily
    """
    if not 0 < change < 1:
        raise InvalidArgumentError(f"range: a scale half-range must lie in (0, 1), got {change!r}")
    return TransformFamily("scale", symmetric_values(change, steps, centre=1.0), "factor", zoom)


FAMILIES: dict[str, Callable[..., TransformFamily]] = {
    "rotation": rotation_family,
    "brightness": brightness_family,
    "scale": scale_family,
}


def transform_family(name: str, half_range: float | None = None, steps: int = 31) -> TransformFamily:
    """A registered family by name, with the paper's range unless ``half_range`` is given.

    Parameters
    ----------
    name : {"rotation", "brightness", "scale"}
        The family.
    half_range : float, optional
        Degrees for rotation, a fraction for brightness and scale.
    steps : int, default 31
        Transformations (odd).

    Returns
    -------
    TransformFamily

    Raises
    ------
    InvalidArgumentError
        Naming ``--transform`` for an unknown family.
    """
    if name not in FAMILIES:
        raise InvalidArgumentError(f"--transform: expected one of {', '.join(FAMILIES)}, got {shown(name)}")
    builder = FAMILIES[name]
    return builder(steps=steps) if half_range is None else builder(half_range, steps)


def custom_family(name: str, values: list[float], apply: Apply, unit: str = "") -> TransformFamily:
    """A user's family: ``apply(images, value)`` at each of ``values`` (odd count, identity in the middle).

    Parameters
    ----------
    name : str
        Its name in tables and figures.
    values : list of float
        ``V``, increasing, an odd count of at least 3.
    apply : callable
        ``apply(images, value) -> images`` on ``(B, C, H, W)`` batches, deterministic.
    unit : str, optional
        How the values read.

    Returns
    -------
    TransformFamily

    Raises
    ------
    InvalidArgumentError
        When the values are not increasing, not an odd count of at least 3, or ``apply`` is not callable.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < 3 or array.size % 2 == 0 or not np.all(np.diff(array) > 0):
        raise InvalidArgumentError(f"values: expected an increasing odd count (2k + 1) of at least 3, got {values!r}")
    if not callable(apply):
        raise InvalidArgumentError(f"apply: expected a callable (images, value) -> images, got {apply!r}")
    return TransformFamily(name, tuple(float(v) for v in array), unit, apply)


__all__ = [
    "FAMILIES",
    "PER_EXAMPLE",
    "brighten_each",
    "check_ranges",
    "shift_each",
    "draw_values",
    "rotate_each",
    "zoom_each",
    "TransformFamily",
    "brighten",
    "brightness_family",
    "custom_family",
    "rotate",
    "rotation_family",
    "scale_family",
    "symmetric_values",
    "transform_family",
    "zoom",
]
