"""Start-up of `repscope sprites generate`, and samples/s from the command line against the generator's own.

Everything is measured in one run, each figure beside the baseline it is compared with:

* ``cold`` against ``warm``: `repscope sprites generate --level L --n N` in a fresh process with an empty
  ``$REPSCOPE_HOME`` (the texture bank is drawn, then stored under ``textures/``) and again with the bank
  cached (read and checked); levels 1-2 use no textures, so there the two differ by noise only;
* ``eager imports``: what the command paid before it imported only what it uses: a process that imports
  torch, Lightning and matplotlib (what ``repscope.studies.multimodal.dataset_commands`` pulled in through the
  attribute classifiers and the figures) on top of the command's own imports;
* samples/s of `sprites generate --level 5 --n S` from the command line (start-up included) against the
  generator in this process (``CdSpritesPlus.batches``, bank already built), the rate a long run tends to;
* ``python -X importtime``: the command's slowest imports (cumulative), and whether torch, Lightning or
  matplotlib are among them.

    .venv/bin/python benchmarks/startup.py [--n 100] [--samples 20000] [--repeats 3] [--top 8]

Times are medians over ``--repeats`` runs; on a busy machine compare only the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "lightning", "matplotlib")
ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, REPSCOPE_HOME=str(home), REPSCOPE_PROGRESS="off")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "repscope", *args]


def _timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def generate_seconds(level: int, n: int, home: Path, scratch: Path) -> float:
    """Wall seconds of one `repscope sprites generate` process (its output removed afterwards)."""
    out = scratch / f"out-{level}-{n}-{time.monotonic_ns()}"
    seconds = _timed(
        _command(["sprites", "generate", "--level", str(level), "--n", str(n), "--out", str(out)]), _env(home)
    )
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def cold_and_warm(level: int, n: int, repeats: int, scratch: Path) -> tuple[float, float]:
    """Median seconds with an empty cache folder (each run its own) and with the bank cached."""
    cold = []
    for k in range(repeats):
        home = scratch / f"cold-{level}-{k}"
        cold.append(generate_seconds(level, n, home, scratch))
        shutil.rmtree(home, ignore_errors=True)
    warm_home = scratch / f"warm-{level}"
    generate_seconds(level, n, warm_home, scratch)  # fills the cache
    warm = [generate_seconds(level, n, warm_home, scratch) for _ in range(repeats)]
    return statistics.median(cold), statistics.median(warm)


def eager_import_seconds(repeats: int, scratch: Path) -> tuple[float, float]:
    """Median seconds of a process importing the command's modules alone, and with torch, Lightning, matplotlib."""
    own = "import repscope.cli.sprites, repscope.studies.multimodal.dataset_commands"
    eager = own + "; import torch, lightning, matplotlib.pyplot"
    env = _env(scratch / "imports")
    alone = [_timed([sys.executable, "-c", own], env) for _ in range(repeats)]
    heavy = [_timed([sys.executable, "-c", eager], env) for _ in range(repeats)]
    return statistics.median(alone), statistics.median(heavy)


def in_process_rate(level: int, samples: int) -> float:
    """Samples/s of the generator in this process, its bank built before the clock starts."""
    from repscope.data.multimodal.cdsprites import CdSpritesPlus

    generator = CdSpritesPlus(level, size=samples, seed=0)
    generator.batch([0])
    start = time.perf_counter()
    for _ in generator.batches(4096):
        pass
    return samples / (time.perf_counter() - start)


def import_profile(level: int, top: int, scratch: Path) -> tuple[list[tuple[float, str]], list[str]]:
    """The ``top`` slowest top-level imports (cumulative seconds) of one generate call, and the heavy ones loaded."""
    out = scratch / "importtime-out"
    command = [sys.executable, "-X", "importtime", "-m", "repscope", "sprites", "generate"]
    command += ["--level", str(level), "--n", "10", "--out", str(out)]
    done = subprocess.run(command, env=_env(scratch / "warm-5"), cwd=ROOT, capture_output=True, text=True, check=True)
    shutil.rmtree(out, ignore_errors=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if cumulative.isdigit():
            rows.append((int(cumulative) / 1e6, name))
    top_level = [(seconds, name) for seconds, name in rows if "." not in name]
    loaded = sorted({name.split(".")[0] for _, name in rows} & set(HEAVY))
    return sorted(top_level, reverse=True)[:top], loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="samples of the start-up runs")
    parser.add_argument("--samples", type=int, default=20000, help="level-5 samples of the samples/s runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top", type=int, default=8, help="slowest imports to list")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="repscope-startup-"))
    try:
        print(f"`repscope sprites generate --n {args.n}`, median of {args.repeats} processes:")
        timings = {}
        for level in (1, 3, 5):
            cold, warm = cold_and_warm(level, args.n, args.repeats, scratch)
            timings[level] = (cold, warm)
            print(f"  level {level}: cold cache {cold:.2f} s, warm cache {warm:.2f} s (cold / warm {cold / warm:.2f}x)")
        alone, eager = eager_import_seconds(args.repeats, scratch)
        print(
            f"imports: the command's own {alone:.2f} s; with {', '.join(HEAVY)} as before {eager:.2f} s "
            f"(before / now {eager / alone:.2f}x, {eager - alone:.2f} s saved per call)"
        )
        for level, (cold, warm) in timings.items():
            before = cold + eager - alone  # the bank drawn on every call, the heavy imports on every call
            print(
                f"  level {level}: before ~{before:.2f} s per call, now {warm:.2f} s "
                f"(before / now {before / warm:.2f}x)"
            )
        cli = args.samples / generate_seconds(5, args.samples, scratch / "warm-5", scratch)
        inside = in_process_rate(5, args.samples)
        print(
            f"level 5, {args.samples} samples: command line {cli:,.0f} samples/s (start-up included), generator "
            f"in process {inside:,.0f} samples/s (command line / generator {cli / inside:.2f})"
        )
        slowest, loaded = import_profile(5, args.top, scratch)
        print("python -X importtime, slowest top-level imports of `sprites generate` (cumulative):")
        for seconds, name in slowest:
            print(f"  {seconds:6.3f} s  {name}")
        print(f"heavy packages loaded: {', '.join(loaded) if loaded else 'none'} (of {', '.join(HEAVY)})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
