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
    diversity: bool = typer.Option(True, "--diversity/--no-diversity", help="include the small sample-diversity study (trains two VAEs)"),
    diversity_epochs: int = typer.Option(5, "--diversity-epochs", help="epochs of each generator"),
    diversity_samples: int = typer.Option(2000, "--diversity-samples", help="samples drawn from each generator"),
) -> None:
    """Build a small Morpho-MNIST set from the embedded real digits, measure it, write a report."""
    from repscope.studies.morpho_demo import DemoConfig, run_demo

    config = DemoConfig(seed=seed, max_train=train, max_test=test, jobs=jobs, diversity=diversity,
                        diversity_epochs=diversity_epochs, diversity_samples=diversity_samples)
    report = run_demo(config, out=out)
    typer.echo(f"report: {report}")
