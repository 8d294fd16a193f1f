"""Morpho-MNIST on your digit images: morphometrics, perturbations and interventions.

The public entry points of :mod:`repscope.data.morpho` (Castro et al., "Morpho-MNIST: quantitative
assessment and diagnostics for representation learning", JMLR 2019)::

    import repscope.morpho

    table = repscope.morpho.measure(digits)               # area, length, thickness, slant, width, height
    swollen, params = repscope.morpho.perturb(digits, "swel", rng=0)
    upright, info = repscope.morpho.set_slant(digits[0], 0.0)

- :func:`measure`: the morphometrics of ``(N, H, W)`` digits (uint8 0-255 or float in [0, 1]) as a
  DataFrame with the columns :data:`COLUMNS`, in pixels of the input images;
- :func:`perturb`: thinning, thickening, swelling or fractures (:data:`PERTURBATIONS`), seeded, with the
  ground truth of what was done;
- :func:`set_thickness`, :func:`set_slant`, :func:`set_width`: interventions that set one morphometric of
  a digit to a target and report what was achieved.
"""

from __future__ import annotations

from repscope.data.morpho.interventions import set_slant, set_thickness, set_width
from repscope.data.morpho.morphometrics import COLUMNS, MORPHOMETRICS, measure
from repscope.data.morpho.perturb import (
    PERTURBATIONS,
    Fracturing,
    Perturbation,
    Swelling,
    Thickening,
    Thinning,
    perturb,
)
from repscope.data.morpho.pipeline import PipelineConfig

__all__ = [
    "COLUMNS",
    "MORPHOMETRICS",
    "PERTURBATIONS",
    "Fracturing",
    "Perturbation",
    "PipelineConfig",
    "Swelling",
    "Thickening",
    "Thinning",
    "measure",
    "perturb",
    "set_slant",
    "set_thickness",
    "set_width",
]
