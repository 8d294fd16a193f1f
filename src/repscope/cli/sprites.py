"""``repscope sprites``: dSprites and CdSprites+ — generate, show, convert, classify, evaluate."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("generate")
def generate_command(
    out: Path = typer.Option(..., "--out", help="dataset directory to create (new or empty); for dsprites a path ending in .npz writes the original single-file layout"),
    dataset: str = typer.Option("cdsprites", help="cdsprites or dsprites"),
    level: int = typer.Option(5, help="CdSprites+ level 1-5"),
    n: Optional[int] = typer.Option(None, "--n", help="number of samples (default: the paper's size for the split; dsprites: the whole grid)"),
    seed: int = typer.Option(0, help="seed of every random choice"),
    split: str = typer.Option("train", help="train, val or test: independent sample streams"),
    texture_seed: int = typer.Option(0, help="seed of the procedural texture bank"),
    texture_dir: Optional[Path] = typer.Option(None, "--texture-dir", help="folder of texture photographs to use instead of procedural textures"),
    caption_edits: int = typer.Option(0, help="misspell each caption with this many letter edits (robustness tests)"),
) -> None:
    """Generate a sprite dataset (images, captions, factors) from a seed."""
    from repscope.errors import InvalidArgumentError
    from repscope.progress import progress_bar
    from repscope.studies.sprites import generate_cdsprites, generate_dsprites

    if n is not None and n < 1:
        raise InvalidArgumentError(f"--n: must be at least 1, got {n}")
    if dataset == "cdsprites":
        from repscope.data.sprites.cdsprites import default_size

        total = n or default_size(level, split)
        with progress_bar(f"level {level} {split}", total=total) as update:
            path = generate_cdsprites(out, level, n, seed=seed, split=split, texture_seed=texture_seed,
                                      texture_dir=texture_dir, caption_edits=caption_edits, progress=update)
        typer.echo(f"wrote {total} CdSprites+ level-{level} samples -> {path}")
    elif dataset == "dsprites":
        from repscope.data.sprites.dsprites import TOTAL

        with progress_bar("dsprites", total=n or TOTAL) as update:
            path = generate_dsprites(out, n, seed=seed, progress=update)
        typer.echo(f"wrote {n or TOTAL} dSprites images -> {path}")
    else:
        raise InvalidArgumentError(f"--dataset: must be cdsprites or dsprites, got {dataset!r}")


@app.command("show")
def show_command(
    dataset_dir: Path = typer.Argument(..., help="a dataset directory written by `repscope sprites generate`"),
    out: Optional[Path] = typer.Option(None, "--out", help="PNG to write (default: DATASET_DIR/samples.png)"),
    count: int = typer.Option(32, help="samples to show"),
    ncols: int = typer.Option(8, help="samples per row"),
    seed: int = typer.Option(0, help="seed of the random choice of samples"),
) -> None:
    """Write a PNG grid of random samples with their captions."""
    from repscope.studies.sprites import show_dataset

    path = show_dataset(dataset_dir, out or dataset_dir / "samples.png", count=count, ncols=ncols, seed=seed)
    typer.echo(str(path))


@app.command("export-h5")
def export_h5_command(
    dataset_dir: Path = typer.Argument(..., help="a CdSprites+ dataset directory"),
    out_h5: Path = typer.Argument(..., help="h5 file to write (the reference toolkit's traindata.h5 layout)"),
) -> None:
    """Write a dataset as `image` (N x 64 x 64 x 3 uint8 BGR) and `text` (byte strings) in an h5 file."""
    from repscope.data.sprites.store import export_h5, read_dataset
    from repscope.progress import progress_bar

    data = read_dataset(dataset_dir)
    with progress_bar("exporting", total=len(data)) as update:
        path = export_h5(data, out_h5, progress=update)
    typer.echo(f"wrote {len(data)} samples -> {path}")


@app.command("import-h5")
def import_h5_command(
    in_h5: Path = typer.Argument(..., help="an h5 file with `image` (BGR) and `text` datasets"),
    level: int = typer.Option(..., help="the CdSprites+ level of its captions"),
    out: Path = typer.Option(..., "--out", help="dataset directory to create (new or empty)"),
) -> None:
    """Convert the reference toolkit's traindata.h5 into a dataset directory (attributes parsed from captions)."""
    from repscope.data.sprites.store import import_h5, read_dataset
    from repscope.progress import progress_bar

    with progress_bar("importing") as update:
        path = import_h5(in_h5, level, out, progress=update)
    typer.echo(f"wrote {len(read_dataset(path))} samples -> {path}")


@app.command("train-classifiers")
def train_classifiers_command(
    level: int = typer.Option(..., help="CdSprites+ level 1-5"),
    train_size: Optional[int] = typer.Option(None, help="training images (default: the tuned default)"),
    val_size: Optional[int] = typer.Option(None, help="freshly generated validation images"),
    epochs: Optional[int] = typer.Option(None, help="epochs (default: the tuned default)"),
    seed: int = typer.Option(0, help="seed of data and initialisation"),
) -> None:
    """Train (or retrain) the level's attribute classifiers and cache them under $REPSCOPE_HOME."""
    from repscope.data.sprites.attributes import check_level
    from repscope.train.attribute_classifiers import classifiers_dir, train_classifiers

    level = check_level(level, "--level")
    options = {key: value for key, value in (("train_size", train_size), ("val_size", val_size), ("epochs", epochs)) if value is not None}
    result = train_classifiers(level, seed=seed, **options)
    for name, entry in result["attributes"].items():
        flag = "" if entry["meets_target"] else f"  (below the {result['target_accuracy']} target)"
        typer.echo(f"{name}: validation accuracy {entry['val_accuracy']:.4f} on {entry['n_val']} fresh images, "
                   f"{entry['train_seconds']:.0f} s{flag}")
    typer.echo(f"-> {classifiers_dir(level)}")


@app.command("classify")
def classify_command(
    dataset_dir: Path = typer.Argument(..., help="a CdSprites+ dataset directory"),
    level: Optional[int] = typer.Option(None, help="CdSprites+ level (default: the dataset's)"),
    out: Optional[Path] = typer.Option(None, "--out", help="folder for predictions.csv and classification.json (default: DATASET_DIR)"),
) -> None:
    """Predict every attribute with the level's classifiers; report per-attribute accuracy."""
    from repscope.progress import progress_bar
    from repscope.studies.sprites import classify_dataset

    with progress_bar("classifying") as update:
        result = classify_dataset(dataset_dir, level=level, out=out, progress=update)
    for name, value in result["accuracy"].items():
        typer.echo(f"{name}: {100 * value:.2f}% of {result['count']}")
    typer.echo(f"all attributes right: {100 * result['all_attributes_right']:.2f}% -> {out or dataset_dir}")


@app.command("evaluate")
def evaluate_command(
    folder: Path = typer.Argument(..., help="folder of a model's outputs: text_to_image/, image_to_text/, joint/ (see --help)"),
    level: int = typer.Option(..., help="CdSprites+ level 1-5"),
    out: Optional[Path] = typer.Option(None, "--out", help="run directory to write (default: runs/sprites-evaluate-<time>)"),
) -> None:
    """Cross- and joint-coherency (Strict / Features / Letters) of generated outputs.

    FOLDER/text_to_image/{truth.txt, images.npy}, FOLDER/image_to_text/{truth.txt, captions.txt},
    FOLDER/joint/{images.npy, captions.txt}; any of the three may be missing. Images: (N, 64, 64, 3)
    RGB, uint8 or float in [0, 1]. Captions: one per line.
    """
    from repscope.report import Report
    from repscope.runs import RunDirectory
    from repscope.studies.sprites import coherency_table, evaluate_outputs

    results = evaluate_outputs(folder, level)
    run = RunDirectory.create("sprites-evaluate", out=out)
    run.write_config({"command": "sprites evaluate", "folder": str(folder.resolve()), "level": level})
    run.write_metrics(results)
    table = coherency_table(results)
    run.write_table("coherency", table)
    report = Report("CdSprites+ coherency", subtitle=f"{folder}, level {level}")
    report.add_paragraph("Strict: % of samples with every attribute right. Features: mean number of right "
                         "attributes per sample (of the level's). Letters: % of caption characters right, "
                         "position by position. Images are judged by the level's attribute classifiers.")
    report.add_table(table, title="Coherency")
    report_path = run.write_report(report)
    typer.echo(table.to_string(index=False))
    typer.echo(str(report_path))
