"""``repscope assess MODEL``: a researcher's own trained model through every assessment that fits its role.

The command parses and prints; :func:`repscope.studies.assess.api.assess` does the work and
:meth:`~repscope.studies.assess.assessment.Assessment.write` writes the run directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal, Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import with_trainer_flags

ROLE_CHOICES = Literal["encoder", "classifier", "generator", "multimodal"]
RANGE_CHOICES = Literal["0-1", "0-255", "standardised"]
COMPAT_CHOICES = Literal["paper", "reference"]
SEARCH_CHOICES = Literal["art", "dqa", "both"]
BACKEND_CHOICES = Literal["local", "ray"]


@with_trainer_flags
def assess_command(
    model: str = typer.Argument(
        ...,
        metavar="MODEL",
        help="pkg.module:factory (or file.py:factory), a TorchScript / torch.export .pt, an .onnx file, "
        "or a repscope run directory",
    ),
    role: Optional[ROLE_CHOICES] = typer.Option(
        None, "--role", help="what the model is (default: detected where unambiguous, e.g. a repscope run)"
    ),
    data: Optional[str] = typer.Option(
        None,
        "--data",
        help="registered dataset (encoder: dsprites; classifier, generator: digits; multimodal: cdsprites), "
        "a dataset folder, or an .npz with images and factors (encoder) or labels (classifier)",
    ),
    data_param: List[str] = typer.Option([], "--data-param", help="dataset parameter key=value (repeat)"),
    out: Path = typer.Option(..., "--out", "-o", help="run directory: metrics.json, tables, arrays, report"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (once the new one is whole)"),
    resume: bool = typer.Option(False, "--resume", help="continue --out (the zero-shot trainings it holds)"),
    model_arg: List[str] = typer.Option([], "--model-arg", help="factory keyword argument key=value (repeat)"),
    weights: Optional[Path] = typer.Option(None, "--weights", help="state_dict file for the factory's module"),
    decoder: Optional[str] = typer.Option(None, "--decoder", help="encoder role: its decoder (codes -> images)"),
    input_size: Optional[str] = typer.Option(None, "--input-size", help="input height and width: 28 or 64x64"),
    channels: Optional[int] = typer.Option(None, "--channels", help="input channels (1 grey, 3 colour)"),
    input_range: Optional[RANGE_CHOICES] = typer.Option(
        None, "--input-range", help="what the model takes: 0-1, 0-255, or standardised with --mean / --std"
    ),
    mean: Optional[str] = typer.Option(None, "--mean", help="per-channel means of a standardised input: 0.5,0.5,0.5"),
    std: Optional[str] = typer.Option(None, "--std", help="per-channel standard deviations of a standardised input"),
    n: Optional[int] = typer.Option(None, "--n", help="examples to assess on (a seeded draw; each role's default)"),
    seed: int = typer.Option(0, "--seed", callback=check_seed_option, help="seed of every draw"),
    batch_size: int = typer.Option(256, "--batch-size", help="images per forward pass"),
    metric: List[str] = typer.Option([], "--metric", help="encoder: only these registered metrics (repeat)"),
    compat: COMPAT_CHOICES = typer.Option(
        "paper", "--compat", help="paper: the printed definitions; reference: the authors' released code"
    ),
    judges: Optional[Path] = typer.Option(None, "--judges", help="judges folder for CG (CANDLE renders)"),
    bootstrap: int = typer.Option(0, "--bootstrap", help="encoder: bootstrap resamples of each metric's CI"),
    transform: List[str] = typer.Option([], "--transform", help="classifier: invariance families (repeat)"),
    assessor: Optional[Path] = typer.Option(None, "--assessor", help="assessors.skops of invariance assess train"),
    attacks: bool = typer.Option(True, "--attacks/--no-attacks", help="classifier: the black-box attacks"),
    attack_n: Optional[int] = typer.Option(None, "--attack-n", help="classifier: images attacked"),
    budget: int = typer.Option(100, "--budget", help="classifier: CMA-ES generations per attacked image (art)"),
    search: SEARCH_CHOICES = typer.Option("art", "--search", help="attack search: the toolkit's, the authors' or both"),
    zeroshot: Optional[str] = typer.Option(
        None, "--zeroshot", help="classifier: pkg.module:factory to train the n+1 models, or their folder"
    ),
    zeroshot_epochs: int = typer.Option(3, "--zeroshot-epochs", help="epochs of each zero-shot training"),
    workers: Optional[int] = typer.Option(None, "--workers", help="zero-shot trainings at once (-1: all cores)"),
    backend: BACKEND_CHOICES = typer.Option("local", "--backend", help="zero-shot trainings locally or on Ray"),
    latent_dim: Optional[int] = typer.Option(None, "--latent-dim", help="generator: its input size"),
    codes: Optional[str] = typer.Option(None, "--codes", help="generator: code dimensions to correlate: 0,1"),
    level: Optional[int] = typer.Option(
        None, "--level", help="multimodal: CdSprites+ level 1-5 (a repscope run: its own)"
    ),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Assess your own model: every repscope assessment that fits its role, beside the papers' values.

    The model runs on --accelerator (default cpu; gpu, mps or auto); the zero-shot trainings take every
    Trainer flag."""
    from repscope.studies.assess.command import run_assess_command  # noqa: PLC0415
    from repscope.studies.assess.writing import headline_text  # noqa: PLC0415

    assessment, report = run_assess_command(locals())
    typer.echo(headline_text(assessment))
    for note in assessment.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"report: {report}")
