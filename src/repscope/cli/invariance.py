"""``repscope invariance``: invariance testing (ML4ML): variance matrices, their features, tests of a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Literal, Optional

import typer

from repscope.cli.studies import config_command
from repscope.studies.registry import command

app = typer.Typer(no_args_is_help=True)

TRANSFORM_CHOICES = Literal["rotation", "brightness", "scale"]


@app.command("features")
def features_command(
    matrix: Path = typer.Argument(..., help="a square variance matrix saved with numpy.save (.npy)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON of the features (default: printed)"),
    tau: float = typer.Option(0.15, "--tau", help="threshold of the significant-variance feature"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """The 16 features of a variance matrix (sensitivity needs the model, so 15 here), as JSON."""
    import json

    from repscope.outputs import prepare_output
    from repscope.studies.invariance.commands import matrix_file_features

    if out is not None:
        prepare_output(out, overwrite=overwrite, kind="file")
    features = matrix_file_features(matrix, tau=tau, out=out)
    if out is None:
        typer.echo(json.dumps(features, indent=2))
        return
    typer.echo(f"written: {out}")


@app.command("test")
def test_command(
    model: Path = typer.Option(..., "--model", help="run directory of repscope train, a .ckpt, or a state_dict file"),
    transform: TRANSFORM_CHOICES = typer.Option("rotation", "--transform", help="the transformation family"),
    out: Path = typer.Option(..., "--out", "-o", help="run directory: matrices, features, heat maps, report"),
    arch: Optional[str] = typer.Option(
        None, "--arch", help="registered model of a .ckpt (cnn5, lenet5), or network of a state_dict file"
    ),
    data: Optional[str] = typer.Option(None, "--data", help="registered dataset (default: the run's own)"),
    data_param: List[str] = typer.Option([], "--data-param", help="dataset parameter key=value (repeat)"),
    n: int = typer.Option(1000, "--n", help="test images (seeded draw)"),
    half_range: Optional[float] = typer.Option(
        None, "--range", help="half-range: degrees, or a fraction for brightness and scale (paper: 15, 0.3, 0.3)"
    ),
    steps: int = typer.Option(31, "--steps", help="transformations, odd (2k + 1)"),
    correct_only: bool = typer.Option(False, "--correct-only", help="only examples right at the identity"),
    batch_size: int = typer.Option(500, "--batch-size", help="images per forward pass"),
    seed: int = typer.Option(0, "--seed", help="seed of the draw and the sensitivity subsample"),
    assessor: Optional[Path] = typer.Option(
        None, "--assessor", help="assessors.joblib of repscope invariance assess train (a pickle: trusted files only)"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """Variance matrices (max@CONF, max/mean@CONV-1, max/mean@CONV-2), their features and robust accuracy."""
    from repscope.config import parse_assignments
    from repscope.outputs import output_target
    from repscope.studies.invariance.testing import run_invariance_test

    params = parse_assignments(data_param, "--data-param")
    with output_target(out, overwrite=overwrite, kind="directory") as target:
        metrics = run_invariance_test(
            model, target, transform, arch, data, params, n, half_range, steps, correct_only, batch_size, seed, assessor
        )
    typer.echo(
        f"robust accuracy {metrics['robust_accuracy']:.3f} (accuracy {metrics['accuracy']:.3f}) "
        f"on {metrics['examples']} images"
    )
    for name, value in (metrics.get("verdict") or {}).items():
        typer.echo(f"{name}: {'invariant' if value else 'variant'}")
    typer.echo(f"report: {Path(out) / 'report.html'}")


repo_app = typer.Typer(no_args_is_help=True, help="The model repository: build it.")
app.add_typer(repo_app, name="repo")


def show_repository(config: Any, result: Any, out: Path | None) -> None:
    """How many models were built and which failed, and where the summary is."""
    done = sum(status == "done" for status in result.status.values())
    typer.echo(f"{done} of {len(result.status)} models built; failed: {len(result.failed)}")
    for failed in result.failed[:3]:
        typer.echo(f"  {failed.name}: {failed.error_type}: {failed.message}")
    typer.echo(f"summary: {out / 'summary.csv'}")


# repscope invariance repo build [CONFIG] [--quick] --out DIR [--set key=value ...] (the registry)
repo_app.command("build")(config_command(command("invariance", "repo build"), show=show_repository))


@repo_app.command("label")
def repo_label_command(
    repo: Path = typer.Argument(..., help="a repository folder (repscope invariance repo build)"),
    out: Path = typer.Option(..., "--out", "-o", help="CSV: name, label (1 invariant, 0 variant), reasons"),
    human: Optional[Path] = typer.Option(
        None, "--human", help="CSV of human labels (name + one column per annotator): adds Cohen's and Fleiss' kappa"
    ),
    min_accuracy: float = typer.Option(
        0.8, "--min-accuracy", help="below this test accuracy a model under-fits (MNIST: 0.8; lower for harder data)"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """Label every model by the guideline's rules; with --human, the annotators' agreement."""
    from repscope.outputs import prepare_output
    from repscope.studies.invariance.commands import label_repository

    prepare_output(out, overwrite=overwrite, kind="file")
    result = label_repository(repo, out, human=human, min_accuracy=min_accuracy)
    labels = result["labels"]
    typer.echo(f"{int(labels['label'].sum())} of {len(labels)} models invariant by the rules; written: {out}")
    if "agreement" in result:
        for pair, kappa in result["agreement"]["cohen"].items():
            typer.echo(f"Cohen's kappa {pair}: {kappa:.3f}")
        typer.echo(f"Fleiss' kappa: {result['agreement']['fleiss']:.3f}")


assess_app = typer.Typer(no_args_is_help=True, help="ML4ML assessors: train them on a repository.")
app.add_typer(assess_app, name="assess")


@assess_app.command("train")
def assess_train_command(
    repo: Path = typer.Argument(..., help="a repository folder (repscope invariance repo build)"),
    transform: TRANSFORM_CHOICES = typer.Option("rotation", "--transform", help="the family the repository tested"),
    out: Path = typer.Option(..., "--out", "-o", help="folder: table4.csv, labels.csv, assessors.joblib, report"),
    labels: Optional[Path] = typer.Option(None, "--labels", help="CSV name,label (default: the rule labels)"),
    seed: int = typer.Option(0, "--seed", help="seed of the folds and balanced draws"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """Decision tree, random forest, AdaBoost, linear regression against the robust-accuracy baseline (Table IV)."""
    from repscope.outputs import output_target
    from repscope.studies.invariance.assess import train_assessors

    with output_target(out, overwrite=overwrite, kind="directory") as target:
        table = train_assessors(repo, target, transform, labels, seed)
    for _, row in table.iterrows():
        typer.echo(f"{row['assessor']}: {row['mean']:.3f} +/- {row['std']:.3f}")
    typer.echo(f"written: {out}")
