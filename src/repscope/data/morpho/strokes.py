"""What both measurement procedures share: the morphometric columns, the stroke measures and the table.

The default pipeline (:mod:`repscope.data.morpho.morphometrics`) and the procedure of the released
files (:mod:`repscope.data.morpho.published`) measure area, stroke length and thickness the same way
from a binary image, its distance transform and its skeleton, and return the same table. Both import
this module; it imports neither, so the imports between them go one way (``morphometrics`` dispatches
``compat="published"`` to ``published``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

MORPHOMETRICS: tuple[str, ...] = ("area", "length", "thickness", "slant", "width", "height")
COLUMNS: tuple[str, ...] = ("index", *MORPHOMETRICS, "valid")

_SQRT2 = float(np.sqrt(2.0))


def stroke_measures(
    binary: np.ndarray,
    distance: np.ndarray,
    medial: np.ndarray,
    labels: np.ndarray,
    n_digits: int,
    scale: int,
) -> dict[str, np.ndarray]:
    """Area, length and thickness of ``n_digits`` digits laid out in one canvas.

    ``labels`` gives each pixel's digit index (-1: none); digits must not touch (a background
    gap separates them) so that skeleton neighbours always belong to the same digit.

    With the hi-res scale ``f`` (Castro et al., section 2.2-2.3)::

        area      = #{foreground pixels} / f^2
        length    = (#{side-sharing skeleton pairs} + sqrt(2) #{corner-sharing skeleton pairs}) / f
        thickness = 2 * mean_{skeleton pixels} distance / f

    Parameters
    ----------
    binary : numpy.ndarray
        bool ``(H, W)`` hi-res foreground canvas.
    distance : numpy.ndarray
        float ``(H, W)`` Euclidean distance to the background, in hi-res pixels.
    medial : numpy.ndarray
        bool ``(H, W)`` medial-axis skeleton.
    labels : numpy.ndarray
        int ``(H, W)`` digit index 0 .. n_digits-1 of each pixel, -1 for none.
    n_digits : int
        Number of digits.
    scale : int
        Upscaling factor f of the canvas (hi-res pixels per image pixel).

    Returns
    -------
    dict of str to numpy.ndarray
        float64 ``(n_digits,)`` arrays ``area`` (pixels^2 of the original image), ``length`` and
        ``thickness`` (pixels of the original image; thickness NaN without skeleton).

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation
    learning, sections 2.2-2.3.
    """
    labels_fg = labels[binary]
    area = np.bincount(labels_fg[labels_fg >= 0], minlength=n_digits).astype(np.float64)

    # skeleton neighbour counts: straight (shared side) and diagonal (shared corner)
    skel = np.pad(medial, 1)
    centre = skel[1:-1, 1:-1]
    straight = skel[:-2, 1:-1].astype(np.int8) + skel[2:, 1:-1] + skel[1:-1, :-2] + skel[1:-1, 2:]
    diagonal = skel[:-2, :-2].astype(np.int8) + skel[:-2, 2:] + skel[2:, :-2] + skel[2:, 2:]
    skel_labels = labels[centre]
    on_digit = skel_labels >= 0
    skel_labels = skel_labels[on_digit]
    pair_length = (straight[centre] + _SQRT2 * diagonal[centre])[on_digit]
    # every pair is seen from both of its pixels
    length = 0.5 * np.bincount(skel_labels, weights=pair_length, minlength=n_digits)
    skel_count = np.bincount(skel_labels, minlength=n_digits)
    dist_sum = np.bincount(skel_labels, weights=distance[centre][on_digit], minlength=n_digits)
    with np.errstate(invalid="ignore", divide="ignore"):
        thickness = np.where(skel_count > 0, 2.0 * dist_sum / np.maximum(skel_count, 1), np.nan)
    return {
        "area": area / scale**2,
        "length": length / scale,
        "thickness": thickness / scale,
    }


def morphometric_table(
    index: np.ndarray, stroke: dict[str, np.ndarray], grey: dict[str, np.ndarray], valid: np.ndarray
) -> pd.DataFrame:
    """The table of :func:`repscope.data.morpho.measure` from a batch's stroke and grey-level measures.

    Parameters
    ----------
    index : numpy.ndarray
        int ``(N,)`` position of each digit.
    stroke : dict of str to numpy.ndarray
        ``area``, ``length``, ``thickness`` ``(N,)`` (:func:`stroke_measures`).
    grey : dict of str to numpy.ndarray
        ``slant``, ``width``, ``height`` ``(N,)``.
    valid : numpy.ndarray
        bool ``(N,)``: the digit has foreground.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`; the morphometrics of a digit that is not valid are NaN.
    """
    frame = pd.DataFrame({"index": index, **stroke, **grey})
    frame.loc[~valid, list(MORPHOMETRICS)] = np.nan
    frame["valid"] = valid
    return frame[list(COLUMNS)]


__all__: Sequence[str] = ["COLUMNS", "MORPHOMETRICS", "morphometric_table", "stroke_measures"]
