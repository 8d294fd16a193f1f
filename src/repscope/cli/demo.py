"""``repscope demo``: the main job on the embedded data, ending with the report's path."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def demo(
    out: Optional[Path] = typer.Option(None, "--out", help="run directory (default runs/demo-<time>)"),
    train: int = typer.Option(600, help="training digits to build from"),
    test: int = typer.Option(200, help="test digits to build from"),
    seed: int = typer.Option(0, help="seed of every random choice"),
    jobs: int = typer.Option(1, "--jobs", "-j", help="worker processes"),
) -> None:
    """Build a small Morpho-MNIST set from the embedded real digits, measure it, write a report."""
    from repscope.studies.morpho_demo import DemoConfig, run_demo

    report = run_demo(DemoConfig(seed=seed, max_train=train, max_test=test, jobs=jobs), out=out)
    typer.echo(f"report: {report}")
