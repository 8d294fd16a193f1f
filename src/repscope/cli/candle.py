"""``repscope candle``: render the CANDLE causal grid with Blender; the CANDLE disentanglement study."""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal, Optional

import typer

from repscope.cli.seeds import check_seed_option
from repscope.cli.studies import add_study_commands

app = typer.Typer(no_args_is_help=True)

DEVICE_CHOICES = Literal["auto", "cpu", "gpu"]
SUBSET_CHOICES = Literal["all", "confounded"]
BACKEND_CHOICES = Literal["local", "ray"]


@app.command("render")
def render_command(
    out: Path = typer.Option(..., "--out", "-o", help="folder of <index>.png + <index>.json and render.json"),
    grid: List[str] = typer.Option(
        [],
        "--grid",
        help="sub-grid, factor=v1,v2 (repeat): object, color, size, rotation (degrees), scene, light",
    ),
    limit: Optional[int] = typer.Option(
        None,
        "--limit",
        help="N points spread evenly over the whole (sub-)grid (every (n/N)-th point in grid order, the same on every "
        "run), so each object and colour of --grid is kept when N allows",
    ),
    subset: SUBSET_CHOICES = typer.Option(
        "all", "--subset", help="confounded: each object in its two colours only (the paper's study subset)"
    ),
    samples: int = typer.Option(8, "--samples", help="Cycles samples per pixel"),
    resolution: str = typer.Option("320x240", "--resolution", help="WIDTHxHEIGHT in pixels"),
    denoise: bool = typer.Option(True, "--denoise/--no-denoise", help="OpenImageDenoise after sampling"),
    shard: Optional[str] = typer.Option(
        None, "--shard", help="i/n: this machine's share (disjoint; the n shards make the grid)"
    ),
    hdri_dir: Optional[Path] = typer.Option(
        None, "--hdri-dir", help="folder of panoramic HDRIs <scene>.hdr|.exr instead of the procedural scenes"
    ),
    device: DEVICE_CHOICES = typer.Option("auto", "--device", help="auto: a GPU when Cycles finds one, else CPU"),
    seed: int = typer.Option(
        0, "--seed", callback=check_seed_option, help="base seed of the images' draws (0: the dataset's)"
    ),
    threads: int = typer.Option(0, "--threads", help="Cycles CPU threads (0: all cores)"),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="local Blender processes sharing the cores (-1: one per core)"
    ),
    backend: BACKEND_CHOICES = typer.Option("local", "--backend", help="local, or Ray (repscope[ray])"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: a local instance)"),
    cpus_per_run: Optional[float] = typer.Option(None, "--cpus-per-run", help="Ray: CPUs per part"),
    resume: bool = typer.Option(False, "--resume", help="render what --out still lacks"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out"),
) -> None:
    """Render CANDLE images with Blender Cycles (pip install 'repscope[candle]'); default: the 4,050-point grid."""
    from repscope.data.candle.grid import GRID_FACTORS
    from repscope.data.candle.render import RenderSettings, parse_resolution, render_grid, select_points
    from repscope.data.candle.scene import hdri_files, import_bpy
    from repscope.errors import InvalidArgumentError
    from repscope.outputs import CommandInput, output_target, refuse_output_onto_inputs
    from repscope.progress import format_seconds

    if address is not None and backend != "ray":
        raise InvalidArgumentError("--address: only with --backend ray")
    if threads < 0:
        raise InvalidArgumentError(f"--threads: expected 0 or more, got {threads}")
    inputs = [] if hdri_dir is None else [CommandInput(hdri_dir, "--hdri-dir", "the HDRI folder")]
    if not resume:  # before the grid and the Blender extra are looked at
        refuse_output_onto_inputs(out, inputs)
    settings = RenderSettings(
        resolution=parse_resolution(resolution),
        samples=samples,
        denoise=denoise,
        hdri_dir=None if hdri_dir is None else str(hdri_dir),
        seed=seed,
        device=device,
        threads=threads,
    )
    if samples < 1:
        raise InvalidArgumentError(f"--samples: expected a positive integer, got {samples}")
    points = select_points(grid, limit, subset, shard)
    if hdri_dir is not None:
        hdri_files(hdri_dir, [scene for scene in GRID_FACTORS["scene"] if any(p["scene"] == scene for p in points)])
    import_bpy()  # before anything is written: a missing extra is one line, not an empty folder
    with output_target(out, overwrite=overwrite, resume=resume, kind="directory", inputs=inputs) as target:
        summary = render_grid(
            target,
            settings,
            points,
            workers=workers,
            backend=backend,
            address=address,
            cpus_per_run=cpus_per_run,
        )
    per_image = summary["seconds_per_image"]
    speed = f", {per_image:.2f} s per image on {summary['device']}" if per_image else ""
    typer.echo(
        f"rendered {summary['rendered']} image{'' if summary['rendered'] == 1 else 's'} "
        f"({summary['skipped']} already there) of {summary['points']} "
        f"in {format_seconds(summary['seconds'])}{speed}"
    )
    typer.echo(f"written: {out}")


@app.command("pairs")
def pairs_command(
    data_dir: Path = typer.Argument(
        ..., help="a CANDLE folder: ours or the published files (<name>.png + <name>.json)"
    ),
    differ: List[str] = typer.Option(
        ..., "--differ", help="factor that differs within a pair (repeat): object, color, size, rotation, scene, light"
    ),
    n: int = typer.Option(1000, "--n", help="pairs to draw (with replacement)"),
    seed: int = typer.Option(0, "--seed", callback=check_seed_option, help="seed of the draw"),
    subset: SUBSET_CHOICES = typer.Option("all", "--subset", help="confounded: the paper's subset only"),
    out: Path = typer.Option(..., "--out", "-o", help="CSV: first, second (files), <factor>_first, <factor>_second"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out"),
) -> None:
    """Pairs of images that differ in exactly the chosen factors (weak supervision), as a CSV."""
    from repscope.data.candle.dataset import pair_table
    from repscope.fileio import write_text_atomic
    from repscope.outputs import CommandInput, prepare_output

    prepare_output(out, overwrite=overwrite, kind="file", inputs=[CommandInput(data_dir, "DATA_DIR", "the images")])
    table = pair_table(data_dir, list(differ), n, seed, subset)
    write_text_atomic(out, table.to_csv(index=False))
    typer.echo(f"{len(table)} pairs differing in {', '.join(differ)}; written: {out}")


# studies: repscope candle <study> [CONFIG] [--quick] [--out DIR] [--set key=value ...] (the registry)
add_study_commands(app, "candle")
