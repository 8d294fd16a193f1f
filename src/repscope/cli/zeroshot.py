"""``repscope zeroshot``: the Raw Zero-Shot test: soft-label metrics, black-box attacks, the study."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import add_study_commands

app = typer.Typer(no_args_is_help=True)


@app.command("metrics")
def metrics_command(
    soft_labels: Path = typer.Argument(
        ...,
        help="softlabels.npz: loo_<i> (m_i, n-1) and full_<i> (m_i, n) per class; kind: probabilities (default) "
        "or capsule_lengths (a CapsNet's raw lengths); the result's soft_label_kind says which was read",
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON of the metrics (default: printed)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """Soft-label metrics of a softlabels.npz: the paper's DBI and Amalgam Metric, the standard Davies-Bouldin index."""
    from repscope.fileio import dumps_json
    from repscope.outputs import CommandInput, prepare_output
    from repscope.studies.zeroshot.scoring import score_soft_labels_file

    if out is not None:
        inputs = [CommandInput(soft_labels, "SOFT_LABELS", "the soft-labels")]
        prepare_output(out, overwrite=overwrite, kind="file", inputs=inputs)
    result = score_soft_labels_file(soft_labels, out=out)
    if out is None:
        typer.echo(dumps_json(result))
        return
    typer.echo(
        f"DBI {result['dbi']:.4f} +/- {result['dbi_std']:.4f}, Davies-Bouldin {result['davies_bouldin']:.4f}, "
        f"AM {result['am']:.4f} +/- {result['am_std']:.4f} (per image {result['am_per_image']:.4f}), "
        f"on {result['soft_label_kind']}"
    )
    typer.echo(f"written: {out}")


@app.command("attack")
def attack_command(
    model: str = typer.Option(
        ...,
        "--model",
        help="run directory of repscope train, a .ckpt or a state_dict file (with --arch), pkg.module:factory or "
        "file.py:factory, a TorchScript / torch.export file (.pt, .pt2) or an .onnx file (never a pickle)",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="folder: attacks.csv (per image), counts.csv, metrics.json"),
    arch: Optional[str] = typer.Option(
        None,
        "--arch",
        help="registered model of a .ckpt (lenet5, capsnet, ...), or network of a state_dict file (registered or "
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
    norm: List[str] = typer.Option(["l0", "linf"], "--norm", help="l0 (pixels) or linf (repeat)", metavar="[l0|linf]"),
    threshold: List[int] = typer.Option([1, 3, 5, 10], "--threshold", help="pixels (l0) or 0-255 levels (linf)"),
    n: int = typer.Option(100, "--n", help="test images attacked (a seeded draw of correctly classified ones)"),
    budget: int = typer.Option(100, "--budget", help="CMA-ES generations per image and threshold (--search art)"),
    search: str = typer.Option(
        "art",
        "--search",
        help="art: the adversarial-robustness-toolbox's search (up to --budget generations); dqa: the authors' "
        "DQA search, one CMA-ES generation of 400 candidates (the paper's Table 1)",
        metavar="[art|dqa]",
    ),
    seed: int = typer.Option(0, "--seed", callback=check_seed_option, help="seed of the image draw and of CMA-ES"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once complete)"),
) -> None:
    """L0 (pixel) and L-infinity (threshold) black-box attacks with CMA-ES on a trained classifier (Table 1)."""
    from repscope.cli.invariance import model_inputs
    from repscope.config import parse_assignments
    from repscope.models.external import parse_model_args
    from repscope.outputs import inputs_in_mapping, output_target
    from repscope.studies.zeroshot.attack_study import attack_classifier, check_search

    params = parse_assignments(data_param, "--data-param")
    model_args = parse_model_args(model_arg)
    check_search(search)
    inputs = [*model_inputs(model, weights), *inputs_in_mapping(params, "--data-param {key}")]
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        counts = attack_classifier(
            model, target, arch, data, params, list(norm), list(threshold), n, budget, seed, search=search,
            model_args=model_args, weights=weights,
        )  # fmt: skip
    for _, row in counts.iterrows():
        typer.echo(f"{row['norm']} threshold {row['threshold']}: {row['successes']} of {row['images']} succeeded")
    typer.echo(f"written: {out}")


add_study_commands(app, "zeroshot")
