"""Black-box adversarial attacks on any classifier given as a ``predict`` callable (Raw Zero-Shot, Table 1).

The L0 pixel attack and the L-infinity threshold attack of Vargas and Kotyan's dual quality assessment,
searched with CMA-ES (:mod:`repscope.studies.zeroshot.attacks`, which follows the
adversarial-robustness-toolbox's ``PixelAttack`` / ``ThresholdAttack``). ``predict`` maps float32
``(B, C, H, W)`` images on the 0-255 scale to ``(B, n_classes)`` probabilities, so a model of any framework
can be attacked::

    import repscope.attacks

    result = repscope.attacks.attack("L0", predict, images, labels, threshold=3, seed=0)
    result.success_count                   # images fooled (one cell of the paper's Table 1)
"""

from __future__ import annotations

from repscope.studies.zeroshot.attacks import (
    NORMS,
    PAPER_THRESHOLDS,
    AttackCounts,
    AttackResult,
    attack,
    attack_counts,
    pixel_attack,
    threshold_attack,
)

__all__ = [
    "NORMS",
    "PAPER_THRESHOLDS",
    "AttackCounts",
    "AttackResult",
    "attack",
    "attack_counts",
    "pixel_attack",
    "threshold_attack",
]
