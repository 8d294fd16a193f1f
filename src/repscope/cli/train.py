"""``repscope train CONFIG.yaml``: train any registered model on any registered dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def train_command(
    config: Path = typer.Argument(..., help="training config (YAML): model, data, trainer, batch_size, seed"),
    set_: list[str] = typer.Option([], "--set", help="override a config key, e.g. --set trainer.max_epochs=5"),
    out: Optional[Path] = typer.Option(None, "--out", help="run directory (default runs/train-<time>)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --out from its last checkpoint"),
    accelerator: Optional[str] = typer.Option(None, help="cpu, gpu, mps, auto (Lightning)"),
    devices: Optional[str] = typer.Option(None, help="number of devices, or a list such as 0,1"),
    num_nodes: Optional[int] = typer.Option(None, "--num-nodes", help="machines (Lightning)"),
    precision: Optional[str] = typer.Option(None, help="32-true, 16-mixed, bf16-mixed, ..."),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="epochs to train"),
) -> None:
    """Train a model and write a run directory (config, metrics.json, curves, checkpoints)."""
    from repscope.config import load_config
    from repscope.train.config import TrainConfig
    from repscope.train.run import train

    overrides = list(set_) + trainer_overrides(accelerator, devices, num_nodes, precision, max_epochs)
    loaded = load_config(config, TrainConfig, overrides)
    outcome = train(loaded, out=out, resume=resume, source=f"config {config}")
    shown = {k: v for k, v in outcome.metrics.items() if k.startswith("test_")}
    summary = ", ".join(f"{k} {v:.4g}" for k, v in shown.items())
    typer.echo(f"trained {loaded.model.name} for {outcome.metrics['epochs']} epochs in "
               f"{outcome.metrics['fit_seconds']:.1f} s" + (f"; {summary}" if summary else ""))
    typer.echo(f"run: {outcome.run.root}")


def trainer_overrides(accelerator: str | None, devices: str | None, num_nodes: int | None,
                      precision: str | None, max_epochs: int | None) -> list[str]:
    """The Lightning flags as ``--set trainer.<key>=value`` overrides (flags win over the file)."""
    flags = {"accelerator": accelerator, "devices": devices, "num_nodes": num_nodes,
             "precision": precision, "max_epochs": max_epochs}
    out = []
    for key, value in flags.items():
        if value is None:
            continue
        if key == "devices" and isinstance(value, str) and "," in value:
            value = "[" + value + "]"
        out.append(f"trainer.{key}={value}")
    return out
