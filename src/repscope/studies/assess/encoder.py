"""The encoder role: how well a model's codes capture the ground-truth factors of its images.

:func:`assess_encoder` encodes the images of a :class:`~repscope.studies.assess.factor_data.FactorData` and
scores the codes with every registered metric that needs only ``(factors, codes)``
(:func:`repscope.metrics.registry.metric_names` with ``ARRAY_INPUTS``: IRS, UC at rho 1 and 2, MIG, DCI,
SAP, modularity and explicitness, and any metric registered later) through
:func:`repscope.studies.candle.score_arrays.score_arrays`, which also gives the bootstrap intervals. Each
score stands beside

- its chance level: the same metric on the same codes with their rows shuffled by a seeded permutation
  (``numpy.random.default_rng(seed).permutation(N)``), which keeps every latent's distribution and breaks
  its link to the factors;
- the CANDLE paper's printed value for its beta-VAE (Reddy et al. 2022, Table 2: the unsupervised model the
  others are variants of) on the same dataset, where the paper has one (dSprites, CANDLE);
- repscope's own beta-VAE on dSprites (the README's CANDLE section), on dSprites.

With a decoder, CG (Counterfactual Generativeness, CANDLE Eqs. 2-5) at rho 1 and 2 is computed by
:func:`repscope.studies.candle.cg.cg_of_codes`, the decoded counterfactuals judged by one classifier per
factor: the judges that come with the package for dSprites (:data:`repscope.studies.candle.cg.PACKAGED_JUDGES`)
and CdSprites+ (:func:`repscope.studies.multimodal.judges.read_judges`), or a folder of judges
(``repscope disentangle train-judges``; CANDLE's must be trained on its renders). Without judges for the
data, CG is left out with a note (the judges and the two CG runs: :mod:`repscope.studies.assess.encoder_cg`).
A traversal figure shows what each latent does (one row per latent).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.bootstrap import scalar_scores
from repscope.metrics.registry import metric_entry
from repscope.progress import progress_bar
from repscope.studies.assess.assessment import Assessment, HeadlineRow
from repscope.studies.assess.encoder_cg import CG_BATCH, CG_RHO, JudgeProbabilities, cg_at_each_rho, judged_cg
from repscope.studies.assess.factor_data import FactorData, as_uint8_images
from repscope.studies.candle.disentanglement import PAPER_TABLES
from repscope.studies.candle.score_arrays import COMPAT_CHOICES, has_reference_mode, headline, score_arrays
from repscope.validation import check_positive_int, check_seed

__all__ = [
    "CG_BATCH",
    "CG_RHO",
    "REPSCOPE_DSPRITES",
    "JudgeProbabilities",
    "assess_encoder",
    "cg_at_each_rho",
    "decoded_images",
    "encode_images",
    "traversal_grid_image",
]

# the paper's model row each number is put beside: its plain beta-VAE, the model the others vary
PAPER_MODEL = "beta-VAE"
PAPER_KEYS = ("irs", "uc_rho1", "cg_rho1", "uc_rho2", "cg_rho2")  # the order of Table 2's columns
# repscope's beta-VAE on dSprites, README (CANDLE section, the faithful semi-supervised table, 2026-11-26)
REPSCOPE_DSPRITES = {
    "irs": 0.59,
    "uc_rho1": 0.70,
    "cg_rho1": 0.14,
    "uc_rho2": 0.70,
    "cg_rho2": 0.07,
    "mig": 0.056,
    "dci_disentanglement": 0.064,
    "sap": 0.019,
}
REPSCOPE_SOURCE = (
    "README, CANDLE section: repscope's beta-VAE of the shipped disentangle study config (50,000 dSprites "
    "images, 10 epochs), 2,000 test codes; its CG judged by the study's own 3-epoch judges"
)
TRAVERSAL_STEPS = 7
TRAVERSAL_MAX_LATENTS = 32
GAP = 2  # pixels between the cells of the traversal grid


def encode_images(
    encoder: Any, images: np.ndarray, batch_size: int = 256, *, progress: bool | None = None, label: str = "model"
) -> np.ndarray:
    """The codes ``encoder.encode`` gives ``images``, a batch at a time, checked, under one progress bar.

    Parameters
    ----------
    encoder : object
        Has ``encode(images) -> (n, L)`` codes.
    images : numpy.ndarray
        uint8 images ``(N, H, W)`` or ``(N, H, W, C)``.
    batch_size : int, default=256
        Images per call.
    progress : bool, optional
        False: no progress bar; None or True: as :func:`repscope.progress.progress_mode` says.
    label : str, default="model"
        The model, named on the progress bar.

    Returns
    -------
    numpy.ndarray
        float64 ``(N, L)``.

    Raises
    ------
    InvalidArgumentError
        Naming ``--model``: codes of another shape or row count than the images, or NaN / infinite codes.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    parts = []
    # one bar over every chunk: the encoder's own (an adapter's) would count each chunk of batch_size alone
    with progress_bar(f"encoding {len(images)} images with {label}", total=len(images), enabled=progress) as update:
        for start in range(0, len(images), batch_size):
            chunk = images[start : start + batch_size]
            codes = np.asarray(encoder.encode(chunk))
            if codes.ndim != 2 or len(codes) != len(chunk) or not np.issubdtype(codes.dtype, np.number):
                raise InvalidArgumentError(
                    f"--model: encode of {len(chunk)} images gave {codes.dtype} codes of shape {codes.shape}; "
                    f"expected ({len(chunk)}, L) numbers"
                )
            parts.append(codes.astype(np.float64))
            update(start + len(chunk))
    codes = np.concatenate(parts)
    if not np.all(np.isfinite(codes)):
        row = int(np.argmax(~np.isfinite(codes).all(axis=1)))
        raise InvalidArgumentError(f"--model: encode gave NaN or infinite codes (first for image {row})")
    return codes


def assess_encoder(
    encoder: Any,
    data: FactorData,
    *,
    decoder: Any = None,
    metrics: list[str] | None = None,
    compat: str = "paper",
    judges: str | Path | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    batch_size: int = 256,
    progress: Callable[[str], None] | bool | None = None,
    model_label: str = "model",
) -> Assessment:
    """Every disentanglement score of ``encoder``'s codes of ``data``, beside its reference points (module
    docstring); with ``decoder``, CG at rho 1 and 2 and latent traversals.

    Parameters
    ----------
    encoder : object
        Has ``encode(images) -> (n, L)`` codes (uint8 images in, as :class:`FactorData` holds them).
    data : FactorData
        Images and factors (:func:`repscope.studies.assess.factor_data.load_factor_data`).
    decoder : object, optional
        Has ``decode(codes) -> images`` (uint8 or float [0, 1], the shape of ``data.images``).
    metrics : list of str, optional
        Registered metrics scoring a plain ``(factors, codes)`` pair; default all of them.
    compat : {"paper", "reference", "both"}, default="paper"
        Mode of the metrics that have two (IRS, UC: :func:`~repscope.studies.candle.score_arrays.score_arrays`).
    judges : str or pathlib.Path, optional
        A folder of CG judges (one run per factor); default the packaged judges of dSprites / CdSprites+.
    bootstrap : int, default=0
        Resamples of the percentile intervals (0: none).
    seed : int, default=0
        Seed of the bootstrap and of the permutation behind the chance levels.
    batch_size : int, default=256
        Images encoded at a time.
    progress : callable or bool, optional
        A callable receives the warning and estimate lines of the scoring (they also go into the notes);
        False: no progress bars (encoding, CG) either; otherwise the bars follow
        :func:`repscope.progress.progress_mode`.
    model_label : str, default="model"
        What was assessed, for the record.

    Returns
    -------
    Assessment
        ``metrics["disentanglement"]`` (scores, ``chance``, ``intervals``) and, with a decoder and judges,
        ``metrics["cg"]``; headline rows; tables ``per_factor`` and ``irs_matrix``; arrays ``codes`` and
        ``factors``; figure ``traversals``; settings; notes.

    Raises
    ------
    InvalidArgumentError
        On a bad ``compat``, ``bootstrap``, metric name or ``seed``, codes of the wrong shape, a decoder whose
        images break the pixel rule, or a ``judges`` folder without a judge for a factor.
    """
    if compat not in COMPAT_CHOICES:
        raise InvalidArgumentError(f"--compat: must be one of {', '.join(COMPAT_CHOICES)}, got {compat!r}")
    seed = check_seed(seed, "--seed")
    notes = list(data.notes)

    def say(line: str) -> None:
        notes.append(line)
        if callable(progress):
            progress(line)

    bars = False if progress is False else None  # repscope.studies.assess.api.assess's progress=False
    codes = encode_images(encoder, data.images, batch_size, progress=bars, label=model_label)
    factors = data.factors
    scores = score_arrays(factors, codes, metrics, bootstrap=bootstrap, seed=seed, compat=compat, notify=say)
    shuffled = codes[np.random.default_rng(seed).permutation(len(codes))]
    chance = headline(score_arrays(factors, shuffled, metrics, compat=compat, notify=lambda line: None))
    found = {"disentanglement": _disentanglement_metrics(scores, chance)}
    rows = _headline_rows(scores, chance, data)
    tables = {"per_factor": _per_factor_table(scores, data.names), "irs_matrix": _irs_table(scores, data.names)}
    figures: dict[str, np.ndarray] = {}
    settings = _settings(data, scores, compat, bootstrap, seed)
    if decoder is not None:
        figures["traversals"] = traversal_grid_image(decoder, codes)
        if codes.shape[1] > TRAVERSAL_MAX_LATENTS:
            notes.append(f"traversals: the first {TRAVERSAL_MAX_LATENTS} of {codes.shape[1]} latents are shown")
        cg = _cg_part(decoder, data, codes, judges, seed, notes, bars)
        if cg is not None:
            found["cg"], cg_rows, per_factor_cg, settings["judges"] = cg
            rows += cg_rows
            tables["per_factor"] = tables["per_factor"].join(per_factor_cg)
    else:
        notes.append("no decoder: CG and the traversals need one")
    return Assessment(
        role="encoder",
        model=model_label,
        data=data.source,
        metrics=found,
        headline=tuple(rows),
        tables=tables,
        arrays={"codes": codes, "factors": factors},
        figures=figures,
        settings=settings,
        notes=tuple(notes),
    )


def _disentanglement_metrics(scores: dict[str, Any], chance: dict[str, float]) -> dict[str, Any]:
    """The scalar scores, their chance levels and their intervals, JSON-ready."""
    out: dict[str, Any] = {**headline(scores), "chance": chance}
    intervals = {}
    for result in scores["metrics"].values():
        for key, interval in result.get("bootstrap", {}).items():
            intervals[key] = {name: _plain(value) for name, value in interval.items()}
    if intervals:
        out["intervals"] = intervals
    out.update(n=scores["n"], latents=scores["latents"], compat=scores["compat"], seconds=scores["seconds"])
    return out


def _plain(value: Any) -> Any:
    """A JSON-ready number: numpy scalars as Python ones, NaN as None."""
    if isinstance(value, float | np.floating):
        return None if np.isnan(value) else float(value)
    return int(value) if isinstance(value, np.integer) else value


def _references(key: str, data: FactorData) -> dict[str, Any]:
    """The paper's and repscope's values for a score ``key`` on ``data``'s dataset (None where none exists).

    A reference-mode score (``irs_reference``) is put beside the same printed number: the paper's numbers
    came from its authors' code, which the reference mode follows.
    """
    base = key.removesuffix("_reference")
    out: dict[str, Any] = {}
    if data.dataset in PAPER_TABLES and base in PAPER_KEYS:
        name, table, setting = PAPER_TABLES[data.dataset]
        out["paper"] = table[PAPER_MODEL][PAPER_KEYS.index(base)]
        out["paper_source"] = f"CANDLE (Reddy et al. 2022) Table 2, {PAPER_MODEL} on {name} ({setting})"
        if base.startswith("uc_"):
            # README, reference modes: the printed UC pairs are what the authors' code's latent selection gives
            out["paper_source"] += "; its UC chose latents as its code does: compare with compat='reference'"
    if data.dataset == "dsprites" and base in REPSCOPE_DSPRITES:
        out["repscope"], out["repscope_source"] = REPSCOPE_DSPRITES[base], REPSCOPE_SOURCE
    return out


def _metric_of(result_key: str) -> str:
    """The registered metric behind a result key (``irs_reference`` -> ``irs``)."""
    base = result_key.removesuffix("_reference")
    return base if base != result_key and has_reference_mode(base) else result_key


def _headline_rows(scores: dict[str, Any], chance: dict[str, float], data: FactorData) -> list[HeadlineRow]:
    """One row per scalar score (training-split fits left out: they say how well a probe memorised)."""
    rows = []
    for result_key, result in scores["metrics"].items():
        summary = metric_entry(_metric_of(result_key)).summary
        for key, value in scalar_scores(result).items():
            if key.endswith("_train"):
                continue
            interval = result.get("bootstrap", {}).get(key, {})
            rows.append(
                HeadlineRow(
                    assessment="disentanglement",
                    metric=key,
                    value=value,
                    chance=chance.get(key),
                    ci_low=_plain(interval.get("low")),
                    ci_high=_plain(interval.get("high")),
                    description=f"{summary} (higher is better)",
                    **_references(key, data),
                )
            )
    return rows


def _per_factor_table(scores: dict[str, Any], names: tuple[str, ...]) -> pd.DataFrame:
    """Per factor: the metrics' per-factor scores and UC's latents attributed to it."""
    columns = {
        "mig": ("mig", "mig_per_factor"),
        "sap": ("sap", "sap_per_factor"),
        "dci_accuracy_test": ("dci", "accuracy_test_per_factor"),
        "explicitness_test": ("modularity_explicitness", "explicitness_per_factor_test"),
    }
    table = pd.DataFrame(index=pd.Index(list(names), name="factor"))
    results = scores["metrics"]
    for column, (name, key) in columns.items():
        if name in results and len(results[name].get(key, ())) == len(names):
            table[column] = results[name][key]
    for result_key in ("uc", "uc_reference"):
        suffix = "_reference" if result_key.endswith("_reference") else ""
        sets = results.get(result_key, {}).get(f"q_sets{suffix}", {})
        for rho, chosen in sets.items():
            table[f"latents_{rho}{suffix}"] = [" ".join(f"z{latent}" for latent in latents) for latents in chosen]
    return table


def _irs_table(scores: dict[str, Any], names: tuple[str, ...]) -> pd.DataFrame:
    """IRS's latent x factor matrix (NaN rows: constant latents), the paper mode's when it was computed."""
    results = scores["metrics"]
    if "irs" in results:
        matrix = results["irs"]["irs_matrix"]
    elif "irs_reference" in results:
        matrix = results["irs_reference"]["irs_matrix_reference"]
    else:
        return pd.DataFrame()
    matrix = np.asarray(matrix, dtype=np.float64)
    index = pd.Index([f"z{latent}" for latent in range(len(matrix))], name="latent")
    return pd.DataFrame(matrix, index=index, columns=list(names))


def _settings(data: FactorData, scores: dict[str, Any], compat: str, bootstrap: int, seed: int) -> dict[str, Any]:
    """What changes the values: the rows, the seed, the modes and every metric's parameters."""
    return {
        "n": len(data),
        "seed": seed,
        "compat": compat,
        "bootstrap": int(bootstrap),
        "data": data.source,
        "factor_names": list(data.names),
        "factor_sizes": list(data.sizes),
        "metrics": list(scores["metrics"]),
        "metric_params": {key: result.get("params", {}) for key, result in scores["metrics"].items()},
        "chance": f"each metric on the codes with their rows permuted by numpy.random.default_rng({seed})",
    }


# --------------------------------------------------------------------------------------------------
# traversals


def traversal_grid_image(decoder: Any, codes: np.ndarray, steps: int = TRAVERSAL_STEPS) -> np.ndarray:
    """One uint8 image of latent traversals: row ``l`` decodes the mean code with latent ``l`` set to
    ``steps`` values from its 5th to its 95th percentile over ``codes``.

    A percentile range rather than the fixed [-2, 2] of a VAE's prior
    (:func:`repscope.studies.candle.disentanglement.traversal_images`): a model from outside has codes of
    any scale. At most :data:`TRAVERSAL_MAX_LATENTS` rows (the first latents).

    Parameters
    ----------
    decoder : object
        Has ``decode(codes) -> images``.
    codes : numpy.ndarray
        ``(N, L)`` codes of the assessed images.
    steps : int, default=7
        Images per row.

    Returns
    -------
    numpy.ndarray
        uint8 ``(rows * (H + 2) - 2, steps * (W + 2) - 2)`` (``[, C]``), cells 2 pixels apart on grey 128.

    Raises
    ------
    InvalidArgumentError
        When the decoder's images are not a batch of images, one per code.
    """
    latents = min(codes.shape[1], TRAVERSAL_MAX_LATENTS)
    low, high = np.percentile(codes, [5, 95], axis=0)
    grid = np.repeat(codes.mean(axis=0)[None, None], latents, axis=0).repeat(steps, axis=1)
    for latent in range(latents):
        grid[latent, :, latent] = np.linspace(low[latent], high[latent], steps)
    images = decoded_images(decoder, grid.reshape(-1, codes.shape[1]))
    height, width = images.shape[1:3]
    canvas = np.full(
        (latents * (height + GAP) - GAP, steps * (width + GAP) - GAP, *images.shape[3:]), 128, dtype=np.uint8
    )
    for index, image in enumerate(images):
        top, left = (index // steps) * (height + GAP), (index % steps) * (width + GAP)
        canvas[top : top + height, left : left + width] = image
    return canvas


def decoded_images(decoder: Any, codes: np.ndarray) -> np.ndarray:
    """``decoder.decode(codes)`` as uint8 images, one per code.

    Parameters
    ----------
    decoder : object
        Has ``decode(codes) -> images``.
    codes : numpy.ndarray
        ``(n, L)`` codes.

    Returns
    -------
    numpy.ndarray
        uint8 ``(n, H, W)`` or ``(n, H, W, C)``.

    Raises
    ------
    InvalidArgumentError
        Naming ``--model``: not a batch of images, or another number of images than codes.
    """
    images = as_uint8_images(np.asarray(decoder.decode(codes)), InvalidArgumentError, "--model: decode")
    if len(images) != len(codes):
        raise InvalidArgumentError(f"--model: decode of {len(codes)} codes gave {len(images)} images")
    return images


# --------------------------------------------------------------------------------------------------
# CG


def _cg_part(
    decoder: Any,
    data: FactorData,
    codes: np.ndarray,
    judges: str | Path | None,
    seed: int,
    notes: list[str],
    progress: bool | None = None,
) -> tuple[dict[str, Any], list[HeadlineRow], pd.DataFrame, str] | None:
    """CG at rho 1 and 2 and its chance level; None (with a note) when no judges fit the data or the
    decoder's images are not the data's."""
    probe = decoded_images(decoder, codes[:2])
    if probe.shape[1:] != data.images.shape[1:]:
        notes.append(
            f"CG skipped: the decoder gives images of shape {probe.shape[1:]}, the data's are {data.images.shape[1:]}"
        )
        return None
    found = judged_cg(lambda batch: decoded_images(decoder, batch), data, codes, judges, seed, notes, progress)
    if found is None:
        return None
    cg, chance, where = found
    return _cg_results(cg, chance, data, where)


def _cg_results(
    cg: dict[str, Any], chance: dict[str, Any], data: FactorData, where: str
) -> tuple[dict[str, Any], list[HeadlineRow], pd.DataFrame, str]:
    """CG's metrics entry, headline rows and per-factor columns."""
    keys = [f"cg_rho{rho}" for rho in CG_RHO if f"cg_rho{rho}" in cg]
    metrics = {key: float(cg[key]) for key in keys}
    metrics.update(
        chance={key: float(chance[key]) for key in keys},
        judge_accuracy={name: _plain(value) for name, value in cg["judge_accuracy"].items()},
        judge_ok=bool(cg["judge_ok"]),
        weak_judges=list(cg["weak_judges"]),
        min_judge_accuracy=float(cg["min_judge_accuracy"]),
        judges=where,
    )
    summary = metric_entry("cg").summary
    rows = [
        HeadlineRow(
            assessment="cg",
            metric=key,
            value=metrics[key],
            chance=metrics["chance"][key],
            description=f"{summary}, judged by {where} (higher is better)",
            **_references(key, data),
        )
        for key in keys
    ]
    per_factor = pd.DataFrame(
        {key: cg["details"][f"rho{rho}"]["cg_per_factor"] for key, rho in zip(keys, CG_RHO)},
        index=pd.Index(list(data.names), name="factor"),
    )
    return metrics, rows, per_factor, where
