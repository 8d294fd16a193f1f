"""Counterfactual Generativeness of a trained VAE run: factor classifiers and the CG scores at rho 1 and 2.

CG (:func:`repscope.metrics.disentanglement.counterfactual.counterfactual_generativeness`) judges the
images a model decodes after an intervention on its latents with a classifier of every factor. The
classifiers are the framework's supervised models (``attribute-cnn``), one per factor, trained on the
same dataset by :func:`repscope.train.run.fit` into ``DIR/<factor>/`` (a run directory each, with its
test accuracy; the CANDLE paper's classifier reached 98.9%), on the trainer of the study or command that
asks for them (``--accelerator``, ``--devices``, ...). ``Q_i``, the latents attributed to factor
``i``, are the top-rho IRS latents (:func:`repscope.metrics.disentanglement.irs.unique_capture`).

A CG result carries its judges: each classifier's held-out test accuracy (from its run's
``metrics.json``), ``judge_ok`` (every one at least ``min_judge_accuracy``, default 0.9) and the weak
ones by name; a weak judge gives a ``RuntimeWarning``, or an error with ``refuse_weak_judges``
(:func:`repscope.metrics.disentanglement.counterfactual.check_judges`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.counterfactual import (
    DEFAULT_MIN_JUDGE_ACCURACY,
    check_judges,
    counterfactual_generativeness,
)
from repscope.metrics.disentanglement.irs import unique_capture
from repscope.runs import CONFIG_FILE, METRICS_FILE, read_metrics
from repscope.studies.common import auxiliary_trainer
from repscope.studies.disentangle.score import codes_of_run
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.reader import open_run
from repscope.train.run import fit

CLASSIFIER_MODEL = "attribute-cnn"


def train_factor_classifiers(
    data: str,
    factors: list[str],
    out: str | Path,
    *,
    data_params: dict[str, Any] | None = None,
    epochs: int = 3,
    batch_size: int = 128,
    seed: int = 0,
    trainer: TrainerSection | None = None,
) -> dict[str, float]:
    """One classifier per factor of a dataset, each a training run in ``out/<factor>/``.

    Parameters
    ----------
    data : str
        A registered dataset with one categorical field per factor (``dsprites``).
    factors : list of str
        The factors (the dataset's ``target`` values).
    out : str or pathlib.Path
        Folder of the classifiers' run directories.
    data_params : dict, optional
        Further parameters of the dataset (``size``, ``test_size``, ...).
    epochs, batch_size, seed
        Training settings of every classifier.
    trainer : TrainerSection, optional
        Where and how they train (accelerator, devices, precision, ..., logger): a study's trainer, or
        the command's flags; their ``max_epochs`` is ``epochs``. Default: the defaults (CPU).

    Returns
    -------
    dict of str to float
        Test accuracy per factor.
    """
    out = Path(out)
    accuracies = {}
    for factor in factors:
        config = TrainConfig(
            model=Named(name=CLASSIFIER_MODEL),
            data=Named(name=data, params={**(data_params or {}), "target": factor}),
            trainer=auxiliary_trainer(trainer, max_epochs=int(epochs)),
            batch_size=int(batch_size),
            seed=int(seed),
        )
        outcome = fit(config, out=out / factor, description=f"{factor} classifier on {data}")
        accuracies[factor] = float(outcome.metrics.get("test_accuracy", float("nan")))
    return accuracies


def _load_classifiers(folder: Path, names: list[str]) -> list[Any]:
    missing = [name for name in names if not (folder / name / CONFIG_FILE).is_file()]
    if missing:
        raise InvalidArgumentError(
            f"--classifiers {folder}: no classifier run for factor {missing[0]!r} (train them with "
            "repscope disentangle classifiers)"
        )
    return [open_run(folder / name).task() for name in names]


def cg_of_run(
    run_dir: str | Path,
    classifiers: str | Path,
    n: int = 1000,
    seed: int = 0,
    rho: tuple[int, ...] = (1, 2),
    min_judge_accuracy: float = DEFAULT_MIN_JUDGE_ACCURACY,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """CG at each rho of a VAE run, judged by the factor classifiers in ``classifiers``.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A VAE-family training run on data with factors.
    classifiers : str or pathlib.Path
        The folder :func:`train_factor_classifiers` wrote (one run directory per factor).
    n : int, default=1000
        Test examples (a seeded draw, as :func:`codes_of_run`).
    seed : int, default=0
        Seed of the draw.
    rho : tuple of int, default=(1, 2)
        Latents attributed to each factor.
    min_judge_accuracy : float, default=0.9
        The least held-out accuracy of a factor classifier for ``judge_ok``.
    refuse_weak_judges : bool, default=False
        Raise, before any decoding, when a classifier is below ``min_judge_accuracy`` (otherwise a
        ``RuntimeWarning``).

    Returns
    -------
    dict
        ``cg_rho<r>`` per rho, ``details`` (the per-rho results of the metric), ``factor_names``,
        ``judge_accuracy`` (factor name -> held-out accuracy of its classifier), ``judge_ok``,
        ``weak_judges`` (names) and ``min_judge_accuracy``.

    Raises
    ------
    InvalidArgumentError
        When a factor has no classifier run, or a judge is weak and ``refuse_weak_judges`` is set.
    """
    factors, codes, names = codes_of_run(run_dir, n=n, seed=seed)
    models = _load_classifiers(Path(classifiers), names)
    measured = classifier_accuracies(classifiers)
    accuracies = [measured.get(name, float("nan")) for name in names]
    judges = check_judges(accuracies, names, min_judge_accuracy, refuse=refuse_weak_judges)
    task = open_run(run_dir).task()

    def predict_proba(images: np.ndarray) -> list[np.ndarray]:
        return [torch.softmax(model.outputs(images), dim=1).numpy() for model in models]

    capture = unique_capture(factors, codes, rho=rho)
    out: dict[str, Any] = {
        "factor_names": names,
        "judge_accuracy": dict(zip(names, judges["judge_accuracy"])),
        "judge_ok": judges["judge_ok"],
        "weak_judges": judges["weak_judges"],
        "min_judge_accuracy": float(min_judge_accuracy),
        "details": {},
    }
    with warnings.catch_warnings():
        # check_judges above has warned once already; the per-rho results only record the accuracies
        warnings.simplefilter("ignore", RuntimeWarning)
        for value in capture["params"]["rho"]:
            result = counterfactual_generativeness(
                factors,
                codes,
                capture["q_sets"][f"rho{value}"],
                task.decode,
                predict_proba,
                judge_accuracy=judges["judge_accuracy"],
                min_judge_accuracy=min_judge_accuracy,
            )
            out[f"cg_rho{value}"] = result["cg"]
            out["details"][f"rho{value}"] = result
    return out


def classifier_accuracies(folder: str | Path) -> dict[str, float]:
    """The test accuracy of every classifier run in ``folder`` (from its metrics.json).

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder :func:`train_factor_classifiers` wrote.

    Returns
    -------
    dict of str to float
        Factor name (the run's folder name) -> held-out test accuracy (NaN when the run recorded none).
    """
    accuracies = {}
    for run in sorted(Path(folder).iterdir()):
        if (run / METRICS_FILE).is_file():
            accuracies[run.name] = float(read_metrics(run).get("test_accuracy", float("nan")))
    return accuracies


__all__ = ["train_factor_classifiers", "cg_of_run", "classifier_accuracies"]
