"""Morpho-MNIST: morphometrics, perturbations and dataset building for MNIST-format digits."""

from repscope.data.morpho.morphometrics import COLUMNS, MORPHOMETRICS, measure, measure_batch, measure_digit
from repscope.data.morpho.pipeline import (
    DigitMorphology,
    MorphologyBatch,
    PipelineConfig,
    analyse_batch,
    analyse_reference,
)

__all__ = [
    "COLUMNS",
    "MORPHOMETRICS",
    "DigitMorphology",
    "MorphologyBatch",
    "PipelineConfig",
    "analyse_batch",
    "analyse_reference",
    "measure",
    "measure_batch",
    "measure_digit",
]
