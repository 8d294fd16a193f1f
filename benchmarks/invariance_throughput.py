"""Invariance testing speed: the five variance matrices of one CNN5 (31 rotations x N test images).

Ours (:func:`repscope.studies.invariance.testing.model_signals` then
:func:`~repscope.studies.invariance.testing.matrices_and_features`): each image is transformed 31 times
and passed through the network once per transformation in batches of 500, the five statistics kept per
example, and each matrix is one Gram product. Baseline, the published procedure: for each pair of
transformations (i < j, 465 pairs), batches of 4 images are transformed both ways and passed through the
network, and the squared differences of the five statistics are accumulated. The baseline is timed on
``--baseline-pairs`` pairs x ``--baseline-images`` images and projected to 465 pairs x N images.

Prints the forward-pass time, the matrix step (matrices and the 16 features of each, sensitivity
included) and its share of the forward passes (goal: under 5%), and the speed-up over the baseline.

    python benchmarks/invariance_throughput.py [--images 10000] [--baseline-pairs 6] [--baseline-images 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from repscope.data.invariance.transforms import transform_family
from repscope.data.sources import load_splits
from repscope.models.morpho.baselines import CNN5
from repscope.models.probes import resolve_positions, signal_sets
from repscope.resources import configure_torch_threads, usable_cores
from repscope.studies.invariance.testing import PAPER_MODALITIES, STATISTICS, matrices_and_features, model_signals


def digits(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` real MNIST-sample digits (repeated when more are asked than the 5,000 there are)."""
    splits = load_splits("mnist-sample")
    images = np.concatenate([split.images for split in splits.values()])
    labels = np.concatenate([split.labels for split in splits.values()])
    rows = np.arange(count) % len(images)
    return torch.as_tensor(images[rows, None]).float() / 255.0, torch.as_tensor(labels[rows]).long()


def baseline_seconds(model, images, family, pairs: list[tuple[int, int]], batch_size: int = 4) -> float:
    """Time of the per-pair loop over ``pairs`` and ``images``: forward both transforms per batch of 4."""
    positions = resolve_positions(model, list(dict.fromkeys(p for _, p in PAPER_MODALITIES)))
    sums = {m: 0.0 for m in PAPER_MODALITIES}
    clock = time.perf_counter()
    for i, j in pairs:
        for start in range(0, len(images), batch_size):
            batch = images[start : start + batch_size]
            _, first = signal_sets(model, family.transform(batch, i), positions)
            _, second = signal_sets(model, family.transform(batch, j), positions)
            for statistic, position in PAPER_MODALITIES:
                reduce = STATISTICS[statistic]
                difference = reduce(first[position].double()) - reduce(second[position].double())
                sums[(statistic, position)] += float((difference**2).sum())
    return time.perf_counter() - clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--baseline-pairs", type=int, default=6)
    parser.add_argument("--baseline-images", type=int, default=200)
    args = parser.parse_args()
    configure_torch_threads()
    torch.manual_seed(0)
    model = CNN5().eval()
    images, labels = digits(args.images)
    family = transform_family("rotation")

    clock = time.perf_counter()
    signals = model_signals(model, images, labels, family, progress=False)
    forward = time.perf_counter() - clock
    clock = time.perf_counter()
    matrices, _ = matrices_and_features(signals)
    matrix_step = time.perf_counter() - clock

    steps = len(family)
    all_pairs = [(i, j) for i in range(steps) for j in range(i + 1, steps)]
    chosen = [all_pairs[k] for k in np.linspace(0, len(all_pairs) - 1, args.baseline_pairs).round().astype(int)]
    measured = baseline_seconds(model, images[: args.baseline_images], family, chosen)
    projected = measured / (len(chosen) * args.baseline_images) * len(all_pairs) * args.images

    ours = forward + matrix_step
    print(
        f"CNN5, 31 rotations x {args.images} digits, 5 matrices, {usable_cores()} cores, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(
        f"ours: forward passes {forward:.2f} s, matrix step {matrix_step:.3f} s "
        f"({100 * matrix_step / forward:.2f}% of the forward passes; goal < 5%)"
    )
    print(
        f"baseline (pairs i < j, batches of 4): {measured:.2f} s for {len(chosen)} pairs x {args.baseline_images} "
        f"images; projected {len(all_pairs)} pairs x {args.images} images: {projected:.0f} s"
    )
    print(f"speed-up: {projected / ours:.0f}x; matrices of shape {next(iter(matrices.values())).shape}")


if __name__ == "__main__":
    main()
