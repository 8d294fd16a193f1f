"""Overhead of `repscope assess --role encoder`'s encoding over the encoder's own batched forward passes.

The issue's goal: encoding N images through the assess path costs at most 20% more than the bare loop
over the same images, on 2 CPU cores. Both sides run the same network on the same images, 256 at a time:

* baseline, the encoder's own forward passes: ``with torch.no_grad(): for batch in chunks:
  model(batch.float() / 255)``, the uint8 ``(256, 1, 64, 64)`` chunks cut before the clock starts;
* ``adapter``: what :func:`repscope.studies.assess.roles.run_encoder` does before scoring, clock running
  from the bare module: :func:`repscope.models.external.load_model`, :func:`~repscope.models.external
  .check_model` on a probe batch of 4, :func:`~repscope.models.external.role_model` (an ``ImageEncoder``)
  and one ``encode(images)`` of them all;
* ``assess``: the same, the images encoded by :func:`repscope.studies.assess.encoder.encode_images` as
  :func:`~repscope.studies.assess.encoder.assess_encoder` calls it (one ``encode`` per chunk of 256, each
  chunk's codes checked and cast to float64) under its progress bar (``REPSCOPE_PROGRESS``: lines on
  stderr when it is not a terminal, ``off`` for none), as the command shows it.

The network is repscope's conv64 encoder (Burgess et al. 2018: four 4x4 stride-2 convolutions, 1,024 ->
256 -> 2 x latents), randomly initialised with a fixed seed (the weights do not change the time); the
images are dSprites drawn as :func:`repscope.studies.assess.factor_data.load_factor_data` draws them. The
three are timed in turn, their order rotated, ``--repeats`` rounds (the medians are printed, so a
neighbour's burst of load on a shared machine hits one round, not one side), after one untimed round;
the codes of both assess paths are checked against the baseline's means. Each side's time is also split,
within its own runs, into the seconds inside the network's forward passes (hooks on the module) and the
seconds around them: that share is what the path adds, and it moves far less with the machine's load than
the ratio does. ``--check`` exits 1 when the assess path's ratio is over ``--goal``; ``--profile`` prints
cProfile's top functions of one more assess run.

    .venv/bin/python benchmarks/assess_overhead.py [--n 10000 | --quick] [--repeats 3] [--check] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from repscope.models.conv64 import Conv64Encoder
from repscope.models.external import check_model, load_model, role_model
from repscope.resources import configure_torch_threads, usable_cores
from repscope.studies.assess.encoder import encode_images
from repscope.studies.assess.factor_data import load_factor_data
from repscope.studies.assess.roles import torch_device

BATCH = 256
GOAL = 1.20  # the bound on assess / baseline
QUICK_N = 1_000


def baseline_codes(model: torch.nn.Module, chunks: list[torch.Tensor], device: torch.device) -> np.ndarray:
    """The bare loop: the posterior means of each uint8 chunk, scaled to [0, 1] on the device."""
    means = []
    with torch.no_grad():
        for batch in chunks:
            mean, _ = model(batch.to(device).float() / 255)
            means.append(mean.cpu())
    return torch.cat(means).numpy()


def adapter_codes(model: torch.nn.Module, images: np.ndarray, device: torch.device) -> np.ndarray:
    """The adapter path from the bare module: load, probe, wrap, one ``encode`` of every image."""
    loaded = load_model(model)
    check_model(loaded, "encoder", images=images[:4])
    return role_model(loaded, "encoder", device=device, batch_size=BATCH).encode(images)


def assess_codes(model: torch.nn.Module, images: np.ndarray, device: torch.device) -> np.ndarray:
    """The assess path: as :func:`adapter_codes`, the images encoded by ``encode_images``."""
    loaded = load_model(model)
    check_model(loaded, "encoder", images=images[:4])
    encoder = role_model(loaded, "encoder", device=device, batch_size=BATCH)
    return encode_images(encoder, images, BATCH)


class ForwardClock:
    """Seconds spent inside a module's forward passes, kept by a pair of hooks on it (CUDA work finished
    at each end): the time of a run less these is what the path adds around the network, a share that a
    neighbour's load on a shared machine changes far less than the ratio of two runs' times."""

    def __init__(self, module: torch.nn.Module, device: torch.device) -> None:
        self.seconds = 0.0
        self._start = 0.0
        self._cuda = device.type == "cuda"
        module.register_forward_pre_hook(self._enter)
        module.register_forward_hook(self._leave)

    def _now(self) -> float:
        if self._cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def _enter(self, module: torch.nn.Module, args: tuple) -> None:
        self._start = self._now()

    def _leave(self, module: torch.nn.Module, args: tuple, output: object) -> None:
        self.seconds += self._now() - self._start


def timed(run: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    """Wall seconds of ``run()`` (CUDA work finished inside the clock) and what it returned."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    clock = time.perf_counter()
    out = run()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - clock, out


def measure(
    model: torch.nn.Module, images: np.ndarray, device: torch.device, repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds of each side per round, and of those the seconds inside the network's forward passes (the
    first round untimed); the sides run in turn within a round, the order rotated from round to round.
    The baseline's codes of round 0 are the reference the others' must equal."""
    chunks = [torch.from_numpy(images[start : start + BATCH]).unsqueeze(1) for start in range(0, len(images), BATCH)]
    runs = {
        "baseline": lambda: baseline_codes(model, chunks, device),
        "adapter": lambda: adapter_codes(model, images, device),
        "assess": lambda: assess_codes(model, images, device),
    }
    clock = ForwardClock(model, device)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    forward: dict[str, list[float]] = {name: [] for name in runs}
    reference = None
    for round_ in range(repeats + 1):
        names = list(runs)
        for name in names[round_ % 3 :] + names[: round_ % 3]:  # each side first in some round
            run = runs[name]
            before = clock.seconds
            spent, codes = timed(run)
            if reference is None:
                reference = codes
            elif not np.allclose(codes, reference, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{name}: codes differ from the baseline's by {np.abs(codes - reference).max():.3g}")
            if round_ > 0:  # round 0 warms the kernels and the allocator
                seconds[name].append(spent)
                forward[name].append(clock.seconds - before)
    return seconds, forward


def profile(model: torch.nn.Module, images: np.ndarray, device: torch.device, top: int) -> None:
    """cProfile's ``top`` functions by cumulative time of one assess-path run."""
    profiler = cProfile.Profile()
    profiler.runcall(assess_codes, model, images, device)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="dSprites images encoded (default 10,000)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_N:,} images")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; the medians are compared")
    parser.add_argument("--latent-dim", type=int, default=10)
    parser.add_argument("--accelerator", default="cpu", help="cpu, gpu, cuda, mps, auto (as `assess`)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the free cores)")
    parser.add_argument("--goal", type=float, default=GOAL, help="the largest assess / baseline ratio accepted")
    parser.add_argument("--check", action="store_true", help="exit 1 when the assess ratio is over --goal")
    parser.add_argument("--profile", type=int, nargs="?", const=25, default=0, help="cProfile's top N functions")
    args = parser.parse_args(argv)
    n = QUICK_N if args.quick else args.n
    threads = configure_torch_threads(args.threads)
    device = torch_device(args.accelerator)
    torch.manual_seed(0)
    model = Conv64Encoder(args.latent_dim).eval().to(device)
    images = load_factor_data("dsprites", n=n).images
    seconds, forward = measure(model, images, device, args.repeats)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    # per round, the time around the network (the probe's pass of 4 images counts as the network's)
    around = {name: statistics.median(np.subtract(seconds[name], forward[name])) for name in seconds}
    inside = {name: statistics.median(values) for name, values in forward.items()}
    print(
        f"conv64 encoder ({args.latent_dim} latents), {len(images):,} dSprites images 64x64, batch {BATCH}, "
        f"{device}, {usable_cores()} cores, torch threads {threads}; medians of {args.repeats} rounds"
    )
    for name, values in seconds.items():
        rounds = ", ".join(f"{value:.3f}" for value in values)
        ratio = median[name] / median["baseline"]
        print(
            f"  {name:9s} {median[name]:7.3f} s  ({rounds})  ratio {ratio:.3f}; in the forward passes "
            f"{inside[name]:.3f} s, around them {around[name]:.3f} s ({100 * around[name] / inside[name]:.1f}%)"
        )
    ratio = median["assess"] / median["baseline"]
    verdict = "met" if ratio <= args.goal else "MISSED"
    print(f"assess / baseline: {ratio:.3f} (goal <= {args.goal:.2f}: {verdict})")
    if args.profile:
        profile(model, images, device, args.profile)
    return 1 if args.check and ratio > args.goal else 0


if __name__ == "__main__":
    sys.exit(main())
