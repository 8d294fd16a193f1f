"""``repscope mmvae``: multimodal VAEs on CdSprites+ (train them with ``repscope train``): evaluate, leaderboard."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import trainer_section, with_trainer_flags

app = typer.Typer(no_args_is_help=True)

# repscope.studies.multimodal.evaluate's defaults, written out: `repscope --help` does not import the study (torch)
EVALUATE_DEFAULT_N = 1000
EVALUATE_DEFAULT_K = 30
EVALUATE_DEFAULT_N_ANALYSIS = 1000
EVALUATE_ACCELERATOR_BATCH_SIZE = 1024
EVALUATE_CPU_BATCH_SIZES = {"forward": 256, "log_likelihood": 64}


@app.command("evaluate")
@with_trainer_flags
def evaluate_command(
    run_dir: Path = typer.Argument(..., help="run directory of repscope train with a multimodal VAE on cdsprites"),
    n: int = typer.Option(
        EVALUATE_DEFAULT_N, "--n", help="fresh test samples per coherency direction (the paper used 10000)"
    ),
    seed: int = typer.Option(
        0,
        callback=check_seed_option,
        help="seed of the test samples, the generation and every random step of the analysis",
    ),
    k: int = typer.Option(
        EVALUATE_DEFAULT_K,
        "--k",
        help="importance samples per example of the log-likelihood estimates: the estimate tightens as K grows, "
        "its cost grows linearly (K=30 on 1000 samples: about 45 s of CPU time for the shipped config's networks, "
        "most of the evaluation's time on the CPU; see --accelerator)",
    ),
    analysis: bool = typer.Option(
        True,
        "--analysis/--no-analysis",
        help="also estimate test log-likelihoods, probe the latents linearly, draw their t-SNE and traversals",
    ),
    n_analysis: int = typer.Option(
        EVALUATE_DEFAULT_N_ANALYSIS,
        "--n-analysis",
        help="test samples of the log-likelihoods, linear probes and t-SNE (at least 20)",
    ),
    sample: bool = typer.Option(
        False, "--sample/--mean", help="cross-generate from a posterior sample, or from its mean (default)"
    ),
    joint_traversal_steps: Optional[int] = typer.Option(
        None,
        "--joint-traversal-steps",
        help="joint coherency by traversals (the paper's A.2.3): values per latent dimension, the others at 0 "
        "(default: min(N, 1000); 0: not measured)",
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="evaluation folder (default: RUN_DIR/evaluation)"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace the evaluation folder if it exists (once the new one is complete)"
    ),
    batch_size: Optional[int] = typer.Option(
        None,
        "--batch-size",
        help="examples per pass of the model (each with K samples in the log-likelihoods); default "
        f"{EVALUATE_CPU_BATCH_SIZES['log_likelihood']} for the log-likelihoods and "
        f"{EVALUATE_CPU_BATCH_SIZES['forward']} elsewhere on the CPU, {EVALUATE_ACCELERATOR_BATCH_SIZE} on a GPU. "
        "The random draws follow the batches: another batch size gives other (equally valid) estimates",
    ),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Coherency (Strict / Features / Letters), test log-likelihoods, linear factorisation, t-SNE and latent
    traversals of a trained multimodal VAE; one HTML report.

    The model runs on --accelerator (default cpu: the numbers of earlier evaluations; gpu or auto for a GPU);
    the level's judges (attribute classifiers), when they are not cached yet, train on the Trainer flags."""
    from repscope.studies.multimodal.evaluate import evaluate_run
    from repscope.studies.multimodal.judges import default_trainer

    flags = dict(trainer_flags or {})
    folder = out if out is not None else run_dir / "evaluation"
    metrics = evaluate_run(
        run_dir,
        n=n,
        seed=seed,
        k=k,
        analysis=analysis,
        n_analysis=n_analysis,
        sample=sample,
        joint_traversal_steps=joint_traversal_steps,
        out=folder,
        overwrite=overwrite,
        accelerator=flags.get("accelerator") or "cpu",
        batch_size=batch_size,
        trainer=trainer_section(flags, default_trainer()),
    )
    for line in _evaluation_lines(metrics):
        typer.echo(line)
    typer.echo(f"written: {folder / 'report.html'} ({metrics['seconds']:.0f} s on {metrics['device']})")


def _evaluation_lines(metrics: dict) -> list[str]:
    """The headline numbers of an evaluation's ``metrics.json`` as the command prints them: coherency per
    direction (by our rules, the toolkit's beside them), the log-likelihoods and the linear probes."""
    lines = []
    for direction in ("text_to_image", "image_to_text", "joint", "joint_traversal"):
        if f"{direction}_strict" in metrics:
            letters = metrics.get(f"{direction}_letters")
            tail = f", letters {letters:.1f}%" if letters is not None else ""
            toolkit = ""
            if f"{direction}_strict_toolkit" in metrics:  # the authors' scoring rules, beside ours
                toolkit_letters = metrics.get(f"{direction}_letters_toolkit")
                toolkit = (
                    f" (toolkit's rules: strict {metrics[f'{direction}_strict_toolkit']:.1f}%, features "
                    f"{metrics[f'{direction}_features_toolkit']:.2f}/{metrics['level']}"
                    + (f", letters {toolkit_letters:.1f}%" if toolkit_letters is not None else "")
                    + ")"
                )
            lines.append(
                f"{direction}: strict {metrics[f'{direction}_strict']:.1f}%, "
                f"features {metrics[f'{direction}_features']:.2f}/{metrics['level']}{tail}{toolkit}"
            )
    likelihoods = {key: value for key, value in metrics.items() if key.startswith("log_likelihood_")}
    if likelihoods:
        shown = ", ".join(f"{key.removeprefix('log_likelihood_')} {value:.1f}" for key, value in likelihoods.items())
        lines.append(f"log-likelihood (nats, k={metrics['k']}): {shown}")
    probes = {
        key.removeprefix("linear_"): value
        for key, value in metrics.items()
        if key.startswith("linear_") and key.count("_") == 1
    }
    if probes:
        shown = ", ".join(
            f"{name} {100 * value:.1f}% (chance {100 * metrics[f'linear_{name}_chance']:.1f}%)"
            for name, value in probes.items()
        )
        lines.append(f"linear probe on the joint latents: {shown}")
    return lines


@app.command("leaderboard")
def leaderboard_command(
    run_dirs: list[Path] = typer.Argument(
        ...,
        metavar="RUN_DIRS...",
        help="evaluated run directories, or sweep folders holding them (searched one level down)",
    ),
    out: Path = typer.Option(
        Path("leaderboard"), "--out", "-o", help="folder for leaderboard.md, leaderboard.csv and leaderboard.html"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUT if it exists (once the new one is written)"),
) -> None:
    """The paper's Table 4 (level x model; mean (std) over seeds) from evaluated runs: Markdown, CSV, HTML."""
    from repscope.studies.multimodal.leaderboard import build_leaderboard

    result = build_leaderboard(run_dirs, out, overwrite=overwrite)
    for warning in result["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(result["markdown"], nl=False)
    typer.echo(f"{result['runs']} runs -> {out}")
