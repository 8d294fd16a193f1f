"""Counterfactual Generativeness of a trained VAE run: its judges and the CG scores at rho 1 and 2.

CG (:func:`repscope.metrics.disentanglement.counterfactual.counterfactual_generativeness`) judges the
images a model decodes after an intervention on its latents with a classifier of every factor, the
factor's *judge*. The judges are the framework's supervised models (``attribute-cnn`` by default; ``factor-cnn``,
:class:`repscope.models.candle.judge_cnn.FactorCNN`, keeps the full resolution at 4.6 times the multiply-adds), one
per factor, trained on the
same dataset by :func:`repscope.train.fitting.fit` into ``DIR/<factor>/`` (a run directory each, with its
test accuracy; the CANDLE paper's judges reached 98.9% and 99.5%), on the trainer of the study or
command that asks for them (``--accelerator``, ``--devices``, ...). ``Q_i``, the latents attributed to
factor ``i``, are the top-rho IRS latents (:func:`repscope.metrics.disentanglement.irs.unique_capture`).

A judge is measured on what the images show: besides its raw test accuracy, each judge's
``judge.json`` holds its *identifiable* accuracy (:func:`repscope.data.symmetries.identifiable_hits`): a
prediction naming a value that renders as the same image counts as right (a square turned by 90
degrees), and examples whose factor the image does not show are left out (a sphere's rotation). No
judge can be right about what the image does not show, so that accuracy is the one a judge is held
to. A CG result carries its judges: each judge's identifiable accuracy (the raw test accuracy of
``metrics.json`` for a folder trained before ``judge.json`` existed), ``judge_ok`` (every one at least
``min_judge_accuracy``, default 0.9) and the weak ones by name; a weak judge gives a ``RuntimeWarning``,
or an error with ``refuse_weak_judges``
(:func:`repscope.metrics.disentanglement.counterfactual.check_judges`).

The dSprites judges that come with the package (:data:`PACKAGED_JUDGES`, ``judges_dir: packaged``)
were trained on a GPU with 200,000 images and 5 epochs (orientation: 400,000 and 8) and read the 10,000
held-out images at 0.981-1.000 identifiable accuracy (``src/repscope/judges/README.md``).
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from repscope.data.registry import loader_arguments
from repscope.data.symmetries import has_symmetry_rule, identifiable_hits, rule_description
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import write_json_atomic
from repscope.metrics.disentanglement.counterfactual import (
    DEFAULT_MIN_JUDGE_ACCURACY,
    check_judges,
    counterfactual_generativeness,
)
from repscope.metrics.disentanglement.irs import unique_capture
from repscope.progress import progress_bar
from repscope.run_directory import CONFIG_FILE, METRICS_FILE, read_metrics
from repscope.studies.candle.score_arrays import codes_of_run
from repscope.studies.common import auxiliary_trainer
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.fitting import fit
from repscope.train.reader import open_run

CLASSIFIER_MODEL = "attribute-cnn"
JUDGE_FILE = "judge.json"
# the value of judges_dir / --judges that names the judges which come with the package
PACKAGED = "packaged"
# the judges that come with the package, by dataset (trained as src/repscope/judges/README.md says)
PACKAGED_JUDGES: dict[str, Path] = {"dsprites": Path(__file__).resolve().parents[2] / "judges" / "dsprites"}


def judge_record(
    data: str, factor: str, factors: np.ndarray, truth: np.ndarray, predicted: np.ndarray
) -> dict[str, Any]:
    """How well one judge (factor classifier) judges: raw and identifiable accuracy on held-out images.

    Parameters
    ----------
    data : str
        The registered dataset (its symmetry rules: :mod:`repscope.data.symmetries`).
    factor : str
        The factor the judge predicts.
    factors : numpy.ndarray
        int ``(n, K)`` every factor's true classes of the held-out images.
    truth, predicted : numpy.ndarray
        int ``(n,)`` the factor's true and predicted classes.

    Returns
    -------
    dict
        ``accuracy`` (raw), ``identifiable_accuracy`` (hits over the counted examples; the raw accuracy
        where the factor has no symmetry rule), ``counted`` (examples whose image shows the factor),
        ``n`` and ``rule`` (in words).
    """
    truth, predicted = np.asarray(truth), np.asarray(predicted)
    raw = float(np.mean(predicted == truth))
    if has_symmetry_rule(data, factor):
        hits, counted = identifiable_hits(data, factor, factors, predicted)
        identifiable = float(hits[counted].mean()) if counted.any() else float("nan")
    else:
        counted = np.ones(len(truth), dtype=bool)
        identifiable = raw
    return {
        "accuracy": raw,
        "identifiable_accuracy": identifiable,
        "counted": int(counted.sum()),
        "n": int(len(truth)),
        "rule": rule_description(data, factor),
    }


def train_judges(
    data: str,
    factors: list[str],
    out: str | Path,
    *,
    data_params: dict[str, Any] | None = None,
    epochs: int = 3,
    batch_size: int = 128,
    model: str = CLASSIFIER_MODEL,
    model_params: dict[str, Any] | None = None,
    seed: int = 0,
    trainer: TrainerSection | None = None,
    resume: bool = False,
) -> dict[str, float]:
    """The judges of CG: one per factor of a dataset, each a training run in ``out/<factor>/``.

    Parameters
    ----------
    data : str
        A registered dataset with one categorical field per factor (``dsprites``).
    factors : list of str
        The factors (the dataset's ``target`` values).
    out : str or pathlib.Path
        Folder of the judges' run directories.
    data_params : dict, optional
        Further parameters of the dataset (``size``, ``test_size``, ...).
    epochs, batch_size, seed
        Training settings of every judge.
    model : str, default="attribute-cnn"
        The registered supervised model of every judge (``factor-cnn``: the full-resolution one).
    model_params : dict, optional
        Its parameters (``lr``, ``network_params``, ...).
    trainer : TrainerSection, optional
        Where and how they train (accelerator, devices, precision, ..., logger): a study's trainer, or
        the command's flags; their ``max_epochs`` is ``epochs``. Default: the defaults (CPU).
    resume : bool, default=False
        Continue a folder written before (a resumed study): a judge with its ``judge.json`` is kept
        as it is, one stopped during its training goes on from its ``checkpoints/last.ckpt``, one stopped
        before its first checkpoint trains again.

    Returns
    -------
    dict of str to float
        Identifiable test accuracy per factor (:func:`judge_record`; also in ``out/<factor>/judge.json``
        with the raw accuracy).
    """
    out = Path(out)
    accuracies = {}
    kept = [f for f in factors if resume and (out / f / JUDGE_FILE).is_file()]
    for factor in kept:
        accuracies[factor] = _read_judge(out / factor / JUDGE_FILE)["identifiable_accuracy"]
    # each training has its bar; this one counts them (and gives a line every few seconds between them)
    with progress_bar(f"{len(factors)} judges ({model})", total=len(factors), initial=len(kept)) as update:
        for k, factor in enumerate(factors, start=1):
            if factor in kept:
                continue
            accuracies[factor] = _train_one(
                data,
                factor,
                k,
                factors,
                out,
                data_params,
                epochs,
                batch_size,
                model,
                model_params,
                seed,
                trainer,
                resume,
            )
            update(len(accuracies))
    return {factor: accuracies[factor] for factor in factors}


def _train_one(
    data: str,
    factor: str,
    k: int,
    factors: list[str],
    out: Path,
    data_params: dict[str, Any] | None,
    epochs: int,
    batch_size: int,
    model: str,
    model_params: dict[str, Any] | None,
    seed: int,
    trainer: TrainerSection | None,
    resume: bool,
) -> float:
    """Train the judge of one factor into ``out/<factor>``; its identifiable test accuracy."""
    config = TrainConfig(
        model=Named(name=model, params=dict(model_params or {})),
        data=Named(name=data, params={**(data_params or {}), "target": factor}),
        trainer=auxiliary_trainer(trainer, max_epochs=int(epochs)),
        batch_size=int(batch_size),
        seed=int(seed),
    )
    description = f"{factor} judge on {data} ({k} of {len(factors)})"
    again = resume and (out / factor / "checkpoints" / "last.ckpt").is_file()
    if resume and not again and (out / factor).exists():
        shutil.rmtree(out / factor)  # stopped before its first checkpoint: nothing to continue
    outcome = fit(config, out=out / factor, resume=again, description=description)
    test = outcome.data.arrays("test", ["image", "factors", "target"])
    record = judge_record(data, factor, test["factors"], test["target"], outcome.task.predict(test["image"]))
    write_json_atomic(out / factor / JUDGE_FILE, record)
    return float(record["identifiable_accuracy"])


def judges_folder(value: str | Path, data: str, key: str = "judges_dir") -> Path:
    """The folder of judges that ``value`` names: a folder, or ``packaged`` for those
    that come with the package for ``data`` (:data:`PACKAGED_JUDGES`: dSprites, every judge at least 98%
    identifiable accuracy).

    A folder that is itself called ``packaged`` is named by its absolute path.

    Parameters
    ----------
    value : str or pathlib.Path
        ``judges_dir`` of a study or ``--judges`` of ``disentangle score``.
    data : str
        The registered dataset whose images the judges are to judge.
    key : str, default="judges_dir"
        The setting named in the error.

    Returns
    -------
    pathlib.Path
        The folder (not yet checked: :func:`trained_judges` does that).

    Raises
    ------
    InvalidArgumentError
        Naming ``key``: ``packaged`` for a dataset the package has no judges of.
    """
    if str(value) != PACKAGED:
        return Path(value).expanduser()
    if data not in PACKAGED_JUDGES:
        raise InvalidArgumentError(
            f"{key}: {PACKAGED} judges come with repscope for {', '.join(sorted(PACKAGED_JUDGES))} only, not "
            f"{data}; train them with repscope disentangle train-judges and name their folder"
        )
    return PACKAGED_JUDGES[data]


def trained_judges(
    folder: str | Path, factors: list[str], data: str, data_params: dict[str, Any] | None = None
) -> dict[str, float]:
    """The accuracies of judges trained before (``repscope disentangle train-judges``),
    checked against the data a study judges with them.

    A judge must have been trained on the study's dataset and at its image size (a CANDLE judge trained
    on every grid point may judge a study of the confounded subset; one trained on 128-pixel images
    cannot judge 64-pixel ones).

    Parameters
    ----------
    folder : str or pathlib.Path
        The judges' folder (one run directory per factor).
    factors : list of str
        The factors the study judges.
    data : str
        The study's registered dataset.
    data_params : dict, optional
        The study's dataset parameters (``image_size`` is compared).

    Returns
    -------
    dict of str to float
        Identifiable test accuracy per factor, in the order of ``factors``.

    Raises
    ------
    InvalidArgumentError
        Naming ``judges_dir``: not a folder, a factor without a judge, a run of another
        factor, dataset or image size, or one that did not finish training.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise InvalidArgumentError(f"judges_dir: {folder} is not a folder")
    missing = [name for name in factors if not (folder / name / CONFIG_FILE).is_file()]
    if missing:
        raise InvalidArgumentError(
            f"judges_dir: {folder} has no judge for factor(s) {', '.join(missing)} (train them "
            "with repscope disentangle train-judges)"
        )
    # both sides' loader defaults filled in: a study that names image_size 64 and a judge trained without it
    size = loader_arguments(data, data_params).get("image_size")
    for name in factors:
        run = open_run(folder / name)
        if run.data_name != data:
            raise InvalidArgumentError(
                f"judges_dir: the {name} judge in {folder} was trained on {run.data_name}, not {data}"
            )
        if run.data_params.get("target") != name:
            raise InvalidArgumentError(
                f"judges_dir: the run {folder / name} classifies {run.data_params.get('target')!r}, not {name}"
            )
        trained = run.data_arguments.get("image_size")
        if trained != size:
            raise InvalidArgumentError(
                f"judges_dir: the {name} judge in {folder} was trained at image_size {trained}, "
                f"the study's data is at {size}"
            )
    records = judge_records(folder)
    unfinished = [name for name in factors if name not in records]
    if unfinished:
        raise InvalidArgumentError(
            f"judges_dir: the {', '.join(unfinished)} judge(s) in {folder} did not finish training "
            "(no judge.json or metrics.json)"
        )
    return {name: float(records[name]["identifiable_accuracy"]) for name in factors}


def load_judges(folder: Path, names: list[str]) -> list[Any]:
    """The judge of each factor in ``names``, loaded from its run directory ``folder/<factor>``.

    Parameters
    ----------
    folder : pathlib.Path
        The judges' folder (:func:`train_judges` wrote it).
    names : list of str
        The factors, in the order wanted.

    Returns
    -------
    list
        The trained judges, one per name.

    Raises
    ------
    InvalidArgumentError
        When a factor has no judge in ``folder``.
    """
    missing = [name for name in names if not (folder / name / CONFIG_FILE).is_file()]
    if missing:
        raise InvalidArgumentError(
            f"--judges {folder}: no judge for factor {missing[0]!r} (train them with repscope disentangle train-judges)"
        )
    return [open_run(folder / name).task() for name in names]


def cg_of_run(
    run_dir: str | Path,
    judges_dir: str | Path,
    n: int = 1000,
    seed: int = 0,
    rho: tuple[int, ...] = (1, 2),
    min_judge_accuracy: float = DEFAULT_MIN_JUDGE_ACCURACY,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """CG at each rho of a VAE run, its counterfactual images judged by the judges in ``judges_dir``.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A VAE-family training run on data with factors.
    judges_dir : str or pathlib.Path
        The folder :func:`train_judges` wrote (one run directory per factor), or ``packaged``:
        the judges that come with the package for the run's dataset (:func:`judges_folder`).
    n : int, default=1000
        Test examples (a seeded draw, as :func:`codes_of_run`).
    seed : int, default=0
        Seed of the draw.
    rho : tuple of int, default=(1, 2)
        Latents attributed to each factor.
    min_judge_accuracy : float, default=0.9
        The least held-out accuracy of a judge for ``judge_ok``.
    refuse_weak_judges : bool, default=False
        Raise, before any decoding, when a judge is below ``min_judge_accuracy`` (otherwise a
        ``RuntimeWarning``).

    Returns
    -------
    dict
        ``cg_rho<r>`` per rho, ``details`` (the per-rho results of the metric), ``factor_names``,
        ``judge_accuracy`` (factor name -> held-out accuracy of its judge), ``judge_ok``,
        ``weak_judges`` (names) and ``min_judge_accuracy``.

    Raises
    ------
    InvalidArgumentError
        When a factor has no judge, ``packaged`` names no judges of the run's dataset, or a judge
        is weak and ``refuse_weak_judges`` is set.
    """
    factors, codes, names = codes_of_run(run_dir, n=n, seed=seed)
    folder = judges_folder(judges_dir, open_run(run_dir).data_name, "--judges")
    models = load_judges(folder, names)
    measured = judge_accuracies(folder)
    accuracies = [measured.get(name, float("nan")) for name in names]
    judges = check_judges(accuracies, names, min_judge_accuracy, refuse=refuse_weak_judges)
    task = open_run(run_dir).task()
    return _cg_at_each_rho(factors, codes, task.decode, models, names, judges, rho, min_judge_accuracy)


def cg_of_codes(
    factors: np.ndarray,
    codes: np.ndarray,
    decode: Callable[[np.ndarray], np.ndarray],
    judges: list[Any],
    judge_accuracy: dict[str, float],
    factor_names: list[str],
    rho: tuple[int, ...] = (1, 2),
    min_judge_accuracy: float = DEFAULT_MIN_JUDGE_ACCURACY,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """CG at each rho of a model's codes, its counterfactual images judged by one judge per factor.

    What :func:`cg_of_run` computes once the run's codes, decoder and judges are in memory: no file is read.

    Parameters
    ----------
    factors, codes : numpy.ndarray
        ``(n, K)`` integer factors and ``(n, L)`` codes of the model's examples.
    decode : callable
        Codes ``(m, L)`` -> images (the model's decoder).
    judges : list
        The judge of each factor, in the order of ``factor_names``: a trained classifier whose
        ``outputs(images)`` are the logits of the factor's classes.
    judge_accuracy : dict of str to float
        Factor -> the held-out accuracy its judge is held to (NaN when unknown).
    factor_names : list of str
        The factors' names, one per column of ``factors``.
    rho : tuple of int, default=(1, 2)
        Latents attributed to each factor.
    min_judge_accuracy : float, default=0.9
        The least held-out accuracy of a judge for ``judge_ok``.
    refuse_weak_judges : bool, default=False
        Raise, before any decoding, when a judge is below ``min_judge_accuracy`` (otherwise a
        ``RuntimeWarning``).

    Returns
    -------
    dict
        As :func:`cg_of_run`.
    """
    accuracies = [judge_accuracy.get(name, float("nan")) for name in factor_names]
    checked = check_judges(accuracies, factor_names, min_judge_accuracy, refuse=refuse_weak_judges)
    return _cg_at_each_rho(factors, codes, decode, judges, factor_names, checked, rho, min_judge_accuracy)


def _cg_at_each_rho(
    factors: np.ndarray,
    codes: np.ndarray,
    decode: Callable[[np.ndarray], np.ndarray],
    models: list[Any],
    names: list[str],
    judges: dict[str, Any],
    rho: tuple[int, ...],
    min_judge_accuracy: float,
) -> dict[str, Any]:
    """CG at each rho with the judges checked (:func:`repscope.metrics.disentanglement.counterfactual.check_judges`
    gave ``judges``); the latents attributed to each factor are UC's top-rho IRS latents."""

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
        # check_judges has warned once already; the per-rho results only record the accuracies
        warnings.simplefilter("ignore", RuntimeWarning)
        for value in capture["params"]["rho"]:
            result = counterfactual_generativeness(
                factors,
                codes,
                capture["q_sets"][f"rho{value}"],
                decode,
                predict_proba,
                judge_accuracy=judges["judge_accuracy"],
                min_judge_accuracy=min_judge_accuracy,
            )
            out[f"cg_rho{value}"] = result["cg"]
            out["details"][f"rho{value}"] = result
    return out


def judge_accuracies(folder: str | Path) -> dict[str, float]:
    """The accuracy every judge (a training run) in ``folder`` is held to.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder :func:`train_judges` wrote.

    Returns
    -------
    dict of str to float
        Factor name (the run's folder name) -> identifiable accuracy from its ``judge.json``; for a run
        without one (trained before it existed), the raw test accuracy of its ``metrics.json`` (NaN when
        the run recorded none).
    """
    return {name: record["identifiable_accuracy"] for name, record in judge_records(folder).items()}


def _read_judge(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text())
        record["accuracy"], record["identifiable_accuracy"] = (
            float(record["accuracy"]),
            float(record["identifiable_accuracy"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataFormatError(f"{path}: not a judge record ({exc})") from None
    return record


def judge_records(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every judge's :func:`judge_record` in ``folder`` (raw and identifiable accuracy).

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder :func:`train_judges` wrote.

    Returns
    -------
    dict of str to dict
        Factor name -> the run's ``judge.json``; a run without one gets its raw test accuracy as both
        accuracies and ``rule`` ``"raw test accuracy (no judge.json)"``.

    Raises
    ------
    DataFormatError
        A ``judge.json`` that is not a JSON object with numeric accuracies, naming the file.
    """
    records = {}
    for run in sorted(Path(folder).iterdir()):
        path = run / JUDGE_FILE
        if path.is_file():
            records[run.name] = _read_judge(path)
        elif (run / METRICS_FILE).is_file():
            raw = float(read_metrics(run).get("test_accuracy", float("nan")))
            records[run.name] = {
                "accuracy": raw,
                "identifiable_accuracy": raw,
                "rule": "raw test accuracy (no judge.json)",
            }
    return records


__all__ = [
    "PACKAGED",
    "PACKAGED_JUDGES",
    "cg_of_codes",
    "cg_of_run",
    "judge_accuracies",
    "judge_record",
    "judge_records",
    "judges_folder",
    "load_judges",
    "train_judges",
    "trained_judges",
]
