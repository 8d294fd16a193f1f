"""CANDLE render speed: seconds per image at the default settings, and the projected time of the grid.

Renders ``--images`` grid points spread over the whole grid (every scene, object and light) in one
process, as ``repscope candle render`` does (:func:`repscope.data.candle.render.render_points`: one
Blender scene, points taken scene by scene), and as baselines the same points (a) in grid order, where
the scene changes every third image, and (b) with a fresh Blender scene per image (start-up and scene
building paid every time, the way a script that renders one image per call works). Prints seconds per
image for each, the ratios, and the projected wall time of the 4,050-image grid: scene building once,
plus 4,050 images at our rate. The goal: at most 2 hours on 2 cores.

    python benchmarks/candle_render.py [--images 12] [--baseline-images 3] [--samples 8] [--resolution 320x240]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from repscope.data.candle.grid import GRID_SIZE, grid_points, image_seed
from repscope.data.candle.render import RenderSettings, parse_resolution, render_points
from repscope.data.candle.scene import CandleStage
from repscope.resources import usable_cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=24)
    parser.add_argument("--baseline-images", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--resolution", default="320x240")
    args = parser.parse_args()
    resolution = parse_resolution(args.resolution)
    points = grid_points()
    chosen = [points[int(k)] for k in np.linspace(0, GRID_SIZE - 1, args.images).round()]
    settings = RenderSettings(resolution=resolution, samples=args.samples, device="cpu")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        (out / "ours").mkdir()
        summary = render_points(chosen, out / "ours", settings, progress=False)
        ours = summary["seconds"] / summary["rendered"]
        stage = CandleStage(resolution=resolution, samples=args.samples, device="cpu")
        clock = time.perf_counter()
        for point in chosen:  # grid order: the scene changes every third point
            stage.render(point, image_seed(point["index"]), out / "grid-order.png")
        grid_order = (time.perf_counter() - clock) / len(chosen)
        clock = time.perf_counter()
        for point in chosen[: args.baseline_images]:
            stage = CandleStage(resolution=resolution, samples=args.samples, device="cpu")
            stage.render(point, image_seed(point["index"]), out / "fresh.png")
        fresh = (time.perf_counter() - clock) / args.baseline_images
    projected = summary["setup_seconds"] + GRID_SIZE * ours
    print(
        f"CANDLE render, {resolution[0]}x{resolution[1]}, {args.samples} samples, denoised, "
        f"CPU, {usable_cores()} cores, {len(chosen)} grid points over every scene"
    )
    print(f"scene building (once per process): {summary['setup_seconds']:.2f} s")
    print(f"ours, scene by scene:          {ours:.3f} s per image")
    print(f"baseline, grid order:          {grid_order:.3f} s per image ({grid_order / ours:.2f}x ours)")
    print(f"baseline, fresh scene per image: {fresh:.3f} s per image ({fresh / ours:.2f}x ours)")
    print(f"projected full grid ({GRID_SIZE} images): {projected / 3600:.2f} h (goal <= 2 h on 2 cores)")


if __name__ == "__main__":
    main()
