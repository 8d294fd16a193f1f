"""The disentanglement study on CANDLE (the paper's Table 2, CANDLE half): IRS, UC and CG at rho 1 and 2.

The study of :mod:`repscope.studies.candle.disentanglement` on the paper's observed-confounding subset of
CANDLE (each object in two colours). The images come from ``render.data_dir`` (our renders or the
published folders) or, when it is not set, are rendered with the ``render`` settings into
``$REPSCOPE_HOME/candle/<settings digest>/``, where a later run finds them (an interrupted render is
continued). Models train with the bounding-box reconstruction weight of the paper's section 3
(``box_weight``; 1 turns it off).

The steps: render (or find) the images (:func:`render_folder`, resumable like a training), then the
disentanglement study's on them (:func:`repscope.studies.candle.disentanglement.run_disentangle_study`:
train, :func:`~repscope.studies.candle.disentanglement.compute_disentangle_study`,
:func:`~repscope.studies.candle.disentanglement.write_disentangle_study` and the report, which opens with
a sample of the rendered images, :func:`rendered_sample`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from pydantic import Field

from repscope.cache import exclusive_lock
from repscope.data.candle.dataset import FACTOR_NAMES, folder_records, image_of, read_record
from repscope.data.candle.render import RenderSettings, parse_resolution, render_grid, select_points
from repscope.data.candle.scene import import_bpy
from repscope.data.sources import repscope_home
from repscope.report import Report
from repscope.report.candle_figures import FLAT_STD, near_constant, sample_figure
from repscope.studies.candle.disentanglement import (
    PAPER_TABLE2_CANDLE,
    DisentangleStudyConfig,
    StudyDataSection,
    run_disentangle_study,
)
from repscope.studies.candle.disentanglement import quick as disentangle_quick
from repscope.studies.common import MemberModel, TrainingSection
from repscope.train.config import Section, TrainerSection
from repscope.validation import Seed

BOX_WEIGHT = 10.0


class CandleRenderSection(Section):
    """Where the images come from: a folder, or a render of (part of) the grid."""

    data_dir: str | None = None
    grid: list[str] = Field(default_factory=list)
    limit: int | None = Field(None, ge=1)
    subset: Literal["all", "confounded"] = "confounded"
    samples: int = Field(8, ge=1)
    resolution: str = "320x240"
    hdri_dir: str | None = None
    seed: Seed = 0
    workers: int | None = None


def _candle_models() -> list[MemberModel]:
    models = [("beta-VAE", "beta-vae"), ("beta-TCVAE", "beta-tcvae"), ("DIP-VAE", "dip-vae-i")]
    models.append(("FactorVAE", "factor-vae"))
    params = {"latent_dim": 10, "box_weight": BOX_WEIGHT}
    return [MemberModel(label=label, name=name, params=params) for label, name in models] + [
        MemberModel(label=f"SS-{label}", name=f"{name}-semi", params=params) for label, name in models
    ]


class CandleStudyConfig(DisentangleStudyConfig):
    render: CandleRenderSection = Field(default_factory=CandleRenderSection)
    data: StudyDataSection = Field(
        default_factory=lambda: StudyDataSection(
            name="candle", params={"subset": "confounded", "image_size": 64}, factors=list(FACTOR_NAMES)
        )
    )
    models: list[MemberModel] = Field(default_factory=_candle_models)
    # 1,296 training images (of the subset's 1,620): many epochs make the steps of the dSprites study
    training: TrainingSection = Field(
        default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=100), batch_size=64)
    )
    classifier_epochs: int = Field(30, ge=1)
    evaluation_n: int = Field(1000, ge=10)


# --quick: a small grid of the confounded subset, at low resolution and few samples
QUICK_GRID = ["size=small,large", "rotation=0,45", "light=left,right"]


def quick(config: CandleStudyConfig) -> CandleStudyConfig:
    """Minutes on 2 CPU cores: 240 images (both colours of each object, 2 sizes, 2 rotations, 3 scenes,
    2 lights) rendered at 160x120 with 4 samples, one epoch, the judges for 2 epochs."""
    out = disentangle_quick(config)
    if out.render.data_dir is None:
        out.render = out.render.model_copy(
            update={"grid": list(QUICK_GRID), "resolution": "160x120", "samples": 4, "subset": "confounded"}
        )
    out.classifier_epochs = 2
    out.training.trainer.limit_train_batches = None
    out.evaluation_n = min(out.evaluation_n, 200)
    return out


def render_folder(section: CandleRenderSection, home: Path | None = None) -> Path:
    """The folder of the study's images: ``section.data_dir``, or our render of the section's grid
    (made, or continued, under ``$REPSCOPE_HOME/candle/``)."""
    if section.data_dir is not None:
        return Path(section.data_dir).expanduser()
    import_bpy()  # a missing extra is one line before anything is written
    settings = RenderSettings(
        resolution=parse_resolution(section.resolution),
        samples=section.samples,
        hdri_dir=section.hdri_dir,
        seed=section.seed,
    )
    points = select_points(section.grid, section.limit, section.subset)
    key = json.dumps({"settings": settings.identity(), "points": [p["index"] for p in points]}, sort_keys=True)
    folder = (home or repscope_home()) / "candle" / hashlib.sha256(key.encode()).hexdigest()[:16]
    with exclusive_lock(folder):
        render_grid(folder, settings, points, workers=section.workers)
    return folder


SAMPLE_IMAGES = 12


def rendered_sample(folder: Path, n: int = SAMPLE_IMAGES) -> tuple[np.ndarray, list[str]]:
    """``n`` images of a CANDLE folder spread evenly over its sorted files (rows ``k * N // n``), as RGB
    arrays of one size, and their titles (object, colour, size, rotation, scene, light).

    Parameters
    ----------
    folder : pathlib.Path
        A CANDLE folder (ours or the published files).
    n : int
        Images wanted (all of them when the folder has fewer).

    Returns
    -------
    (numpy.ndarray, list of str)
        ``(n, H, W, 3)`` uint8 images (resized to the first one's size) and one title each.
    """
    files = folder_records(folder)["files"]
    count = min(int(n), len(files))
    rows = (np.arange(count) * len(files)) // count
    images, titles, size = [], [], None
    for row in rows:
        record = read_record(files[row])
        with Image.open(image_of(files[row])) as image:
            rgb = image.convert("RGB")
            size = size or rgb.size
            images.append(np.asarray(rgb.resize(size)))
        titles.append(
            f"{record['object']} {record['color']} {record['size']}\n{record['rotation']}\u00b0 {record['scene']} "
            f"{record['light']}"
        )
    return np.stack(images), titles


def _sample_block(folder: Path) -> Callable[[Report], None]:
    def add(report: Report) -> None:
        images, titles = rendered_sample(folder)
        flat = near_constant(images)
        report.add_heading("The rendered images")
        report.add_figure(
            sample_figure(images, titles),
            caption=f"{len(images)} of the study's images ({folder}), spread evenly over its files",
        )
        if flat.all():
            report.add_warning(
                f"The {len(images)} rendered images shown are flat (pixel standard deviation below {FLAT_STD:g}): "
                "the render shows no object; check the render settings."
            )

    return add


def on_rendered_images(config: CandleStudyConfig, folder: Path) -> CandleStudyConfig:
    """The study's config with its dataset reading ``folder`` (``data.params.data_dir``).

    Parameters
    ----------
    config : CandleStudyConfig
        The study.
    folder : pathlib.Path
        The images (:func:`render_folder`).

    Returns
    -------
    CandleStudyConfig
        A copy; ``config`` is left as it is.
    """
    ready = config.model_copy(deep=True)
    ready.data.params = {**ready.data.params, "data_dir": str(folder)}
    return ready


def run_candle_study(
    config: CandleStudyConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Render (or find) the images, then run the disentanglement study on them (in ``candle-study-<time>``
    by default); returns the report.

    Parameters
    ----------
    config : CandleStudyConfig
        The study.
    out : pathlib.Path, optional
        Its folder (default ``root/candle-study-<time>``).
    root : pathlib.Path
        Parent of the default folder.
    source : str
        Named in error messages.
    quick : bool
        A ``--quick`` run.
    resume : bool
        Continue the study in ``out`` (:func:`repscope.studies.candle.disentanglement.run_disentangle_study`); the
        render is continued too.

    Returns
    -------
    pathlib.Path
        The report.
    """
    folder = render_folder(config.render)
    return run_disentangle_study(
        on_rendered_images(config, folder),
        out=out,
        root=root,
        source=source,
        quick=quick,
        resume=resume,
        kind="candle-study",
        add_intro=_sample_block(folder),
    )


__all__ = [
    "PAPER_TABLE2_CANDLE",
    "CandleStudyConfig",
    "on_rendered_images",
    "quick",
    "render_folder",
    "rendered_sample",
    "run_candle_study",
]
