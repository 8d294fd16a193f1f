"""``repscope demo``: the main job on the embedded data, ending with the report's path."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import trainer_section, with_trainer_flags


@with_trainer_flags
def demo(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default runs/demo-<time>)"),
    train: int = typer.Option(600, help="training digits to build from"),
    test: int = typer.Option(200, help="test digits to build from"),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of every random choice"),
    workers: int = typer.Option(1, "--workers", help="worker processes; -1 all cores, -2 all but one"),
    diversity: bool = typer.Option(
        True, "--diversity/--no-diversity", help="include the small sample-diversity study (trains two VAEs)"
    ),
    diversity_epochs: int = typer.Option(5, "--diversity-epochs", help="epochs of each generator"),
    diversity_samples: int = typer.Option(2000, "--diversity-samples", help="samples drawn from each generator"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace OUT if it holds files (once the new run is complete)"
    ),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Build a small Morpho-MNIST set from the embedded real digits, measure it, write a report."""
    import contextlib

    from repscope.outputs import output_target
    from repscope.resources import resolve_jobs
    from repscope.studies.morpho.demo import DemoConfig, run_demo

    config = DemoConfig(
        seed=seed,
        train_size=train,
        test_size=test,
        jobs=resolve_jobs(workers, name="--workers"),
        diversity=diversity,
        diversity_epochs=diversity_epochs,
        diversity_samples=diversity_samples,
        trainer=trainer_section(trainer_flags),
    )
    with contextlib.ExitStack() as stack:
        target = None if out is None else stack.enter_context(output_target(out, overwrite=overwrite, kind="directory"))
        report = run_demo(config, out=target)
    if out is not None:
        report = out / Path(report).relative_to(target)
    typer.echo(f"report: {report}")
