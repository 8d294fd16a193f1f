"""Arrays -> metrics: every registered disentanglement metric of a ``(factors, codes)`` pair.

:func:`score_arrays` scores the pair (with bootstrap intervals when asked) and writes nothing; the two
ways a pair is made are here too: :func:`read_codes_npz` reads an ``.npz`` written by anyone and
:func:`codes_of_run` encodes a trained run's test images.

The npz (``numpy.savez(path, factors=..., codes=...)``) holds ``factors`` ``(N, K)`` integer factor classes
(or ``(N,)`` for one factor), ``codes`` ``(N, L)`` finite floats, and optionally ``factor_sizes`` ``(K,)``.
It is read with ``allow_pickle=False``: an object array (which only unpickling could read) or a member that is
not a ``.npy`` array (a pickle, text) is refused, never executed. A factor whose classes leave fewer than 5
rows per class on average is refused, and so are classes int64 cannot hold exactly
(:func:`repscope.validation.check_factor_classes`, :func:`repscope.validation.exact_factor_classes`).

Rows are used in the order given: DCI and SAP train on the first 80% of them, as disentanglement_lib
does, so shuffle a dataset stored in grid order before writing it (or use ``--bootstrap``, whose
resamples are shuffled).
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.npzfile import read_npz_arrays
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError, shown
from repscope.metrics.disentanglement.bootstrap import bootstrap_intervals, scalar_scores
from repscope.metrics.registry import ARRAY_INPUTS, metric, metric_entry, metric_names
from repscope.progress import format_seconds, progress_bar
from repscope.train.reader import open_run
from repscope.train.registry import model_entry
from repscope.train.tasks.base import Encoder
from repscope.validation import check_factor_classes, exact_factor_classes


def read_codes_npz(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``factors``, ``codes`` and the optional ``factor_sizes`` of an ``.npz`` (module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        The file.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray or None)
        int64 ``(N, K)`` factors, float64 ``(N, L)`` codes, int64 ``(K,)`` factor sizes or None.

    Raises
    ------
    SourceNotFoundError
        When the file does not exist.
    DataFormatError
        When it is not an npz (text, a pickle, a single ``.npy``), a member is not a ``.npy`` array (raw
        bytes) or holds object arrays, it misses ``factors`` or ``codes``, or their shapes, values or types
        are wrong, ``factor_sizes`` included (the message names the file and the member).
    """
    path = Path(path)
    if not path.is_file():
        raise SourceNotFoundError(f"{path}: no such file")
    arrays = read_npz_arrays(
        path,
        "'factors' (N, K) integer classes and 'codes' (N, L), optionally 'factor_sizes' (K,): "
        "numpy.savez(path, factors=..., codes=...)",
    )
    missing = [key for key in ("factors", "codes") if key not in arrays]
    if missing:
        raise DataFormatError(f"{path}: no {missing[0]!r} array (has: {', '.join(sorted(arrays)) or 'nothing'})")
    factors, codes = arrays["factors"], arrays["codes"]
    if factors.ndim == 1:
        factors = factors[:, None]
    if factors.ndim != 2 or codes.ndim != 2:
        raise DataFormatError(
            f"{path}: 'factors' must be (N, K) and 'codes' (N, L); got {factors.shape} and {codes.shape}"
        )
    if len(factors) != len(codes):
        raise DataFormatError(f"{path}: 'factors' has {len(factors)} rows and 'codes' {len(codes)}; they must match")
    if not (np.issubdtype(factors.dtype, np.integer) or np.issubdtype(factors.dtype, np.floating)):
        raise DataFormatError(f"{path}: 'factors' must be numbers, got dtype {factors.dtype}")
    if np.issubdtype(factors.dtype, np.floating) and not np.all(np.isfinite(factors) & (factors == np.round(factors))):
        raise DataFormatError(f"{path}: 'factors' must hold whole-number factor classes")
    if not np.issubdtype(codes.dtype, np.number) or np.issubdtype(codes.dtype, np.complexfloating):
        raise DataFormatError(f"{path}: 'codes' must be real numbers, got dtype {codes.dtype}")
    codes = codes.astype(np.float64)
    if not np.all(np.isfinite(codes)):
        bad = int(np.argmax(~np.isfinite(codes).all(axis=1)))
        raise DataFormatError(f"{path}: 'codes' holds NaN or infinite values (first in row {bad})")
    try:
        factors = exact_factor_classes(factors, f"{path}: 'factors'")
        check_factor_classes(factors, where=str(path))
    except InvalidArgumentError as exc:
        raise DataFormatError(str(exc)) from None
    sizes = arrays.get("factor_sizes")
    if sizes is not None:
        sizes = np.asarray(sizes).reshape(-1)
        if not np.issubdtype(sizes.dtype, np.integer) and not (
            np.issubdtype(sizes.dtype, np.floating) and np.all(np.isfinite(sizes) & (sizes == np.round(sizes)))
        ):
            raise DataFormatError(
                f"{path}: 'factor_sizes' must hold whole numbers (classes per factor), got dtype {sizes.dtype}"
            )
        if len(sizes) != factors.shape[1]:
            raise DataFormatError(f"{path}: 'factor_sizes' has {len(sizes)} entries for {factors.shape[1]} factors")
        sizes = sizes.astype(np.int64)
        over = np.flatnonzero((factors.min(0) < 0) | (factors.max(0) >= sizes))
        if len(over):
            raise DataFormatError(
                f"{path}: factor {int(over[0])} has classes outside 0..{int(sizes[over[0]]) - 1} ('factor_sizes')"
            )
    return factors, codes, sizes


def codes_of_run(
    run_dir: str | Path, n: int = 10_000, seed: int = 0, split: str = "test"
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Factors and codes (``task.encode``: posterior means, InfoGAN's inferred codes) of ``n`` examples of a
    trained model's own dataset.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A run directory of ``repscope train`` whose model encodes images (an ``Encoder``: the VAE family,
        InfoGAN) and whose dataset has a ``factors`` field (dSprites, ...).
    n : int, default=10000
        Examples, drawn without replacement from ``split`` (all of it when smaller), in a seeded order.
    seed : int, default=0
        Seed of the draw.
    split : str, default="test"
        The split to draw from.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, list of str)
        ``(n, K)`` factors without the ones constant over the draw (dSprites' colour; they carry no
        information and DCI / SAP cannot fit them), ``(n, L)`` codes, and the factors' names.

    Raises
    ------
    InvalidArgumentError
        When the directory is not a training run, its model cannot encode, or its data has no factors.
    """
    run_dir = Path(run_dir)
    run = open_run(run_dir)
    config = run.config
    task = run.task()
    # the VAE family and InfoGAN encode images; a multimodal VAE's encode takes one entry per modality
    encodes_images = model_entry(config.model.name).family in ("vae", "gan")
    if not (encodes_images and isinstance(task, Encoder)):
        raise InvalidArgumentError(f"{run_dir}: model {config.model.name!r} has no image encoder to score")
    dataset = run.dataset()
    if "factors" not in dataset.fields:
        raise InvalidArgumentError(f"{run_dir}: dataset {config.data.name!r} has no 'factors' field to score against")
    if int(n) < 2:
        raise InvalidArgumentError(f"--n: must be >= 2, got {n}")
    size = len(dataset.split(split))
    rows = np.random.default_rng(seed).permutation(size)[: int(n)]
    batch = dataset.batch(split, rows, ["image", "factors"])
    codes = np.asarray(task.encode(batch["image"]), dtype=np.float64)
    factors = np.asarray(batch["factors"], dtype=np.int64)
    names = list(dataset.field("factors").names) or [f"factor{i}" for i in range(factors.shape[1])]
    varying = factors.max(axis=0) > factors.min(axis=0)
    return factors[:, varying], codes, [name for name, keep in zip(names, varying) if keep]


COMPAT_CHOICES = ("paper", "reference", "both")


def has_reference_mode(name: str) -> bool:
    """Whether the registered metric ``name`` takes ``compat`` (it has a mode that follows its authors' code).

    Parameters
    ----------
    name : str
        A registered metric name.

    Returns
    -------
    bool
        True when the metric's function has a ``compat`` parameter (IRS and UC).
    """
    return "compat" in inspect.signature(metric(name)).parameters


MANY_CLASSES = 256


def many_class_warnings(factors: np.ndarray) -> list[str]:
    """A warning line per factor with more than ``MANY_CLASSES`` (256) classes.

    DCI and SAP fit a classifier over every class of a factor, so their time grows with its classes (a
    3,000-class factor took 146 s in DCI); such a factor is scored, after the warning.

    Parameters
    ----------
    factors : numpy.ndarray
        ``(N, K)`` integer factor classes.

    Returns
    -------
    list of str
        One ``warning: ...`` line per such factor column (empty when none).
    """
    factors = np.asarray(factors)
    lines = []
    for column in range(factors.shape[1]):
        classes = len(np.unique(factors[:, column]))
        if classes > MANY_CLASSES:
            lines.append(
                f"warning: factors: column {column} has {classes} classes (over {MANY_CLASSES}): DCI and SAP fit a "
                "classifier over every class, expect minutes (a 3,000-class factor took 146 s in DCI)"
            )
    return lines


def _stderr_line(line: str) -> None:
    """Print one line on stderr (the default ``notify`` of :func:`score_arrays`)."""
    print(line, file=sys.stderr, flush=True)


def check_bootstrap(bootstrap: Any) -> int:
    """``--bootstrap``: 0 (no interval) or a number of resamples >= 2.

    Parameters
    ----------
    bootstrap : int
        The value given.

    Returns
    -------
    int
        The value.

    Raises
    ------
    InvalidArgumentError
        When it is not an integer, negative, or 1 (a percentile interval needs at least 2 resamples).
    """
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int | np.integer):
        raise InvalidArgumentError(f"--bootstrap: must be a whole number of resamples, got {bootstrap!r}")
    if bootstrap < 0 or bootstrap == 1:
        raise InvalidArgumentError(
            f"--bootstrap: must be 0 (no interval) or at least 2 resamples (a few hundred for a stable interval), "
            f"got {bootstrap}"
        )
    return int(bootstrap)


def _counted_jobs(jobs: dict[str, tuple[Any, dict[str, Any]]], update: Any) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The bootstrap's jobs with the last one counting the resamples: each resample runs every job once,
    in order, so the k-th return (or failure) of the last job is the end of resample k."""
    if not jobs:
        return jobs
    last = list(jobs)[-1]
    function, params = jobs[last]
    done = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal done
        try:
            return function(*args, **kwargs)
        finally:
            done += 1
            update(done)

    return {**jobs, last: (counted, params)}


def score_arrays(
    factors: np.ndarray,
    codes: np.ndarray,
    metrics: list[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    compat: str = "paper",
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every metric (or the ones named) of ``(factors, codes)``, with bootstrap intervals when asked.

    Before any metric runs, ``bootstrap`` is checked (:func:`check_bootstrap`) and a factor with more than
    256 classes gets a warning line (:func:`many_class_warnings`). With ``bootstrap``, the first resample
    is timed and one line with the estimate of the rest is given to ``notify`` before the others run.

    ``compat`` chooses the mode of the metrics that have two (:func:`has_reference_mode`: IRS and UC):
    ``"paper"`` the printed definitions, ``"reference"`` the authors' code (IRS on 20-bin histogram
    factors as disentanglement_lib's ``compute_irs``; UC as the CANDLE fork's
    ``scalable_disentanglement_score`` selects latents: :mod:`repscope.metrics.disentanglement.irs`),
    ``"both"`` each. A reference result is stored under ``<name>_reference`` (``metrics["irs_reference"]``)
    and its scores carry the suffix (``irs_reference``, ``uc_rho2_reference``); the other metrics have one
    mode and are computed once whatever ``compat``.

    Parameters
    ----------
    factors, codes : numpy.ndarray
        ``(N, K)`` integer factors and ``(N, L)`` codes.
    metrics : list of str, optional
        Names of the registered metrics that score a plain ``(factors, codes)`` pair
        (:func:`repscope.metrics.registry.metric_names` with ``ARRAY_INPUTS``); default all of them.
    bootstrap : int, default=0
        Resamples of the percentile interval (0: none).
    seed : int, default=0
        Seed of the bootstrap.
    compat : {"paper", "reference", "both"}, default="paper"
        Mode of the metrics that have a reference mode (above).
    notify : callable, optional
        Receives the warning and estimate lines (default: printed on stderr).

    Returns
    -------
    dict
        ``{"n", "factors", "latents", "compat", "metrics": {name: result}, "seconds": {name: s}}``; with
        ``bootstrap``, each result gains ``"bootstrap": {score: {"low", "high", ...}}``.

    Raises
    ------
    InvalidArgumentError
        On an unknown metric, one that needs more than factors and codes, an unknown ``compat``, a
        ``bootstrap`` that is negative or 1.
    """
    if compat not in COMPAT_CHOICES:
        raise InvalidArgumentError(f"--compat: must be one of {', '.join(COMPAT_CHOICES)}, got {compat!r}")
    check_bootstrap(bootstrap)
    say = _stderr_line if notify is None else notify
    names = _checked_metric_names(metrics)
    out: dict[str, Any] = {
        "n": int(len(codes)),
        "factors": int(factors.shape[1]),
        "latents": int(codes.shape[1]),
        "compat": compat,
    }
    runs = _metric_runs(names, compat)
    for line in many_class_warnings(factors):
        say(line)
    results, seconds = _timed_scores(runs, factors, codes)
    if bootstrap:
        _add_bootstrap(results, seconds, runs, factors, codes, bootstrap, seed, say)
    out["metrics"] = results
    out["seconds"] = {key: round(value, 3) for key, value in seconds.items()}
    return out


def _checked_metric_names(metrics: list[str] | None) -> list[str]:
    """The metrics asked for (default: every one that scores a plain pair), each checked to score one."""
    scorable = metric_names(ARRAY_INPUTS)
    names = scorable if metrics is None else list(metrics)
    for name in names:
        if name in scorable:
            continue
        if name in metric_names():
            further = [key for key in metric_entry(name).inputs if key not in ARRAY_INPUTS]
            raise InvalidArgumentError(f"--metric: {shown(name)} needs {', '.join(further)} besides factors and codes")
        raise InvalidArgumentError(f"--metric: unknown {shown(name)}; choose from {', '.join(scorable)}")
    return names


def _metric_runs(names: list[str], compat: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(result name, metric, parameters)`` of each score to compute: a metric with a reference mode once
    per mode ``compat`` asks for (its reference result under ``<name>_reference``), the others once."""
    runs: list[tuple[str, str, dict[str, Any]]] = []
    for name in names:
        if not has_reference_mode(name):
            runs.append((name, name, {}))
            continue
        if compat in ("paper", "both"):
            runs.append((name, name, {}))
        if compat in ("reference", "both"):
            runs.append((f"{name}_reference", name, {"compat": "reference"}))
    return runs


def _timed_scores(
    runs: list[tuple[str, str, dict[str, Any]]], factors: np.ndarray, codes: np.ndarray
) -> tuple[dict[str, Any], dict[str, float]]:
    """Each run's result and its seconds, under one progress bar."""
    results, seconds = {}, {}
    described = f"scoring {len(codes)} rows"
    with progress_bar(described, total=len(runs)) as update:
        for done, (key, name, params) in enumerate(runs):
            update(done, description=f"{described}: {key}")
            started = time.perf_counter()
            results[key] = metric(name)(factors, codes, **params)
            seconds[key] = time.perf_counter() - started
        update(len(runs), description=described)
    return results, seconds


def _add_bootstrap(
    results: dict[str, Any],
    seconds: dict[str, float],
    runs: list[tuple[str, str, dict[str, Any]]],
    factors: np.ndarray,
    codes: np.ndarray,
    bootstrap: int,
    seed: int,
    say: Callable[[str], None],
) -> None:
    """Add each result's percentile intervals over ``bootstrap`` resamples (``results[key]["bootstrap"]``) and
    share the bootstrap's time among the scores' ``seconds``; the first resample's time and the estimate of
    the rest go to ``say``."""
    started = time.perf_counter()

    def estimate(first: float) -> None:
        say(
            f"bootstrap: the first of {bootstrap} resamples of {len(codes)} rows took {format_seconds(first)}; "
            f"about {format_seconds(first * (bootstrap - 1))} more for the rest"
        )

    with progress_bar(f"bootstrap: {bootstrap} resamples of {len(codes)} rows", total=bootstrap) as update:
        jobs = _counted_jobs({key: (metric(name), params) for key, name, params in runs}, update)
        intervals = bootstrap_intervals(jobs, factors, codes, bootstrap, seed=seed, on_first=estimate)
    spent = time.perf_counter() - started
    total = sum(seconds.values()) or 1.0
    for key in results:
        results[key]["bootstrap"] = intervals[key]
        # the bootstrap ran metric by metric within each resample: its time is shared as the scores' time
        seconds[key] += spent * seconds[key] / total


def headline(scores: dict[str, Any]) -> dict[str, float]:
    """The scalar scores of every metric, flat (``irs``, ``uc_rho1``, ``mig``, ``dci_disentanglement``, ...).

    Parameters
    ----------
    scores : dict
        What :func:`score_arrays` returns.

    Returns
    -------
    dict of str to float
        Score name -> value.
    """
    flat: dict[str, float] = {}
    for result in scores["metrics"].values():
        flat.update(scalar_scores(result))
    return flat


__all__ = [
    "COMPAT_CHOICES",
    "check_bootstrap",
    "check_factor_classes",
    "codes_of_run",
    "many_class_warnings",
    "has_reference_mode",
    "read_codes_npz",
    "score_arrays",
    "headline",
]
