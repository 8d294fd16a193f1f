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

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.morpho.training_sets import load_morpho_mnist
from repscope.metrics.partial_correlations import code_partial_correlations
from repscope.models.morpho.infogan_codes import INFOGAN_SETTINGS
from repscope.report import Report
from repscope.report.figures import traversal_grid
from repscope.report.morpho_figures import partial_correlation_circles
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


def _add_setting_section(report: Any, run: Any, setting: InfoGANSetting, config: DisentangleConfig) -> None:
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


def run_disentangle(
    config: DisentangleConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
) -> Path:
    """Run the study and return the path of its ``report.html``.

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
    report = Report(
        "Morpho-MNIST disentanglement (InfoGAN)", subtitle=f"{config.data.source}, seed {config.seed}", quick=quick
    )
    report.add_paragraph(__doc__.split("\n\n", 1)[1].replace("\n", " "))
    metrics: dict[str, Any] = {"settings": {}}
    data_params = config.data.params()
    for k, setting in enumerate(config.settings):
        step = f"disentangle-{setting.label.lower()}"
        done = load_step(run, step, resume)
        if done is not None:  # its tables and figures were written before this run was resumed
            metrics["settings"][setting.label] = done
            _add_setting_section(report, run, setting, config)
            continue
        codes = INFOGAN_SETTINGS[setting.setting]
        set_name = SETTING_SETS[setting.setting]
        member = MemberModel(
            label=setting.label,
            name="infogan",
            params={"codes": codes.to_dict(), **setting.params},
            checkpoint=setting.checkpoint,
        )
        data_named = Named(name="morpho-mnist", params={**data_params, "set": set_name, "target": "none"})
        task, train_metrics = train_member(
            member,
            data_named,
            config.training,
            config.seed,
            run.path("models", setting.label.lower()),
            source,
            position=(k + 1, len(config.settings)),
            resume=resume,
        )
        data = load_morpho_mnist(set=set_name, target="none", **data_params)
        categorical = codes.categorical_columns()

        factors = data.test_morphometrics[list(FACTORS)].copy()
        valid = data.test_morphometrics["valid"].astype(bool).to_numpy()
        if setting.setting == "C" and data.test_perturbations is not None:
            factors["swollen"] = (data.test_perturbations == 3).astype(float)
            factors["fractured"] = (data.test_perturbations == 4).astype(float)
        # encode's columns are the code columns in order (categorical codes as class indices)
        encoded = task.encode(data.test_images)
        inferred = _with_all_categories(dict(zip(codes.code_columns(), encoded.T)), codes)
        inferred = {name: np.asarray(inferred[name])[valid] for name in codes.code_columns()}
        inferential = code_partial_correlations(
            inferred, factors[valid].reset_index(drop=True), categorical=categorical
        )

        images, sampled = task.sample_with_codes(config.generated_samples, seed=config.seed + 2000 + k)
        sampled = _with_all_categories(sampled, codes)
        generated_morpho = measured(images, f"measuring {len(images)} digits generated by {setting.label}")
        ok = generated_morpho["valid"].astype(bool).to_numpy()
        generative = code_partial_correlations(
            {name: np.asarray(sampled[name])[ok] for name in codes.code_columns()},
            generated_morpho.loc[ok, list(FACTORS)].reset_index(drop=True),
            categorical=categorical,
        )
        tag = setting.label.lower()
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
        for c, code in enumerate(codes.code_columns()):
            grid, labels = traversals(task, codes, code, config, seed=config.seed + 3000 + c)
            title = f"{setting.label}: code {code} over the columns\neach row: one draw of the other codes and noise"
            run.save_figure(f"{tag}_traversal_{code}", traversal_grid(grid, col_labels=labels, title=title))

        common = [c for c in inferential.columns if c in generative.columns]
        rows = [f for f in FACTORS if f in inferential.index and f in generative.index]
        agreement = float(
            np.corrcoef(
                inferential.loc[rows, common].to_numpy(float).ravel(),
                generative.loc[rows, common].to_numpy(float).ravel(),
            )[0, 1]
        )
        metrics["settings"][setting.label] = {
            "set": set_name,
            "codes": codes.to_dict(),
            "inferential_strongest": strongest(inferential),
            "generative_strongest": strongest(generative),
            "inferential_generative_agreement_r": agreement,
            "training": {key: train_metrics.get(key) for key in ("epochs", "fit_seconds") if key in train_metrics},
        }
        save_step(run, step, metrics["settings"][setting.label])
        _add_setting_section(report, run, setting, config)
    run.write_metrics(metrics)
    report.add_metrics(metrics, title="Headline numbers", labels=True)
    return run.write_report(report)
