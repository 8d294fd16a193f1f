"""CG of the encoder role: CANDLE's Counterfactual Generativeness (Reddy et al. 2022, Eqs. 2-5) of a model's
codes and of the same codes shuffled across rows (its chance level), the decoded counterfactuals judged by one
classifier per factor.

:func:`judged_cg` finds the judges of the data (:func:`_judges_for`: a folder of judges, the packaged dSprites
judges of :data:`repscope.studies.candle.cg.PACKAGED_JUDGES`, or the packaged CdSprites+ attribute classifiers
of :func:`repscope.studies.multimodal.judges.read_judges`) and runs :func:`cg_at_each_rho` twice under one
progress bar counting the judges' passes; :class:`JudgeProbabilities` runs a judge only on the images CG asks
it about. :mod:`repscope.studies.assess.encoder` checks the decoder's images and puts the scores beside their
reference points.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from repscope.errors import RepscopeError
from repscope.metrics.disentanglement.counterfactual import DEFAULT_MIN_JUDGE_ACCURACY, check_judges
from repscope.metrics.disentanglement.irs import unique_capture
from repscope.metrics.registry import metric
from repscope.progress import progress_bar
from repscope.studies.assess.factor_data import FactorData
from repscope.studies.candle.cg import PACKAGED_JUDGES, judge_accuracies, load_judges, trained_judges
from repscope.studies.multimodal.judges import packaged_judges_dir, read_judges

__all__ = ["CG_BATCH", "CG_RHO", "JudgeProbabilities", "cg_at_each_rho", "judged_cg"]

CG_RHO = (1, 2)
CG_BATCH = 256  # codes decoded and judged at a time


def judged_cg(
    decode: Callable[[np.ndarray], np.ndarray],
    data: FactorData,
    codes: np.ndarray,
    judges: str | Path | None,
    seed: int,
    notes: list[str],
    progress: bool | None = None,
) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """CG at rho 1 and 2 of ``codes`` and of the same codes with their rows permuted (the chance level).

    Parameters
    ----------
    decode : callable
        Codes ``(m, L)`` -> uint8 images of the data's shape.
    data : FactorData
        The images' factors, names and dataset (which judges fit it).
    codes : numpy.ndarray
        ``(N, L)`` codes of ``data``'s images.
    judges : str or pathlib.Path, optional
        A folder of judges; default the packaged judges of the data's dataset.
    seed : int
        Seed of the permutation (``numpy.random.default_rng(seed).permutation(N)``).
    notes : list of str
        Receives why CG was left out, or which judges are weak.
    progress : bool, optional
        False: no progress bar; None or True: as :func:`repscope.progress.progress_mode` says.

    Returns
    -------
    tuple or None
        ``(cg, chance, where)``: :func:`cg_at_each_rho` of the codes and of the shuffled codes, and where the
        judges came from; None (with a note) when there are no judges for the data.

    Raises
    ------
    InvalidArgumentError
        Naming ``--judges``: not a folder, a factor without a judge, or judges of another factor, dataset
        or image size, or unfinished.
    """
    found = _judges_for(data, judges, notes)
    if found is None:
        return None
    models, accuracy, where = found
    names = list(data.names)
    shuffled = codes[np.random.default_rng(seed).permutation(len(codes))]
    # judge passes: the model's codes and the shuffled ones, each rho, each batch, 3 per factor
    total = 2 * len(CG_RHO) * -(-len(codes) // CG_BATCH) * 3 * len(names)
    described = f"CG of {len(codes)} codes, {len(names)} judges (and its chance level)"
    with progress_bar(described, total=total, enabled=progress) as update:
        passes = itertools.count(1)

        def counted() -> None:
            update(next(passes))

        cg = cg_at_each_rho(data.factors, codes, decode, models, accuracy, names, counted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the weak judges were warned about once already
            chance = cg_at_each_rho(data.factors, shuffled, decode, models, accuracy, names, counted)
        update(total)
    if not cg["judge_ok"]:
        notes.append(f"CG: judges below {cg['min_judge_accuracy']:g} accuracy: {', '.join(cg['weak_judges'])}")
    return cg, chance, where


class JudgeProbabilities(Sequence):
    """Each factor's judge's class probabilities of one batch of images, computed when CG asks for them.

    CG reads one factor's probabilities at a time (:func:`repscope.metrics.disentanglement.counterfactual
    .counterfactual_generativeness`), so the other factors' judges need not run on that batch: on dSprites'
    five factors, five times fewer judge passes than computing every judge's at once.

    Parameters
    ----------
    judges : list
        Trained classifiers with ``outputs(images) -> logits`` (a torch tensor), one per factor.
    images : numpy.ndarray
        The batch.
    on_pass : callable, optional
        Called after each judge's pass (a progress count).
    """

    def __init__(self, judges: list[Any], images: np.ndarray, on_pass: Callable[[], None] | None = None) -> None:
        self.judges = judges
        self.images = images
        self.on_pass = on_pass

    def __len__(self) -> int:
        return len(self.judges)

    def __getitem__(self, factor: Any) -> Any:
        if isinstance(factor, slice):
            return [self[index] for index in range(len(self))[factor]]
        probabilities = torch.softmax(self.judges[factor].outputs(self.images), dim=1).numpy()
        if self.on_pass is not None:
            self.on_pass()
        return probabilities


def cg_at_each_rho(
    factors: np.ndarray,
    codes: np.ndarray,
    decode: Callable[[np.ndarray], np.ndarray],
    judges: list[Any],
    judge_accuracy: dict[str, float],
    factor_names: list[str],
    on_pass: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """CG (the registered ``cg``) at rho 1 and 2, its latent sets UC's top-rho IRS latents, as
    :func:`repscope.studies.candle.cg.cg_of_codes` computes it, each judge run only on the images it judges
    (:class:`JudgeProbabilities`).

    Parameters
    ----------
    factors, codes : numpy.ndarray
        ``(n, K)`` integer factors and ``(n, L)`` codes.
    decode : callable
        Codes ``(m, L)`` -> images.
    judges : list
        The judge of each factor (``outputs(images)`` logits), in the order of ``factor_names``.
    judge_accuracy : dict of str to float
        Factor -> the held-out accuracy of its judge (NaN when unknown).
    factor_names : list of str
        The factors' names.
    on_pass : callable, optional
        Called after each judge's pass over a batch (3 per factor and batch of 256 codes, per rho).

    Returns
    -------
    dict
        ``cg_rho<r>`` for each rho the non-constant latents allow, ``details`` (the metric's result per rho),
        ``judge_accuracy`` (by name), ``judge_ok``, ``weak_judges`` (names) and ``min_judge_accuracy``.
    """
    checked = check_judges([judge_accuracy.get(name, float("nan")) for name in factor_names], factor_names)
    active = int(np.sum(codes.max(axis=0) > codes.min(axis=0)))
    capture = unique_capture(factors, codes, rho=[rho for rho in CG_RHO if rho <= max(active, 1)])
    out: dict[str, Any] = {
        "judge_accuracy": dict(zip(factor_names, checked["judge_accuracy"])),
        "judge_ok": checked["judge_ok"],
        "weak_judges": checked["weak_judges"],
        "min_judge_accuracy": DEFAULT_MIN_JUDGE_ACCURACY,
        "details": {},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # check_judges has warned once already
        for rho in capture["params"]["rho"]:
            result = metric("cg")(
                factors,
                codes,
                capture["q_sets"][f"rho{rho}"],
                decode,
                lambda images: JudgeProbabilities(judges, images, on_pass),
                batch_size=CG_BATCH,
                judge_accuracy=checked["judge_accuracy"],
            )
            out[f"cg_rho{rho}"], out["details"][f"rho{rho}"] = result["cg"], result
    return out


def _judges_for(
    data: FactorData, judges: str | Path | None, notes: list[str]
) -> tuple[list[Any], dict[str, float], str] | None:
    """The judge of every factor, their held-out accuracies and where they came from; None with a note
    when there are none for the data."""
    names = list(data.names)
    if judges is not None:
        return _folder_judges(Path(judges).expanduser(), data)
    if data.dataset in PACKAGED_JUDGES:
        folder = PACKAGED_JUDGES[data.dataset]
        missing = [name for name in names if not (folder / name).is_dir()]
        if not missing:
            return load_judges(folder, names), judge_accuracies(folder), f"the packaged {data.dataset} judges"
        notes.append(f"CG skipped: the packaged {data.dataset} judges have none for {', '.join(missing)}")
        return None
    if data.dataset == "cdsprites":
        return _cdsprites_judges(data, notes)
    what = data.dataset or "this data"
    notes.append(
        f"CG skipped: no judges for {what}; name a folder of judges (repscope disentangle train-judges) to add it"
    )
    return None


def _folder_judges(folder: Path, data: FactorData) -> tuple[list[Any], dict[str, float], str]:
    """Judges trained before in ``folder``, checked against the data's dataset where it is a registered one."""
    names = list(data.names)
    try:
        if data.dataset is not None:
            accuracy = trained_judges(folder, names, data.dataset, data.params)
        else:
            accuracy = {name: judge_accuracies(folder).get(name, float("nan")) for name in names}
        models = load_judges(folder, names)
    except RepscopeError as exc:
        message = str(exc)
        for prefix in ("judges_dir: ", f"--judges {folder}: "):
            message = message.removeprefix(prefix)
        raise type(exc)(f"--judges {folder}: {message}") from None
    return models, accuracy, str(folder)


def _cdsprites_judges(data: FactorData, notes: list[str]) -> tuple[list[Any], dict[str, float], str] | None:
    """The packaged CdSprites+ attribute classifiers of the data's level (their validation accuracy)."""
    level = int(data.params.get("level", 5))
    try:
        found = read_judges(packaged_judges_dir(level), level)
    except RepscopeError as exc:
        notes.append(f"CG skipped: no packaged CdSprites+ level {level} judges ({exc})")
        return None
    names = list(data.names)
    return [found.modules[name] for name in names], found.accuracies, f"the packaged CdSprites+ level {level} judges"
