"""The value range a classifier reads its images in.

The framework serves images as floats in [0, 1]. The ML4ML authors' released code trains and tests its
networks on images normalised to [-1, 1] (Zukang-Liao/ML4ML-invariance-testing, ``train.py``:
``get_transform``, ``transforms.Normalize((0.5, ...), (0.5, ...))``; ``save_invariance_results.py``:
``robostacc``, ``TF.normalize(imgs, [0.5], [0.5])`` after each transformation, so a rotation's black fill
becomes -1). A network built with ``input_range="symmetric"`` maps its input ``x`` to ``2 x - 1`` first,
so every caller (training, the invariance probes, the attacks) feeds it [0, 1] images as usual.
"""

from __future__ import annotations

import torch

from repscope.errors import InvalidArgumentError

INPUT_RANGES = ("unit", "symmetric")


def check_input_range(input_range: str) -> str:
    """``input_range`` checked: ``unit`` ([0, 1], as served) or ``symmetric`` ([-1, 1]).

    Parameters
    ----------
    input_range : str
        The value to check.

    Returns
    -------
    str
        ``input_range``.

    Raises
    ------
    InvalidArgumentError
        Naming ``input_range`` and the choices.
    """
    if input_range not in INPUT_RANGES:
        raise InvalidArgumentError(f"input_range: expected unit or symmetric, got {input_range!r}")
    return input_range


def scaled_inputs(images: torch.Tensor, input_range: str) -> torch.Tensor:
    """``images`` in [0, 1] as a network with ``input_range`` reads them.

    Parameters
    ----------
    images : torch.Tensor
        Float images in [0, 1].
    input_range : {"unit", "symmetric"}
        ``unit``: unchanged; ``symmetric``: ``(images - 0.5) / 0.5``, the reference's normalisation.

    Returns
    -------
    torch.Tensor
        The images the network's first layer reads.
    """
    return images if input_range == "unit" else images * 2.0 - 1.0


__all__ = ["INPUT_RANGES", "check_input_range", "scaled_inputs"]
