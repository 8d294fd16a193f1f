"""``repscope disentangle score``: a file or a trained run -> its ``(factors, codes)`` arrays -> the metrics.

The command's steps: the arrays of an npz or of a run's encoded test images; every metric of them
(:mod:`repscope.studies.candle.score_arrays`); with ``--judges``, CG of the run's decoder, its
counterfactual images scored by the judges (factor classifiers); all of it as one JSON-ready result
(:func:`compute_file_scores`), which :func:`write_file_scores` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic


def compute_file_scores(
    file: str | Path,
    *,
    n: int = 10_000,
    seed: int = 0,
    metrics: list[str] | None = None,
    bootstrap: int = 0,
    judges: str | Path | None = None,
    compat: str = "paper",
    min_judge_accuracy: float = 0.9,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """The result of ``repscope disentangle score``: the arrays of ``file`` scored on the disentanglement
    metrics (nothing is written; :func:`write_file_scores` writes it).

    Parameters
    ----------
    file : str or pathlib.Path
        An npz with ``factors`` (N, K) integer classes, ``codes`` (N, L) and optionally ``factor_sizes``
        (:func:`repscope.studies.candle.score_arrays.read_codes_npz`), or a run directory of ``repscope
        train`` whose model encodes images and whose data has factors (its test images are encoded,
        :func:`repscope.studies.candle.score_arrays.codes_of_run`).
    n : int, default=10000
        A run directory: test examples encoded (a seeded draw).
    seed : int, default=0
        Seed of the bootstrap and of a run directory's draw.
    metrics : list of str, optional
        Only these metrics (default: every metric that scores a plain pair).
    bootstrap : int, default=0
        Resamples of rows for a 95% percentile interval of every score (0: none).
    judges : str or pathlib.Path, optional
        A run directory only: the folder of the judges of CG at rho 1 and 2, or ``packaged``
        (:func:`repscope.studies.candle.cg.cg_of_run`).
    compat : {"paper", "reference", "both"}, default="paper"
        Mode of IRS and UC (:func:`repscope.studies.candle.score_arrays.score_arrays`): ``"reference"``
        scores them as the authors' code does (IRS on 20-bin factors as disentanglement_lib, UC at rho 1
        and 2 with the CANDLE fork's latent selection), under ``irs_reference``, ``uc_rho1_reference``,
        ``uc_rho2_reference``; ``"both"`` gives both sets.
    min_judge_accuracy : float, default=0.9
        With ``judges``: the least held-out accuracy of a judge for ``judge_ok``.
    refuse_weak_judges : bool, default=False
        With ``judges``: refuse (raise) instead of warning when a judge is below it.

    Returns
    -------
    dict
        ``file``, ``repscope_version``, ``factor_sizes`` (npz), ``factor_names`` (run), ``bootstrap``
        (its settings or None), ``scores`` (every scalar score by name, flat) and what
        :func:`repscope.studies.candle.score_arrays.score_arrays` returns (``n``, ``factors``, ``latents``,
        ``compat``, ``metrics``, ``seconds``); with ``judges``, ``metrics["cg"]`` (with its judges'
        accuracies and ``judge_ok``: :func:`repscope.studies.candle.cg.cg_of_run`) and the
        ``cg_rho<r>`` scores.

    Raises
    ------
    InvalidArgumentError
        ``judges`` with an npz (CG needs a decoder), an unknown metric or ``compat``, a weak judge
        with ``refuse_weak_judges``.
    """
    from repscope import __version__  # noqa: PLC0415
    from repscope.studies.candle.score_arrays import headline, score_arrays  # noqa: PLC0415

    file = Path(file)
    if judges is not None and not file.is_dir():
        raise InvalidArgumentError("--judges: CG needs a run directory (a decoder), not an npz of codes")
    factors, codes, names, sizes = _arrays_of(file, n, seed)
    scores = score_arrays(factors, codes, metrics=metrics or None, bootstrap=bootstrap, seed=seed, compat=compat)
    result = {
        "file": str(file),
        "repscope_version": __version__,
        "factor_sizes": sizes.tolist() if sizes is not None else None,
        "factor_names": names,
        "bootstrap": {"resamples": bootstrap, "seed": seed, "level": 0.95} if bootstrap else None,
        "scores": headline(scores),
        **scores,
    }
    if judges is not None:
        cg = _judged_cg(file, judges, n, seed, min_judge_accuracy, refuse_weak_judges)
        result["metrics"]["cg"] = cg
        result["scores"].update({key: value for key, value in cg.items() if key.startswith("cg_rho")})
    return result


def _arrays_of(file: Path, n: int, seed: int) -> tuple[Any, Any, list[str] | None, Any]:
    """``(factors, codes, factor names, factor sizes)`` of a run directory (its encoded test draw; no sizes)
    or of an npz (no names)."""
    from repscope.progress import progress_bar  # noqa: PLC0415
    from repscope.studies.candle.score_arrays import codes_of_run, read_codes_npz  # noqa: PLC0415

    if file.is_dir():
        with progress_bar(f"encoding up to {n} test images of {file.name}"):  # a line every few seconds
            factors, codes, names = codes_of_run(file, n=n, seed=seed)
        return factors, codes, names, None
    factors, codes, sizes = read_codes_npz(file)
    return factors, codes, None, sizes


def _judged_cg(
    run_dir: Path, judges: str | Path, n: int, seed: int, min_judge_accuracy: float, refuse_weak_judges: bool
) -> dict[str, Any]:
    """CG at rho 1 and 2 of a run's model, its counterfactual images judged by the judges in ``judges``."""
    from repscope.progress import progress_bar  # noqa: PLC0415
    from repscope.studies.candle.cg import cg_of_run  # noqa: PLC0415

    with progress_bar(f"CG of {run_dir.name} at rho 1 and 2 (decoding counterfactuals, judging them)"):
        return cg_of_run(
            run_dir,
            judges,
            n=n,
            seed=seed,
            min_judge_accuracy=min_judge_accuracy,
            refuse_weak_judges=refuse_weak_judges,
        )


def write_file_scores(result: dict[str, Any], out: str | Path) -> None:
    """Write the result of :func:`compute_file_scores` to ``out`` as JSON (atomically).

    Parameters
    ----------
    result : dict
        The result.
    out : str or pathlib.Path
        The JSON file.
    """
    write_json_atomic(out, result)


def score_file(file: str | Path, *, out: str | Path | None = None, **options: Any) -> dict[str, Any]:
    """:func:`compute_file_scores` of ``file`` with ``options``, written to ``out`` when given
    (:func:`write_file_scores`); returns the result."""
    result = compute_file_scores(file, **options)
    if out is not None:
        write_file_scores(result, out)
    return result


def score_intervals(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The bootstrap interval of every headline score that has one, by score name.

    Parameters
    ----------
    result : dict
        What :func:`compute_file_scores` returns.

    Returns
    -------
    dict
        Score name -> ``{"low", "high", "mean", ...}`` (the percentile interval and the resampled mean).
    """
    intervals: dict[str, dict[str, float]] = {}
    for name in result["scores"]:
        for part in result["metrics"].values():
            bounds = part.get("bootstrap", {}).get(name)
            if bounds:
                intervals[name] = bounds
    return intervals


__all__ = ["compute_file_scores", "score_file", "score_intervals", "write_file_scores"]
