"""``repscope mmvae train`` and ``repscope mmvae sweep``: multimodal VAEs from one YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal, Optional

import typer

from repscope.cli.studies import LOGGER_CHOICES, trainer_overrides

CONFIG_HELP = "config (YAML) or a shipped config's name (mmvae-cdsprites-paper); default the CPU config mmvae-cdsprites"


BACKEND_CHOICES = Literal["local", "ray"]


def train_command(
    config: Optional[Path] = typer.Argument(None, help=CONFIG_HELP),
    set_: List[str] = typer.Option([], "--set", help="override a key, e.g. --set model=mopoe --set data.level=2"),
    quick: bool = typer.Option(False, "--quick", help="three epochs on 3,000 samples, evaluated on 200"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default runs/train-<time>)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --out from its last checkpoint"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it holds a run (once complete)"),
    evaluate: bool = typer.Option(True, "--evaluate/--no-evaluate", help="coherency after training (CdSprites+)"),
    epochs: Optional[int] = typer.Option(None, "--epochs", help="epochs to train (the config's epochs)"),
    accelerator: Optional[str] = typer.Option(None, help="cpu, gpu, mps, auto (Lightning)"),
    devices: Optional[str] = typer.Option(None, help="number of devices, or a list such as 0,1"),
    num_nodes: Optional[int] = typer.Option(None, "--num-nodes", help="machines (Lightning)"),
    precision: Optional[str] = typer.Option(None, help="32-true, 16-mixed, bf16-mixed, ..."),
    deterministic: Optional[bool] = typer.Option(
        None, "--deterministic/--no-deterministic", help="deterministic algorithms only (Lightning)"
    ),
    logger: Optional[LOGGER_CHOICES] = typer.Option(None, "--logger", help="training log: csv, tensorboard or none"),
    print_config: bool = typer.Option(False, "--print-config", help="print the config as it would run and exit"),
) -> None:
    """Train one multimodal VAE (mvae, mmvae, mopoe, dmvae, mmvae-plus) and evaluate it on CdSprites+."""
    import yaml

    from repscope.outputs import output_target, prepare_output
    from repscope.studies.mmvae.train import load_multimodal_config, train_multimodal

    overrides = list(set_) + trainer_overrides(
        "trainer", accelerator, devices, num_nodes, precision, deterministic, logger
    )
    overrides += [f"epochs={epochs}"] if epochs is not None else []
    loaded, source = load_multimodal_config(config, overrides, quick)
    if print_config:
        typer.echo(yaml.safe_dump(loaded.model_dump(mode="json"), sort_keys=False).rstrip())
        return
    enabled = evaluate and loaded.evaluation.enabled and loaded.data.name == "cdsprites"
    if out is None or resume:
        result = train_multimodal(loaded, out=out, resume=resume, source=source, evaluate=enabled)
        where = result["run"]
    else:
        prepare_output(out, overwrite=overwrite, resume=False, kind="directory")
        with output_target(out, overwrite=overwrite, resume=False, kind="directory") as target:
            result = train_multimodal(loaded, out=target, source=source, evaluate=enabled)
        where = out
    metrics = result["metrics"]
    typer.echo(f"trained {loaded.model} for {metrics['epochs']} epochs in {metrics['fit_seconds']:.1f} s")
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


def sweep_command(
    config: Optional[Path] = typer.Argument(None, help=CONFIG_HELP),
    grid: List[str] = typer.Option(
        [], "--grid", help="key=v1,v2,...: one axis of the grid (repeat; first varies slowest)"
    ),
    set_: List[str] = typer.Option([], "--set", help="override a key for every run of the sweep"),
    quick: bool = typer.Option(False, "--quick", help="every run: three epochs on 3,000 samples, evaluated on 200"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="sweep folder (default runs/sweep-<time>)"),
    resume: bool = typer.Option(False, "--resume", help="continue the sweep in --out: finished runs are skipped"),
    workers: int = typer.Option(1, "--workers", help="local worker processes (-1: all cores)"),
    backend: BACKEND_CHOICES = typer.Option("local", "--backend", help="local processes, or Ray Tune (repscope[ray])"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: a local instance)"),
    cpus_per_run: Optional[float] = typer.Option(None, "--cpus-per-run", help="Ray: CPUs reserved per run"),
) -> None:
    """Train and evaluate every point of a grid (models x levels x latent sizes x seeds); a restarted sweep
    skips finished runs. Writes one run directory per point and summary.csv / summary.md."""
    from datetime import datetime

    from repscope.errors import InvalidArgumentError
    from repscope.outputs import prepare_output
    from repscope.studies.mmvae.train import load_multimodal_config
    from repscope.sweeps import expand_grid, run_sweep

    if not grid:
        raise InvalidArgumentError("--grid: give at least one axis, e.g. --grid model=mvae,mmvae")
    points = expand_grid(grid)
    for point in points:  # every point's config must be valid before anything runs
        load_multimodal_config(config, [*set_, *point.as_set_arguments()], quick)
    if resume and out is None:
        raise InvalidArgumentError("--resume: continuing a sweep needs --out, the sweep folder to continue")
    folder = out if out is not None else Path("runs") / f"sweep-{datetime.now():%Y%m%d-%H%M%S}"
    prepare_output(folder, resume=resume, kind="directory")
    common = {"config": str(config) if config is not None else None, "base_overrides": list(set_), "quick": quick}
    result = run_sweep(
        points,
        "repscope.studies.mmvae.train:sweep_point",
        folder,
        common=common,
        workers=workers,
        backend=backend,
        address=address,
        cpus_per_run=cpus_per_run,
        description="sweep mmvae",
    )
    typer.echo(f"sweep: {len(points)} runs, {len(result.failed)} failed")
    typer.echo(f"summary: {folder / 'summary.md'}")
    if result.failed:
        raise InvalidArgumentError(f"sweep: {len(result.failed)} run(s) failed; see {folder / 'summary.md'}")
