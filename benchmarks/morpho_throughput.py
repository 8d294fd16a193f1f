"""Throughput of Morpho-MNIST measurement and perturbation: fast batched path vs per-image baseline.

Both paths run in this one process on the same real digits (the embedded MNIST sample), so
their ratio is meaningful on a shared, noisy machine; absolute digits/s are for orientation.

    .venv/bin/python benchmarks/morpho_throughput.py [--digits 2000] [--reference-digits 400] [--workers 2]

The baseline is the common per-image procedure: ``pyramid_expand``, ``distance_transform_edt``
and ``medial_axis`` from scikit-image/SciPy for every digit (``method="reference"``), and for
the perturbed sets the same perturbation on that per-image morphology followed by a per-image
``pyramid_reduce`` and a per-image measurement. The ``published`` rows time ``compat="published"`` (the values of the
released Morpho-MNIST CSVs), batched against the same procedure image by image.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def _digits(n: int) -> np.ndarray:
    from repscope.data.sources import load_source

    images = load_source("mnist-sample").images
    # the sample is sorted by class: shuffle (seeded) so any prefix holds every class
    images = images[np.random.default_rng(0).permutation(len(images))]
    reps = -(-n // len(images))
    return np.concatenate([images] * reps)[:n]


def _rate(n: int, seconds: float) -> float:
    return n / seconds


def time_measure(images: np.ndarray, method: str, jobs: int, compat: str = "none") -> float:
    from repscope.data.morpho import measure

    measure(images[:50], method=method, compat=compat)  # warm caches (lookup tables, resize matrices)
    start = time.perf_counter()
    chunk_size = max(50, min(500, len(images) // (4 * jobs)))
    table = measure(images, method=method, compat=compat, jobs=jobs, chunk_size=chunk_size)
    elapsed = time.perf_counter() - start
    assert len(table) == len(images)
    return _rate(len(images), elapsed)


def _perturb_fast_chunk(args) -> int:
    images, kind, start = args
    from repscope.data.morpho.build import BuildConfig, process_chunk

    config = BuildConfig()
    process_chunk(images, "train", start, (kind,), config.make_perturbations(), config.pipeline_config(), 0)
    return len(images)


def _perturb_reference_chunk(args) -> int:
    images, kind, start = args
    from skimage.transform import pyramid_reduce

    from repscope.data.morpho import analyse_reference, measure_digit
    from repscope.data.morpho.build import BuildConfig, digit_rng

    config = BuildConfig()
    perturbation = config.make_perturbations()[kind]
    pipeline = config.pipeline_config()
    for k, image in enumerate(images):
        _, morph = analyse_reference(image, pipeline)
        outcome = perturbation(morph, digit_rng(0, kind, "train", start + k))
        low = np.rint(np.clip(pyramid_reduce(outcome.hires, pipeline.scale), 0, 1) * 255).astype(np.uint8)
        measure_digit(*analyse_reference(low, pipeline))
    return len(images)


def time_perturb(images: np.ndarray, kind: str, path: str, jobs: int) -> float:
    worker = _perturb_fast_chunk if path == "fast" else _perturb_reference_chunk
    worker((images[:20], kind, 0))  # warm up
    size = max(20, len(images) // (2 * jobs))
    tasks = [(images[s : s + size], kind, s) for s in range(0, len(images), size)]
    start = time.perf_counter()
    if jobs == 1:
        done = sum(worker(t) for t in tasks)
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            done = sum(pool.map(worker, tasks))
    return _rate(done, time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--digits", type=int, default=2000, help="digits for the fast path")
    parser.add_argument("--reference-digits", type=int, default=300, help="digits for the per-image baseline")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--kinds", default="thin,thick,swel,frac")
    args = parser.parse_args()

    images = _digits(args.digits)
    reference_images = images[: args.reference_digits]
    print(f"# Morpho-MNIST throughput, digits/s ({args.workers} processes unless noted)")
    print(f"{'task':<22}{'fast':>10}{'reference':>12}{'ratio':>9}")
    fast1 = time_measure(images, "fast", 1)
    ref1 = time_measure(reference_images, "reference", 1)
    print(f"{'measure (1 process)':<22}{fast1:>10.0f}{ref1:>12.1f}{fast1 / ref1:>8.1f}x")
    fast = time_measure(images, "fast", args.workers)
    ref = time_measure(reference_images, "reference", args.workers)
    print(f"{'measure':<22}{fast:>10.0f}{ref:>12.1f}{fast / ref:>8.1f}x")
    # --compat published: batched vs the same procedure image by image
    published1 = time_measure(images, "fast", 1, "published")
    published_ref1 = time_measure(reference_images, "reference", 1, "published")
    print(
        f"{'published (1 process)':<22}{published1:>10.0f}{published_ref1:>12.1f}{published1 / published_ref1:>8.1f}x"
    )
    published = time_measure(images, "fast", args.workers, "published")
    published_ref = time_measure(reference_images, "reference", args.workers, "published")
    print(f"{'published':<22}{published:>10.0f}{published_ref:>12.1f}{published / published_ref:>8.1f}x")
    print(
        f"# published / default, fast path: {published1 / fast1:.2f} (1 process),"
        f" {published / fast:.2f} ({args.workers} workers)"
    )
    for kind in args.kinds.split(","):
        fast = time_perturb(images, kind, "fast", args.workers)
        ref = time_perturb(reference_images, kind, "reference", args.workers)
        print(f"{'build ' + kind:<22}{fast:>10.0f}{ref:>12.1f}{fast / ref:>8.1f}x")


if __name__ == "__main__":
    main()
