"""Disentanglement of InfoGAN codes by partial correlation with morphometrics (Castro et al., section 4.2,
Table 2, Figs. 5-8).

Settings (Table 2): InfoGAN-A, a 10-way categorical and 2 continuous codes on ``plain``;
InfoGAN-B, 10-way categorical and 3 continuous on ``global`` (plain + thinned + thickened);
InfoGAN-C, 10-way categorical, 2 continuous and 2 binary on ``local`` (plain + swollen + fractured).

* inferential: MAP codes of the recognition network on the test digits of the set (argmax of the
  categorical logits, means of the continuous codes), against the digits' measured morphometrics
  (for C also the ground-truth ``swollen`` / ``fractured`` annotations);
* generative: codes sampled from the prior, digits generated and measured.

Each entry is the partial correlation of one code variable with one morphometric controlling for
the other codes (noise excluded); each category of a categorical code is a dummy controlling
only for the non-categorical codes (paper footnote 3).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.morpho.training_sets import load_morpho_mnist
from repscope.errors import InvalidArgumentError
from repscope.metrics.partial_correlations import code_partial_correlations
from repscope.models.morpho.infogan_codes import INFOGAN_SETTINGS
from repscope.report import Report
from repscope.report.figures import traversal_grid
from repscope.report.morpho_figures import partial_correlation_circles
from repscope.run_directory import RunDirectory
from repscope.studies.common import DataSection, MemberModel, TrainingSection
from repscope.studies.morpho.diversity import measured
from repscope.studies.morpho.resume import load_step, open_study_run, save_step, train_member
from repscope.train.config import Named, Section, TrainerSection
from repscope.validation import Seed

FACTORS = ("length", "thickness", "slant", "width", "height")
SETTING_SETS = {"A": "plain", "B": "global", "C": "local"}


class InfoGANSetting(Section):
    label: str
    setting: Literal["A", "B", "C"]
    params: dict[str, Any] = Field(default_factory=dict)
    checkpoint: str | None = None


def _default_settings() -> list[InfoGANSetting]:
    return [InfoGANSetting(label=f"InfoGAN-{s}", setting=s) for s in ("A", "B", "C")]


class DisentangleConfig(Section):
    data: DataSection = Field(default_factory=DataSection)
    settings: list[InfoGANSetting] = Field(default_factory=_default_settings)
    training: TrainingSection = Field(default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=20)))
    generated_samples: int = Field(1000, ge=20)
    traversal_steps: int = Field(9, ge=2)
    traversal_range: float = Field(2.0, gt=0.0, description="continuous codes traverse [-range, range]")
    traversal_rows: int = Field(4, ge=1)
    seed: Seed = 0


def quick(config: DisentangleConfig) -> DisentangleConfig:
    out = config.model_copy(deep=True)
    out.training.trainer.max_epochs = min(out.training.trainer.max_epochs, 5)
    out.settings = out.settings[:1]
    return out


def strongest(matrix: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """For each factor (row), the code with the largest |partial correlation|."""
    out = {}
    for factor, row in matrix.iterrows():
        values = row.astype(float).dropna()
        if len(values):
            code = values.abs().idxmax()
            out[str(factor)] = {"code": str(code), "r": float(values[code])}
    return out


def _with_all_categories(values: dict[str, np.ndarray], codes: Any) -> dict[str, np.ndarray]:
    """Categorical codes as one-hot ``(n, K)`` arrays, so every category gets its dummy column even
    when the recognition network never picks it (its partial correlations are then NaN)."""
    out = dict(values)
    for column in codes.categorical_columns():
        out[column] = np.eye(codes.categories(column))[np.asarray(values[column], dtype=np.int64)]
    return out


def traversals(task: Any, codes: Any, code: str, config: DisentangleConfig, seed: int) -> tuple[np.ndarray, list[str]]:
    """Images ``(rows, steps, 28, 28)``: each row keeps one draw of the other codes and the noise and
    varies ``code`` over its categories or over [-range, range]."""
    _, base = task.sample_with_codes(config.traversal_rows, seed=seed)
    noise = task.sample_noise(config.traversal_rows, seed=seed)
    categorical = codes.categorical_columns()
    if code in categorical:
        values = list(range(codes.categories(code)))
        labels = [f"{code}={v + 1}" for v in values]
    else:
        values = list(np.linspace(-config.traversal_range, config.traversal_range, config.traversal_steps))
        labels = [f"{v:+.1f}" for v in values]
    rows = []
    for r in range(config.traversal_rows):
        varied = {name: np.repeat(np.asarray(value)[r : r + 1], len(values), axis=0) for name, value in base.items()}
        varied[code] = np.asarray(values, dtype=varied[code].dtype)
        rows.append(task.decode(varied, np.repeat(noise[r : r + 1], len(values), axis=0)))
    return np.stack(rows), labels


@dataclass(frozen=True)
class SettingResult:
    """One InfoGAN setting's partial correlations and traversals.

    Attributes
    ----------
    inferential : pandas.DataFrame
        Partial correlations of the codes inferred from the test digits (columns) with the digits'
        morphometrics (rows, index ``factor``; for C also ``swollen`` and ``fractured``).
    generative : pandas.DataFrame
        Partial correlations of sampled codes with the morphometrics of the digits generated from them.
    traversals : dict of str to (numpy.ndarray, list of str)
        Per code, the traversal images ``(rows, steps, 28, 28)`` and the columns' labels (:func:`traversals`).
    summary : dict
        The setting's headline numbers (``metrics.json``'s ``settings.<label>``): ``set``, ``codes``,
        ``inferential_strongest``, ``generative_strongest``, ``inferential_generative_agreement_r``,
        ``training``.
    """

    inferential: pd.DataFrame
    generative: pd.DataFrame
    traversals: dict[str, tuple[np.ndarray, list[str]]]
    summary: dict[str, Any]


@dataclass(frozen=True)
class DisentangleResult:
    """What the disentanglement study found (Castro et al., Table 2, Figs. 5-8).

    Attributes
    ----------
    settings : dict of str to dict
        Each setting's headline numbers by label, in the config's order (:attr:`SettingResult.summary`).
    computed : dict of str to SettingResult
        The settings computed by this call, by label (a resumed run's earlier settings have only their
        headline numbers here; their tables and figures are in the run directory).
    """

    settings: dict[str, dict[str, Any]]
    computed: dict[str, SettingResult]

    @property
    def metrics(self) -> dict[str, Any]:
        """The headline numbers by name, as ``metrics.json`` holds them."""
        return {"settings": self.settings}


def run_disentangle(
    config: DisentangleConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Run the study and return the path of its ``report.html``.

    The steps: :func:`train_infogans` (resumable), :func:`compute_disentangle` (trained InfoGANs in, a
    :class:`DisentangleResult` out; no files), each setting's tables and figures written as it is computed
    (:func:`write_setting`), :func:`write_disentangle` (``metrics.json``) and :func:`report_disentangle`.

    Parameters
    ----------
    config : DisentangleConfig
        The study's config.
    out : pathlib.Path, optional
        The run directory (default ``root/morpho-disentangle-<time>``).
    root : pathlib.Path
        Parent of the default run directory.
    source : str
        Where the config came from, for messages.
    quick : bool
        A ``--quick`` run (said at the top of the report).
    resume : bool
        Continue the run in ``out``: each setting whose tables and figures were written (``steps/``) is
        kept, a training that stopped continues from its last checkpoint; the config must be the one the
        run started with.

    Returns
    -------
    pathlib.Path
        The report.
    """
    run = open_study_run("morpho-disentangle", config, out, root, resume)
    done = {s.label: found for s in config.settings if (found := load_step(run, _step(s), resume)) is not None}
    models = train_infogans(config, run, source, resume=resume, skip=set(done))
    result = compute_disentangle(
        config, models, done=done, on_computed=lambda setting, computed: write_setting(computed, setting, run)
    )
    write_disentangle(result, run)
    return report_disentangle(result, config, run, quick=quick)


def _step(setting: InfoGANSetting) -> str:
    return f"disentangle-{setting.label.lower()}"


def train_infogans(
    config: DisentangleConfig,
    run: RunDirectory,
    source: str = "config",
    resume: bool = False,
    skip: Collection[str] = (),
) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Train (or load, or continue) the InfoGAN of every setting but those in ``skip``, each into
    ``models/<label>`` of ``run``, on the setting's set (A: plain, B: global, C: local).

    Parameters
    ----------
    config : DisentangleConfig
        The study's config.
    run : RunDirectory
        Where the models go.
    source : str
        Where the config came from, for messages.
    resume : bool
        Load a finished training, continue one that stopped (:func:`~repscope.studies.morpho.resume.train_member`).
    skip : collection of str
        Labels of settings already done (a resumed run needs no model of them).

    Returns
    -------
    dict of str to (task, dict)
        By label: the trained InfoGAN (eval mode) and its training metrics.
    """
    trained = {}
    for k, setting in enumerate(config.settings):
        if setting.label in skip:
            continue
        member = MemberModel(
            label=setting.label,
            name="infogan",
            params={"codes": INFOGAN_SETTINGS[setting.setting].to_dict(), **setting.params},
            checkpoint=setting.checkpoint,
        )
        params = {**config.data.params(), "set": SETTING_SETS[setting.setting], "target": "none"}
        trained[setting.label] = train_member(
            member,
            Named(name="morpho-mnist", params=params),
            config.training,
            config.seed,
            run.path("models", setting.label.lower()),
            source,
            position=(k + 1, len(config.settings)),
            resume=resume,
        )
    return trained


def compute_disentangle(
    config: DisentangleConfig,
    models: Mapping[str, tuple[Any, Mapping[str, Any]]],
    done: Mapping[str, dict[str, Any]] | None = None,
    on_computed: Callable[[InfoGANSetting, SettingResult], None] | None = None,
) -> DisentangleResult:
    """Partial correlations of every setting's codes with morphometrics, inferential and generative,
    and its traversals (no files written).

    Parameters
    ----------
    config : DisentangleConfig
        The study's config.
    models : mapping of str to (task, mapping)
        By label, each setting not in ``done``: the trained InfoGAN and its training metrics
        (:func:`train_infogans`).
    done : mapping of str to dict, optional
        The headline numbers of settings already done (a resumed run): kept as they are.
    on_computed : callable, optional
        Called with ``(setting, result)`` as each setting is computed (the run writes it there).

    Returns
    -------
    DisentangleResult

    Raises
    ------
    InvalidArgumentError
        A setting neither in ``done`` nor in ``models``.
    """
    done = done or {}
    settings, computed = {}, {}
    for k, setting in enumerate(config.settings):
        if setting.label in done:
            settings[setting.label] = done[setting.label]
            continue
        if setting.label not in models:
            raise InvalidArgumentError(f"models: no trained InfoGAN {setting.label!r} (train_infogans trains them)")
        task, train_metrics = models[setting.label]
        computed[setting.label] = compute_setting(setting, task, train_metrics, k, config)
        settings[setting.label] = computed[setting.label].summary
        if on_computed is not None:
            on_computed(setting, computed[setting.label])
    return DisentangleResult(settings=settings, computed=computed)


def compute_setting(
    setting: InfoGANSetting, task: Any, train_metrics: Mapping[str, Any], k: int, config: DisentangleConfig
) -> SettingResult:
    """One setting: inferential and generative partial correlations, traversals of every code, and the
    agreement of the two matrices.

    Parameters
    ----------
    setting : InfoGANSetting
        The setting (A, B or C).
    task : object
        Its trained InfoGAN: ``encode``, ``sample_with_codes``, ``sample_noise``, ``decode``.
    train_metrics : mapping
        Its training metrics.
    k : int
        Its position in the config: the generated digits' seed is ``seed + 2000 + k``.
    config : DisentangleConfig
        The study's config.

    Returns
    -------
    SettingResult
    """
    codes = INFOGAN_SETTINGS[setting.setting]
    inferential = inferential_correlations(task, setting, config)
    generative = generative_correlations(task, setting, config, seed=config.seed + 2000 + k)
    traversed = {
        code: traversals(task, codes, code, config, seed=config.seed + 3000 + c)
        for c, code in enumerate(codes.code_columns())
    }
    common = [c for c in inferential.columns if c in generative.columns]
    rows = [f for f in FACTORS if f in inferential.index and f in generative.index]
    agreement = float(
        np.corrcoef(
            inferential.loc[rows, common].to_numpy(float).ravel(),
            generative.loc[rows, common].to_numpy(float).ravel(),
        )[0, 1]
    )
    summary = {
        "set": SETTING_SETS[setting.setting],
        "codes": codes.to_dict(),
        "inferential_strongest": strongest(inferential),
        "generative_strongest": strongest(generative),
        "inferential_generative_agreement_r": agreement,
        "training": {key: train_metrics.get(key) for key in ("epochs", "fit_seconds") if key in train_metrics},
    }
    return SettingResult(inferential=inferential, generative=generative, traversals=traversed, summary=summary)


def inferential_correlations(task: Any, setting: InfoGANSetting, config: DisentangleConfig) -> pd.DataFrame:
    """Partial correlations of the codes the recognition network infers from the test digits of the
    setting's set with the digits' measured morphometrics (for C also the ``swollen`` and ``fractured``
    annotations); digits without a valid measurement are left out.

    Parameters
    ----------
    task : object
        The trained InfoGAN (``encode``: MAP codes, categorical ones as class indices).
    setting : InfoGANSetting
        The setting.
    config : DisentangleConfig
        The study's config (its data).

    Returns
    -------
    pandas.DataFrame
        Factors (rows) by code variables (columns)
        (:func:`~repscope.metrics.partial_correlations.code_partial_correlations`).
    """
    codes = INFOGAN_SETTINGS[setting.setting]
    data = load_morpho_mnist(set=SETTING_SETS[setting.setting], target="none", **config.data.params())
    factors = data.test_morphometrics[list(FACTORS)].copy()
    valid = data.test_morphometrics["valid"].astype(bool).to_numpy()
    if setting.setting == "C" and data.test_perturbations is not None:
        factors["swollen"] = (data.test_perturbations == 3).astype(float)
        factors["fractured"] = (data.test_perturbations == 4).astype(float)
    # encode's columns are the code columns in order (categorical codes as class indices)
    encoded = task.encode(data.test_images)
    inferred = _with_all_categories(dict(zip(codes.code_columns(), encoded.T)), codes)
    inferred = {name: np.asarray(inferred[name])[valid] for name in codes.code_columns()}
    return code_partial_correlations(
        inferred, factors[valid].reset_index(drop=True), categorical=codes.categorical_columns()
    )


def generative_correlations(task: Any, setting: InfoGANSetting, config: DisentangleConfig, seed: int) -> pd.DataFrame:
    """Partial correlations of ``generated_samples`` codes drawn from the prior with the morphometrics
    of the digits generated from them; digits without a valid measurement are left out.

    Parameters
    ----------
    task : object
        The trained InfoGAN (``sample_with_codes``).
    setting : InfoGANSetting
        The setting.
    config : DisentangleConfig
        The study's config (``generated_samples``).
    seed : int
        Seed of the draws.

    Returns
    -------
    pandas.DataFrame
        Factors (rows) by code variables (columns).
    """
    codes = INFOGAN_SETTINGS[setting.setting]
    images, sampled = task.sample_with_codes(config.generated_samples, seed=seed)
    sampled = _with_all_categories(sampled, codes)
    generated_morpho = measured(images, f"measuring {len(images)} digits generated by {setting.label}")
    ok = generated_morpho["valid"].astype(bool).to_numpy()
    return code_partial_correlations(
        {name: np.asarray(sampled[name])[ok] for name in codes.code_columns()},
        generated_morpho.loc[ok, list(FACTORS)].reset_index(drop=True),
        categorical=codes.categorical_columns(),
    )


def write_setting(computed: SettingResult, setting: InfoGANSetting, run: RunDirectory) -> None:
    """Write one setting's tables and figures, then record it as done (``steps/``) for ``--resume``: the
    record comes last, so a run stopped in between computes the setting again.

    Parameters
    ----------
    computed : SettingResult
        What :func:`compute_setting` found.
    setting : InfoGANSetting
        The setting.
    run : RunDirectory
        The study's run directory.
    """
    tag = setting.label.lower()
    inferential, generative = computed.inferential, computed.generative
    run.write_table(f"{tag}_inferential_partial_correlations", inferential.rename_axis("factor").reset_index())
    run.write_table(f"{tag}_generative_partial_correlations", generative.rename_axis("factor").reset_index())
    run.save_figure(
        f"{tag}_inferential",
        partial_correlation_circles(inferential, title=f"{setting.label}: inferred codes vs test morphometrics"),
    )
    run.save_figure(
        f"{tag}_generative",
        partial_correlation_circles(generative, title=f"{setting.label}: sampled codes vs generated morphometrics"),
    )
    for code, (grid, labels) in computed.traversals.items():
        title = f"{setting.label}: code {code} over the columns\neach row: one draw of the other codes and noise"
        run.save_figure(f"{tag}_traversal_{code}", traversal_grid(grid, col_labels=labels, title=title))
    save_step(run, _step(setting), computed.summary)


def write_disentangle(result: DisentangleResult, run: RunDirectory) -> None:
    """Write ``metrics.json`` (each setting's tables and figures are written as it is computed:
    :func:`write_setting`).

    Parameters
    ----------
    result : DisentangleResult
        What :func:`compute_disentangle` found.
    run : RunDirectory
        The study's run directory.
    """
    run.write_metrics(result.metrics)


def report_disentangle(
    result: DisentangleResult, config: DisentangleConfig, run: RunDirectory, quick: bool = False
) -> Path:
    """Write the study's ``report.html``: the settings' sections from the tables and figures in ``run``,
    then the headline numbers.

    Parameters
    ----------
    result : DisentangleResult
        What :func:`compute_disentangle` found.
    config : DisentangleConfig
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
    report = Report(
        "Morpho-MNIST disentanglement (InfoGAN)", subtitle=f"{config.data.source}, seed {config.seed}", quick=quick
    )
    report.add_paragraph(__doc__.split("\n\n", 1)[1].replace("\n", " "))
    for setting in config.settings:
        _add_setting_section(report, run, setting, config)
    report.add_metrics(result.metrics, title="Headline numbers", labels=True)
    return run.write_report(report)


def _add_setting_section(report: Report, run: RunDirectory, setting: InfoGANSetting, config: DisentangleConfig) -> None:
    """The report's section of one InfoGAN setting, read from the tables and figures the run wrote."""
    codes = INFOGAN_SETTINGS[setting.setting]
    tag = setting.label.lower()
    report.add_heading(f"{setting.label}: {codes.describe()} on {SETTING_SETS[setting.setting]}")
    report.add_figure(
        run.path("figures", f"{tag}_inferential.png"),
        caption="Inferential: partial correlation of each inferred code with each "
        "morphometric of the test digits (cf. Figs. 5 and 8). Blue positive, red negative.",
    )
    report.add_figure(
        run.path("figures", f"{tag}_generative.png"),
        caption=f"Generative: {config.generated_samples} sampled codes vs the morphometrics "
        "of the digits generated from them (cf. Fig. 6).",
    )
    for kind in ("inferential", "generative"):
        table = pd.read_csv(run.path("tables", f"{tag}_{kind}_partial_correlations.csv"))
        report.add_table(table, title=f"{kind.capitalize()} partial correlations")
    for code in codes.code_columns():
        report.add_figure(
            run.path("figures", f"{tag}_traversal_{code}.png"),
            caption=f"Traversal of {code}; each row keeps the other codes and the noise (cf. Fig. 7).",
        )
