"""The demo study: a small Morpho-MNIST build from the embedded real digits, measured and reported.

What ``make demo`` runs. It builds the seven Morpho-MNIST sets from ``mnist-sample`` (a few
hundred digits), reads back the morphometrics the builder measured after each perturbation, and
writes a run directory with the distribution of every morphometric per digit class (as the
paper's Fig. 3), example grids of every perturbation, the effect of each perturbation on the
morphometrics, and a self-contained ``report.html``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field
from scipy import ndimage

from repscope.config import Section
from repscope.data import idx
from repscope.data.morpho.build import SETS, BuildConfig, build_dataset
from repscope.data.morpho.morphometrics import MORPHOMETRICS
from repscope.progress import progress_bar
from repscope.report import Report
from repscope.report.figures import distributions_by_class, image_grid
from repscope.run_directory import RunDirectory
from repscope.studies.morpho.diversity import (
    DiversityConfig,
    add_diversity_section,
    compute_diversity,
    train_generators,
    write_comparison,
    write_diversity_files,
)
from repscope.studies.multimodal.dataset_commands import cdsprites_panel
from repscope.train.config import TrainerSection
from repscope.validation import Seed

MORPHOMETRIC_LABELS = {
    "area": "area (px²)",
    "length": "length (px)",
    "thickness": "thickness (px)",
    "slant": "slant (rad)",
    "width": "width (px)",
    "height": "height (px)",
}


class DemoConfig(Section):
    source: str = "mnist-sample"
    seed: Seed = 0
    train_size: int = Field(600, ge=1)
    test_size: int = Field(200, ge=1)
    jobs: int = Field(1, ge=1)
    examples: int = Field(10, ge=1)
    # the small diversity study: a low- and a higher-dimensional generator vs the test digits
    diversity: bool = True
    diversity_epochs: int = Field(5, ge=1)
    diversity_samples: int = Field(2000, ge=1)
    diversity_train: int | None = Field(None, ge=1)  # generators' training digits (None: the whole train split)
    # where the generators train (accelerator, devices, precision, ...); their epochs are diversity_epochs
    trainer: TrainerSection = Field(default_factory=TrainerSection)


def _read_set(root: Path, set_name: str, split: str) -> dict[str, Any]:
    folder = root / set_name
    out: dict[str, Any] = {
        "images": idx.read_idx(folder / f"{split}-images-idx3-ubyte.gz"),
        "labels": idx.read_idx(folder / f"{split}-labels-idx1-ubyte.gz"),
        "morpho": pd.read_csv(folder / f"{split}-morpho.csv"),
    }
    pert = folder / f"{split}-pert-idx1-ubyte.gz"
    if pert.exists():
        out["pert"] = idx.read_idx(pert)
    return out


def _effects(sets: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Median of each morphometric per set, and its ratio to the plain digits' (same digits)."""
    rows = []
    plain = sets["plain"]["morpho"]
    for name, data in sets.items():
        morpho = data["morpho"]
        row: dict[str, Any] = {"set": name, "digits": len(morpho)}
        for metric in MORPHOMETRICS:
            row[f"median_{metric}"] = float(np.nanmedian(morpho[metric]))
            if metric in ("area", "length", "thickness", "width", "height"):
                row[f"ratio_{metric}"] = float(np.nanmedian(morpho[metric] / plain[metric]))
        rows.append(row)
    return pd.DataFrame(rows)


def _components_added(plain: np.ndarray, perturbed: np.ndarray) -> float:
    """Share of digits whose binarised image gained 8-connected components."""
    structure = np.ones((3, 3), dtype=bool)
    gained = [
        ndimage.label(b >= 128, structure)[1] > ndimage.label(a >= 128, structure)[1] for a, b in zip(plain, perturbed)
    ]
    return float(np.mean(gained))


def diversity_config(config: DemoConfig) -> Any:
    """The demo's diversity study: VAEs with a 2-d and a 16-d latent, trained briefly on the plain
    training digits (on the demo's ``trainer``), compared with the test digits by MMD on morphometrics.
    (VAEs rather than the paper's GANs: a few CPU epochs train them reliably; ``repscope morpho
    diversity`` runs the GANs.)"""
    return DiversityConfig.model_validate(
        {
            "data": {"source": config.source, "seed": config.seed, "train_size": config.diversity_train},
            "models": [
                {"label": "VAE 2-d", "name": "beta-vae", "params": {"latent_dim": 2, "beta": 1.0}},
                {"label": "VAE 16-d", "name": "beta-vae", "params": {"latent_dim": 16, "beta": 1.0}},
            ],
            "training": {
                "trainer": config.trainer.model_copy(update={"max_epochs": config.diversity_epochs}),
                "batch_size": 64,
            },
            "samples": config.diversity_samples,
            "quadratic_max_samples": 1000,
            "permutations": 200,
            "seed": config.seed,
        }
    )


def _add_diversity(config: DemoConfig, run: RunDirectory, report: Report) -> dict[str, Any]:
    """Run the small diversity study inside the demo's run and add its section to ``report``; its
    headline numbers, with the seconds it took."""
    started = time.perf_counter()
    diversity = diversity_config(config)
    generators = train_generators(diversity, run, source="demo")
    result = compute_diversity(
        diversity, generators, on_compared=lambda member, compared: write_comparison(compared, member, run)
    )
    write_diversity_files(result, run)
    add_diversity_section(report, result, diversity, run)
    return {**result.metrics, "seconds": round(time.perf_counter() - started, 1)}


def _one_per_class(labels: np.ndarray, count: int) -> np.ndarray:
    """Indices of ``count`` digits taking the classes in turn (first digit of each class, then
    the second, ...), so an example grid shows every class rather than the first class only."""
    by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    picked: list[int] = []
    for rank in range(max(len(m) for m in by_class)):
        picked += [int(m[rank]) for m in by_class if rank < len(m)]
        if len(picked) >= count:
            break
    return np.array(picked[:count], dtype=np.int64)


def _add_cdsprites_panel(config: DemoConfig, run: Any, report: Any) -> None:
    figure = run.save_figure("cdsprites_levels", cdsprites_panel(seed=config.seed))
    report.add_heading("CdSprites+ (generated)")
    report.add_paragraph(
        "Captioned sprites of the multimodal benchmark, one row per level: level 1 varies the shape; 2 adds "
        "the size; 3 the textured colour; 4 the quadrant; 5 the textured background. Generated on demand "
        "from a seed (`repscope sprites generate --level N`)."
    )
    report.add_figure(figure, caption="Test-split samples of each CdSprites+ level with their captions.")


# the single-perturbation sets shown one above the other in the examples grid, and their row labels
EXAMPLE_SETS = {"plain": "plain", "thin": "thin", "thic": "thick", "swel": "swollen", "frac": "fractured"}
# the mixed sets, whose digits are titled with the perturbation each received (its code in *-pert files)
MIXED_SETS = ("global", "local")
PERTURBATION_NAMES = {0: "plain", 1: "thin", 2: "thick", 3: "swel", 4: "frac"}


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured on the Morpho-MNIST sets it built.

    Attributes
    ----------
    train_morphometrics : pandas.DataFrame
        The plain training digits' morphometrics, with their ``label``.
    effects : pandas.DataFrame
        Per set, the median of each morphometric and its ratio to the same plain digits' (:func:`_effects`).
    medians_per_class : pandas.DataFrame
        The median of each morphometric per digit class of the plain training digits (cf. Fig. 3).
    examples : dict of str to numpy.ndarray
        Per set, the test digits the figures show (the same digits in every set, the classes in turn).
    perturbations : dict of str to numpy.ndarray
        Per mixed set (``global``, ``local``), the perturbation code of each digit shown.
    metrics : dict
        The headline numbers by name, as ``metrics.json`` holds them.
    files : list of str
        The files of the built dataset.
    build_seconds : float
        The seconds the build took.
    """

    train_morphometrics: pd.DataFrame
    effects: pd.DataFrame
    medians_per_class: pd.DataFrame
    examples: dict[str, np.ndarray]
    perturbations: dict[str, np.ndarray]
    metrics: dict[str, Any]
    files: list[str]
    build_seconds: float


def run_demo(config: DemoConfig, out: Path | None = None, root: Path = Path("runs")) -> Path:
    """Run the demo and return the path of its ``report.html``.

    Parameters
    ----------
    config : DemoConfig
        The demo's settings.
    out : pathlib.Path, optional
        The run directory (default ``root/demo-<time>``).
    root : pathlib.Path
        Parent of the default run directory.

    Returns
    -------
    pathlib.Path
        The report.
    """
    run = RunDirectory.create("demo", out=out, root=root)
    build_config = BuildConfig(
        source=config.source, seed=config.seed, train_size=config.train_size, test_size=config.test_size
    )
    run.write_config({"study": "morpho-demo", **config.model_dump(mode="json"), "build": build_config.to_dict()})
    manifest, build_seconds = build_demo_sets(config, build_config, run.path("dataset"))
    result = compute_demo(read_built_sets(run.path("dataset")), manifest, build_seconds, config.examples)
    write_demo(result, run)
    report = demo_report(result, config, run)
    metrics = dict(result.metrics)
    if config.diversity:
        metrics["diversity"] = _add_diversity(config, run, report)
        run.write_metrics(metrics)
    _add_cdsprites_panel(config, run, report)
    report.add_heading("Files")
    report.add_code("\n".join(sorted(result.files)))
    return report.write(run.path("report.html"))


def build_demo_sets(config: DemoConfig, build_config: BuildConfig, folder: Path) -> tuple[dict[str, Any], float]:
    """Build the seven Morpho-MNIST sets into ``folder``, counted digit by digit on the progress display
    (the demo's longest step: every set of every digit).

    Parameters
    ----------
    config : DemoConfig
        The demo's settings (its source and worker processes).
    build_config : BuildConfig
        What to build.
    folder : pathlib.Path
        The dataset folder.

    Returns
    -------
    (dict, float)
        The dataset's manifest (:func:`~repscope.data.morpho.build.build_dataset`) and the seconds the build took.
    """
    started = time.perf_counter()
    with progress_bar(f"building the Morpho-MNIST sets from {config.source}") as update:
        manifest = build_dataset(folder, build_config, jobs=config.jobs, progress=update)
    return manifest, time.perf_counter() - started


def read_built_sets(folder: Path) -> dict[str, dict[str, Any]]:
    """The built sets the demo measures: every set's test split (by set name) and, as ``train-plain``,
    the plain training digits; each a dict of ``images``, ``labels``, ``morpho`` (and ``pert``)."""
    sets = {name: _read_set(folder, name, "t10k") for name in SETS}
    sets["train-plain"] = _read_set(folder, "plain", "train")
    return sets


def compute_demo(
    sets: dict[str, dict[str, Any]], manifest: dict[str, Any], build_seconds: float, examples: int
) -> DemoResult:
    """Measure what the build did: the plain digits' morphometrics per class, each perturbation's effect,
    the headline numbers and the digits the figures show (no files written).

    Parameters
    ----------
    sets : dict
        The built sets (:func:`read_built_sets`).
    manifest : dict
        The build's manifest (its ``counts`` and ``files``).
    build_seconds : float
        The seconds the build took.
    examples : int
        Digits shown per set.

    Returns
    -------
    DemoResult
    """
    test_sets = {name: sets[name] for name in SETS}
    train_plain = sets["train-plain"]
    morpho_train = train_plain["morpho"].assign(label=train_plain["labels"].astype(int))
    effects = _effects(test_sets)
    shown = _one_per_class(test_sets["plain"]["labels"], examples)
    return DemoResult(
        train_morphometrics=morpho_train,
        effects=effects,
        medians_per_class=morpho_train.groupby("label")[list(MORPHOMETRICS)].median().reset_index(),
        examples={name: data["images"][shown] for name, data in test_sets.items()},
        perturbations={name: test_sets[name]["pert"][shown] for name in MIXED_SETS},
        metrics=_demo_metrics(test_sets, effects, manifest, build_seconds),
        files=list(manifest["files"]),
        build_seconds=build_seconds,
    )


def _demo_metrics(
    test_sets: dict[str, dict[str, Any]], effects: pd.DataFrame, manifest: dict[str, Any], build_seconds: float
) -> dict[str, Any]:
    """The demo's headline numbers: the build's size and speed, the plain medians, and how far each
    perturbation moved the morphometric it acts on."""
    digits_built = sum(c["train"] + c["t10k"] for c in manifest["counts"].values())
    ratio = effects.set_index("set")
    return {
        "digits": {
            "train": int(manifest["counts"]["plain"]["train"]),
            "t10k": int(manifest["counts"]["plain"]["t10k"]),
        },
        "build_seconds": round(build_seconds, 2),
        "build_digits_per_second": round(digits_built / build_seconds, 1),
        "plain_test_medians": {m: float(ratio.loc["plain", f"median_{m}"]) for m in MORPHOMETRICS},
        "thickness_ratio_thickened": float(ratio.loc["thic", "ratio_thickness"]),
        "thickness_ratio_thinned": float(ratio.loc["thin", "ratio_thickness"]),
        "area_ratio_swollen": float(ratio.loc["swel", "ratio_area"]),
        "fractured_share_with_more_components": _components_added(
            test_sets["plain"]["images"], test_sets["frac"]["images"]
        ),
        "invalid_digits": int((~test_sets["plain"]["morpho"]["valid"].astype(bool)).sum()),
    }


def write_demo(result: DemoResult, run: RunDirectory) -> None:
    """Write the demo's tables, figures and ``metrics.json`` into ``run``.

    Parameters
    ----------
    result : DemoResult
        What :func:`compute_demo` found.
    run : RunDirectory
        The demo's run directory.
    """
    run.write_table("plain_train_morphometrics", result.train_morphometrics)
    run.write_table("perturbation_effects", result.effects)
    run.write_table("plain_medians_per_class", result.medians_per_class)
    run.save_figure(
        "morphometrics_per_class",
        distributions_by_class(
            result.train_morphometrics, list(MORPHOMETRICS), class_column="label", column_labels=MORPHOMETRIC_LABELS
        ),
    )
    columns = len(result.examples["plain"])
    run.save_figure(
        "perturbation_examples",
        image_grid(
            np.concatenate([result.examples[name] for name in EXAMPLE_SETS]),
            nrows=len(EXAMPLE_SETS),
            ncols=columns,
            row_labels=list(EXAMPLE_SETS.values()),
        ),
    )
    titles = [PERTURBATION_NAMES[int(code)] for name in MIXED_SETS for code in result.perturbations[name]]
    run.save_figure(
        "mixed_sets_examples",
        image_grid(
            np.concatenate([result.examples[name] for name in MIXED_SETS]),
            nrows=len(MIXED_SETS),
            ncols=columns,
            titles=titles,
            row_labels=list(MIXED_SETS),
        ),
    )
    run.write_metrics(result.metrics)


def demo_report(result: DemoResult, config: DemoConfig, run: RunDirectory) -> Report:
    """The demo's report up to its optional sections (the diversity study, CdSprites+, the files).

    Parameters
    ----------
    result : DemoResult
        What :func:`compute_demo` found.
    config : DemoConfig
        The demo's settings.
    run : RunDirectory
        Where :func:`write_demo` wrote the figures.

    Returns
    -------
    Report
    """
    metrics = result.metrics
    report = Report("Morpho-MNIST demo", subtitle=f"{config.source}, seed {config.seed}")
    report.add_paragraph(
        f"Built the Morpho-MNIST sets from {metrics['digits']['train']} training and "
        f"{metrics['digits']['t10k']} test digits of '{config.source}' in {result.build_seconds:.1f} s "
        f"({metrics['build_digits_per_second']:.0f} digits/s, every perturbation measured), "
        f"and measured area, stroke length and thickness, slant, width and height of every digit."
    )
    report.add_metrics(metrics, title="Headline numbers", labels=True)
    report.add_heading("Morphometrics of the plain training digits, per class")
    report.add_figure(
        run.path("figures", "morphometrics_per_class.png"),
        caption="Distribution of each morphometric per digit class (cf. the paper's Fig. 3).",
    )
    report.add_table(result.medians_per_class, title="Median per class")
    report.add_heading("Perturbations")
    report.add_figure(
        run.path("figures", "perturbation_examples.png"),
        caption="The same test digits, plain and under each perturbation.",
    )
    report.add_figure(
        run.path("figures", "mixed_sets_examples.png"),
        caption="Mixed sets: each digit titled with the perturbation it received.",
    )
    report.add_table(result.effects, title="Median morphometrics per set; ratio to the same plain digits")
    return report
