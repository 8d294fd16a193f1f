"""Record ``tests/data/art-pixel-threshold-attacks.json``: what the adversarial-robustness-toolbox's own
``PixelAttack`` / ``ThresholdAttack`` (``es=0``) return on a fixed tiny classifier, so that
``tests/zeroshot/test_attacks.py`` pins ``repscope.studies.zeroshot.attacks`` against ART on machines without ART.

Run from the repository root in an environment with the attacks extra (``pip install -e '.[attacks]'``)::

    python tests/data/record_art_attacks.py

The classifier is exact arithmetic on integer pixels (an integer linear map, then ``+ - * /`` only: no
BLAS, no ``exp``), so its outputs are the same bits on any CPU and numpy; the test holds its own copy and
checks it against the soft-labels recorded here. ART never seeds cma: each image's search is seeded here
with the seed repscope derives for it (``attack_seed``), recorded per image.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import warnings
from pathlib import Path

import cma
import numpy as np
import torch
from torch import nn

from repscope.studies.zeroshot.attacks import attack_seed

OUT = Path(__file__).with_name("art-pixel-threshold-attacks.json")
# norm, image shape (C, H, W), thresholds; 5 images each (drawn with seed = the case's position), budget 12, seed 3
CASES = [
    ("L0", (1, 7, 7), (1, 3)),
    ("L0", (3, 5, 5), (2,)),
    ("Linf", (1, 6, 6), (4, 20)),
    ("Linf", (3, 4, 4), (8, 16)),
    ("L0", (2, 4, 6), (2,)),  # rows and columns differ in number: a swapped row / column shows
]
IMAGES, BUDGET, SEED, CLASSES, SCALE = 5, 12, 3, 3, 400.0


def exact_probabilities(batch: np.ndarray) -> np.ndarray:
    """Soft-labels of integer-valued 0-255 images ``(B, C, H, W)``: logits ``(x - 128) @ W`` in int64 with
    ``W[i, k] = (7 i + 3 k) mod 9 - 4``, then ``q_k = 1 / (1 + (d_k / 400)^2)`` of ``d_k = logit_k - max``,
    normalised; float32 as ART hands them on."""
    pixels = batch.reshape(len(batch), -1).astype(np.int64) - 128
    index = np.arange(pixels.shape[1])[:, None]
    weights = (7 * index + 3 * np.arange(CLASSES)[None, :]) % 9 - 4
    logits = pixels @ weights
    gaps = (logits - logits.max(axis=1, keepdims=True)) / SCALE
    closeness = 1.0 / (1.0 + gaps * gaps)
    total = closeness[:, 0] + closeness[:, 1] + closeness[:, 2]
    return (closeness / total[:, None]).astype(np.float32)


class Exact(nn.Module):
    """:func:`exact_probabilities` as the torch module ART's ``PyTorchClassifier`` needs."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(exact_probabilities(images.detach().numpy()))


def art_attack(norm: str, images: np.ndarray, labels: np.ndarray, threshold: int) -> tuple[np.ndarray, list]:
    """ART's attack with cma seeded per image; returns the adversarial images and the seeds used."""
    from art.attacks.evasion import PixelAttack, ThresholdAttack
    from art.estimators.classification import PyTorchClassifier

    classifier = PyTorchClassifier(
        Exact(), nn.CrossEntropyLoss(), input_shape=images.shape[1:], nb_classes=CLASSES, clip_values=(0, 255)
    )
    seeds = [attack_seed(SEED, norm, threshold, i) for i in range(len(images))]
    handed = iter(seeds)
    original = cma.CMAEvolutionStrategy

    class Seeded(original):
        def __init__(self, x0, sigma0, inopts=None):
            super().__init__(x0, sigma0, cma.CMAOptions(dict(inopts, seed=next(handed))))

    cma.CMAEvolutionStrategy = Seeded
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="function_values is not a list of scalars")
            kind = PixelAttack if norm == "L0" else ThresholdAttack
            attack = kind(classifier, th=threshold, es=0, max_iter=BUDGET, verbose=False)
            return attack.generate(images.astype(np.float32), labels), seeds
    finally:
        cma.CMAEvolutionStrategy = original


def main() -> None:
    import art

    records = []
    for number, (norm, shape, thresholds) in enumerate(CASES):
        images = np.random.default_rng(number).integers(0, 256, size=(IMAGES, *shape), dtype=np.uint8)
        probabilities = exact_probabilities(images)
        labels = probabilities.argmax(axis=1)
        for threshold in thresholds:
            adversarial, seeds = art_attack(norm, images, labels, threshold)
            success = exact_probabilities(adversarial).argmax(axis=1) != labels
            records.append(
                {
                    "norm": norm,
                    "threshold": threshold,
                    "images": images.tolist(),
                    "soft_labels": probabilities.tolist(),
                    "labels": labels.tolist(),
                    "cma_seeds": seeds,
                    "adversarial": adversarial.astype(np.int64).tolist(),
                    "success": success.tolist(),
                }
            )
            print(norm, threshold, success.tolist(), file=sys.stderr)
    provenance = {
        "what": "ART PixelAttack / ThresholdAttack (es=0, max_iter=budget) on exact_probabilities, cma seeded",
        "budget": BUDGET,
        "seed": SEED,
        "adversarial-robustness-toolbox": art.__version__,
        "cma": cma.__version__,
        "numpy": np.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": datetime.date.today().isoformat(),
        "how": "python tests/data/record_art_attacks.py",
    }
    lines = ",\n".join(f"  {json.dumps(record)}" for record in records)
    OUT.write_text(f'{{"provenance": {json.dumps(provenance)},\n "cases": [\n{lines}\n]}}\n')


if __name__ == "__main__":
    main()
