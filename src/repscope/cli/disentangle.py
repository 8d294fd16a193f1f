"""``repscope disentangle``: disentanglement metrics of any representation."""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal, Optional

import typer

from repscope.cli.renamed_options import add_renamed_commands
from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import add_study_commands, trainer_section, with_trainer_flags
from repscope.metrics.registry import ARRAY_INPUTS, metric_names

# counterfactual.DEFAULT_MIN_JUDGE_ACCURACY, without importing numpy at start-up (tests/test_cli_rules.py checks)
DEFAULT_MIN_JUDGE_ACCURACY = 0.9

app = typer.Typer(no_args_is_help=True)

COMPAT_CHOICES = Literal["paper", "reference", "both"]


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
        0,
        "--bootstrap",
        help="B resamples of rows (0: none, else >= 2) for a 95% percentile interval of every score; the first "
        "resample is timed and the estimate of the rest printed on stderr",
    ),
    seed: int = typer.Option(
        0, callback=check_seed_option, help="seed of the bootstrap (and of a run directory's draw)"
    ),
    metric: List[str] = typer.Option(
        [], "--metric", help=f"only these metrics (repeat): {', '.join(metric_names(ARRAY_INPUTS))}"
    ),
    judges: Optional[Path] = typer.Option(
        None,
        "--judges",
        help="run directory: add CG at rho 1 and 2, judged by the judges in this folder (as repscope disentangle "
        "train-judges writes it), or by 'packaged': the dSprites judges that come with repscope",
    ),
    compat: COMPAT_CHOICES = typer.Option(
        "paper",
        "--compat",
        help="IRS and UC as printed (paper), as the authors' code computes them (reference: IRS on 20-bin "
        "factors as disentanglement_lib, UC with the CANDLE fork's latent selection; keys *_reference), or both",
    ),
    min_judge_accuracy: float = typer.Option(
        DEFAULT_MIN_JUDGE_ACCURACY,
        "--min-judge-accuracy",
        help="with --judges: least held-out accuracy of a CG judge",
    ),
    refuse_weak_judges: bool = typer.Option(
        False, "--refuse-weak-judges", help="with --judges: fail instead of warning on a weak CG judge"
    ),
) -> None:
    """Every registered metric of a (factors, codes) pair (--metric lists them), as JSON; CG with --judges."""
    import warnings

    from repscope.fileio import dumps_json
    from repscope.outputs import CommandInput, prepare_output
    from repscope.studies.candle.score_arrays import check_bootstrap
    from repscope.studies.candle.score_command import compute_file_scores, score_intervals, write_file_scores

    check_bootstrap(bootstrap)
    if out is not None:
        inputs = [CommandInput(file, "FILE", "the scored codes")]
        if judges is not None:  # 'packaged' (the judges that come with repscope) is no path: no clash
            inputs.append(CommandInput(judges, "--judges", "the judges"))
        prepare_output(out, overwrite=overwrite, kind="file", inputs=inputs)
    with warnings.catch_warnings():
        # the weak-judge warning becomes the one line printed below
        warnings.simplefilter("ignore", RuntimeWarning)
        result = compute_file_scores(
            file,
            n=n,
            seed=seed,
            metrics=list(metric),
            bootstrap=bootstrap,
            judges=judges,
            compat=compat,
            min_judge_accuracy=min_judge_accuracy,
            refuse_weak_judges=refuse_weak_judges,
        )
    if out is not None:
        write_file_scores(result, out)
    cg = result["metrics"].get("cg")
    if cg is not None and not cg["judge_ok"]:
        weak = ", ".join(f"{name} {cg['judge_accuracy'][name]:.3f}" for name in cg["weak_judges"])
        typer.echo(
            f"warning: CG judged by weak judges, below {cg['min_judge_accuracy']:g} held-out accuracy "
            f"({weak}); its values measure the judges as much as the model",
            err=True,
        )
    if out is None:
        typer.echo(dumps_json(result))
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


@app.command("train-judges")
@with_trainer_flags
def train_judges_command(
    out: Path = typer.Option(..., "--out", "-o", help="folder of the judges (one training run per factor)"),
    data: str = typer.Option("dsprites", "--data", help="registered dataset with one categorical field per factor"),
    factor: List[str] = typer.Option(
        [], "--factor", help="factors to classify (repeat; default every factor of dsprites or candle)"
    ),
    data_param: List[str] = typer.Option(
        [], "--data-param", help="dataset parameter key=value (repeat), e.g. data_dir=DIR subset=confounded"
    ),
    train_size: Optional[int] = typer.Option(None, "--train-size", help="training images (default: the dataset's)"),
    test_size: Optional[int] = typer.Option(None, "--test-size", help="test images"),
    epochs: int = typer.Option(3, "--epochs", help="epochs per judge"),
    model: str = typer.Option(
        "attribute-cnn", "--model", help="registered supervised model of every judge (factor-cnn: full resolution)"
    ),
    network_param: List[str] = typer.Option(
        [],
        "--network-param",
        help="network parameter key=value (repeat), e.g. first_stride=1 readout=max width=4 (attribute-cnn)",
    ),
    model_param: List[str] = typer.Option(
        [],
        "--model-param",
        help="training parameter key=value (repeat), e.g. lr=0.001 augment=shift 'augment_ranges=[[-6, 6]]'",
    ),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of the training"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists (once complete)"),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Train the judges (factor classifiers) that CG judges counterfactual images with; prints their test
    accuracy (raw, and identifiable: up to what the images can show)."""
    from repscope.errors import InvalidArgumentError, shown
    from repscope.outputs import inputs_in_mapping, output_target, prepare_output, refuse_output_onto_inputs
    from repscope.studies.candle.cg import judge_records, train_judges
    from repscope.train.registry import MODELS

    if model not in MODELS or not MODELS[model].supervised:
        classifiers = ", ".join(sorted(name for name, entry in MODELS.items() if entry.supervised))
        raise InvalidArgumentError(f"--model: {shown(model)} is not a registered classifier; registered: {classifiers}")

    from repscope.config import parse_assignments
    from repscope.data.candle.dataset import FACTOR_NAMES as CANDLE_FACTORS
    from repscope.studies.candle.disentanglement import DSPRITES_FACTORS

    defaults = {"dsprites": DSPRITES_FACTORS, "candle": list(CANDLE_FACTORS)}
    if not factor and data not in defaults:
        raise InvalidArgumentError(f"--factor: name the factors of {data!r} to classify (repeat --factor)")
    names = list(factor) or list(defaults[data])
    params = parse_assignments(data_param, "--data-param")
    # the data's folder (data_dir=DIR) is read: checked before anything runs
    inputs = inputs_in_mapping(params, "--data-param {key}")
    refuse_output_onto_inputs(out, inputs)
    params.update(
        {key: value for key, value in (("train_size", train_size), ("test_size", test_size)) if value is not None}
    )
    network = parse_assignments(network_param, "--network-param")
    model_params = parse_assignments(model_param, "--model-param")
    if "network_params" in model_params:
        raise InvalidArgumentError("--model-param: give the network's parameters with --network-param")
    if network:
        model_params["network_params"] = network
    if model_params:  # checked as a judge's training would, on the data, before anything is written
        _check_training_params(model, model_params, data, {**params, "target": names[0]})
    trainer = trainer_section(trainer_flags)
    prepare_output(out, overwrite=overwrite, kind="directory", inputs=inputs)
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        accuracies = train_judges(
            data,
            names,
            target,
            data_params=params,
            epochs=epochs,
            seed=seed,
            trainer=trainer,
            model=model,
            model_params=model_params or None,
        )
    for name, record in judge_records(out).items():
        typer.echo(
            f"{name}: test accuracy {record['accuracy']:.3f}, identifiable {record['identifiable_accuracy']:.3f} "
            f"({record['rule']})"
        )
    weak = [name for name, accuracy in accuracies.items() if not accuracy >= DEFAULT_MIN_JUDGE_ACCURACY]
    if weak:
        typer.echo(
            f"warning: {', '.join(weak)} below {DEFAULT_MIN_JUDGE_ACCURACY:g} identifiable test accuracy: "
            "CG judged by them flags judge_ok false "
            "(the CANDLE paper's judges reached 0.989 and 0.995)",
            err=True,
        )
    typer.echo(f"written: {out}")


def _check_training_params(model: str, model_params: dict, data: str, data_params: dict) -> None:
    """Check ``--model-param`` through the training's own path: the config's parameter check, then the task
    built on the data (what a judge's training would refuse, refused before anything is written)."""
    from repscope.train.config import Named, TrainConfig
    from repscope.train.fitting import build_task, load_data

    config = TrainConfig(model=Named(name=model, params=model_params), data=Named(name=data, params=data_params))
    config.check_params("--model-param")
    build_task(config, load_data(config))


# former names (repscope disentangle classifiers): one line naming the new one
add_renamed_commands(app, "disentangle")

# studies: repscope disentangle <study> [CONFIG] [--quick] [--out DIR] [--set key=value ...] (the registry)
add_study_commands(app, "disentangle")
