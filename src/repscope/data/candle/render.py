"""Render the CANDLE grid (or part of it) into a folder the ``candle`` dataset reads.

``repscope candle render --out DIR`` lays out, for every grid point, ``<index>.png`` and
``<index>.json`` (the CANDLE layout, :mod:`repscope.data.candle.scene`) plus ``render.json``, the
settings that decide the images. A point counts as rendered when both of its files exist; each is
written atomically (PNG first), so an interrupted render leaves only whole images and ``--resume``
renders the rest. Shards (``--shard i/n``) are disjoint and their union is the grid, so machines
sharing a folder each render their shard into it. Local workers (``--workers N``) and Ray
(``--backend ray``) split the points still to render into parts that run through the sweep runner
(:func:`repscope.sweeps.run_sweep`); its bookkeeping stays in the hidden ``DIR/.render/``.

Blender starts and builds the scene once per process (a few seconds), then renders point after
point, so a part holds many points.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from repscope import version_stamp
from repscope.data.candle.dataset import confounded_mask
from repscope.data.candle.grid import (
    GRID_FACTORS,
    grid_points,
    image_seed,
    image_stem,
    parse_grid,
    parse_shard,
    pending_points,
    shard_points,
)
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_json_atomic
from repscope.progress import progress_bar
from repscope.resume_check import differences, refuse_changes

MANIFEST = "render.json"
STATE_DIR = ".render"
POINTS_PER_RAY_PART = 50  # a Ray part pays Blender's start-up once for this many images


@dataclass(frozen=True)
class RenderSettings:
    """What decides the images (resolution, samples, denoising, HDRIs, seed) and how they are made.

    Parameters
    ----------
    resolution : tuple of int
        Width and height in pixels.
    samples : int
        Cycles samples per pixel.
    denoise : bool
        OpenImageDenoise on the rendered image.
    hdri_dir : str, optional
        Folder of ``<scene>.hdr|.exr`` panoramas (default: the procedural scenes).
    seed : int
        Base seed of every image's draws (0: the dataset's).
    device : {"auto", "cpu", "gpu"}
        Where Cycles renders.
    threads : int
        Cycles CPU threads (0: every core, or a worker's share).
    """

    resolution: tuple[int, int] = (320, 240)
    samples: int = 8
    denoise: bool = True
    hdri_dir: str | None = None
    seed: int = 0
    device: Literal["auto", "cpu", "gpu"] = "auto"
    threads: int = 0

    def identity(self) -> dict[str, Any]:
        """The settings the images depend on (not where they render), as ``render.json`` stores them.

        Returns
        -------
        dict
            ``resolution``, ``samples``, ``denoise``, ``hdri_dir`` and ``seed``.
        """
        values = asdict(self)
        return {
            "resolution": list(values["resolution"]),
            "samples": values["samples"],
            "denoise": values["denoise"],
            "hdri_dir": None if self.hdri_dir is None else str(Path(self.hdri_dir).expanduser().absolute()),
            "seed": values["seed"],
        }


def parse_resolution(text: str) -> tuple[int, int]:
    """``"WxH"`` as ``(W, H)``.

    Parameters
    ----------
    text : str
        The ``--resolution`` option, e.g. ``"320x240"``.

    Returns
    -------
    tuple of int
        Width and height.

    Raises
    ------
    InvalidArgumentError
        Naming ``--resolution`` when the text is not ``WxH`` with both at least 16.
    """
    left, sep, right = str(text).lower().partition("x")
    try:
        width, height = int(left), int(right)
    except ValueError:
        width = height = 0
    if not sep or width < 16 or height < 16:
        raise InvalidArgumentError(f"--resolution {text!r}: expected WIDTHxHEIGHT of at least 16x16, e.g. 320x240")
    return width, height


def select_points(
    grid: list[str] | tuple[str, ...] = (),
    limit: int | None = None,
    subset: Literal["all", "confounded"] = "all",
    shard: str | None = None,
) -> list[dict[str, Any]]:
    """The grid points a render covers: the ``--grid`` sub-grid, ``limit`` of its points spread evenly
    over it, the confounded subset if asked, then shard ``i`` of ``n``.

    Parameters
    ----------
    grid : sequence of str
        ``--grid factor=v1,v2`` options (:func:`repscope.data.candle.grid.parse_grid`).
    limit : int, optional
        ``limit`` points of the sub-grid spread evenly over it (:func:`repscope.data.candle.grid.grid_points`:
        positions ``k * n // limit`` of its ``n`` points, in grid order), so every object of ``--grid`` is
        rendered when ``limit`` allows it.
    subset : {"all", "confounded"}
        ``confounded`` keeps each object in its two colours of the paper's observed-confounding
        subset (:data:`repscope.data.candle.dataset.CONFOUNDED_COLORS`), 1,620 of the 4,050 points.
    shard : str, optional
        ``"i/n"``: every ``n``-th of those points from position ``i``.

    Returns
    -------
    list of dict
        The points, in grid order, each with its full-grid ``index``.

    Raises
    ------
    InvalidArgumentError
        Naming the option that is wrong, or when nothing is left to render.
    """
    if subset not in ("all", "confounded"):
        raise InvalidArgumentError(f"--subset: expected all or confounded, got {subset!r}")
    points = grid_points(parse_grid(list(grid)), limit)
    if subset == "confounded":
        classes = [
            [GRID_FACTORS[name].index(point[name]) for name in ("object", "color")] + [0] * 4 for point in points
        ]
        keep = confounded_mask(classes) if classes else []
        points = [point for point, kept in zip(points, keep) if kept]
    if shard is not None:
        points = shard_points(points, *parse_shard(shard))
    if not points:
        raise InvalidArgumentError("--grid/--limit/--subset/--shard: no grid point is left to render")
    return points


def _check_manifest(out: Path, settings: RenderSettings) -> None:
    """Write ``render.json``, or check that the one there was made with the same settings."""
    path = out / MANIFEST
    identity = settings.identity()
    if path.exists():
        try:
            stored = json.loads(path.read_text())["settings"]
        except (OSError, ValueError, KeyError, TypeError):
            raise DataFormatError(f"{path}: not a render manifest (remove it or choose another --out)") from None
        if not isinstance(stored, dict):
            raise DataFormatError(f"{path}: not a render manifest (remove it or choose another --out)")
        found = differences(stored, identity)
        refuse_changes(
            found,
            str(out),
            "where the images render (--device, --threads, --workers, --backend, --address)",
            verb="rendered",
        )
        return
    write_json_atomic(
        path,
        {
            "format": "candle-render",
            "settings": identity,
            "grid_factors": {name: list(values) for name, values in GRID_FACTORS.items()},
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "repscope": version_stamp(),
        },
    )


def render_points(
    points: list[dict[str, Any]], out: str | Path, settings: RenderSettings, progress: bool | None = None
) -> dict[str, Any]:
    """Render ``points`` into ``out`` in this process (one Blender scene for all of them).

    Parameters
    ----------
    points : list of dict
        Grid points (:func:`select_points`); those already rendered are skipped.
    out : str or Path
        The render folder (exists).
    settings : RenderSettings
        The render settings.
    progress : bool, optional
        False shows no bar.

    Returns
    -------
    dict
        ``rendered`` (images made now), ``skipped`` (already there), ``seconds`` (rendering only),
        ``setup_seconds`` (Blender start-up and scene building) and ``device``.
    """
    from repscope.data.candle.scene import CandleStage  # noqa: PLC0415 -- needs bpy

    out = Path(out)
    pending = pending_points(points, out)
    # a scene switch rebuilds Cycles' scene data (~0.4 s); the grid switches scene every 3 points, so
    # the points are rendered scene by scene (each index's image does not depend on the order)
    scenes = GRID_FACTORS["scene"]
    pending.sort(key=lambda point: (scenes.index(point["scene"]), point["index"]))
    summary: dict[str, Any] = {"rendered": 0, "skipped": len(points) - len(pending), "seconds": 0.0}
    summary.update(setup_seconds=0.0, device=None)
    if not pending:
        return summary
    clock = time.perf_counter()
    stage = CandleStage(
        resolution=settings.resolution,
        samples=settings.samples,
        denoise=settings.denoise,
        device=settings.device,
        hdri_dir=settings.hdri_dir,
        threads=settings.threads,
        scenes=sorted({point["scene"] for point in pending}),
    )
    summary["setup_seconds"] = round(time.perf_counter() - clock, 3)
    summary["device"] = stage.device
    clock = time.perf_counter()
    with progress_bar(f"rendering {len(pending)} CANDLE images", total=len(pending), enabled=progress) as update:
        for done, point in enumerate(pending, start=1):
            stem = image_stem(point["index"])
            record = stage.render(point, image_seed(point["index"], settings.seed), out / f"{stem}.png")
            write_json_atomic(out / f"{stem}.json", record)  # after the image: both there = rendered
            summary["rendered"] = done
            update(done)
    summary["seconds"] = round(time.perf_counter() - clock, 3)
    return summary


def render_part(
    overrides: list[str],
    run_dir: Path,
    resume: bool,
    *,
    out: str,
    points: list[dict[str, Any]],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """Sweep target: render part ``i`` of ``n`` of ``points`` (``overrides == ["part=i/n"]``).

    Parameters
    ----------
    overrides : list of str
        ``["part=i/n"]``.
    run_dir : Path
        The part's bookkeeping folder (under ``out/.render/``).
    resume : bool
        Unused: what is rendered is read from ``out`` itself.
    out : str
        The render folder.
    points : list of dict
        Every point of the render.
    settings : dict
        :class:`RenderSettings` fields.

    Returns
    -------
    dict
        The part's row: ``rendered``, ``skipped``, ``seconds``, ``setup_seconds``, ``device``.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    part = dict(item.split("=", 1) for item in overrides)["part"]
    values = dict(settings)
    values["resolution"] = tuple(values["resolution"])
    if not values.get("threads"):  # a worker's share of the cores (the sweep runner sets it)
        values["threads"] = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    summary = render_points(shard_points(points, *parse_shard(part)), Path(out), RenderSettings(**values), False)
    return {key: value for key, value in summary.items() if value is not None}


def written_images(out: Path, points: list[dict[str, Any]]) -> int:
    """How many of ``points`` have their record in ``out`` (written after the image: both are there).

    Parameters
    ----------
    out : pathlib.Path
        The render folder.
    points : list of dict
        Grid points.

    Returns
    -------
    int
        The count, from one listing of the folder.
    """
    with os.scandir(out) as entries:
        names = {entry.name for entry in entries}
    return sum(f"{image_stem(point['index'])}.json" in names for point in points)


@contextlib.contextmanager
def _counting_written_images(
    out: Path, points: list[dict[str, Any]], update: Callable[[int], None], every_seconds: float = 1.0
) -> Iterator[None]:
    """Call ``update(images written)`` every ``every_seconds`` from a thread while the block runs, and once
    at its end."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(every_seconds):
            update(written_images(out, points))

    thread = threading.Thread(target=watch, name="candle-render-count", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    update(written_images(out, points))


def render_grid(
    out: str | Path,
    settings: RenderSettings,
    points: list[dict[str, Any]],
    *,
    workers: int | None = None,
    backend: Literal["local", "ray"] = "local",
    address: str | None = None,
    cpus_per_run: float | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Render the ``points`` still missing from ``out`` (the folder exists; its manifest is checked).

    Parameters
    ----------
    out : str or Path
        The render folder (made when missing).
    settings : RenderSettings
        The render settings; a folder rendered with others is refused.
    points : list of dict
        :func:`select_points`.
    workers : int, optional
        Local worker processes (each Blender with its share of the cores); with Ray, the most parts
        at once.
    backend : {"local", "ray"}
        ``ray`` runs the parts as Ray Tune trials (``repscope[ray]``); ``out`` must be a folder
        every node sees.
    address : str, optional
        Ray cluster to join (default: a local instance).
    cpus_per_run : float, optional
        Ray: CPUs per part.
    progress : bool, optional
        False shows no bar.

    Returns
    -------
    dict
        ``points``, ``rendered``, ``skipped``, ``seconds`` (wall), ``seconds_per_image`` (rendering
        only, summed over processes), ``setup_seconds`` and ``device``.

    Raises
    ------
    InvalidArgumentError
        A folder rendered with other settings, a bad worker or Ray option, or parts that failed.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_manifest(out, settings)
    pending = pending_points(points, out)
    clock = time.perf_counter()
    parallel = backend == "ray" or (workers is not None and workers != 1)
    if not parallel or not pending:
        summary = render_points(pending, out, settings, progress)
        rows = [summary]
    else:
        from repscope.resources import resolve_jobs  # noqa: PLC0415
        from repscope.sweeps import describe_interrupted_sweep, expand_grid, run_sweep  # noqa: PLC0415

        if backend == "ray":
            parts = max(1, math.ceil(len(pending) / POINTS_PER_RAY_PART))
        else:
            parts = min(resolve_jobs(workers, "--workers"), len(pending))
        grid = expand_grid(["part=" + ",".join(f"{k}/{parts}" for k in range(parts))])
        state = out / STATE_DIR / datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
        fields = asdict(settings)
        # the bar counts images, read off the folder: the parts' own count (0/2 until a part ends) stood still
        # for a whole render, 20 minutes for the 4,050-point grid at 160x120 on 2 cores
        unit = "processes" if backend == "local" else "Ray parts"
        description = f"rendering {len(pending)} CANDLE images in {parts} {unit}"
        with progress_bar(description, total=len(pending), enabled=progress) as update:
            with _counting_written_images(out, pending, update):
                try:
                    result = run_sweep(
                        grid,
                        "repscope.data.candle.render:render_part",
                        state,
                        common={"out": str(out.absolute()), "points": pending, "settings": fields},
                        workers=workers,
                        backend=backend,
                        address=address,
                        cpus_per_run=cpus_per_run,
                        description="rendering CANDLE parts",
                        progress=False,
                    )
                except KeyboardInterrupt:
                    # the last line counts images, as the bar did ("0 of 2 runs complete" after 1,151 images)
                    done = written_images(out, pending) + len(points) - len(pending)
                    describe_interrupted_sweep(state, f"{done} of {len(points)} images rendered")
                    raise
        if result.failed:
            first = result.failed[0]
            raise InvalidArgumentError(
                f"candle render: {len(result.failed)} of {parts} parts failed; first: {first.error_type}: "
                f"{first.message} (rerun with --resume to render what is missing)"
            )
        rows = [row for row in result.summary.to_dict("records")]
    rendered = int(sum(float(row.get("rendered") or 0) for row in rows))
    busy = sum(float(row.get("seconds") or 0) for row in rows)
    devices = sorted({str(row["device"]) for row in rows if isinstance(row.get("device"), str)})
    return {
        "points": len(points),
        "rendered": rendered,
        "skipped": len(points) - len(pending),
        "seconds": round(time.perf_counter() - clock, 3),
        "seconds_per_image": round(busy / rendered, 3) if rendered else None,
        "setup_seconds": round(max((float(row.get("setup_seconds") or 0) for row in rows), default=0.0), 3),
        "device": ", ".join(devices) or None,
    }


__all__ = [
    "MANIFEST",
    "RenderSettings",
    "parse_resolution",
    "render_grid",
    "render_part",
    "render_points",
    "select_points",
    "written_images",
]
