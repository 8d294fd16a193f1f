"""What ``repscope morpho measure`` runs: the morphometrics of every digit of a source, as a CSV file.

The measurement itself is :func:`repscope.data.morpho.measure`; this module picks the digits (a source,
a split, the first ``limit``), adds their labels, and writes the table atomically under the one output
rule, so a script gets the same file as the command.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from repscope.data.morpho import measure
from repscope.data.sources import load_source
from repscope.fileio import write_bytes_atomic
from repscope.outputs import CommandInput, output_target, prepare_output
from repscope.progress import progress_bar
from repscope.resources import resolve_jobs
from repscope.validation import check_positive_int


def measure_source(
    source: str,
    out: str | Path,
    *,
    split: str = "all",
    data_dir: str | Path | None = None,
    jobs: int = 1,
    method: str = "fast",
    compat: str = "none",
    limit: int | None = None,
    overwrite: bool = False,
) -> pd.DataFrame:
    """Measure every digit of ``source`` and write the table to ``out`` (CSV).

    Parameters
    ----------
    source : str
        ``mnist-sample``, ``fashion-mnist``, ``mnist``, a directory of MNIST files, or a ``.npy`` / ``.npz``
        file (:func:`repscope.data.sources.load_source`).
    out : str or pathlib.Path
        The CSV file: ``index``, ``label`` (when the source has labels), ``area``, ``length``,
        ``thickness``, ``slant``, ``width``, ``height``, ``valid``; floats with 8 significant digits.
    split : {"train", "t10k", "all"}, default="all"
        Which split of the source (``all``: train then t10k).
    data_dir : str or pathlib.Path, optional
        The directory holding the source's files.
    jobs : int, default=1
        Worker processes; -1 all cores, -2 all but one.
    method : {"fast", "reference"}, default="fast"
        The batched pipeline or the per-image scikit-image one.
    compat : {"none", "published"}, default="none"
        ``published`` gives the values of the released Morpho-MNIST ``*-morpho.csv`` files.
    limit : int, optional
        Measure only the first ``limit`` digits.
    overwrite : bool, default=False
        Replace ``out`` when it exists (once the new file is complete).

    Returns
    -------
    pandas.DataFrame
        The table written.

    Raises
    ------
    InvalidArgumentError
        When ``limit`` is below 1 or ``jobs`` is not a valid count (before anything is read), or ``out``
        exists without ``overwrite`` (:class:`~repscope.errors.OutputExistsError`); the source's own errors.
    """
    jobs = resolve_jobs(jobs)
    # a source that is a file or folder (not a name), and the folder of its files, are read: never replaced
    inputs = [CommandInput(source, "SOURCE", "the digits")]
    if data_dir is not None:
        inputs.append(CommandInput(data_dir, "--data-dir", "the digits' folder"))
    prepare_output(out, overwrite=overwrite, inputs=inputs)
    table = measure_digits(source, split=split, data_dir=data_dir, jobs=jobs, method=method, compat=compat, limit=limit)
    with output_target(out, overwrite=overwrite, inputs=inputs) as target:
        write_bytes_atomic(target, table.to_csv(index=False, float_format="%.8g", lineterminator="\n").encode())
    return table


def measure_digits(
    source: str,
    *,
    split: str = "all",
    data_dir: str | Path | None = None,
    jobs: int = 1,
    method: str = "fast",
    compat: str = "none",
    limit: int | None = None,
) -> pd.DataFrame:
    """The morphometrics of every digit of ``source``, with its label (no file written).

    Parameters
    ----------
    source, split, data_dir, method, compat, limit
        As for :func:`measure_source`.
    jobs : int, default=1
        Worker processes (a count: resolve -1 and -2 with :func:`repscope.resources.resolve_jobs`).

    Returns
    -------
    pandas.DataFrame
        ``index``, ``label`` (when the source has labels), ``area``, ``length``, ``thickness``, ``slant``,
        ``width``, ``height``, ``valid``.

    Raises
    ------
    InvalidArgumentError
        When ``limit`` is below 1 (before anything is read); the source's own errors.
    """
    limit = check_positive_int(limit, "--limit", allow_none=True)
    data = load_source(source, split=split, data_dir=data_dir)
    images = data.images if limit is None else data.images[:limit]
    with progress_bar(f"measuring {len(images)} digits of {source}", total=len(images)) as update:
        table = measure(images, method=method, compat=compat, jobs=jobs, progress=update)
    if data.labels is not None:
        table.insert(1, "label", np.asarray(data.labels[: len(images)]).astype(int))
    return table


__all__ = ["measure_digits", "measure_source"]
