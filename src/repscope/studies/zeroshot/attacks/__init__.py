"""Black-box adversarial attacks of the Raw Zero-Shot paper (Table 1): the L0 pixel attack and the
L-infinity threshold attack of Vargas & Kotyan's dual quality assessment, searched with CMA-ES.

The attacks take a model as a ``predict`` callable (float32 ``(B, C, H, W)`` images on the 0-255 scale
to ``(B, n_classes)`` probabilities), so they work for any framework; nothing here imports torch.
They follow the adversarial-robustness-toolbox's ``PixelAttack`` / ``ThresholdAttack`` with
``es=0`` step for step and score each CMA-ES population in one batched call.
"""

from repscope.studies.zeroshot.attacks.counts import PAPER_THRESHOLDS, AttackCounts, attack_counts
from repscope.studies.zeroshot.attacks.pixel_threshold import (
    NORMS,
    AttackResult,
    attack,
    attack_seed,
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
    "attack_seed",
    "pixel_attack",
    "threshold_attack",
]
