"""Sample diversity of generative models by morphometrics (Castro et al., section 4.1, Table 1, Fig. 4).

Each generator (by default a beta-VAE with beta = 4 and a GAN with 64-d latents, and a GAN with
a 2-d latent) is trained on the plain training digits, ``samples`` digits are drawn from it and
measured, and their morphometrics (length, thickness, slant, width, height) are compared with
those of the plain test digits by the linear-time MMD test (Appendix C kernel), an unbiased
quadratic MMD with a permutation p-value, and a near-replica count (mode collapse).

The study runs in three steps: :func:`compute_diversity` (trained generators in, a
:class:`DiversityResult` out; no files), :func:`write_diversity` (tables, figures, ``metrics.json``) and
:func:`report_diversity` (``report.html``). :func:`run_diversity` trains the generators first
(:func:`train_generators`, resumable) and records each generator's comparison as it finishes
(:func:`write_comparison`), so that ``--resume`` keeps it (:func:`read_comparisons`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
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
from repscope.run_directory import RunDirectory
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


# the first samples of each generator shown in the report's grid
EXAMPLES = 12
# the headline numbers of each generator, as metrics.json gives them
HEADLINE = (
    "mmd2",
    "mmd2_std_error",
    "p_value",
    "quadratic_mmd2",
    "quadratic_p_value",
    "replica_groups",
    "fraction_in_replica_groups",
)


@dataclass(frozen=True)
class GeneratorComparison:
    """One generator's samples against the test digits.

    Attributes
    ----------
    row : dict
        Its row of the ``diversity_mmd`` table: ``model`` (label), ``name``, ``latent_dim`` and the numbers
        of :func:`compare_morphometrics`.
    training : dict
        ``epochs``, ``fit_seconds``, ``test_loss`` of its training (those it reported).
    morphometrics : pandas.DataFrame
        Its samples' morphometrics, one row per sample (:func:`repscope.data.morpho.measure`).
    examples : numpy.ndarray
        Its first :data:`EXAMPLES` samples ``(12, 28, 28)``, for the report's grid.
    """

    row: dict[str, Any]
    training: dict[str, Any]
    morphometrics: pd.DataFrame
    examples: np.ndarray


@dataclass(frozen=True)
class DiversityResult:
    """What the diversity study found (Castro et al., Table 1 and Fig. 4).

    Attributes
    ----------
    test_morphometrics : pandas.DataFrame
        The morphometrics of the plain test digits, the reference every generator is compared with.
    generators : dict of str to GeneratorComparison
        Each generator's comparison, by label, in the config's order.
    test_vs_itself_replica_fraction : float
        The share of test digits in near-replica groups among themselves: the floor a generator's
        fraction is read against.
    samples : int
        Samples drawn from each generator.
    morphometrics : list of str
        The morphometrics compared.
    """

    test_morphometrics: pd.DataFrame
    generators: dict[str, GeneratorComparison]
    test_vs_itself_replica_fraction: float
    samples: int
    morphometrics: list[str]

    @property
    def table(self) -> pd.DataFrame:
        """One row per generator: the MMD tests and replica counts against the test digits (cf. Table 1)."""
        return pd.DataFrame([generator.row for generator in self.generators.values()])

    @property
    def metrics(self) -> dict[str, Any]:
        """The headline numbers by name, as ``metrics.json`` holds them."""
        return {
            "samples_per_model": self.samples,
            "test_digits": int(len(self.test_morphometrics)),
            "morphometrics": self.morphometrics,
            "models": {
                label: {key: generator.row[key] for key in HEADLINE} for label, generator in self.generators.items()
            },
            "test_vs_itself_replica_fraction": self.test_vs_itself_replica_fraction,
            "training": {label: generator.training for label, generator in self.generators.items()},
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
    done = read_comparisons(config, run, resume)
    generators = train_generators(config, run, source, resume=resume, skip=set(done))
    result = compute_diversity(
        config, generators, done=done, on_compared=lambda member, compared: write_comparison(compared, member, run)
    )
    write_diversity(result, run)
    return report_diversity(result, config, run, quick=quick)


def read_comparisons(config: DiversityConfig, run: RunDirectory, resume: bool) -> dict[str, GeneratorComparison]:
    """The comparisons a resumed run recorded before it stopped, by label (none for a new run).

    Parameters
    ----------
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        The study's run directory.
    resume : bool
        Whether this call continues a run.

    Returns
    -------
    dict of str to GeneratorComparison
    """
    return {member.label: found for member in config.models if (found := read_comparison(run, member, resume))}


def _step(member: MemberModel) -> str:
    return f"diversity-{slug(member.label)}"


def _samples_table(member: MemberModel) -> str:
    return f"samples_{slug(member.label)}_morphometrics"


def read_comparison(run: RunDirectory, member: MemberModel, resume: bool) -> GeneratorComparison | None:
    """The comparison of ``member`` a resumed run recorded before it stopped, else None.

    Parameters
    ----------
    run : RunDirectory
        The study's run directory.
    member : MemberModel
        The generator.
    resume : bool
        Whether this call continues a run (a new run reads nothing).

    Returns
    -------
    GeneratorComparison or None
        Read from its ``steps/`` record, its samples table and its examples.
    """
    done = load_step(run, _step(member), resume)
    if done is None:
        return None
    return GeneratorComparison(
        row=done["row"],
        training=done["training"],
        morphometrics=pd.read_csv(run.path("tables", f"{_samples_table(member)}.csv")),
        examples=np.load(run.path(STEPS, f"{_step(member)}-examples.npy")),
    )


def write_comparison(compared: GeneratorComparison, member: MemberModel, run: RunDirectory) -> None:
    """Write one generator's samples table and examples, then record it as done (``steps/``) for
    ``--resume``: the record comes last, so a run stopped in between compares the generator again.

    Parameters
    ----------
    compared : GeneratorComparison
        What :func:`compare_generator` found.
    member : MemberModel
        The generator.
    run : RunDirectory
        The study's run directory.
    """
    run.write_table(_samples_table(member), compared.morphometrics)
    run.path(STEPS).mkdir(parents=True, exist_ok=True)
    save_npy_atomic(run.path(STEPS, f"{_step(member)}-examples.npy"), np.asarray(compared.examples))
    save_step(run, _step(member), {"row": compared.row, "training": compared.training})


def train_generators(
    config: DiversityConfig,
    run: RunDirectory,
    source: str = "config",
    resume: bool = False,
    skip: Collection[str] = (),
) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Train (or load, or continue) every generator of ``config`` but those in ``skip``, each into
    ``models/<label>`` of ``run``.

    Parameters
    ----------
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        Where the models go.
    source : str
        Where the config came from, for messages.
    resume : bool
        Load a finished training, continue one that stopped (:func:`~repscope.studies.morpho.resume.train_member`).
    skip : collection of str
        Labels of generators already compared (a resumed run needs no model of them).

    Returns
    -------
    dict of str to (task, dict)
        By label: the trained task (eval mode) and its training metrics.
    """
    data = Named(name="digits", params={**config.data.params(), "target": "none"})
    trained = {}
    for k, member in enumerate(config.models):
        if member.label in skip:
            continue
        trained[member.label] = train_member(
            member,
            data,
            config.training,
            config.seed,
            run.path("models", slug(member.label)),
            source,
            position=(k + 1, len(config.models)),
            resume=resume,
        )
    return trained


def compute_diversity(
    config: DiversityConfig,
    generators: Mapping[str, tuple[Any, Mapping[str, Any]]],
    done: Mapping[str, GeneratorComparison] | None = None,
    on_compared: Callable[[MemberModel, GeneratorComparison], None] | None = None,
) -> DiversityResult:
    """Measure the test digits, sample and measure each generator, compare them (no files written).

    Parameters
    ----------
    config : DiversityConfig
        The study's config: its data, its models (by label) and the tests' settings.
    generators : mapping of str to (task, mapping)
        By label, each generator not in ``done``: a trained task with ``sample(n, seed)`` and its training
        metrics (:func:`train_generators`).
    done : mapping of str to GeneratorComparison, optional
        Comparisons already made (a resumed run): kept as they are.
    on_compared : callable, optional
        Called with ``(member, comparison)`` as each new comparison is made (the run records it there).

    Returns
    -------
    DiversityResult
    """
    done = done or {}
    digits = load_digits(**config.data.params(), target="none")
    test_morpho = measured(digits.test_images, f"measuring {len(digits.test_images)} test digits")
    columns = list(config.morphometrics)
    reference_replicas = compare_morphometrics(test_morpho, test_morpho, columns, config, config.seed)
    compared = {}
    for k, member in enumerate(config.models):
        if member.label in done:
            compared[member.label] = done[member.label]
            continue
        task, training = generators[member.label]
        compared[member.label] = compare_generator(task, training, member, k, test_morpho, config)
        if on_compared is not None:
            on_compared(member, compared[member.label])
    return DiversityResult(
        test_morphometrics=test_morpho,
        generators=compared,
        test_vs_itself_replica_fraction=reference_replicas["fraction_in_replica_groups"],
        samples=config.samples,
        morphometrics=columns,
    )


def compare_generator(
    task: Any,
    training: Mapping[str, Any],
    member: MemberModel,
    k: int,
    test_morpho: pd.DataFrame,
    config: DiversityConfig,
) -> GeneratorComparison:
    """Draw ``config.samples`` digits from the ``k``-th generator, measure them and compare them with
    the test digits' morphometrics.

    Parameters
    ----------
    task : object
        The trained generator: ``sample(n, seed)`` gives digits ``(n, 28, 28)``.
    training : mapping
        Its training metrics.
    member : MemberModel
        Its entry in the config.
    k : int
        Its position in the config: its samples' seed is ``seed + 1000 + k``, its tests' ``seed + k``.
    test_morpho : pandas.DataFrame
        The test digits' morphometrics.
    config : DiversityConfig
        The study's config.

    Returns
    -------
    GeneratorComparison
    """
    images = task.sample(config.samples, seed=config.seed + 1000 + k)
    morpho = measured(images, f"measuring {len(images)} samples of {member.label}")
    row = {
        "model": member.label,
        "name": member.name,
        "latent_dim": member.params.get("latent_dim"),
        **compare_morphometrics(test_morpho, morpho, list(config.morphometrics), config, config.seed + k),
    }
    kept = {key: training.get(key) for key in ("epochs", "fit_seconds", "test_loss") if key in training}
    return GeneratorComparison(row=row, training=kept, morphometrics=morpho, examples=images[:EXAMPLES])


def write_diversity(result: DiversityResult, run: RunDirectory) -> None:
    """Write the study's tables, figures and ``metrics.json`` into ``run`` (each generator's samples
    table and examples are written as it is compared: :func:`write_comparison`).

    Parameters
    ----------
    result : DiversityResult
        What :func:`compute_diversity` found.
    run : RunDirectory
        The study's run directory.
    """
    write_diversity_files(result, run)
    run.write_metrics(result.metrics)


def write_diversity_files(result: DiversityResult, run: RunDirectory) -> None:
    """Write ``tables/diversity_mmd.csv``, a morphometric pair plot of the test digits and of each
    generator's samples (one set of axis ranges, so they compare at a glance: Fig. 4) and the grid of
    each generator's first samples.

    Parameters
    ----------
    result : DiversityResult
        What :func:`compute_diversity` found.
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        The study's run directory.
    """
    run.write_table("diversity_mmd", result.table)
    columns = result.morphometrics
    reference = result.test_morphometrics.loc[result.test_morphometrics["valid"].astype(bool), columns]
    low, high = reference.quantile(0.005), reference.quantile(0.995)
    ranges = {
        c: (float(low[c] - 0.25 * (high[c] - low[c])), float(high[c] + 0.25 * (high[c] - low[c]))) for c in columns
    }
    for name, morpho in _morphometric_tables(result).items():
        valid = morpho[morpho["valid"].astype(bool)]
        run.save_figure(f"pairplot_{slug(name)}", morphometric_pairplot(valid, columns, ranges=ranges, title=name))
    examples = [generator.examples for generator in result.generators.values()]
    run.save_figure(
        "diversity_samples",
        image_grid(np.concatenate(examples), nrows=len(examples), ncols=EXAMPLES, row_labels=list(result.generators)),
    )


def _morphometric_tables(result: DiversityResult) -> dict[str, pd.DataFrame]:
    """The test digits' morphometrics, then each generator's samples', by the name their figure shows."""
    tables = {"test digits": result.test_morphometrics}
    tables.update({label: generator.morphometrics for label, generator in result.generators.items()})
    return tables


def report_diversity(result: DiversityResult, config: DiversityConfig, run: RunDirectory, quick: bool = False) -> Path:
    """Write the study's ``report.html`` from its result and the figures :func:`write_diversity` wrote.

    Parameters
    ----------
    result : DiversityResult
        What :func:`compute_diversity` found.
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        The study's run directory.
    quick : bool
        A ``--quick`` run (said at the top of the report).

    Returns
    -------
    pathlib.Path
        The report.
    """
    report = Report("Morpho-MNIST sample diversity", subtitle=f"{config.data.source}, seed {config.seed}", quick=quick)
    add_diversity_section(report, result, config, run)
    metrics = result.metrics
    # only the quadratic test's p-values come from permutations (the linear-time test's are asymptotic)
    permuted = {f"models.{name}.quadratic_p_value": config.permutations for name in metrics["models"]}
    report.add_metrics(metrics, title="Headline numbers", permutations=permuted, labels=True)
    return run.write_report(report)


def add_diversity_section(report: Report, result: DiversityResult, config: DiversityConfig, run: RunDirectory) -> None:
    """Add the diversity section to ``report`` (the demo adds it to its own report).

    Parameters
    ----------
    report : Report
        The report the section is added to.
    result : DiversityResult
        What :func:`compute_diversity` found.
    config : DiversityConfig
        The study's config.
    run : RunDirectory
        Where :func:`write_diversity_files` wrote the figures.
    """
    columns = result.morphometrics
    report.add_heading("Sample diversity (MMD on morphometrics)")
    report.add_paragraph(
        f"Each generator was trained on the plain training digits; {config.samples} samples of each were "
        f"measured and compared with the {len(result.test_morphometrics)} test digits on {', '.join(columns)} by the "
        "linear-time MMD test (Gaussian product kernel, squared bandwidths the sum of both samples' "
        "Scott's-rule bandwidths squared) and the quadratic MMD with a permutation p-value. "
        "A small p-value means the samples' morphometrics differ from the test digits'. "
        f"Replica groups: clusters of samples within {config.replica_threshold} (standardised units)."
    )
    # no rounding here: the report writes p-values in scientific notation, and a permutation p-value
    # at its floor as <= 1/(B+1)
    report.add_table(
        result.table,
        title="MMD² against the test digits (cf. Table 1)",
        permutations={"quadratic_p_value": config.permutations},
    )
    report.add_figure(run.path("figures", "diversity_samples.png"), caption="Samples of each model.")
    for name in _morphometric_tables(result):
        report.add_figure(
            run.path("figures", f"pairplot_{slug(name)}.png"),
            caption=f"Morphometrics of {name} (cf. Fig. 4): marginals on the diagonal, "
            "log-histograms above, KDE contours below.",
        )


__all__ = [
    "COMPARED",
    "EXAMPLES",
    "DiversityConfig",
    "DiversityResult",
    "GeneratorComparison",
    "add_diversity_section",
    "compare_generator",
    "compare_morphometrics",
    "compute_diversity",
    "measured",
    "quick",
    "read_comparison",
    "report_diversity",
    "run_diversity",
    "read_comparisons",
    "train_generators",
    "write_comparison",
    "write_diversity",
    "write_diversity_files",
]
