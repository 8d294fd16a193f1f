"""CANDLE render speed: seconds per image at the default settings, and the projected time of the grid.

Renders ``--images`` grid points spread over the whole grid (every scene, object and light) in one
process, as ``repscope candle render`` does, and as a baseline the same number of points with a fresh
Blender scene per image (start-up and scene building paid every time, the way a script that renders
one image per call works). Prints seconds per image for both, the ratio, and the projected wall time
of the 4,050-image grid: scene building once, plus 4,050 images. The goal: at most 2 hours on 2 cores.

    python benchmarks/candle_render.py [--images 12] [--baseline-images 3] [--samples 8] [--resolution 320x240]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from repscope.data.candle_grid import GRID_SIZE, grid_points, image_seed
from repscope.data.candle_render import parse_resolution
from repscope.data.candle_scene import CandleStage
from repscope.resources import usable_cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=12)
    parser.add_argument("--baseline-images", type=int, default=3)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--resolution", default="320x240")
    args = parser.parse_args()
    resolution = parse_resolution(args.resolution)
    points = grid_points()
    chosen = [points[int(k)] for k in np.linspace(0, GRID_SIZE - 1, args.images + args.baseline_images).round()]
    ours, baseline = chosen[: args.images], chosen[args.images :]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        clock = time.perf_counter()
        stage = CandleStage(resolution=resolution, samples=args.samples, device="cpu")
        setup = time.perf_counter() - clock
        times = []
        for point in ours:
            clock = time.perf_counter()
            stage.render(point, image_seed(point["index"]), out / f"{point['index']:05d}.png")
            times.append(time.perf_counter() - clock)
        fresh = []
        for point in baseline:
            clock = time.perf_counter()
            stage = CandleStage(resolution=resolution, samples=args.samples, device="cpu")
            stage.render(point, image_seed(point["index"]), out / f"b{point['index']:05d}.png")
            fresh.append(time.perf_counter() - clock)
    per_image = float(np.mean(times))
    first, rest = times[0], float(np.mean(times[1:])) if len(times) > 1 else times[0]
    per_fresh = float(np.mean(fresh))
    projected = setup + first + (GRID_SIZE - 1) * rest
    print(
        f"CANDLE render, {resolution[0]}x{resolution[1]}, {args.samples} samples, denoised, CPU, {usable_cores()} cores"
    )
    print(f"scene building (once per process): {setup:.2f} s; first image {first:.2f} s (builds Cycles' data)")
    print(f"ours: {per_image:.2f} s per image over {len(times)} images (after the first: {rest:.2f} s)")
    print(f"baseline, a fresh scene per image: {per_fresh:.2f} s per image over {len(fresh)} images")
    print(f"speed-up: {per_fresh / rest:.2f}x")
    print(f"projected full grid ({GRID_SIZE} images): {projected / 3600:.2f} h (goal <= 2 h on 2 cores)")


if __name__ == "__main__":
    main()
