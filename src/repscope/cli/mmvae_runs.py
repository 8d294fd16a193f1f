"""``repscope mmvae train`` and ``repscope mmvae sweep``: multimodal VAEs from one YAML file (both commands
are built from their registry entries, :mod:`repscope.studies.registry`; this module prints their outcome).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from repscope.cli.studies import config_command
from repscope.studies.registry import command


def show_training(config: Any, result: dict[str, Any], out: Path | None) -> None:
    """The epochs and time of the training, its coherency scores when evaluated, and where the run is."""
    where = out if out is not None else result["run"]
    metrics = result["metrics"]
    typer.echo(f"trained {config.model} for {metrics['epochs']} epochs in {metrics['fit_seconds']:.1f} s")
    evaluation = result["evaluation"] or {}
    for direction in ("text_to_image", "image_to_text", "joint"):
        if f"{direction}_strict" in evaluation:
            letters = evaluation.get(f"{direction}_letters")
            typer.echo(
                f"{direction}: strict {evaluation[f'{direction}_strict']:.1f}%, features "
                f"{evaluation[f'{direction}_features']:.3f}"
                + (f", letters {letters:.1f}%" if letters is not None else "")
            )
    typer.echo(f"run: {where}")
    report = Path(where) / "evaluation" / "report.html"
    typer.echo(f"report: {report if report.exists() else Path(where) / 'report.html'}")


def show_sweep(config: Any, result: Any, out: Path | None) -> None:
    """How many points ran and failed, and where the summary is; a failed point makes the exit status 1."""
    from repscope.errors import InvalidArgumentError

    folder = out if out is not None else result.out
    typer.echo(f"sweep: {len(result.points)} runs, {len(result.failed)} failed")
    typer.echo(f"summary: {folder / 'summary.md'}")
    if result.failed:
        raise InvalidArgumentError(f"sweep: {len(result.failed)} run(s) failed; see {folder / 'summary.md'}")


train_command = config_command(command("mmvae", "train"), show=show_training)
sweep_command = config_command(command("mmvae", "sweep"), show=show_sweep)
