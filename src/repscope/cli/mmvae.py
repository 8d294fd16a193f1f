"""``repscope mmvae``: multimodal VAEs on CdSprites+ (train them with ``repscope train``)."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("evaluate")
def evaluate_command(
    run_dir: Path = typer.Argument(..., help="run directory of repscope train with mvae, mmvae or mopoe on cdsprites"),
    n: int = typer.Option(1000, "--n", help="fresh test samples per direction"),
    seed: int = typer.Option(0, help="seed of the test samples and of the generation"),
) -> None:
    """Cross- and joint-coherency (Strict / Features / Letters) of a trained multimodal VAE."""
    from repscope.studies.mmvae import evaluate_run

    results = evaluate_run(run_dir, n=n, seed=seed)
    for direction in ("text_to_image", "image_to_text", "joint"):
        part = results.get(direction)
        if part:
            letters = f", letters {part['letters']:.1f}%" if "letters" in part else ""
            typer.echo(f"{direction}: strict {part['strict']:.1f}%, features {part['features']:.3f}{letters}")
    typer.echo(f"written: {Path(run_dir) / 'evaluation' / 'coherency.json'}")
