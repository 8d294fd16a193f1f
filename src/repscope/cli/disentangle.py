"""``repscope disentangle``: disentanglement metrics of any representation."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from repscope.cli.studies import add_study_commands, trainer_section, with_trainer_flags
from repscope.metrics.registry import ARRAY_INPUTS, metric_names

app = typer.Typer(no_args_is_help=True)


@app.command("score")
def score_command(
    file: Path = typer.Argument(
        ...,
        help="npz with 'factors' (N, K) integer classes, 'codes' (N, L), optional 'factor_sizes'; or a run "
        "directory of repscope train (a VAE on data with factors: its test images are encoded)",
    ),
    n: int = typer.Option(10_000, "--n", help="run directory: test examples encoded (seeded draw)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="result JSON (default: printed)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
    bootstrap: int = typer.Option(
        0, "--bootstrap", help="B resamples of rows for a 95% percentile interval of every score"
    ),
    seed: int = typer.Option(0, help="seed of the bootstrap (and of a run directory's draw)"),
    metric: List[str] = typer.Option(
        [], "--metric", help=f"only these metrics (repeat): {', '.join(metric_names(ARRAY_INPUTS))}"
    ),
    classifiers: Optional[Path] = typer.Option(
        None, "--classifiers", help="run directory: add CG at rho 1 and 2, judged by these factor classifiers"
    ),
) -> None:
    """Every registered metric of a (factors, codes) pair (--metric lists them), as JSON; CG with --classifiers."""
    import json

    from repscope.outputs import prepare_output
    from repscope.studies.disentangle.scoring import score_file, score_intervals

    if out is not None:
        prepare_output(out, overwrite=overwrite, kind="file")
    result = score_file(
        file, n=n, seed=seed, metrics=list(metric), bootstrap=bootstrap, classifiers=classifiers, out=out
    )
    if out is None:
        typer.echo(json.dumps(result, indent=2, default=float))
        return
    intervals = score_intervals(result)
    for name, value in result["scores"].items():
        interval = ""
        bounds = intervals.get(name)
        if bounds:
            interval = f"  [{bounds['low']:.3f}, {bounds['high']:.3f}]"
            if not bounds["low"] <= value <= bounds["high"]:
                # a plug-in score shifts under resampling: show by how much (bootstrap module)
                interval += f" (resampled mean {bounds['mean']:.3f})"
        typer.echo(f"{name}: {value:.4f}{interval}")
    typer.echo(f"written: {out}")


@app.command("classifiers")
@with_trainer_flags
def classifiers_command(
    out: Path = typer.Option(..., "--out", "-o", help="folder of the classifiers (one training run per factor)"),
    data: str = typer.Option("dsprites", "--data", help="registered dataset with one categorical field per factor"),
    factor: List[str] = typer.Option(
        [], "--factor", help="factors to classify (repeat; default dSprites' shape, scale, orientation, posX, posY)"
    ),
    train_size: Optional[int] = typer.Option(None, "--train-size", help="training images (default: the dataset's)"),
    test_size: Optional[int] = typer.Option(None, "--test-size", help="test images"),
    epochs: int = typer.Option(3, "--epochs", help="epochs per classifier"),
    seed: int = typer.Option(0, help="seed of the training"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists (once complete)"),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Train the factor classifiers that CG judges counterfactual images with; prints their test accuracy."""
    from repscope.outputs import output_target, prepare_output
    from repscope.studies.disentangle.cg import train_factor_classifiers

    names = list(factor) or ["shape", "scale", "orientation", "posX", "posY"]
    params = {key: value for key, value in (("train_size", train_size), ("test_size", test_size)) if value is not None}
    trainer = trainer_section(trainer_flags)
    prepare_output(out, overwrite=overwrite, kind="directory")
    with output_target(out, overwrite=overwrite, kind="directory") as target:
        accuracies = train_factor_classifiers(
            data, names, target, data_params=params, epochs=epochs, seed=seed, trainer=trainer
        )
    for name, accuracy in accuracies.items():
        typer.echo(f"{name}: test accuracy {accuracy:.3f}")
    typer.echo(f"written: {out}")


# studies: repscope disentangle <study> [CONFIG] [--quick] [--out DIR] [--set key=value ...] (the registry)
add_study_commands(app, "disentangle")
