"""Factor values an image cannot tell apart, and the accuracy a factor classifier can be held to.

A classifier of a factor can only be as right as the images let it be. In dSprites a square turned by
90 degrees, and an ellipse turned by 180, is the same image (and orientation 0 is orientation 2 pi for
every shape); in CANDLE a sphere, a cylinder and a cone look the same at every rotation about the
vertical axis, and a cube turned by 90 degrees is the cube at 0. Counted against the raw labels, the
best possible orientation classifier on dSprites is right for well under 98% of the images, so a
judge's raw accuracy mixes what it failed to see with what nobody could see.

:func:`identifiable_hits` scores predictions by what the image shows: a prediction is a hit when it names
a value whose image is the true value's image under the object's symmetry, and examples whose factor
the image does not show at all are left out of the count (``counted`` False). Its rules, per
``(dataset, factor)`` in :data:`RULES`:

* ``dsprites`` ``orientation`` (:mod:`repscope.data.dsprites`): angles ``theta = c * 2 pi / 39``
  for classes ``c = 0..39``; symmetry period ``P`` = 90 degrees for the square, 180 for the ellipse,
  360 for the heart; a hit when the circular distance of the two angles modulo ``P`` is at most half
  a class step (``pi / 39``). The lattice of 40 angles is not closed under 90 or 180 degrees, so a turned
  square's image lies between two classes; the half-step tolerance accepts the nearer one.
* ``candle`` ``rotation`` (:mod:`repscope.data.candle.dataset`): rotations 0, 15, 30, 45, 60, 90 degrees;
  the cube has period 90 (0 and 90 are one image), the torus (standing on its rim) 180, sphere, cylinder
  and cone show no rotation (not counted); a hit when the two rotations differ by a multiple of the
  period.
* any other factor: a hit when the classes are equal, every example counted.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from repscope.errors import InvalidArgumentError

# dSprites: factor columns (color, shape, scale, orientation, posX, posY), 40 angles over [0, 2 pi]
_DSPRITES_SHAPE, _DSPRITES_ORIENTATION, _DSPRITES_STEPS = 1, 3, 39
_DSPRITES_PERIOD_DEG = np.array([90.0, 180.0, 360.0])  # square, ellipse, heart
# CANDLE: factor columns (object, color, size, rotation, scene, light)
_CANDLE_OBJECT, _CANDLE_ROTATION = 0, 3
_CANDLE_ROTATIONS_DEG = np.array([0, 15, 30, 45, 60, 90])
_CANDLE_PERIOD_DEG = np.array([90, 0, 0, 0, 180])  # cube, sphere, cylinder, cone, torus; 0: no rotation shows


def _circular_distance(a: np.ndarray, b: np.ndarray, period: np.ndarray) -> np.ndarray:
    difference = np.mod(a - b, period)
    return np.minimum(difference, period - difference)


def _dsprites_orientation(factors: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    step = 360.0 / _DSPRITES_STEPS
    period = _DSPRITES_PERIOD_DEG[factors[:, _DSPRITES_SHAPE]]
    distance = _circular_distance(factors[:, _DSPRITES_ORIENTATION] * step, predicted * step, period)
    return distance <= step / 2 + 1e-9, np.ones(len(factors), dtype=bool)


def _candle_rotation(factors: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    period = _CANDLE_PERIOD_DEG[factors[:, _CANDLE_OBJECT]]
    counted = period > 0
    truth = _CANDLE_ROTATIONS_DEG[factors[:, _CANDLE_ROTATION]]
    guess = _CANDLE_ROTATIONS_DEG[predicted]
    hits = counted & (np.mod(truth - guess, np.where(counted, period, 1)) == 0)
    return hits, counted


RULES: dict[tuple[str, str], tuple[int, Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]], str]] = {
    ("dsprites", "orientation"): (
        _DSPRITES_ORIENTATION,
        _dsprites_orientation,
        "up to the shape's symmetry (square 90, ellipse 180 degrees), within half a class step",
    ),
    ("candle", "rotation"): (
        _CANDLE_ROTATION,
        _candle_rotation,
        "cube and torus only (sphere, cylinder and cone show no rotation), up to their symmetry",
    ),
}
# the classes a rule indexes by (the other columns are not read by the rules)
CLASS_COUNTS: dict[str, dict[str, int]] = {
    "dsprites": {"shape": 3, "orientation": _DSPRITES_STEPS + 1},
    "candle": {"object": len(_CANDLE_PERIOD_DEG), "rotation": len(_CANDLE_ROTATIONS_DEG)},
}
FACTOR_COLUMNS: dict[str, tuple[str, ...]] = {
    "dsprites": ("color", "shape", "scale", "orientation", "posX", "posY"),
    "candle": ("object", "color", "size", "rotation", "scene", "light"),
}


def identifiable_hits(
    dataset: str, factor: str, factors: np.ndarray, predicted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which predictions of ``factor`` name a value whose image is the true one, and which examples count.

    Parameters
    ----------
    dataset : str
        The registered dataset (``dsprites``, ``candle``; any other has no symmetries).
    factor : str
        The factor the predictions are of.
    factors : numpy.ndarray
        int ``(n, K)`` true classes of every factor, in the dataset's ``factors`` field order.
    predicted : numpy.ndarray
        int ``(n,)`` predicted classes of ``factor``.

    Returns
    -------
    hits : numpy.ndarray
        bool ``(n,)``: the prediction is the true class or one its image cannot be told from.
    counted : numpy.ndarray
        bool ``(n,)``: the image shows the factor at all (False for a sphere's rotation).

    Raises
    ------
    InvalidArgumentError
        When the shapes do not fit, or a class is out of range.
    """
    factors = np.asarray(factors)
    predicted = np.asarray(predicted)
    if factors.ndim != 2 or predicted.shape != (len(factors),):
        raise InvalidArgumentError(
            f"identifiable_hits: expected factors (n, K) and predictions (n,), got {factors.shape} and "
            f"{predicted.shape}"
        )
    factors, predicted = factors.astype(np.int64), predicted.astype(np.int64)
    columns = FACTOR_COLUMNS.get(dataset)
    if columns is None or factor not in columns:
        raise InvalidArgumentError(f"identifiable_hits: no factor {factor!r} in dataset {dataset!r}")
    if factors.shape[1] != len(columns):
        raise InvalidArgumentError(
            f"identifiable_hits: {dataset} factors have {len(columns)} columns ({', '.join(columns)}), got "
            f"{factors.shape[1]}"
        )
    if (dataset, factor) in RULES:
        _, rule, _ = RULES[(dataset, factor)]
        for name, values in ((factor, predicted), *((column, factors[:, k]) for k, column in enumerate(columns))):
            size = CLASS_COUNTS[dataset].get(name)
            if size is not None and values.size and (values.min() < 0 or values.max() >= size):
                raise InvalidArgumentError(f"identifiable_hits: {dataset} {name} classes must be in 0..{size - 1}")
        return rule(factors, predicted)
    return predicted == factors[:, columns.index(factor)], np.ones(len(factors), dtype=bool)


def has_symmetry_rule(dataset: str, factor: str) -> bool:
    """Whether ``factor`` of ``dataset`` has values that render alike (a rule of :data:`RULES`).

    Parameters
    ----------
    dataset, factor : str
        The registered dataset and one of its factors.

    Returns
    -------
    bool
        True when :func:`identifiable_hits` scores it by its rule rather than by equal classes.
    """
    return (dataset, factor) in RULES


def rule_description(dataset: str, factor: str) -> str:
    """How :func:`identifiable_hits` scores ``factor`` of ``dataset``, in words.

    Parameters
    ----------
    dataset, factor : str
        The registered dataset and one of its factors.

    Returns
    -------
    str
        The rule's description, or ``"equal classes"``.
    """
    return RULES[(dataset, factor)][2] if (dataset, factor) in RULES else "equal classes"


__all__ = ["RULES", "identifiable_hits", "has_symmetry_rule", "rule_description"]
