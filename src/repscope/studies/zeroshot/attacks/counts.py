"""Table 1 of the Raw Zero-Shot paper: successful L0 and L-infinity attacks on a model, summed over the
thresholds 1, 3, 5 and 10 (every image attacked once per norm and threshold).

References
----------
.. [1] D. V. Vargas, S. Kotyan and M. Matsuki, "Uncovering why deep neural networks lack robustness:
   representation metrics that link to adversarial attacks", Sec. 4 and Table 1 ("from a total of
   800 attacks": 100 images x 2 norms x 4 thresholds).
.. [2] D. V. Vargas and S. Kotyan, "Model agnostic dual quality assessment for adversarial machine
   learning and an analysis of current neural networks and defenses", arXiv:1906.06026, 2019.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.studies.zeroshot.attacks.pixel_threshold import (
    NORMS,
    AttackResult,
    Predict,
    Progress,
    _check_inputs,
    attack,
)
from repscope.validation import check_positive_int

PAPER_THRESHOLDS = (1, 3, 5, 10)


@dataclass(frozen=True)
class AttackCounts:
    """Success counts per (norm, threshold), as the paper's Table 1 sums them.

    Attributes
    ----------
    images : int
        Images attacked (each once per norm and threshold).
    results : dict
        ``(norm, threshold) -> AttackResult``.
    """

    images: int
    results: dict[tuple[str, int], AttackResult]

    @property
    def counts(self) -> dict[tuple[str, int], int]:
        """``(norm, threshold) -> number of successful attacks``."""
        return {key: result.success_count for key, result in self.results.items()}

    @property
    def totals(self) -> dict[str, int]:
        """``norm -> successful attacks summed over the thresholds`` (Table 1's L0 and L-infinity columns)."""
        totals: dict[str, int] = {}
        for (norm, _), count in self.counts.items():
            totals[norm] = totals.get(norm, 0) + count
        return totals

    @property
    def total(self) -> int:
        """Successful attacks over both norms and all thresholds (Table 1's Total column)."""
        return sum(self.counts.values())

    @property
    def attempts(self) -> int:
        """Attacks made: images x norms x thresholds (800 in the paper)."""
        return self.images * len(self.results)


def attack_counts(
    predict: Predict,
    images: np.ndarray,
    labels: np.ndarray,
    thresholds: Sequence[int] = PAPER_THRESHOLDS,
    *,
    norms: Sequence[str] = NORMS,
    budget: int = 100,
    seed: int = 0,
    progress: Progress | None = None,
) -> AttackCounts:
    """Attack every image with each norm at each threshold and count the successes (the paper's Table 1).

    Parameters
    ----------
    predict : callable
        ``predict(batch) -> probabilities``, float32 ``(B, C, H, W)`` on the 0-255 scale to
        ``(B, n_classes)`` soft-labels (see :func:`repscope.studies.zeroshot.attacks.pixel_attack`).
    images : numpy.ndarray
        ``(N, C, H, W)`` uint8 or float 0-255, channels first; the paper attacks correctly classified
        test images.
    labels : array-like of int
        ``(N,)`` true classes.
    thresholds : sequence of int, default=(1, 3, 5, 10)
        The paper's thresholds: pixels changed (L0) and largest value change (L-infinity).
    norms : sequence of {"L0", "Linf"}, default=("L0", "Linf")
        The attacks to run.
    budget : int, default=100
        Most CMA-ES iterations per attack.
    seed : int, default=0
        Seed of the per-attack cma seeds; ``results[(norm, th)]`` equals
        ``pixel_attack`` / ``threshold_attack`` called with the same seed.
    progress : callable, optional
        ``progress(done, total)`` after each attack of one image, ``total = N * len(norms) *
        len(thresholds)``.

    Returns
    -------
    AttackCounts
        The per-(norm, threshold) results, their success counts and totals.

    Raises
    ------
    InvalidArgumentError
        When ``norms`` or ``thresholds`` are empty, repeat a value or hold an unknown norm or a
        non-positive threshold, or another argument is invalid (see
        :func:`~repscope.studies.zeroshot.attacks.pixel_attack`).
    """
    norms = list(norms)
    thresholds = list(thresholds)
    if not norms or len(set(norms)) != len(norms) or any(norm not in NORMS for norm in norms):
        raise InvalidArgumentError(f"norms: expected distinct values among {', '.join(NORMS)}, got {norms!r}")
    refused = InvalidArgumentError(f"thresholds: expected distinct positive integers, got {thresholds!r}")
    if not thresholds or len(set(thresholds)) != len(thresholds):
        raise refused
    try:
        for threshold in thresholds:
            check_positive_int(threshold, "thresholds")
    except InvalidArgumentError:
        raise refused from None  # the message names the whole list
    for norm in norms:  # every argument checked before the first (long) attack runs
        _check_inputs(predict, images, labels, max(thresholds), budget, seed, norm)
    count = len(images)
    total = count * len(norms) * len(thresholds)
    results: dict[tuple[str, int], AttackResult] = {}
    for norm in norms:
        for threshold in thresholds:
            done_before = len(results) * count

            def report(done: int, _: int, offset: int = done_before) -> None:
                if callable(progress):  # False (no bar) as well as None: nothing to call
                    progress(offset + done, total)

            results[(norm, int(threshold))] = attack(
                norm, predict, images, labels, int(threshold), budget=budget, seed=seed, progress=report
            )
    return AttackCounts(images=count, results=results)
