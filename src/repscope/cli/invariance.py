"""``repscope invariance``: invariance testing (ML4ML): variance matrices, their features, tests of a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Literal, Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import config_command
from repscope.studies.registry import command

app = typer.Typer(no_args_is_help=True)

TRANSFORM_CHOICES = Literal["rotation", "brightness", "scale"]


@app.command("features")
def features_command(
    matrix: Path = typer.Argument(..., help="a square variance matrix saved with numpy.save (.npy)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON of the features (default: printed)"),
    tau: float = typer.Option(0.15, "--tau", help="threshold of the significant-variance feature"),
    compat: Literal["paper", "reference"] = typer.Option(
        "paper",
        "--compat",
        help="paper: the printed formulas; reference: the authors' released code (keys end in _reference)",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """The 16 features of a variance matrix (sensitivity needs the model, so 15 here), as JSON."""
    from repscope.fileio import dumps_json
    from repscope.outputs import CommandInput, prepare_output
    from repscope.studies.invariance.commands import matrix_file_features

    if out is not None:
        prepare_output(out, overwrite=overwrite, kind="file", inputs=[CommandInput(matrix, "MATRIX", "the matrix")])
    features = matrix_file_features(matrix, tau=tau, out=out, compat=compat)
    if out is None:
        typer.echo(dumps_json(features))
        return
    typer.echo(f"written: {out}")


@app.command("correlate")
def correlate_command(
    repo: Path = typer.Argument(..., help="a repository folder (repscope invariance repo build), 3 models or more"),
    out: Path = typer.Option(..., "--out", "-o", help="folder: correlations.csv, table5.csv, correlations.json"),
    compat: Literal["paper", "reference"] = typer.Option(
        "paper",
        "--compat",
        help="paper: the features of features.json; reference: the released code's, from the matrix files",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """Table V: each feature's correlation (Pearson, Spearman) with robust accuracy and accuracy over the models."""
    from repscope.outputs import CommandInput, output_target
    from repscope.studies.invariance.correlate import PAPER_TABLE5, correlate_repository

    inputs = [CommandInput(repo, "REPO", "the repository")]
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        result = correlate_repository(repo, target, compat=compat)
    table = result["table5"].set_index(["target", "statistic"])
    typer.echo(f"Table V over {result['models']} models (compat {result['compat']}): r Pearson, rho Spearman")
    typer.echo(f"{'feature':46}{'robust r':>10}{'rho':>8}{'acc. r':>10}{'rho':>8}   paper r (robust / acc.)")
    for cell in table.columns:
        modality, feature = cell.split(":", 1)
        paper = PAPER_TABLE5.get(feature.removesuffix("_reference"), {}).get(modality.split("@")[-1])
        line = f"{cell:46}"
        for target in ("robust_accuracy", "accuracy"):
            line += f"{table.loc[(target, 'pearson'), cell]:>10.2f}{table.loc[(target, 'spearman'), cell]:>8.2f}"
        typer.echo(line + (f"{paper[0]:>+9.2f} / {paper[1]:+.2f}" if paper else ""))
    typer.echo(f"written: {out}")


def model_inputs(model: str, weights: Path | None) -> list[Any]:
    """What ``--model`` (a file or folder, or the file of ``file.py:factory``) and ``--weights`` read, which
    ``--out`` must not replace."""
    from repscope.outputs import CommandInput

    found = [CommandInput(model, "--model", "the model")]
    module, _, _ = model.rpartition(":")
    if module.endswith(".py"):
        found.append(CommandInput(module, "--model", "the model's module"))
    if weights is not None:
        found.append(CommandInput(weights, "--weights", "the weights"))
    return found


@app.command("test")
def test_command(
    model: str = typer.Option(
        ...,
        "--model",
        help="run directory of repscope train, a .ckpt, a state_dict file (with --arch), pkg.module:factory or "
        "file.py:factory, a TorchScript / torch.export file (.pt, .pt2) or an .onnx file (never a pickle)",
    ),
    transform: TRANSFORM_CHOICES = typer.Option("rotation", "--transform", help="the transformation family"),
    out: Path = typer.Option(..., "--out", "-o", help="run directory: matrices, features, heat maps, report"),
    arch: Optional[str] = typer.Option(
        None,
        "--arch",
        help="registered model of a .ckpt (cnn5, lenet5), or network of a state_dict file (registered or "
        "pkg.module:factory)",
    ),
    model_arg: List[str] = typer.Option(
        [], "--model-arg", help="keyword argument key=value of a --model factory (repeat; values read as YAML)"
    ),
    weights: Optional[Path] = typer.Option(None, "--weights", help="state_dict file of a --model factory's network"),
    data: Optional[str] = typer.Option(
        None, "--data", help="registered dataset (default: the run's own; required for a model from outside)"
    ),
    data_param: List[str] = typer.Option([], "--data-param", help="dataset parameter key=value (repeat)"),
    n: int = typer.Option(1000, "--n", help="test images (seeded draw)"),
    half_range: Optional[float] = typer.Option(
        None, "--range", help="half-range: degrees, or a fraction for brightness and scale (paper: 15, 0.3, 0.3)"
    ),
    steps: int = typer.Option(31, "--steps", help="transformations, odd (2k + 1)"),
    correct_only: bool = typer.Option(False, "--correct-only", help="only examples right at the identity"),
    batch_size: int = typer.Option(500, "--batch-size", help="images per forward pass"),
    seed: int = typer.Option(
        0, "--seed", callback=check_seed_option, help="seed of the draw and the sensitivity subsample"
    ),
    assessor: Optional[Path] = typer.Option(
        None, "--assessor", help="assessors.skops of repscope invariance assess train"
    ),
    compat: Literal["paper", "reference"] = typer.Option(
        "paper",
        "--compat",
        help="reference: the released code's modalities (max_mean at the convolutions), correct examples only, "
        "and its features beside the paper's",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """Variance matrices (max@CONF, max/mean@CONV-1, max/mean@CONV-2), their features and robust accuracy.

    A model whose layers forward hooks cannot reach (TorchScript, torch.export, ONNX) gives max@CONF only.
    """
    from repscope.config import parse_assignments
    from repscope.models.external import parse_model_args
    from repscope.outputs import CommandInput, inputs_in_mapping, output_target
    from repscope.studies.invariance.testing import run_invariance_test

    params = parse_assignments(data_param, "--data-param")
    model_args = parse_model_args(model_arg)
    inputs = [*model_inputs(model, weights), *inputs_in_mapping(params, "--data-param {key}")]
    if assessor is not None:
        inputs.append(CommandInput(assessor, "--assessor", "the assessors"))
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        metrics = run_invariance_test(
            model,
            target,
            transform,
            arch,
            data,
            params,
            n,
            half_range,
            steps,
            correct_only,
            batch_size,
            seed,
            assessor,
            compat=compat,
            model_args=model_args,
            weights=weights,
        )
    typer.echo(
        f"robust accuracy {metrics['robust_accuracy']:.3f} (accuracy {metrics['accuracy']:.3f}) "
        f"on {metrics['examples']} images"
    )
    if list(metrics["features"]) == ["max@CONF"]:
        typer.echo("only max@CONF measured: forward hooks reach no two convolution layers of this model")
    for name, value in (metrics.get("verdict") or {}).items():
        typer.echo(f"{name}: {'invariant' if value else 'variant'}")
    typer.echo(f"report: {Path(out) / 'report.html'}")


ASSESS_LABEL_CODINGS = Literal["ours", "paper"]  # 1 = invariant, or the ML4ML paper's 0 = invariant
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
    out: Path = typer.Option(
        ..., "--out", "-o", help="CSV: name, label (1 invariant, 0 variant), reasons, label_coding (ours)"
    ),
    human: Optional[Path] = typer.Option(
        None, "--human", help="CSV of human labels (name + one column per annotator): adds Cohen's and Fleiss' kappa"
    ),
    min_accuracy: float = typer.Option(
        0.8, "--min-accuracy", help="below this test accuracy a model under-fits (MNIST: 0.8; lower for harder data)"
    ),
    label_coding: Optional[ASSESS_LABEL_CODINGS] = typer.Option(
        None,
        "--label-coding",
        help="coding of --human without a label_coding column: ours (1 = invariant) or paper (0 = invariant)",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """Label every model by the guideline's rules; with --human, the annotators' agreement."""
    from repscope.outputs import CommandInput, prepare_output
    from repscope.studies.invariance.commands import label_repository

    inputs = [CommandInput(repo, "REPO", "the repository")]
    if human is not None:
        inputs.append(CommandInput(human, "--human", "the human labels"))
    prepare_output(out, overwrite=overwrite, kind="file", inputs=inputs)
    result = label_repository(repo, out, human=human, min_accuracy=min_accuracy, label_coding=label_coding)
    labels = result["labels"]
    typer.echo(f"{int(labels['label'].sum())} of {len(labels)} models invariant by the rules; written: {out}")
    if "agreement" in result:
        for pair, kappa in result["agreement"]["cohen"].items():
            typer.echo(f"Cohen's kappa {pair}: {kappa:.3f}")
        typer.echo(f"Fleiss' kappa: {result['agreement']['fleiss']:.3f}")


ASSESS_COMPAT = Literal["paper", "reference"]
assess_app = typer.Typer(no_args_is_help=True, help="ML4ML assessors: train them on a repository.")
app.add_typer(assess_app, name="assess")


@assess_app.command("train")
def assess_train_command(
    repo: Path = typer.Argument(..., help="a repository folder (repscope invariance repo build)"),
    transform: TRANSFORM_CHOICES = typer.Option("rotation", "--transform", help="the family the repository tested"),
    out: Path = typer.Option(..., "--out", "-o", help="folder: table4.csv, labels.csv, assessors.skops, report"),
    labels: Optional[Path] = typer.Option(
        None, "--labels", help="CSV name,label[,label_coding] (default: the rule labels)"
    ),
    label_coding: Optional[ASSESS_LABEL_CODINGS] = typer.Option(
        None,
        "--label-coding",
        help="coding of --labels without a label_coding column: ours (1 = invariant) or paper (0 = invariant)",
    ),
    compat: ASSESS_COMPAT = typer.Option(
        "paper",
        "--compat",
        help="paper: balanced 10 x 3-fold CV, mean +/- std; reference: the authors' ML4MLassessor.py protocol "
        "(fixed hold-out fold, mean +/- max deviation, linear regression on L2-normalised rows)",
    ),
    holdout: List[str] = typer.Option(
        [], "--holdout", help="with --compat reference: a hold-out model's name (repeat; default the last third)"
    ),
    repeats: int = typer.Option(10, "--repeats", help="repeats of the 3-fold protocol (paper: 10)"),
    seed: int = typer.Option(0, "--seed", callback=check_seed_option, help="seed of the folds and balanced draws"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """Decision tree, random forest, AdaBoost, linear regression against the robust-accuracy baseline (Table IV)."""
    from repscope.errors import InvalidArgumentError
    from repscope.outputs import CommandInput, output_target
    from repscope.studies.invariance.assess import train_assessors

    if holdout and compat != "reference":
        raise InvalidArgumentError("--holdout: only the reference protocol (--compat reference) has a hold-out fold")
    inputs = [CommandInput(repo, "REPO", "the repository")]
    if labels is not None:
        inputs.append(CommandInput(labels, "--labels", "the labels"))
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        table = train_assessors(repo, target, transform, labels, seed, compat, label_coding, holdout or None, repeats)
    spread = "std" if compat == "paper" else "max_deviation"
    for _, row in table.iterrows():
        typer.echo(f"{row['assessor']}: {row['mean']:.3f} +/- {row[spread]:.3f} ({spread})")
    if compat == "paper":  # the paper's protocol draws balanced labels: a constant guess scores 0.5
        below = [str(row["assessor"]) for _, row in table.iterrows() if row["mean"] <= 0.5]
        if below:
            typer.echo(
                f"note: {', '.join(below)} at or below chance (0.5 on the balanced labels): too few models or too "
                "noisy labels for the assessors to learn from"
            )
    typer.echo(f"written: {out}")
    typer.echo(f"report: {Path(out) / 'report.html'}")
