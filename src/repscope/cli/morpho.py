"""``repscope morpho``: measure digits, build the Morpho-MNIST datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import add_study_commands

app = typer.Typer(no_args_is_help=True)


SPLIT_CHOICES = Literal["train", "t10k", "all"]
METHOD_CHOICES = Literal["fast", "reference"]
COMPAT_CHOICES = Literal["none", "published"]
PLAIN_RENDER_CHOICES = Literal["rendered", "source-bytes"]


@app.command("measure")
def measure_command(
    source: str = typer.Argument(
        ..., help="mnist-sample, fashion-mnist, mnist, a directory of MNIST files, or a .npy/.npz file"
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="CSV file to write (index, label, area, length, thickness, slant, width, height, valid)",
    ),
    split: SPLIT_CHOICES = typer.Option("all", help="train, t10k, or all (train then t10k)"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="directory holding the source's files"),
    workers: int = typer.Option(1, "--workers", help="worker processes; -1 all cores, -2 all but one"),
    method: METHOD_CHOICES = typer.Option("fast", help="fast (batched) or reference (per-image scikit-image)"),
    compat: COMPAT_CHOICES = typer.Option(
        "none",
        help="none: this pipeline on today's scikit-image; published: the values of the released "
        "Morpho-MNIST *-morpho.csv files (scikit-image <= 0.18 procedure)",
    ),
    limit: Optional[int] = typer.Option(None, help="measure only the first N digits"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the output if it exists"),
) -> None:
    """Measure area, stroke length and thickness, slant, width and height of every digit."""
    from repscope.errors import InvalidArgumentError
    from repscope.resources import resolve_jobs
    from repscope.studies.morpho.measure import measure_source

    if out is None:
        raise InvalidArgumentError("--out: missing; name the CSV file to write (-o FILE.csv)")
    table = measure_source(
        source,
        out,
        split=split,
        data_dir=data_dir,
        jobs=resolve_jobs(workers, name="--workers"),
        method=method,
        compat=compat,
        limit=limit,
        overwrite=overwrite,
    )
    valid = int(table["valid"].sum())
    typer.echo(f"measured {len(table)} digits ({valid} valid) -> {out}")


@app.command("build")
def build_command(
    out: Path = typer.Option(..., "--out", "-o", help="directory to write the sets into (new or empty)"),
    source: str = typer.Option("mnist-sample", help="source of the plain digits"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="directory holding the source's files"),
    seed: int = typer.Option(0, callback=check_seed_option, help="seed of every random choice"),
    sets: str = typer.Option(
        ",".join(["plain", "thin", "thic", "swel", "frac", "global", "local"]),
        help="comma-separated sets to write, of plain thin thic swel frac global local",
    ),
    test_fraction: float = typer.Option(0.2, help="t10k share when the source has a single split"),
    train_size: Optional[int] = typer.Option(None, help="keep a seeded class-stratified sample of N training digits"),
    test_size: Optional[int] = typer.Option(None, help="keep a seeded class-stratified sample of N test digits"),
    copies: int = typer.Option(1, "--copies", help="draw each training digit K times, each copy perturbed anew"),
    test_copies: int = typer.Option(1, "--test-copies", help="the same for the t10k digits"),
    plain_render: PLAIN_RENDER_CHOICES = typer.Option(
        "rendered",
        "--plain-render",
        help="rendered: plain digits written as downscale(binarise(upscale(digit))), the path perturbed "
        "digits take (the published recipe); source-bytes: the source's bytes",
    ),
    compat: COMPAT_CHOICES = typer.Option("none", help="measurement mode of the morpho.csv files (see morpho measure)"),
    workers: int = typer.Option(1, "--workers", help="worker processes; -1 all cores, -2 all but one"),
    resume: bool = typer.Option(False, "--resume", help="finish an interrupted build in OUT"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace OUT if it holds files (once the new build is complete)"
    ),
) -> None:
    """Write the Morpho-MNIST sets (plain thin thic swel frac global local) in MNIST format."""
    from repscope.data.morpho.build import BuildConfig, build_dataset
    from repscope.outputs import CommandInput, output_target
    from repscope.progress import progress_bar
    from repscope.resources import resolve_jobs

    jobs = resolve_jobs(workers, name="--workers")
    config = BuildConfig(
        source=source,
        data_dir=None if data_dir is None else str(data_dir),
        seed=seed,
        sets=tuple(s.strip() for s in sets.split(",") if s.strip()),
        test_fraction=test_fraction,
        train_size=train_size,
        test_size=test_size,
        copies=copies,
        test_copies=test_copies,
        plain_render=plain_render,
        compat=compat,
    )
    # a source that is a file or folder (not a name), and the folder of its files, are read: never replaced
    inputs = [CommandInput(source, "--source", "the digits")]
    if data_dir is not None:
        inputs.append(CommandInput(data_dir, "--data-dir", "the digits' folder"))
    with output_target(out, overwrite=overwrite, resume=resume, kind="directory", inputs=inputs) as target:
        with progress_bar(f"building Morpho-MNIST {', '.join(config.sets)} from {source}") as update:
            manifest = build_dataset(target, config, resume=resume, jobs=jobs, progress=update)
    counts = ", ".join(f"{name}: {c['train']}+{c['t10k']}" for name, c in manifest["counts"].items())
    typer.echo(f"built {counts} (train+t10k) -> {out}")


# --------------------------------------------------------------------------------------------
# studies: repscope morpho <study> [CONFIG] [--quick] [--out DIR] [--set key=value ...], made from
# the study registry (repscope.studies.registry)

add_study_commands(app, "morpho")
