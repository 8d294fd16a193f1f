"""Sprite generation throughput: CdSprites+ samples/s per level, and dSprites images/s.

CdSprites+, for each level, in one run:

* ``one by one``: ``gen[i]`` in a Python loop (what a plain per-item Dataset costs; the baseline);
* ``batch``: ``gen.batch(indices)``, the vectorised path, in this process;
* ``loader, W workers``: the training DataLoader over the registered ``cdsprites`` dataset's train
  split (batch fetching, images and one-hot captions as tensors, i.e. what training consumes) with
  W = 1 and 2 worker processes.

dSprites: the window rasteriser (only pixels near each shape, one shape kind at a time) against
the whole-frame rasteriser it replaced (every pixel tested against all three shapes), same images.

    .venv/bin/python benchmarks/sprites_throughput.py [--samples 20000] [--batch-size 256]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _rate(count: int, seconds: float) -> float:
    return count / max(seconds, 1e-9)


def cdsprites_rates(level: int, samples: int, batch_size: int) -> dict[str, float]:
    from repscope.data.multimodal.cdsprites import CdSpritesPlus
    from repscope.data.registry import load_dataset
    from repscope.train.datamodule import SplitView, loader

    gen = CdSpritesPlus(level, size=samples, seed=0)
    gen.batch([0])  # texture bank built outside the timings
    rates = {}
    one_by_one = min(2000, samples)
    start = time.perf_counter()
    for i in range(one_by_one):
        gen[i]
    rates["one by one"] = _rate(one_by_one, time.perf_counter() - start)
    start = time.perf_counter()
    for first in range(0, samples, batch_size):
        gen.batch(np.arange(first, min(first + batch_size, samples)))
    rates["batch"] = _rate(samples, time.perf_counter() - start)
    for workers in (1, 2):
        dataset = load_dataset("cdsprites", level=level, train_size=samples, val_size=1, test_size=0)
        view = SplitView(dataset, "train", ("image", "text", "mask"))
        iterator = iter(loader(view, batch_size=batch_size, num_workers=workers))
        seen = len(next(iterator)["image"])  # workers started and warm
        start = time.perf_counter()
        for batch in iterator:
            seen += len(batch["image"])
        rates[f"loader, {workers} worker{'s' if workers > 1 else ''}"] = _rate(
            samples - batch_size, time.perf_counter() - start
        )
    return rates


def _whole_frame_render(classes: np.ndarray) -> np.ndarray:
    """The replaced dSprites rasteriser: all 64x64 pixel centres tested against all three shapes."""
    from repscope.data import dsprites as d

    values = d.classes_to_values(classes)
    shape = classes[:, 1][:, None, None]
    scale, angle = values[:, 2][:, None, None], values[:, 3][:, None, None]
    span = d.IMAGE_SIZE - 2.0 * d.MARGIN_PX
    cx = (d.MARGIN_PX + values[:, 4] * span)[:, None, None]
    cy = (d.MARGIN_PX + values[:, 5] * span)[:, None, None]
    rows, cols = np.mgrid[0 : d.IMAGE_SIZE, 0 : d.IMAGE_SIZE].astype(np.float64) + 0.5
    dx, dy = cols[None] - cx, cy - rows[None]
    cos, sin = np.cos(angle), np.sin(angle)
    radius = scale * d.SPRITE_RADIUS_PX
    u, v = (cos * dx + sin * dy) / radius, (-sin * dx + cos * dy) / radius
    inside = np.where(
        shape == 0, d.inside_shape(0, u, v), np.where(shape == 1, d.inside_shape(1, u, v), d.inside_shape(2, u, v))
    )
    return inside.astype(np.uint8)


def dsprites_rates(samples: int) -> tuple[dict[str, float], bool]:
    from repscope.data import dsprites

    classes = dsprites.index_to_classes(np.random.default_rng(0).choice(dsprites.TOTAL, samples, replace=False))
    rates, images = {}, {}
    for name, render in (("whole frame (before)", _whole_frame_render), ("windows", dsprites.render)):
        start = time.perf_counter()
        images[name] = np.concatenate([render(classes[k : k + 4096]) for k in range(0, samples, 4096)])
        rates[name] = _rate(samples, time.perf_counter() - start)
    return rates, bool(np.array_equal(images["whole frame (before)"], images["windows"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--levels", default="1,2,3,4,5")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"CdSprites+ samples/s ({args.samples} samples, batch {args.batch_size}; ratio to one by one)")
    columns = None
    for level in (int(x) for x in args.levels.split(",")):
        rates = cdsprites_rates(level, args.samples, args.batch_size)
        if columns is None:
            columns = list(rates)
            print("level  " + "  ".join(f"{name:>22}" for name in columns))
        base = rates["one by one"]
        cells = [f"{rates[name]:>10,.0f} ({rates[name] / base:>5.1f}x)" for name in columns]
        print(f"{level:>5}  " + "  ".join(f"{cell:>22}" for cell in cells))
    rates, same = dsprites_rates(min(args.samples, 20_000))
    before = rates["whole frame (before)"]
    print(
        "dSprites images/s: "
        + ", ".join(f"{name} {rate:,.0f}" for name, rate in rates.items())
        + f"; windows / whole frame = {rates['windows'] / before:.1f}x; identical images: {same}"
    )


if __name__ == "__main__":
    main()
