"""``repscope data``: list, inspect and download data sources."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("info")
def info_command(
    source: str = typer.Argument(
        ..., help="mnist-sample, fashion-mnist, mnist, a directory of MNIST files, or a .npy/.npz file"
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="directory holding the source's files"),
) -> None:
    """Per split: image count, image shape and dtype, images per label."""
    import numpy as np

    from repscope.data.sources import load_splits

    splits = load_splits(source, data_dir=data_dir)
    typer.echo(f"source: {source}")
    for name, part in splits.items():
        height_width = "x".join(str(size) for size in part.images.shape[1:])
        typer.echo(f"{name}: {len(part.images)} images of {height_width} {part.images.dtype} from {part.origin}")
        if part.labels is None:
            typer.echo("  labels: none")
        else:
            values, counts = np.unique(part.labels, return_counts=True)
            typer.echo("  labels: " + " ".join(f"{int(v)}:{int(c)}" for v, c in zip(values, counts)))


@app.command("list")
def list_command() -> None:
    """The named sources and whether each is available on this machine."""
    from repscope.data.sources import available_sources

    infos = available_sources()
    width = max(len(info.name) for info in infos)
    for info in infos:
        state = "available" if info.available else "missing  "
        typer.echo(f"{info.name:<{width}}  {state}  {info.description}")


@app.command("download")
def download_command(
    name: Literal["mnist", "fashion-mnist"] = typer.Argument(..., help="mnist or fashion-mnist"),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="directory to put the files in (default $REPSCOPE_HOME/datasets/NAME); "
        "files already there and verified are kept",
    ),
) -> None:
    """Download a dataset's files, verify their checksums and that they parse as MNIST IDX."""
    from repscope.data.download import download_dataset
    from repscope.outputs import prepare_output

    if out is not None:
        # a download fills a folder and keeps the verified files it finds there: only a file in
        # the way is refused
        prepare_output(out, resume=True, kind="directory")
    directory = download_dataset(name, dest_dir=out, progress=True)
    typer.echo(f"{name}: ready in {directory}")
