"""The disentanglement study on dSprites or CANDLE (CANDLE paper, Sec. 5, Table 2): IRS, UC and CG at rho 1 and 2.

Every model of the config trains on the dataset (a run directory each, under ``models/``); the judges of
CG's counterfactual images, one judge (a factor classifier) per factor (``classifier_model``: ``attribute-cnn``
by default, or ``factor-cnn``), train on the same data and on the same trainer (``judges/``; the
paper's reached 98.9% and 99.5%), unless ``judges_dir`` names judges trained before on the same
dataset and image size (``repscope disentangle train-judges``) or is ``packaged``: on dSprites, the judges
that come with the package (every one at least 98% on held-out images; ``src/repscope/judges/README.md``).
The report and ``metrics.json`` give each judge's raw test accuracy (``classifier_raw_accuracy``) and
the accuracy it is held to, on what the images can show (``classifier_accuracy``: a turned square's
symmetric orientation counts as right, a sphere's rotation is not counted;
:mod:`repscope.data.symmetries`). Each model's test
codes (posterior means of a seeded draw of ``evaluation_n`` test images) are scored on IRS, UC and CG at
every rho, and on MIG, DCI disentanglement and SAP; the table has the paper's layout, and each model's
latent traversals (one row per latent) are in the report.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from repscope.data.registry import dataset_loader
from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic
from repscope.metrics.disentanglement.counterfactual import DEFAULT_MIN_JUDGE_ACCURACY, check_judges
from repscope.metrics.disentanglement.dci import dci
from repscope.metrics.disentanglement.information import mig, sap
from repscope.metrics.disentanglement.irs import irs, unique_capture
from repscope.progress import progress_bar
from repscope.report import Report
from repscope.report.candle_figures import FLAT_STD, irs_uc_heatmaps, near_constant, traversal_figure
from repscope.resume_check import PLACEMENT_TEXT, differences, refuse_changes, where_the_work_runs
from repscope.run_directory import CONFIG_FILE, METRICS_FILE, RunDirectory, read_config
from repscope.studies.candle.cg import (
    CLASSIFIER_MODEL,
    PACKAGED,
    PACKAGED_JUDGES,
    cg_of_codes,
    judge_accuracies,
    judge_records,
    judges_folder,
    load_judges,
    train_judges,
    trained_judges,
)
from repscope.studies.candle.score_arrays import codes_of_run
from repscope.studies.common import MemberModel, TrainingSection, check_members, member_config, slug, train_or_load
from repscope.train.config import Named, Section, TrainerSection
from repscope.train.fitting import fit, load_task
from repscope.train.reader import open_run
from repscope.validation import Seed

DSPRITES_FACTORS = ["shape", "scale", "orientation", "posX", "posY"]
# the paper's Table 2, dSprites half (IRS, UC rho 1, CG rho 1, UC rho 2, CG rho 2), for the report
PAPER_TABLE2_DSPRITES = {
    "beta-VAE": (0.40, 0.90, 0.12, 0.60, 0.10),
    "beta-TCVAE": (0.62, 0.90, 0.12, 0.60, 0.13),
    "DIP-VAE": (0.48, 0.80, 0.10, 0.53, 0.10),
    "FactorVAE": (0.52, 0.90, 0.14, 0.60, 0.14),
    "SS-beta-VAE": (0.55, 0.90, 0.16, 0.30, 0.15),
    "SS-beta-TCVAE": (0.70, 0.90, 0.15, 0.33, 0.14),
    "SS-DIP-VAE": (0.24, 0.40, 0.08, 0.13, 0.06),
    "SS-FactorVAE": (0.47, 0.90, 0.15, 0.33, 0.14),
}
# the CANDLE half (its confounded subset)
PAPER_TABLE2_CANDLE = {
    "beta-VAE": (0.80, 0.40, 0.21, 0.13, 0.20),
    "beta-TCVAE": (0.50, 0.70, 0.20, 0.29, 0.20),
    "DIP-VAE": (0.24, 0.40, 0.13, 0.29, 0.14),
    "FactorVAE": (0.47, 0.40, 0.22, 0.13, 0.15),
    "SS-beta-VAE": (0.51, 0.80, 0.28, 0.60, 0.19),
    "SS-beta-TCVAE": (0.49, 0.80, 0.25, 0.46, 0.25),
    "SS-DIP-VAE": (0.29, 0.40, 0.32, 0.26, 0.19),
    "SS-FactorVAE": (0.46, 0.40, 0.36, 0.60, 0.21),
}
# dataset -> (its name in the paper, the numbers, the paper's setting)
PAPER_TABLES = {
    "dsprites": ("dSprites", PAPER_TABLE2_DSPRITES, "full dSprites; its CG judge: 99.5% accuracy"),
    "candle": ("CANDLE", PAPER_TABLE2_CANDLE, "CANDLE's confounded subset; its CG judge: 98.9% accuracy"),
}


def _default_models() -> list[MemberModel]:
    params = {"latent_dim": 10}
    models = [
        ("beta-VAE", "beta-vae"),
        ("beta-TCVAE", "beta-tcvae"),
        ("DIP-VAE", "dip-vae-i"),
        ("FactorVAE", "factor-vae"),
    ]
    # the paper's eight: each model and its semi-supervised variant (labels on 10% of the data)
    return [MemberModel(label=label, name=name, params=params) for label, name in models] + [
        MemberModel(label=f"SS-{label}", name=f"{name}-semi", params=params) for label, name in models
    ]


class StudyDataSection(Section):
    """The registered dataset (with a ``factors`` field and one categorical field per factor)."""

    name: str = "dsprites"
    params: dict[str, Any] = Field(default_factory=lambda: {"train_size": 50_000, "test_size": 5_000})
    factors: list[str] = Field(default_factory=lambda: list(DSPRITES_FACTORS))


class DisentangleStudyConfig(Section):
    data: StudyDataSection = Field(default_factory=StudyDataSection)
    models: list[MemberModel] = Field(default_factory=_default_models)
    training: TrainingSection = Field(
        default_factory=lambda: TrainingSection(trainer=TrainerSection(max_epochs=10), batch_size=64)
    )
    # the judges of CG, one per factor (repscope.studies.candle.cg); factor-cnn: full resolution
    classifier_model: str = CLASSIFIER_MODEL
    classifier_params: dict[str, Any] = Field(default_factory=dict)
    classifier_epochs: int = Field(3, ge=1)
    # judges trained before (repscope disentangle train-judges; e.g. CANDLE judges trained on more
    # renders than the study's subset), or "packaged" (dSprites judges that come with the package, each at
    # least 98%): used as they are instead of training the study's own
    judges_dir: str | None = None
    evaluation_n: int = Field(2000, ge=10)
    rho: list[int] = Field(default_factory=lambda: [1, 2])
    traversal_steps: int = Field(7, ge=2)
    traversal_range: float = Field(2.0, gt=0.0)
    # a CG from judges below this held-out accuracy is flagged (the paper's: 98.9%, 99.5%)
    min_judge_accuracy: float = Field(DEFAULT_MIN_JUDGE_ACCURACY, ge=0.0, le=1.0)
    seed: Seed = 0


QUICK_TRAIN, QUICK_TEST = 2000, 500


def quick(config: DisentangleStudyConfig) -> DisentangleStudyConfig:
    """Minutes on 2 CPU cores: 2,000 training and 500 test images, one epoch, 300 scored codes.

    The sizes are set through the dataset's ``train_size`` and ``test_size`` parameters (the name every
    registered dataset with a choosable size uses); a dataset without them (CANDLE, a folder) trains on
    ``2000 / batch_size`` batches per epoch instead.
    """
    out = config.model_copy(deep=True)
    accepted = inspect.signature(dataset_loader(out.data.name)).parameters
    if "train_size" in accepted and "test_size" in accepted:
        out.data.params = {**out.data.params, "train_size": QUICK_TRAIN, "test_size": QUICK_TEST}
    else:
        out.training.trainer.limit_train_batches = max(1, QUICK_TRAIN // out.training.batch_size)
    out.training.trainer.max_epochs = 1
    out.classifier_epochs = 1
    out.evaluation_n = min(out.evaluation_n, 300)
    return out


# --------------------------------------------------------------------------------------------------
# scoring one trained model: its codes, traversals and every metric


def traversal_images(task: Any, codes: np.ndarray, steps: int, span: float) -> np.ndarray:
    """Images ``(latents * steps, H, W[, C])``: row ``l`` varies latent ``l`` over ``[-span, span]`` around
    the mean code of the scored examples, the other latents kept at it."""
    centre = codes.mean(axis=0)
    grid = np.repeat(centre[None, None], codes.shape[1], axis=0).repeat(steps, axis=1)  # (L, steps, L)
    values = np.linspace(-span, span, steps)
    for latent in range(codes.shape[1]):
        grid[latent, :, latent] = values
    return task.decode(grid.reshape(-1, codes.shape[1]))


SCORE_STEPS = ("encoding the test images", "IRS", "UC", "CG", "MIG", "DCI", "SAP")


def score_model(run_dir: Path, judges_dir: Path, config: DisentangleStudyConfig) -> tuple[dict[str, Any], Any]:
    """Every score of one trained model, read from its run: :func:`score_codes` of its encoded test draw, its
    decoder and the judges in ``judges_dir``.

    Parameters
    ----------
    run_dir : pathlib.Path
        The model's training run (or checkpoint).
    judges_dir : pathlib.Path
        The folder of the judges of CG (one per factor).
    config : DisentangleStudyConfig
        The study's config (``evaluation_n``, ``seed``, ``rho``, ``min_judge_accuracy``).

    Returns
    -------
    (dict, numpy.ndarray)
        What :func:`score_codes` returns, and the scored codes. A progress bar counts the steps
        (``SCORE_STEPS``).
    """
    name = Path(run_dir).name
    steps = len(SCORE_STEPS)
    with progress_bar(f"scoring {name}", total=steps) as update:

        def step(done: int) -> None:
            following = f": {SCORE_STEPS[done]}" if done < steps else ""
            update(done, description=f"scoring {name}{following}")

        step(0)
        factors, codes, names = codes_of_run(run_dir, n=config.evaluation_n, seed=config.seed)
        folder = judges_folder(judges_dir, open_run(run_dir).data_name, "--judges")
        judges = load_judges(folder, names)
        accuracy = judge_accuracies(folder)
        decode = open_run(run_dir).task().decode
        scores = score_codes(factors, codes, names, decode, judges, accuracy, config, step=step)
        update(steps, description=f"scoring {name}")
    return scores, codes


def score_codes(
    factors: np.ndarray,
    codes: np.ndarray,
    factor_names: list[str],
    decode: Callable[[np.ndarray], np.ndarray],
    judges: list[Any],
    judge_accuracy: dict[str, float],
    config: DisentangleStudyConfig,
    step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Every score of one model's codes: IRS, UC and CG per rho, MIG, DCI disentanglement, SAP.

    Parameters
    ----------
    factors, codes : numpy.ndarray
        ``(n, K)`` integer factors (none constant) and ``(n, L)`` codes of the model's test examples.
    factor_names : list of str
        The factors' names.
    decode : callable
        The model's decoder (codes -> images), for CG's counterfactual images.
    judges : list
        The judge of each factor, in the order of ``factor_names``
        (:func:`repscope.studies.candle.cg.cg_of_codes`).
    judge_accuracy : dict of str to float
        Factor -> the held-out accuracy its judge is held to.
    config : DisentangleStudyConfig
        The study's config (``rho``, ``min_judge_accuracy``).
    step : callable, optional
        Told the number of steps done (1: IRS running, ..., 6: SAP running; ``SCORE_STEPS``).

    Returns
    -------
    dict
        The scores by key (``irs``, ``uc_rho<r>``, ``cg_rho<r>``, ``mig``, ``dci_disentanglement``, ``sap``)
        plus ``details``: ``irs_matrix`` (latents x factors), ``q_sets`` (UC's sets per rho) and
        ``factor_names``.
    """
    step = step or (lambda done: None)
    step(1)
    measured = irs(factors, codes)
    scores: dict[str, Any] = {"irs": measured["irs"]}
    step(2)
    capture = unique_capture(factors, codes, rho=tuple(config.rho))
    step(3)
    cg = cg_of_codes(
        factors,
        codes,
        decode,
        judges,
        judge_accuracy,
        factor_names,
        rho=tuple(config.rho),
        min_judge_accuracy=config.min_judge_accuracy,
    )
    step(4)
    for value in capture["params"]["rho"]:
        scores[f"uc_rho{value}"] = capture[f"uc_rho{value}"]
        scores[f"cg_rho{value}"] = cg[f"cg_rho{value}"]
    scores["mig"] = mig(factors, codes)["mig"]
    step(5)
    scores["dci_disentanglement"] = dci(factors, codes)["dci_disentanglement"]
    step(6)
    scores["sap"] = sap(factors, codes)["sap"]
    scores["details"] = {
        "irs_matrix": measured["irs_matrix"],
        "q_sets": capture["q_sets"],
        "factor_names": factor_names,
    }
    return scores


# the report's names of the table's keys (metrics.json and tables/table2.csv keep the keys)
COLUMN_LABELS = {
    "model": "model",
    "irs": "IRS",
    "mig": "MIG",
    "dci_disentanglement": "DCI disentanglement",
    "sap": "SAP",
}


def column_label(key: str) -> str:
    """The report's name of a Table 2 column: ``uc_rho1`` -> ``UC (ρ=1)``, ``dci_disentanglement`` ->
    ``DCI disentanglement``.

    Parameters
    ----------
    key : str
        The column's key.

    Returns
    -------
    str
    """
    if key in COLUMN_LABELS:
        return COLUMN_LABELS[key]
    kind, _, rho = key.partition("_rho")
    if rho.isdigit() and kind in ("uc", "cg"):
        return f"{kind.upper()} (\u03c1={rho})"
    return key


def first_difference(stored: Any, current: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first setting where ``current`` differs from ``stored``: ``(dotted key, stored, current)``, or None.

    A key ``stored`` lacks (a setting added since the run started) is not compared; ``repscope_version``
    is not compared.

    Parameters
    ----------
    stored, current : object
        The config the run was started with (``config.yaml``) and the one given now, as plain data.
    path : str
        The dotted key of ``stored`` (for the recursion).

    Returns
    -------
    tuple or None
    """
    if isinstance(stored, dict) and isinstance(current, dict):
        for key, value in current.items():
            if key in stored and not (not path and key == "repscope_version"):
                change = first_difference(stored[key], value, f"{path}.{key}" if path else str(key))
                if change is not None:
                    return change
        for key in stored:
            if key not in current and not (not path and key == "repscope_version"):
                return (f"{path}.{key}" if path else str(key)), stored[key], None
        return None
    if isinstance(stored, list) and isinstance(current, list) and len(stored) == len(current):
        for index, (before, now) in enumerate(zip(stored, current)):
            change = first_difference(before, now, f"{path}[{index}]")
            if change is not None:
                return change
        return None
    return None if stored == current else (path, stored, current)


def check_same_study(out: Path, config: dict[str, Any]) -> bool:
    """Refuse to continue the study in ``out`` with another config (``--resume``): one line naming every
    differing key with both values (where the work runs may change: :mod:`repscope.resume_check`).
    Returns whether ``out`` holds a study to continue (False: nothing written yet).

    Parameters
    ----------
    out : pathlib.Path
        The study's folder.
    config : dict
        The config given now, as written to ``config.yaml``.

    Returns
    -------
    bool

    Raises
    ------
    InvalidArgumentError
        When ``out`` was started with another config.
    """
    if not (Path(out) / CONFIG_FILE).is_file():
        return False
    # a setting the stored config lacks was added since the run started: it ran with the default
    found = differences(read_config(out), config, _may_change_on_resume, new_keys=False)
    refuse_changes(found, str(out), f"where the work runs ({PLACEMENT_TEXT})")
    return True


def _may_change_on_resume(key: str) -> bool:
    return key == "repscope_version" or where_the_work_runs(key)


def _trained_member(
    member: MemberModel,
    data: Named,
    config: DisentangleStudyConfig,
    model_dir: Path,
    source: str,
    position: tuple[int, int],
    resume: bool,
) -> Any:
    """The trained task of a member: trained into ``model_dir``; with ``resume``, a finished training is
    loaded and one stopped after a checkpoint goes on from its ``last.ckpt``."""
    if member.checkpoint or not resume:
        return train_or_load(member, data, config.training, config.seed, model_dir, source, position=position)[0]
    if (model_dir / METRICS_FILE).is_file():
        return load_task(model_dir, model=member.name)
    if (model_dir / "checkpoints" / "last.ckpt").is_file():
        outcome = fit(
            member_config(member, data, config.training, config.seed),
            out=model_dir,
            resume=True,
            source=f"{source}: model {member.label!r}",
            description=f"training {member.label} ({position[0]} of {position[1]}, resumed)",
        )
        outcome.task.eval()
        return outcome.task
    if model_dir.exists():
        shutil.rmtree(model_dir)  # stopped before its first checkpoint: it trains again
    return train_or_load(member, data, config.training, config.seed, model_dir, source, position=position)[0]


# --------------------------------------------------------------------------------------------------
# compute: the results of one model and of the study, as arrays, tables and numbers (nothing written)


@dataclass(frozen=True)
class ModelResult:
    """The scores of one trained model of the study and its latent traversals.

    Attributes
    ----------
    label : str
        The model's label in the config.
    scores : dict of str to float
        ``irs``, ``uc_rho<r>``, ``cg_rho<r>`` per rho, ``mig``, ``dci_disentanglement``, ``sap``.
    details : dict or None
        ``irs_matrix`` (latents x factors), ``q_sets`` (UC's sets per rho) and ``factor_names``.
    latents : int or None
        Latent dimensions of the model (None for a model read back from a resumed study).
    traversal : numpy.ndarray or None
        The traversal images (:func:`traversal_images`): row ``l`` of ``traversal_steps`` images varies
        latent ``l`` over ``[-traversal_range, traversal_range]``; None for a model read back from a
        resumed study (its figure was written then).
    traversal_steps : int
        Images per latent.
    traversal_range : float
        The span of each latent's values around the mean code.
    flat_traversal_images : float
        The share of traversal images that are flat (:func:`repscope.report.candle_figures.near_constant`).
    """

    label: str
    scores: dict[str, float]
    details: dict[str, Any] | None
    latents: int | None
    traversal: np.ndarray | None
    traversal_steps: int
    traversal_range: float
    flat_traversal_images: float


def compute_model_result(
    label: str, task: Any, scores: dict[str, Any], codes: np.ndarray, config: DisentangleStudyConfig
) -> ModelResult:
    """One model's result: its scores (:func:`score_model`) and the traversals its decoder draws.

    Parameters
    ----------
    label : str
        The model's label.
    task : object
        The trained model (its ``decode`` draws the traversals).
    scores : dict
        What :func:`score_model` returns first (its ``details`` included).
    codes : numpy.ndarray
        The scored codes ``(n, L)`` (the traversals vary each latent around their mean).
    config : DisentangleStudyConfig
        The study's config (``traversal_steps``, ``traversal_range``).

    Returns
    -------
    ModelResult
    """
    values = {key: value for key, value in scores.items() if key != "details"}
    images = traversal_images(task, codes, config.traversal_steps, config.traversal_range)
    flat = near_constant(images)
    return ModelResult(
        label=label,
        scores={key: float(value) for key, value in values.items()},
        details=scores.get("details"),
        latents=int(codes.shape[1]),
        traversal=images,
        traversal_steps=config.traversal_steps,
        traversal_range=config.traversal_range,
        flat_traversal_images=float(flat.mean()) if flat.size else 0.0,
    )


@dataclass(frozen=True)
class StudyJudges:
    """The judges of CG's counterfactual images (factor classifiers), as the study found or trained them.

    Attributes
    ----------
    folder : pathlib.Path
        Their folder (the study's ``judges/``, ``judges_dir`` or the packaged judges).
    accuracy : dict of str to float
        Factor -> held-out accuracy on what the images can show (:mod:`repscope.data.symmetries`).
    records : dict of str to dict
        Factor -> its judge record (:func:`repscope.studies.candle.cg.judge_records`): ``accuracy`` (raw),
        ``identifiable_accuracy``, ``rule``.
    judge_ok : bool
        Whether every judge reaches ``min_judge_accuracy``.
    weak_judges : list of str
        The factors whose judge does not.
    """

    folder: Path
    accuracy: dict[str, float]
    records: dict[str, dict[str, Any]]
    judge_ok: bool
    weak_judges: list[str]


@dataclass(frozen=True)
class DisentangleStudyResult:
    """The disentanglement study's result (Table 2 of the CANDLE paper, one row per model).

    Attributes
    ----------
    data : str
        The dataset's registered name.
    models : tuple of ModelResult
        Each model's scores and traversals, in the config's order.
    table : pandas.DataFrame
        The Table 2 layout: ``model``, ``irs``, ``uc_rho<r>``, ``cg_rho<r>`` per rho, ``mig``,
        ``dci_disentanglement``, ``sap``.
    judge_table : pandas.DataFrame
        Per judged factor: ``factor``, ``test accuracy``, ``identifiable accuracy``, ``scored as``.
    judges : StudyJudges
        The judges of CG.
    min_judge_accuracy : float
        The least held-out accuracy of a judge.
    flat_traversal_images : dict of str to float
        Model label -> share of its traversal images that are flat.
    """

    data: str
    models: tuple[ModelResult, ...]
    table: pd.DataFrame
    judge_table: pd.DataFrame
    judges: StudyJudges
    min_judge_accuracy: float
    flat_traversal_images: dict[str, float]

    def metrics(self) -> dict[str, Any]:
        """The headline numbers by name (``metrics.json``)."""
        judged = self.judges
        return {
            "judges_dir": str(judged.folder),
            "classifier_accuracy": judged.accuracy,
            "classifier_raw_accuracy": {name: record["accuracy"] for name, record in judged.records.items()},
            "judge_ok": judged.judge_ok,
            "weak_judges": judged.weak_judges,
            "min_judge_accuracy": self.min_judge_accuracy,
            "flat_traversal_images": self.flat_traversal_images,
            "models": {
                row["model"]: {key: float(value) for key, value in row.items() if key != "model"}
                for row in self.table.to_dict("records")
            },
        }


def compute_disentangle_study(
    config: DisentangleStudyConfig, models: list[ModelResult], judges: StudyJudges
) -> DisentangleStudyResult:
    """The study's tables from its models' results and its judges.

    Parameters
    ----------
    config : DisentangleStudyConfig
        The study's config (``data``, ``rho``, ``min_judge_accuracy``).
    models : list of ModelResult
        Each model's result (:func:`compute_model_result`), in the config's order.
    judges : StudyJudges
        The judges of CG.

    Returns
    -------
    DisentangleStudyResult
    """
    table = pd.DataFrame([{"model": model.label, **model.scores} for model in models])
    order = ["model", "irs"] + [f"{part}_rho{r}" for r in config.rho for part in ("uc", "cg")]
    table = table[order + ["mig", "dci_disentanglement", "sap"]]
    judge_table = pd.DataFrame(
        [
            {
                "factor": name,
                "test accuracy": record["accuracy"],
                "identifiable accuracy": record["identifiable_accuracy"],
                "scored as": record["rule"],
            }
            for name, record in judges.records.items()
        ]
    )
    return DisentangleStudyResult(
        data=config.data.name,
        models=tuple(models),
        table=table,
        judge_table=judge_table,
        judges=judges,
        min_judge_accuracy=config.min_judge_accuracy,
        flat_traversal_images={model.label: model.flat_traversal_images for model in models},
    )


# --------------------------------------------------------------------------------------------------
# write: a model's record and figures as it is scored (a resumed study reads them back), then the tables


def write_model_result(run: RunDirectory, result: ModelResult) -> dict[str, Path]:
    """Write one model's figures and its record ``scores/<slug>.json``; returns the figures by kind
    (``traversal``, ``irs``)."""
    name = slug(result.label)
    figure = traversal_figure(
        result.traversal, result.latents, result.traversal_steps, result.label, result.traversal_range
    )
    figures = {"traversal": run.save_figure(f"traversal_{name}", figure)}
    details = result.details
    if details is not None:
        figures["irs"] = run.save_figure(
            f"irs_{name}",
            irs_uc_heatmaps(details["irs_matrix"], details["q_sets"], details["factor_names"], result.label),
        )
    relative = {key: str(path.relative_to(run.root)) for key, path in figures.items()}
    record = {
        "model": result.label,
        "scores": result.scores,
        "details": details,
        "flat_traversal_images": result.flat_traversal_images,
        "figures": relative,
    }
    write_json_atomic(run.path("scores", f"{name}.json"), record)
    return figures


def stored_model_result(
    run: RunDirectory, member: MemberModel, config: DisentangleStudyConfig
) -> tuple[ModelResult, dict[str, Path]] | None:
    """The result of a member scored before (``scores/<slug>.json``) and its figures by kind, or None when
    there is none, it is damaged or a figure is missing (the member is scored again)."""
    path = run.path("scores", f"{slug(member.label)}.json")
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
        figures = {key: run.path(figure) for key, figure in record["figures"].items()}
        result = ModelResult(
            label=record["model"],
            scores=record["scores"],
            details=record.get("details"),
            latents=None,
            traversal=None,
            traversal_steps=config.traversal_steps,
            traversal_range=config.traversal_range,
            flat_traversal_images=record.get("flat_traversal_images", 0.0),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return (result, figures) if all(figure.is_file() for figure in figures.values()) else None


def write_disentangle_study(result: DisentangleStudyResult, run: RunDirectory) -> None:
    """Write the study's ``tables/table2.csv`` and ``metrics.json`` (each model's record and figures were
    written as it was scored: :func:`write_model_result`)."""
    run.write_table("table2", result.table)
    run.write_metrics(result.metrics())


# --------------------------------------------------------------------------------------------------
# the report, from the result


def disentangle_report(
    result: DisentangleStudyResult,
    config: DisentangleStudyConfig,
    figures: list[dict[str, Path]],
    quick: bool = False,
    add_intro: Callable[[Report], None] | None = None,
) -> Report:
    """The study's report: its warnings, the Table 2 layout beside the paper's, the judges, each model's IRS
    matrix and UC sets, and its latent traversals.

    Parameters
    ----------
    result : DisentangleStudyResult
        The study's result.
    config : DisentangleStudyConfig
        Its config.
    figures : list of dict
        Each model's figures by kind (``traversal``, ``irs``), in the order of ``result.models``.
    quick : bool
        A ``--quick`` run (said at the top).
    add_intro : callable, optional
        Adds blocks after the introduction (the CANDLE study's sample of rendered images).

    Returns
    -------
    repscope.report.Report
    """
    report = Report(
        f"Disentanglement on {config.data.name} (IRS, UC, CG)",
        subtitle=f"{len(config.models)} models, seed {config.seed}",
        quick=quick,
    )
    report.add_paragraph(plain_text(__doc__.split("\n\n", 1)[1]))
    if add_intro is not None:
        add_intro(report)
    _add_warnings(report, result, config)
    report.add_table(
        result.table.rename(columns=column_label),
        title=f"Table 2 layout on {config.data.name}",
        caption="IRS: interventional robustness; UC: unique capture and CG: counterfactual generativeness of "
        "the rho latents attributed to each factor; MIG, DCI disentanglement, SAP for comparison.",
    )
    if config.data.name in PAPER_TABLES:
        title, values, setting = PAPER_TABLES[config.data.name]
        paper = pd.DataFrame(
            [(label, *row) for label, row in values.items()],
            columns=["model", "irs", "uc_rho1", "cg_rho1", "uc_rho2", "cg_rho2"],
        )
        report.add_table(paper.rename(columns=column_label), title=f"The paper's Table 2, {title} half ({setting})")
    report.add_table(result.judge_table, title=judges_title(config, result.judges.folder))
    _add_model_figures(report, result, config, figures)
    return report


def judges_title(config: DisentangleStudyConfig, folder: Path) -> str:
    """The title of the report's table of CG's judges: whose they are."""
    if config.judges_dir == PACKAGED:
        return f"Judges of CG: the judges that come with repscope ({folder})"
    if config.judges_dir is not None:
        return f"Judges of CG: the judges from {config.judges_dir}"
    return f"Judges of CG: trained by the study ({config.classifier_model}, {config.classifier_epochs} epochs)"


def _add_warnings(report: Report, result: DisentangleStudyResult, config: DisentangleStudyConfig) -> None:
    """Weak judges (CG says little) and models whose traversals are all flat (they show nothing)."""
    judges = result.judges
    if not judges.judge_ok:
        weak = ", ".join(f"{name} {judges.accuracy[name]:.1%}" for name in judges.weak_judges)
        report.add_warning(
            f"The judges (factor classifiers) of {weak} are below the {config.min_judge_accuracy:.0%} held-out "
            "accuracy a judge needs (min_judge_accuracy), so the CG columns say little about the models: "
            + (
                "train better ones (repscope disentangle train-judges: more images, more epochs)"
                if config.judges_dir is not None
                else "train the judges longer (classifier_epochs)"
            )
            + (
                f", or judge with the ones that come with repscope (--set judges_dir={PACKAGED})."
                if config.data.name in PACKAGED_JUDGES and config.judges_dir != PACKAGED
                else "."
            )
        )
    flat_models = [label for label, share in result.flat_traversal_images.items() if share >= 1.0]
    if flat_models:
        report.add_warning(
            f"Every traversal image of {', '.join(flat_models)} is flat (pixel standard deviation below "
            f"{FLAT_STD:g} on the 0-1 scale): the model decodes every code to about the same image, so its "
            "traversals show nothing (train longer or on more images)."
        )


def _add_model_figures(
    report: Report, result: DisentangleStudyResult, config: DisentangleStudyConfig, figures: list[dict[str, Path]]
) -> None:
    """Each model's IRS matrix and UC sets, then each model's latent traversals."""
    heatmaps = [(model.label, drawn["irs"]) for model, drawn in zip(result.models, figures) if "irs" in drawn]
    if heatmaps:
        report.add_heading("IRS matrices and UC sets")
        for label, path in heatmaps:
            report.add_figure(
                path,
                caption=f"{label}: IRS of each latent for each factor (left) and the latents UC attributes to "
                "each factor at each rho (right)",
            )
    report.add_heading("Latent traversals")
    for model, drawn in zip(result.models, figures):
        share = model.flat_traversal_images
        note = f"; {share:.0%} of its images are flat (near-constant)" if share > 0 else ""
        report.add_figure(
            drawn["traversal"],
            caption=f"{model.label}: row z<l> varies latent l over \u00b1{config.traversal_range:g} around the "
            f"mean code, the others kept{note}",
        )


# --------------------------------------------------------------------------------------------------
# the study: checks and resume, the judges, each model trained and scored, the tables, the report


def _check_study(config: DisentangleStudyConfig, source: str) -> tuple[Named, tuple[Path, dict[str, float]] | None]:
    """Everything checked before anything is written: the members on the data, and the judges named by
    ``judges_dir`` (their folder and accuracies, or None when the study trains its own)."""
    data = Named(name=config.data.name, params=config.data.params)
    # loads the data and builds each model once: a line every few seconds while it does
    with progress_bar(f"checking the {len(config.models)} models on {config.data.name}"):
        check_members(config.models, data, config.training, config.seed, source)
    if config.judges_dir is None:
        return data, None
    folder = judges_folder(config.judges_dir, config.data.name)
    return data, (folder, trained_judges(folder, config.data.factors, config.data.name, config.data.params))


def _open_study(
    config: DisentangleStudyConfig, out: Path | None, root: Path, kind: str, resume: bool
) -> tuple[RunDirectory, bool]:
    """The study's run directory, and whether it continues one (``--resume`` with a study there)."""
    as_dict = config.model_dump(mode="json")
    if resume:
        if out is None:
            raise InvalidArgumentError("--resume: name the study to continue with --out")
        resume = check_same_study(Path(out), as_dict)
    run = RunDirectory.create(kind, out=out, root=root, resume=resume, resumable=True)
    if not resume:
        run.write_config(as_dict)
    return run, resume


def _study_judges(
    config: DisentangleStudyConfig, run: RunDirectory, found: tuple[Path, dict[str, float]] | None, resume: bool
) -> StudyJudges:
    """The judges of CG: those ``judges_dir`` names, or the study's own trained into ``judges/``
    (kept by a resumed study). Weak judges are named once here (each model's CG would warn again)."""
    if found is not None:
        folder, accuracies = found
    else:
        folder = run.path("judges")
        accuracies = train_judges(
            config.data.name,
            config.data.factors,
            folder,
            data_params=config.data.params,
            epochs=config.classifier_epochs,
            seed=config.seed,
            trainer=config.training.trainer,
            model=config.classifier_model,
            model_params=config.classifier_params,
            resume=resume,
        )
    # a CG from judges near chance measures nothing
    checked = check_judges(list(accuracies.values()), list(accuracies), config.min_judge_accuracy)
    records = {name: record for name, record in judge_records(folder).items() if name in accuracies}
    return StudyJudges(folder, accuracies, records, checked["judge_ok"], checked["weak_judges"])


def _scored_member(
    run: RunDirectory,
    member: MemberModel,
    data: Named,
    judges_dir: Path,
    config: DisentangleStudyConfig,
    source: str,
    position: tuple[int, int],
    resume: bool,
) -> tuple[ModelResult, dict[str, Path]]:
    """Train (or load) and score one member, and write its record and figures (a resumed study reads them
    instead of doing it again)."""
    model_dir = run.path("models", slug(member.label))
    task = _trained_member(member, data, config, model_dir, source, position, resume)
    source_dir = Path(member.checkpoint) if member.checkpoint else model_dir
    with warnings.catch_warnings():  # the weak judges were named once by the study, not once per model
        warnings.filterwarnings("ignore", message="CG judged by weak", category=RuntimeWarning)
        scores, codes = score_model(source_dir, judges_dir, config)
    result = compute_model_result(member.label, task, scores, codes, config)
    return result, write_model_result(run, result)


def _scored_members(
    run: RunDirectory,
    config: DisentangleStudyConfig,
    data: Named,
    judges_dir: Path,
    source: str,
    kind: str,
    resume: bool,
) -> tuple[list[ModelResult], list[dict[str, Path]]]:
    """Every member trained and scored in turn, under one progress bar; a resumed study keeps the members
    scored before, and the count starts at them (the time left follows this process's models only)."""
    total = len(config.models)
    scored = [stored_model_result(run, member, config) if resume else None for member in config.models]
    done = sum(entry is not None for entry in scored)
    with progress_bar(f"{kind}: {total} models", total=total, initial=done) as update:
        for k, member in enumerate(config.models):
            if scored[k] is not None:
                continue
            update(done, description=f"{kind}: model {k + 1}/{total} ({member.label})")
            scored[k] = _scored_member(run, member, data, judges_dir, config, source, (k + 1, total), resume)
            done += 1
        update(total, description=f"{kind}: {total} models")
    return [entry[0] for entry in scored], [entry[1] for entry in scored]


def run_disentangle_study(
    config: DisentangleStudyConfig,
    out: Path | None = None,
    root: Path = Path("runs"),
    source: str = "config",
    quick: bool = False,
    resume: bool = False,
    kind: str = "disentangle-study",
    add_intro: Callable[[Report], None] | None = None,
) -> Path:
    """Train, score and report every model of ``config``; returns the report's path.

    The steps: everything checked before anything is written, the run directory (or the one resumed), the
    judges of CG, each model trained, scored (:func:`compute_model_result`) and written in turn, the study's
    tables (:func:`compute_disentangle_study`, :func:`write_disentangle_study`) and its report
    (:func:`disentangle_report`).

    Parameters
    ----------
    config : DisentangleStudyConfig
        The study.
    out : pathlib.Path, optional
        Its folder (default ``root/<kind>-<time>``).
    root : pathlib.Path
        Parent of the default folder.
    source : str
        Named in error messages.
    quick : bool
        A ``--quick`` run (said at the top of the report).
    resume : bool
        Continue the study in ``out``: its config must be the one stored there but for where the work runs
        (else one line naming every differing key with both values); judges and models trained and
        scored there are kept, a training stopped after a checkpoint goes on from its ``last.ckpt``, and
        only what is missing runs.
    kind : str
        Names the default folder (``candle-study`` for the CANDLE study).
    add_intro : callable, optional
        Adds blocks to the report after its introduction (the CANDLE study's sample of rendered images).

    Returns
    -------
    pathlib.Path
        The report.
    """
    data, found_judges = _check_study(config, source)
    run, resume = _open_study(config, out, root, kind, resume)
    judges = _study_judges(config, run, found_judges, resume)
    models, figures = _scored_members(run, config, data, judges.folder, source, kind, resume)
    result = compute_disentangle_study(config, models, judges)
    write_disentangle_study(result, run)
    return run.write_report(disentangle_report(result, config, figures, quick=quick, add_intro=add_intro))


def plain_text(text: str) -> str:
    """reStructuredText of a docstring as plain text: ``:mod:`x``` and ````x```` become ``x``; lines joined.

    Parameters
    ----------
    text : str
        The docstring's text.

    Returns
    -------
    str
    """
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return " ".join(text.split())


__all__ = [
    "DisentangleStudyConfig",
    "DisentangleStudyResult",
    "ModelResult",
    "StudyJudges",
    "check_same_study",
    "column_label",
    "compute_disentangle_study",
    "compute_model_result",
    "disentangle_report",
    "judges_title",
    "first_difference",
    "plain_text",
    "quick",
    "run_disentangle_study",
    "score_codes",
    "score_model",
    "stored_model_result",
    "traversal_images",
    "write_disentangle_study",
    "write_model_result",
]
