"""``repscope train CONFIG.yaml``: train any registered model on any registered dataset (the command is
built from its registry entry, :mod:`repscope.studies.registry`; this module prints its outcome)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from repscope.cli.studies import config_command
from repscope.studies.registry import command


def show_training(config: Any, outcome: Any, out: Path | None) -> None:
    """The epochs, time and test metrics of a finished training, and where its run directory is."""
    where = out if out is not None else outcome.run.root
    shown = {k: v for k, v in outcome.metrics.items() if k.startswith("test_")}
    summary = ", ".join(f"{k} {v:.4g}" for k, v in shown.items())
    typer.echo(
        f"trained {config.model.name} for {outcome.metrics['epochs']} epochs in "
        f"{outcome.metrics['fit_seconds']:.1f} s" + (f"; {summary}" if summary else "")
    )
    typer.echo(f"run: {where}")
    typer.echo(f"report: {Path(where) / 'report.html'}")


train_command = config_command(command(None, "train"), show=show_training)
