"""``repscope disentangle score FILE.npz``: every disentanglement metric of a ``(factors, codes)`` pair.

The file is an ``.npz`` written by anyone (``numpy.savez(path, factors=..., codes=...)``): ``factors``
``(N, K)`` integer factor classes (or ``(N,)`` for one factor), ``codes`` ``(N, L)`` finite floats, and
optionally ``factor_sizes`` ``(K,)``. It is read with ``allow_pickle=False``: an object array (which only
unpickling could read) is refused, never executed.

Rows are used in the order given: DCI and SAP train on the first 80% of them, as disentanglement_lib
does, so shuffle a dataset stored in grid order before writing it (or use ``--bootstrap``, whose
resamples are shuffled).
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.metrics.disentanglement.bootstrap import bootstrap_interval, scalar_scores
from repscope.metrics.disentanglement.dci import dci
from repscope.metrics.disentanglement.information import mig, modularity_explicitness, sap
from repscope.metrics.disentanglement.irs import irs, unique_capture

# name -> the metric; every one is metric(factors, codes, **params) -> dict
METRICS: dict[str, Callable[..., dict[str, Any]]] = {
    "irs": irs,
    "uc": unique_capture,
    "mig": mig,
    "dci": dci,
    "sap": sap,
    "modularity_explicitness": modularity_explicitness,
}


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
        When it is not an npz, holds object arrays, misses ``factors`` or ``codes``, or their shapes,
        values or types are wrong (the message names the file and the key).
    """
    path = Path(path)
    if not path.is_file():
        raise SourceNotFoundError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise DataFormatError(f"{path}: a single .npy array, not an .npz with 'factors' and 'codes'")
            arrays = {key: archive[key] for key in archive.files}
    except DataFormatError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise DataFormatError(f"{path}: holds object arrays, which only unpickling could read; refused") from None
        raise DataFormatError(f"{path}: not a readable .npz ({exc})") from None
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFormatError(f"{path}: not a readable .npz ({exc})") from None
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
    factors = factors.astype(np.int64)
    sizes = arrays.get("factor_sizes")
    if sizes is not None:
        sizes = np.asarray(sizes).reshape(-1)
        if len(sizes) != factors.shape[1]:
            raise DataFormatError(f"{path}: 'factor_sizes' has {len(sizes)} entries for {factors.shape[1]} factors")
        sizes = sizes.astype(np.int64)
        over = np.flatnonzero((factors.min(0) < 0) | (factors.max(0) >= sizes))
        if len(over):
            raise DataFormatError(
                f"{path}: factor {int(over[0])} has classes outside 0..{int(sizes[over[0]]) - 1} ('factor_sizes')"
            )
    return factors, codes, sizes


def score_arrays(
    factors: np.ndarray,
    codes: np.ndarray,
    metrics: list[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Every metric (or the ones named) of ``(factors, codes)``, with bootstrap intervals when asked.

    Parameters
    ----------
    factors, codes : numpy.ndarray
        ``(N, K)`` integer factors and ``(N, L)`` codes.
    metrics : list of str, optional
        Names from :data:`METRICS`; default all.
    bootstrap : int, default=0
        Resamples of the percentile interval (0: none).
    seed : int, default=0
        Seed of the bootstrap.

    Returns
    -------
    dict
        ``{"n", "factors", "latents", "metrics": {name: result}, "seconds": {name: s}}``; with
        ``bootstrap``, each result gains ``"bootstrap": {score: {"low", "high", ...}}``.
    """
    names = list(METRICS) if metrics is None else list(metrics)
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise InvalidArgumentError(f"--metric: unknown {unknown[0]!r}; choose from {', '.join(METRICS)}")
    out: dict[str, Any] = {"n": int(len(codes)), "factors": int(factors.shape[1]), "latents": int(codes.shape[1])}
    results, seconds = {}, {}
    for name in names:
        started = time.perf_counter()
        result = METRICS[name](factors, codes)
        if bootstrap:
            result["bootstrap"] = bootstrap_interval(METRICS[name], factors, codes, bootstrap, seed=seed)
        results[name] = result
        seconds[name] = round(time.perf_counter() - started, 3)
    out["metrics"] = results
    out["seconds"] = seconds
    return out


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


__all__ = ["METRICS", "read_codes_npz", "score_arrays", "headline"]
