"""``repscope train CONFIG.yaml``: train any registered model on any registered dataset."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from repscope.cli.studies import LOGGER_CHOICES, trainer_overrides


def train_command(
    config: Path = typer.Argument(..., help="training config (YAML): model, data, trainer, batch_size, seed"),
    set_: List[str] = typer.Option([], "--set", help="override a config key, e.g. --set trainer.max_epochs=5"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default runs/train-<time>)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --out from its last checkpoint"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace --out if it holds a run (once the new one is complete)"
    ),
    accelerator: Optional[str] = typer.Option(None, help="cpu, gpu, mps, auto (Lightning)"),
    devices: Optional[str] = typer.Option(None, help="number of devices, or a list such as 0,1"),
    num_nodes: Optional[int] = typer.Option(None, "--num-nodes", help="machines (Lightning)"),
    precision: Optional[str] = typer.Option(None, help="32-true, 16-mixed, bf16-mixed, ..."),
    deterministic: Optional[bool] = typer.Option(
        None, "--deterministic/--no-deterministic", help="deterministic algorithms only (Lightning)"
    ),
    logger: Optional[LOGGER_CHOICES] = typer.Option(None, "--logger", help="training log: csv, tensorboard or none"),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="epochs to train"),
    print_config: bool = typer.Option(False, "--print-config", help="print the config as it would run and exit"),
) -> None:
    """Train a model and write a run directory (config, metrics.json, curves, report, checkpoints)."""
    import yaml

    from repscope.config import load_config
    from repscope.outputs import output_target, prepare_output
    from repscope.train.config import TrainConfig
    from repscope.train.run import fit

    overrides = list(set_) + trainer_overrides(
        "trainer", accelerator, devices, num_nodes, precision, deterministic, logger, max_epochs
    )
    loaded = load_config(config, TrainConfig, overrides)
    if print_config:
        typer.echo(yaml.safe_dump(loaded.model_dump(mode="json"), sort_keys=False).rstrip())
        return
    source = f"config {config}"
    if out is None or resume:
        outcome = fit(loaded, out=out, resume=resume, source=source)
        where = outcome.run.root
    else:
        prepare_output(out, overwrite=overwrite, resume=False, kind="directory")
        with output_target(out, overwrite=overwrite, resume=False, kind="directory") as target:
            outcome = fit(loaded, out=target, source=source)
        where = out
    shown = {k: v for k, v in outcome.metrics.items() if k.startswith("test_")}
    summary = ", ".join(f"{k} {v:.4g}" for k, v in shown.items())
    typer.echo(
        f"trained {loaded.model.name} for {outcome.metrics['epochs']} epochs in "
        f"{outcome.metrics['fit_seconds']:.1f} s" + (f"; {summary}" if summary else "")
    )
    typer.echo(f"run: {where}")
    typer.echo(f"report: {Path(where) / 'report.html'}")
