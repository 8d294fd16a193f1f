"""Moved to :mod:`repscope.data.morpho.training_sets` (the digit datasets are Morpho-MNIST's); this
name stays importable for scripts written against it."""

from repscope.data.morpho.training_sets import *  # noqa: F401,F403
from repscope.data.morpho.training_sets import TrainingSet, load_digits, load_morpho_mnist  # noqa: F401
