"""Sample diversity of generative models by morphometrics (Castro et al., section 4.1, Table 1, Fig. 4).

Each generator (by default a beta-VAE with beta = 4 and a GAN with 64-d latents, and a GAN with
a 2-d latent) is trained on the plain training digits, ``samples`` digits are drawn from it and
measured, and their morphometrics (length, thickness, slant, width, height) are compared with
those of the plain test digits by the linear-time MMD test (Appendix C kernel), an unbiased
quadratic MMD with a permutation p-value, and a near-replica count (mode collapse).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.morpho import measure
from repscope.data.morpho.training_sets import load_digits
from repscope.fileio import save_npy_atomic
from repscope.metrics.mmd import mmd_linear_test, mmd_quadratic_test
from repscope.metrics.replicas import near_replicas
from repscope.progress import progress_bar
from repscope.report import Report
from repscope.report.figures import image_grid
from repscope.report.morpho_figures import morphometric_pairplot
from repscope.studies.common import DataSection, MemberModel, TrainingSection, slug
from repscope.studies.morpho.resume import STEPS, load_step, open_study_run, save_step, train_member
from repscope.train.config import Named, Section, TrainerSection
from repscope.validation import Seed

# Fig. 4 and Table 1 use these five (area is nearly a function of length and thickness)
COMPARED = ("length", "thickness", "slant", "width", "height")


def _default_models() -> list[MemberModel]:
    return [
        MemberModel(label="beta-VAE 64-d", name="beta-vae", params={"latent_dim": 64, "beta": 4.0}),
        MemberModel(label="GAN 64-d", name="gan", params={"latent_dim": 64}),
        MemberModel(label="GAN 2-d", name="gan", params={"latent_dim": 2}),
    ]


class DiversityConfig(Section):
    data: DataSection = Field(default_factory=DataSection)
    models: list[MemberModel] = Field(default_factory=_default_models)
    training: TrainingSection = Field(default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=20)))
    samples: int = Field(10000, ge=8)
    quadratic_max_samples: int = Field(2000, ge=8, description="subsample for the O(n^2) permutation test")
    permutations: int = Field(500, ge=10)
    replica_threshold: float = Field(0.05, gt=0.0)
    morphometrics: list[str] = list(COMPARED)
    seed: Seed = 0


def quick(config: DiversityConfig) -> DiversityConfig:
    out = config.model_copy(deep=True)
    out.training.trainer.max_epochs = min(out.training.trainer.max_epochs, 8)
    out.samples = min(out.samples, 2000)
    out.permutations = min(out.permutations, 200)
    return out


def measured(images: np.ndarray, description: str) -> pd.DataFrame:
    """The morphometrics of ``images`` (:func:`repscope.data.morpho.measure`), counted digit by digit on
    the progress display (10,000 samples take tens of seconds).

    Parameters
    ----------
    images : numpy.ndarray
        Digits ``(N, 28, 28)``.
    description : str
        What the progress says (``measuring 10000 samples of GAN 2-d``).

    Returns
    -------
    pandas.DataFrame
        One row per digit, as :func:`repscope.data.morpho.measure` gives.
    """
    with progress_bar(description, total=len(images)) as update:
        return measure(images, progress=update)  # measure() reports the running total, as the bar takes it


def compare_morphometrics(
    reference: pd.DataFrame, sample: pd.DataFrame, columns: list[str], config: DiversityConfig, seed: int
) -> dict[str, Any]:
    """Linear-time and quadratic MMD tests and replica counts between two morphometric tables."""
    x = reference.loc[reference["valid"].astype(bool), columns].to_numpy(np.float64)
    y = sample.loc[sample["valid"].astype(bool), columns].to_numpy(np.float64)
    rng = np.random.default_rng([seed, 5])
    linear = mmd_linear_test(x, y, rng=rng)
    cap = config.quadratic_max_samples
    xq = x[rng.permutation(len(x))[:cap]]
    yq = y[rng.permutation(len(y))[:cap]]
    quadratic = mmd_quadratic_test(xq, yq, permutations=config.permutations, rng=rng)
    replicas = near_replicas(y, threshold=config.replica_threshold)
    return {
        "mmd2": linear["mmd2"],
        "mmd2_std_error": linear["std_error"],
        "p_value": linear["p_value"],
        "quadratic_mmd2": quadratic["mmd2"],
        "quadratic_p_value": quadratic["p_value"],
        "replica_groups": int(replicas["groups"]),
        "fraction_in_replica_groups": float(replicas["fraction_in_groups"]),
        "valid_samples": int(len(y)),
    }


def run_diversity(
    config: DiversityConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Run the study in its own run directory and return the path of its ``report.html``.

    Parameters
    ----------
    config : DiversityConfig
        The study's config.
    out : pathlib.Path, optional
        The run directory (default ``root/morpho-diversity-<time>``).
    root : pathlib.Path
        Parent of the default run directory.
    source : str
        Where the config came from, for messages.
    quick : bool
        A ``--quick`` run (said at the top of the report).
    resume : bool
        Continue the run in ``out``: each model whose samples were measured and compared (``steps/``) is
        kept, a training that stopped continues from its last checkpoint; the config must be the one the
        run started with.

    Returns
    -------
    pathlib.Path
        The report.
    """
    run = open_study_run("morpho-diversity", config, out, root, resume)
    report = Report("Morpho-MNIST sample diversity", subtitle=f"{config.data.source}, seed {config.seed}", quick=quick)
    metrics = add_diversity(config, run, report, source, resume=resume)
    run.write_metrics(metrics)
    # only the quadratic test's p-values come from permutations (the linear-time test's are asymptotic)
    permuted = {f"models.{name}.quadratic_p_value": config.permutations for name in metrics["models"]}
    report.add_metrics(metrics, title="Headline numbers", permutations=permuted, labels=True)
    return run.write_report(report)


def add_diversity(
    config: DiversityConfig, run: Any, report: Any, source: str = "config", resume: bool = False
) -> dict[str, Any]:
    """Train, sample, measure and compare; write tables and figures into ``run``, add a section to
    ``report`` and return the headline metrics (the demo adds this section to its own report).

    Parameters
    ----------
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        Where tables, figures and models go.
    report : Report
        The report the section is added to.
    source : str
        Where the config came from, for messages.
    resume : bool
        Keep each model already compared in ``run`` (its ``steps/`` record, samples table and examples).

    Returns
    -------
    dict
        The headline metrics.
    """
    data_params = config.data.params()
    digits = load_digits(**data_params, target="none")
    test_morpho = measured(digits.test_images, f"measuring {len(digits.test_images)} test digits")
    tables = {"test digits": test_morpho}
    rows, examples, train_metrics = [], [], {}
    columns = list(config.morphometrics)
    reference_replicas = compare_morphometrics(test_morpho, test_morpho, columns, config, config.seed)
    for k, member in enumerate(config.models):
        step = f"diversity-{slug(member.label)}"
        done = load_step(run, step, resume)
        if done is not None:  # compared before this run was resumed: its samples' table and examples are kept
            train_metrics[member.label] = done["training"]
            tables[member.label] = pd.read_csv(run.path("tables", f"samples_{slug(member.label)}_morphometrics.csv"))
            rows.append(done["row"])
            examples.append(np.load(run.path(STEPS, f"{step}-examples.npy")))
            continue
        task, metrics = train_member(
            member,
            Named(name="digits", params={**data_params, "target": "none"}),
            config.training,
            config.seed,
            run.path("models", slug(member.label)),
            source,
            position=(k + 1, len(config.models)),
            resume=resume,
        )
        train_metrics[member.label] = {
            key: metrics.get(key) for key in ("epochs", "fit_seconds", "test_loss") if key in metrics
        }
        images = task.sample(config.samples, seed=config.seed + 1000 + k)
        morpho = measured(images, f"measuring {len(images)} samples of {member.label}")
        tables[member.label] = morpho
        run.write_table(f"samples_{slug(member.label)}_morphometrics", morpho)
        row = {
            "model": member.label,
            "name": member.name,
            "latent_dim": member.params.get("latent_dim"),
            **compare_morphometrics(test_morpho, morpho, columns, config, config.seed + k),
        }
        rows.append(row)
        examples.append(images[:12])
        run.path(STEPS).mkdir(parents=True, exist_ok=True)
        save_npy_atomic(run.path(STEPS, f"{step}-examples.npy"), np.asarray(images[:12]))
        save_step(run, step, {"row": row, "training": train_metrics[member.label]})
    table = pd.DataFrame(rows)
    run.write_table("diversity_mmd", table)

    metrics = {
        "samples_per_model": config.samples,
        "test_digits": int(len(test_morpho)),
        "morphometrics": columns,
        "models": {
            r["model"]: {
                k: r[k]
                for k in (
                    "mmd2",
                    "mmd2_std_error",
                    "p_value",
                    "quadratic_mmd2",
                    "quadratic_p_value",
                    "replica_groups",
                    "fraction_in_replica_groups",
                )
            }
            for r in rows
        },
        "test_vs_itself_replica_fraction": reference_replicas["fraction_in_replica_groups"],
        "training": train_metrics,
    }
    figures = {}
    # one set of axis ranges for every figure, so the pair plots compare at a glance (Fig. 4)
    reference = test_morpho.loc[test_morpho["valid"].astype(bool), columns]
    low, high = reference.quantile(0.005), reference.quantile(0.995)
    ranges = {
        c: (float(low[c] - 0.25 * (high[c] - low[c])), float(high[c] + 0.25 * (high[c] - low[c]))) for c in columns
    }
    for name, morpho in tables.items():
        valid = morpho[morpho["valid"].astype(bool)]
        figures[name] = run.save_figure(
            f"pairplot_{slug(name)}", morphometric_pairplot(valid, columns, ranges=ranges, title=name)
        )
    grid = run.save_figure(
        "diversity_samples",
        image_grid(
            np.concatenate(examples), nrows=len(examples), ncols=12, row_labels=[m.label for m in config.models]
        ),
    )

    report.add_heading("Sample diversity (MMD on morphometrics)")
    report.add_paragraph(
        f"Each generator was trained on the plain training digits; {config.samples} samples of each were "
        f"measured and compared with the {len(test_morpho)} test digits on {', '.join(columns)} by the "
        "linear-time MMD test (Gaussian product kernel, squared bandwidths the sum of both samples' "
        "Scott's-rule bandwidths squared) and the quadratic MMD with a permutation p-value. "
        "A small p-value means the samples' morphometrics differ from the test digits'. "
        f"Replica groups: clusters of samples within {config.replica_threshold} (standardised units)."
    )
    # no rounding here: the report writes p-values in scientific notation, and a permutation p-value
    # at its floor as <= 1/(B+1)
    report.add_table(
        table,
        title="MMD² against the test digits (cf. Table 1)",
        permutations={"quadratic_p_value": config.permutations},
    )
    report.add_figure(grid, caption="Samples of each model.")
    for name, path in figures.items():
        report.add_figure(
            path,
            caption=f"Morphometrics of {name} (cf. Fig. 4): marginals on the diagonal, "
            "log-histograms above, KDE contours below.",
        )
    return metrics
