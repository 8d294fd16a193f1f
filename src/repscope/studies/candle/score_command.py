"""What ``repscope disentangle score`` runs: every disentanglement metric of a file of codes or of a trained
run, assembled into one result and written as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic


def score_file(
    file: str | Path,
    *,
    n: int = 10_000,
    seed: int = 0,
    metrics: list[str] | None = None,
    bootstrap: int = 0,
    classifiers: str | Path | None = None,
    out: str | Path | None = None,
    compat: str = "paper",
    min_judge_accuracy: float = 0.9,
    refuse_weak_judges: bool = False,
) -> dict[str, Any]:
    """Score a ``(factors, codes)`` pair read from ``file`` on the disentanglement metrics.

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
    classifiers : str or pathlib.Path, optional
        A run directory only: the factor classifiers that judge CG at rho 1 and 2
        (:func:`repscope.studies.candle.cg.cg_of_run`).
    out : str or pathlib.Path, optional
        JSON file to write the result to (atomically).
    compat : {"paper", "reference", "both"}, default="paper"
        Mode of IRS and UC (:func:`repscope.studies.candle.score_arrays.score_arrays`): ``"reference"``
        scores them as the authors' code does (IRS on 20-bin factors as disentanglement_lib, UC at rho 1
        and 2 with the CANDLE fork's latent selection), under ``irs_reference``, ``uc_rho1_reference``,
        ``uc_rho2_reference``; ``"both"`` gives both sets.
    min_judge_accuracy : float, default=0.9
        With ``classifiers``: the least held-out accuracy of a factor classifier for ``judge_ok``.
    refuse_weak_judges : bool, default=False
        With ``classifiers``: refuse (raise) instead of warning when a classifier is below it.

    Returns
    -------
    dict
        ``file``, ``repscope_version``, ``factor_sizes`` (npz), ``factor_names`` (run), ``bootstrap``
        (its settings or None), ``scores`` (every scalar score by name, flat) and what
        :func:`repscope.studies.candle.score_arrays.score_arrays` returns (``n``, ``factors``, ``latents``,
        ``compat``, ``metrics``, ``seconds``); with ``classifiers``, ``metrics["cg"]`` (with its judges'
        accuracies and ``judge_ok``: :func:`repscope.studies.candle.cg.cg_of_run`) and the
        ``cg_rho<r>`` scores.

    Raises
    ------
    InvalidArgumentError
        ``classifiers`` with an npz (CG needs a decoder), an unknown metric or ``compat``, a weak judge
        with ``refuse_weak_judges``.
    """
    from repscope import __version__  # noqa: PLC0415
    from repscope.progress import progress_bar  # noqa: PLC0415
    from repscope.studies.candle.score_arrays import (  # noqa: PLC0415
        codes_of_run,
        headline,
        read_codes_npz,
        score_arrays,
    )

    file = Path(file)
    if classifiers is not None and not file.is_dir():
        raise InvalidArgumentError("--classifiers: CG needs a run directory (a decoder), not an npz of codes")
    names = None
    sizes = None
    if file.is_dir():
        with progress_bar(f"encoding up to {n} test images of {file.name}"):  # a line every few seconds
            factors, codes, names = codes_of_run(file, n=n, seed=seed)
    else:
        factors, codes, sizes = read_codes_npz(file)
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
    if classifiers is not None:
        from repscope.studies.candle.cg import cg_of_run  # noqa: PLC0415

        with progress_bar(f"CG of {file.name} at rho 1 and 2 (decoding counterfactuals, judging them)"):
            cg = cg_of_run(
                file,
                classifiers,
                n=n,
                seed=seed,
                min_judge_accuracy=min_judge_accuracy,
                refuse_weak_judges=refuse_weak_judges,
            )
        result["metrics"]["cg"] = cg
        result["scores"].update({key: value for key, value in cg.items() if key.startswith("cg_rho")})
    if out is not None:
        write_json_atomic(out, result)
    return result


def score_intervals(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The bootstrap interval of every headline score that has one, by score name.

    Parameters
    ----------
    result : dict
        What :func:`score_file` returns.

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


__all__ = ["score_file", "score_intervals"]
