"""``repscope sprites``: dSprites and CdSprites+ — generate, show, convert, classify, evaluate."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import typer

from repscope.cli.renamed_options import add_renamed_commands
from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import add_study_commands, trainer_section, with_trainer_flags

app = typer.Typer(no_args_is_help=True)


LEVEL_METAVAR = "[1|2|3|4|5]"
LEVEL_HELP = "CdSprites+ level: 1 shape; 2 + size; 3 + colour; 4 + position; 5 + background"
DATASET_CHOICES = Literal["cdsprites", "dsprites"]
SPLIT_CHOICES = Literal["train", "val", "test"]
# repscope.data.multimodal.textures.TEXTURE_FAMILIES, written out: the CLI starts without numpy (a test checks)
FAMILIES_HELP = "noise, stripes, dots, checks, blotches, fabric"


@app.command("generate")
def generate_command(
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="dataset directory to create (new or empty); for dsprites a path ending in .npz writes the "
        "original single-file layout",
    ),
    dataset: DATASET_CHOICES = typer.Option("cdsprites", help="cdsprites or dsprites"),
    level: int = typer.Option(5, metavar=LEVEL_METAVAR, help=LEVEL_HELP),
    n: Optional[int] = typer.Option(
        None, "--n", help="number of samples (default: the paper's size for the split; dsprites: the whole grid)"
    ),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of every random choice"),
    split: SPLIT_CHOICES = typer.Option("train", help="train, val or test: independent sample streams"),
    texture_seed: int = typer.Option(0, callback=check_seed_option, help="seed of the procedural texture bank"),
    texture_dir: Optional[Path] = typer.Option(
        None, "--texture-dir", help="folder of texture photographs to use instead of procedural textures"
    ),
    texture_families: Optional[str] = typer.Option(
        None,
        "--texture-families",
        help="comma-separated procedural texture families to draw from (default all: " + FAMILIES_HELP + ")",
    ),
    caption_edits: int = typer.Option(0, help="misspell each caption with this many letter edits (robustness tests)"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace OUT if it exists (once the new dataset is complete)"
    ),
) -> None:
    """Generate a sprite dataset (images, captions, factors) from a seed."""
    from repscope.data.multimodal.attributes import check_level
    from repscope.outputs import CommandInput, output_target
    from repscope.progress import progress_bar
    from repscope.studies.multimodal.dataset_commands import generate_cdsprites, generate_dsprites
    from repscope.validation import check_positive_int

    n = check_positive_int(n, "--n", allow_none=True)
    inputs = [] if texture_dir is None else [CommandInput(texture_dir, "--texture-dir", "the texture photographs")]
    if dataset == "cdsprites":
        from repscope.data.multimodal.cdsprites import default_size

        level = check_level(level, "--level")
        total = n or default_size(level, split)
        with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
            with progress_bar(f"generating {total} CdSprites+ level-{level} {split} samples", total=total) as update:
                generate_cdsprites(
                    target,
                    level,
                    n,
                    seed=seed,
                    split=split,
                    texture_seed=texture_seed,
                    texture_dir=texture_dir,
                    caption_edits=caption_edits,
                    progress=update,
                    texture_families=None if texture_families is None else texture_families.split(","),
                )
        typer.echo(f"wrote {total} CdSprites+ level-{level} samples -> {out}")
    else:
        from repscope.data.dsprites import TOTAL

        kind = "file" if out.suffix == ".npz" else "directory"
        with output_target(out, overwrite=overwrite, kind=kind, inputs=inputs) as target:
            if kind == "file":  # drawing, then compressing: a bar each
                generate_dsprites(target, n, seed=seed, show_progress=True)
            else:
                with progress_bar(f"generating {n or TOTAL} dSprites images", total=n or TOTAL) as update:
                    generate_dsprites(target, n, seed=seed, progress=update)
        typer.echo(f"wrote {n or TOTAL} dSprites images -> {out}")


@app.command("show")
def show_command(
    dataset_dir: Path = typer.Argument(..., help="a dataset directory written by `repscope sprites generate`"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="PNG to write (default: DATASET_DIR/samples.png)"),
    count: int = typer.Option(32, help="samples to show"),
    ncols: int = typer.Option(8, help="samples per row"),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of the random choice of samples"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the PNG if it exists"),
) -> None:
    """Write a PNG grid of random samples with their captions."""
    from repscope.outputs import CommandInput, output_target
    from repscope.studies.multimodal.dataset_commands import show_dataset

    path = out or dataset_dir / "samples.png"
    # the default PNG lies in the dataset's folder, the one place there that is the command's own
    dataset = CommandInput(dataset_dir, "DATASET_DIR", "the dataset", room=("samples.png",))
    with output_target(path, overwrite=overwrite, inputs=[dataset]) as target:
        show_dataset(dataset_dir, target, count=count, ncols=ncols, seed=seed)
    typer.echo(str(path))


@app.command("export-h5")
def export_h5_command(
    dataset_dir: Path = typer.Argument(..., help="a CdSprites+ dataset directory"),
    out_h5: Optional[Path] = typer.Argument(None, help="h5 file to write (same as --out)"),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="h5 file to write (the reference toolkit's traindata.h5 layout)"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the h5 file if it exists"),
) -> None:
    """Write a dataset as `image` (N x 64 x 64 x 3 uint8 BGR) and `text` (byte strings) in an h5 file."""
    from repscope.data.multimodal.h5 import export_h5
    from repscope.data.store import read_dataset
    from repscope.errors import InvalidArgumentError
    from repscope.outputs import CommandInput, output_target
    from repscope.progress import progress_bar

    if out is not None and out_h5 is not None and out != out_h5:
        raise InvalidArgumentError(f"--out {out} and OUT_H5 {out_h5}: give the h5 file once")
    path = out if out is not None else out_h5
    if path is None:
        raise InvalidArgumentError("--out: missing; name the h5 file to write (-o traindata.h5)")
    inputs = [CommandInput(dataset_dir, "DATASET_DIR", "the dataset")]
    with output_target(path, overwrite=overwrite, inputs=inputs) as target:
        data = read_dataset(dataset_dir)
        with progress_bar(f"exporting {len(data)} samples to {path.name}", total=len(data)) as update:
            export_h5(data, target, progress=update)
    typer.echo(f"wrote {len(data)} samples -> {path}")


@app.command("import-h5")
def import_h5_command(
    in_h5: Path = typer.Argument(..., help="an h5 file with `image` (BGR) and `text` datasets"),
    level: int = typer.Option(..., metavar=LEVEL_METAVAR, help="the CdSprites+ level of its captions"),
    out: Path = typer.Option(..., "--out", "-o", help="dataset directory to create (new or empty)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace OUT if it exists (once the import is complete)"),
) -> None:
    """Convert the reference toolkit's traindata.h5 into a dataset directory (attributes parsed from captions)."""
    from repscope.data.multimodal.attributes import check_level
    from repscope.data.multimodal.h5 import import_h5
    from repscope.data.store import read_dataset
    from repscope.outputs import CommandInput, output_target
    from repscope.progress import progress_bar

    level = check_level(level, "--level")
    inputs = [CommandInput(in_h5, "IN_H5", "the h5 file")]
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        with progress_bar(f"importing {in_h5.name} (level {level})") as update:
            import_h5(in_h5, level, target, progress=update)
    typer.echo(f"wrote {len(read_dataset(out))} samples -> {out}")


@app.command("train-judges")
@with_trainer_flags
def train_judges_command(
    level: int = typer.Option(..., metavar=LEVEL_METAVAR, help=LEVEL_HELP),
    train_size: Optional[int] = typer.Option(None, help="shape judge's training images per epoch (default 200000)"),
    other_train_size: Optional[int] = typer.Option(
        None, help="training images per epoch of the other attributes (default 40000, at most --train-size)"
    ),
    val_size: Optional[int] = typer.Option(None, help="freshly generated validation images"),
    epochs: Optional[int] = typer.Option(None, help="epochs (default: the tuned default)"),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of data and initialisation"),
    held_out_family: str = typer.Option(
        "fabric", help="texture family kept out of training and measured alone (" + FAMILIES_HELP + ")"
    ),
    workers: int = typer.Option(1, "--workers", help="processes drawing the training images (-1: every core)"),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Train (or retrain) the level's judges (attribute classifiers) and cache them under $REPSCOPE_HOME."""
    from repscope.data.multimodal.attributes import check_level
    from repscope.studies.multimodal.judges import default_trainer, judges_dir, train_judges

    level = check_level(level, "--level")
    trainer = trainer_section(trainer_flags, default_trainer())
    options = {
        key: value
        for key, value in (
            ("train_size", train_size),
            ("other_train_size", other_train_size),
            ("val_size", val_size),
            ("epochs", epochs),
        )  # fmt: skip
        if value is not None
    }
    result = train_judges(
        level, seed=seed, held_out_family=held_out_family, trainer=trainer, workers=workers, **options
    )
    family = result["held_out_family"]
    for name, entry in result["attributes"].items():
        flag = "" if entry["meets_target"] else f"  (below the {result['target_accuracy']} target)"
        if family:
            measured = (
                f"{entry['val_accuracy']:.4f} on {entry['n_val']} fresh images of the training textures, "
                f"{entry['held_out_accuracy']:.4f} on {entry['n_held_out']} of the held-out family {family}"
            )
        else:  # levels 1-2: untextured
            measured = f"{entry['val_accuracy']:.4f} and {entry['held_out_accuracy']:.4f} on two sets of fresh images"
        renderer = result["second_renderer"]
        measured += (
            f"; {renderer['accuracy'][name]:.4f} on {renderer['size']} images of a second renderer, "
            f"{renderer['blurred_accuracy'][name]:.4f} on them blurred by {renderer['blur_sigma']:g} px"
        )
        typer.echo(f"{name}: accuracy {measured}, {entry['train_seconds']:.0f} s{flag}")
    if not result["second_renderer"]["meets_target"]:
        targets = result["second_renderer"]["targets"]
        typer.echo(
            f"warning: below the targets on the second renderer ({targets['accuracy']:g} sharp, "
            f"{targets['blurred_accuracy']:g} blurred): a model's images may be judged wrongly",
            err=True,
        )
    typer.echo(f"-> {judges_dir(level)}")


@app.command("classify")
@with_trainer_flags
def classify_command(
    dataset_dir: Path = typer.Argument(..., help="a CdSprites+ dataset directory"),
    level: Optional[int] = typer.Option(None, metavar=LEVEL_METAVAR, help="CdSprites+ level (default: the dataset's)"),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="folder for predictions.csv and classification.json (default: DATASET_DIR)"
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace predictions.csv and classification.json if they exist"
    ),
    trainer_flags: Optional[dict] = None,
) -> None:
    """Predict every attribute with the level's judges (trained on first use); report per-attribute accuracy."""
    from repscope.progress import progress_bar
    from repscope.studies.multimodal.dataset_commands import classify_dataset
    from repscope.studies.multimodal.judges import default_trainer

    trainer = trainer_section(trainer_flags, default_trainer())
    with progress_bar(f"classifying {dataset_dir.name}") as update:
        result = classify_dataset(
            dataset_dir, level=level, out=out, progress=update, overwrite=overwrite, trainer=trainer
        )
    folder = out or dataset_dir
    if result.get("warning"):
        typer.echo(f"warning: {result['warning']}", err=True)
    for name, value in result["accuracy"].items():
        typer.echo(f"{name}: {100 * value:.2f}% of {result['count']}")
    typer.echo(f"no shape recognised: {100 * result['rejected']:.2f}%")
    typer.echo(f"all attributes right: {100 * result['all_attributes_right']:.2f}% -> {folder}")


# --------------------------------------------------------------------------------------------
# studies: repscope sprites <study> ..., made from the study registry (repscope.studies.registry);
# `evaluate FOLDER --level L` is the coherency study

add_study_commands(app, "sprites")
add_renamed_commands(app, "sprites")
