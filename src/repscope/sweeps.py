"""Sweeps: a grid of config overrides run as one run directory per point, in this process, on
worker processes or on Ray Tune; a restarted sweep skips the points that finished.

Every area that trains many models (multimodal-VAE grids, the ML4ML model repository,
leave-one-class-out training) goes through :func:`run_sweep`::

    points = expand_grid(["model=mvae,mmvae", "data.level=1,2", "seed=0,1"])
    result = run_sweep(points, "repscope.studies.multimodal.train:sweep_point", Path("runs/grid"), workers=2)

The target ``"module:function"`` is imported by name in each worker, and called as
``function(overrides: list[str], run_dir: Path, resume: bool, **common) -> dict`` with the point's
``["key=value", ...]``; the dict it returns is that run's row of the summary (flat scalars).

Layout of ``out``::

    out/
        sweep.json        target, points, status of each point, timestamps (rewritten as points end)
        summary.csv       one row per point, in grid order: name, one column per override key,
        summary.md        status, then the union of the rows' keys
        <point name>/     the run directory handed to the function
            sweep-done.json   the overrides and the row, written once the function returned

``sweep-done.json`` is what *finished* means: it is written atomically after the function returns,
so a point interrupted (Ctrl-C, a killed worker) has none and runs again on the next call, with
``resume=True`` when its directory holds anything (the function decides what it can continue); a
point with the marker is skipped and its row re-used. A point whose function raises is recorded as
failed (error type and message) and the others still run; it runs again on the next call.
A sweep is continued only with the points and the settings it was started with (``identity`` of
:func:`run_sweep`: ``common`` less how the work is spread); a change is refused naming every setting
that differs (:mod:`repscope.resume_check`: where the work runs may change).

The local workers are spawned processes of :func:`repscope.pools.unordered_map`, each running point
after point; they end with the driver, also when it is killed (SIGTERM, SIGKILL) rather than
interrupted: see :func:`repscope.resources.die_with_parent`. Ray ends its own trial processes.

Applying the output rule (``--overwrite`` / ``--resume``) to ``out`` is the caller's job: this
module always continues what ``out`` holds.

Progress: one bar (lines when not on a terminal) counts the finished and failed points, starting at
those a continued sweep skips, so that its time left follows the runs of this call only. A sweep
stopped by Ctrl-C is noted (:func:`interrupted_sweeps`): the ``repscope`` command's last line then says
``20 of 138 runs complete`` and how to go on with ``--resume``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import itertools
import json
import logging
import math
import numbers
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from repscope import version_stamp
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import check_writable_dir, write_json_atomic, write_text_atomic
from repscope.pools import unordered_map
from repscope.progress import progress_bar, progress_mode
from repscope.registry import resolve
from repscope.resources import (
    THREADS_ENV,
    configure_torch_threads,
    resolve_jobs,
    usable_cores,
)
from repscope.resume_check import (
    PLACEMENT_TEXT,
    SPREAD_TEXT,
    Difference,
    differences,
    refuse_changes,
    where_the_work_runs,
)

DONE_MARKER = "sweep-done.json"
SWEEP_FILE = "sweep.json"
SUMMARY_CSV = "summary.csv"
SUMMARY_MD = "summary.md"
RAY_DIR = "ray"
RAY_MISSING = "--backend ray: Ray is not installed; pip install 'repscope[ray]' (or 'ray[tune]>=2.9')"
FORMAT_VERSION = 1
# settings of how the work is spread, which do not change a point's results: a continued sweep may change them
SPREAD_KEYS = ("workers", "backend", "address", "cpus_per_run", "gpus_per_run")

# columns the summary builds itself: a row may not use these names
RESERVED_COLUMNS = ("name", "status")
# characters a value keeps in a run-directory name; any other makes the value hashed (see _name_part)
_SAFE_VALUE = re.compile(r"[A-Za-z0-9.+=\-]+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_MAX_NAME = 180  # file systems allow 255 bytes
# variables by which a user chooses Ray's authentication; when none is set, a local instance gets a token
_RAY_AUTH = {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"}


@dataclass(frozen=True)
class SweepPoint:
    """One point of a grid: its run-directory name and its overrides in grid order."""

    name: str
    overrides: tuple[tuple[str, str], ...]

    def as_set_arguments(self) -> list[str]:
        """The overrides as ``["key=value", ...]`` (what ``--set`` takes), in grid order.

        Returns
        -------
        list of str
            One ``"key=value"`` per override.
        """
        return [f"{key}={value}" for key, value in self.overrides]

    @classmethod
    def from_overrides(cls, overrides: Sequence[tuple[str, str]]) -> SweepPoint:
        """The point of ``overrides`` with its name (:func:`point_name`).

        Parameters
        ----------
        overrides : sequence of (str, str)
            ``(key, value)`` pairs in grid order (values are turned into strings).

        Returns
        -------
        SweepPoint
        """
        pairs = tuple((str(key), str(value)) for key, value in overrides)
        return cls(point_name(pairs), pairs)


def _digest(text: str, length: int = 10) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _name_part(value: str) -> str:
    # A value of safe characters is used as it is. Any other is cut to its safe characters and
    # followed by '~' and a hash of the exact value: '~' and '_' never occur in a kept value, so
    # names stay unique (the '_' between two key-value parts cannot be mistaken for a value's).
    if _SAFE_VALUE.fullmatch(value):
        return value
    readable = re.sub(r"[^A-Za-z0-9.+=\-]+", "-", value).strip("-")[:40]
    return f"{readable}~{_digest(value, 8)}"


def point_name(overrides: Sequence[tuple[str, str]]) -> str:
    """The run-directory name of ``overrides``: ``key-value`` parts joined by ``_`` in grid order.

    A value holding characters outside ``A-Z a-z 0-9 . + = -`` is shown by its safe characters and
    ``~`` plus a hash of the exact value; a name longer than 180 characters is cut and ends with a hash
    of all the overrides. The name depends only on the overrides, so it is stable across restarts.

    Parameters
    ----------
    overrides : sequence of (str, str)
        ``(key, value)`` pairs in grid order.

    Returns
    -------
    str
        E.g. ``model-mvae_data.level-1_seed-0`` for ``model=mvae data.level=1 seed=0``.
    """
    name = "_".join(f"{key}-{_name_part(value)}" for key, value in overrides)
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - 12].rstrip("_-~") + "~" + _digest(json.dumps(list(overrides)), 11)
    return name


def expand_grid(grid: Sequence[str]) -> list[SweepPoint]:
    """The points of a grid: the Cartesian product of ``"key=v1,v2,..."`` items, first key slowest.

    Parameters
    ----------
    grid : sequence of str
        One item per key, as given to ``--grid``: ``"model=mvae,mmvae"``, ``"data.level=1,2"``.
        Blanks around keys and values are dropped.

    Returns
    -------
    list of SweepPoint
        ``prod(len(values))`` points; the last key varies fastest.

    Raises
    ------
    InvalidArgumentError
        Naming ``--grid``: no item, an item without ``=``, an empty or malformed key, an empty
        value list or value, a key given twice, a value given twice for one key.
    """
    if isinstance(grid, str):
        grid = [grid]
    if not grid:
        raise InvalidArgumentError("--grid: give at least one key=v1,v2,... to sweep over")
    axes: list[tuple[str, list[str]]] = []
    for item in grid:
        if not isinstance(item, str) or "=" not in item:
            raise InvalidArgumentError(f"--grid: {item!r} is not key=v1,v2,... (no '=')")
        key, _, text = item.partition("=")
        key = key.strip()
        if not key:
            raise InvalidArgumentError(f"--grid: {item!r} has an empty key")
        if not _KEY.fullmatch(key):
            raise InvalidArgumentError(
                f"--grid: key {key!r} must start with a letter or '_' and hold only letters, digits, '_', '.', '-'"
            )
        if any(key == seen for seen, _ in axes):
            raise InvalidArgumentError(f"--grid: key {key!r} is given twice; list all its values in one --grid")
        if not text.strip():
            raise InvalidArgumentError(f"--grid: {item!r} lists no values for {key!r}")
        values = [value.strip() for value in text.split(",")]
        if any(not value for value in values):
            raise InvalidArgumentError(f"--grid: {item!r} has an empty value in its list for {key!r}")
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise InvalidArgumentError(f"--grid: {key!r} lists {', '.join(map(repr, repeated))} more than once")
        axes.append((key, values))
    keys = [key for key, _ in axes]
    return [
        SweepPoint.from_overrides(tuple(zip(keys, combination)))
        for combination in itertools.product(*(values for _, values in axes))
    ]


@dataclass(frozen=True)
class FailedPoint:
    """A point whose function raised: its name, overrides, and the error's type and message."""

    name: str
    overrides: tuple[tuple[str, str], ...]
    error_type: str
    message: str


@dataclass(frozen=True)
class InterruptedSweep:
    """A sweep stopped by Ctrl-C: its directory and how many of its points had ended.

    Attributes
    ----------
    out : Path
        The sweep directory (absolute).
    done, failed, total : int
        Points finished (their ``sweep-done.json`` written, reused ones included), failed, and in all.
    progress : str, optional
        What the caller's own count says instead (:func:`describe_interrupted_sweep`): a sweep whose points
        are parts of one job (a render's two processes) counts what the parts made, not the parts.
    """

    out: Path
    done: int
    failed: int
    total: int
    progress: str | None = None

    def counts_text(self) -> str:
        """``20 of 138 runs complete`` (with ``, 2 failed`` when points failed; they run again on resume),
        or the caller's own count.

        Returns
        -------
        str
            The counts, for the command's last line.
        """
        if self.progress is not None:
            return self.progress
        return f"{self.done} of {self.total} runs complete" + (f", {self.failed} failed" if self.failed else "")


_interrupted: list[InterruptedSweep] = []


def describe_interrupted_sweep(out: str | os.PathLike, progress: str) -> None:
    """Say what an interrupted sweep had done in the caller's words (``1151 of 4050 images rendered``), for
    the command's last line; the caller catches the KeyboardInterrupt, calls this, and raises it again.

    Parameters
    ----------
    out : path
        The sweep directory given to :func:`run_sweep`.
    progress : str
        The count to show instead of ``n of m runs complete``.
    """
    out = Path(out).absolute()
    for k in range(len(_interrupted) - 1, -1, -1):
        if _interrupted[k].out == out:
            _interrupted[k] = replace(_interrupted[k], progress=str(progress))
            return


def interrupted_sweeps() -> list[InterruptedSweep]:
    """The sweeps of this process stopped by Ctrl-C, in the order they stopped (the CLI names the last).

    Returns
    -------
    list of InterruptedSweep
        One entry per interrupted :func:`run_sweep` call.
    """
    return list(_interrupted)


@dataclass
class SweepResult:
    """What :func:`run_sweep` did.

    Attributes
    ----------
    out : Path
        The sweep directory.
    points : list of SweepPoint
        The points, in grid order.
    status : dict
        ``name -> "done" | "failed" | "pending"`` (pending only after an interruption).
    summary : pandas.DataFrame
        The rows of ``summary.csv``: name, one column per override key (strings), status, then the
        union of the rows' keys.
    failed : list of FailedPoint
        The points whose function raised, in grid order.
    ran, reused : list of str
        Names of the points run by this call, and of those skipped because they had finished.
    """

    out: Path
    points: list[SweepPoint]
    status: dict[str, str]
    summary: pd.DataFrame
    failed: list[FailedPoint] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every point finished."""
        return all(status == "done" for status in self.status.values())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# one point (runs in the worker: this process, a pool process or a Ray trial)


def _plain_row(row: Any, reserved: set[str]) -> dict[str, Any]:
    """``row`` as a dict of str -> int / float / str / bool / None; anything else is an error."""
    if not isinstance(row, Mapping):
        raise InvalidArgumentError(f"target: returned {type(row).__name__}, expected a dict (the summary row)")
    plain: dict[str, Any] = {}
    for key, value in row.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"target: row key {key!r} is not a string")
        if key in reserved:
            raise InvalidArgumentError(f"target: row key {key!r} clashes with a summary column of the same name")
        if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy and torch scalars
            value = value.item()
        if value is not None and not isinstance(value, str | bool | numbers.Number):
            raise InvalidArgumentError(f"target: row value {key!r} is {type(value).__name__}, expected a scalar")
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = float(value)
        plain[key] = value
    return plain


def run_point(target: str, point: SweepPoint, out: Path, common: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one point: call the target, check its row, write the marker; return the outcome.

    Parameters
    ----------
    target : str
        ``"module:function"`` (see :func:`run_sweep`).
    point : SweepPoint
        The point; its run directory is ``out / point.name``.
    out : Path
        The sweep directory.
    common : dict, optional
        Keyword arguments of the call.

    Returns
    -------
    dict
        ``{"status": "done", "row": {...}, ...}`` or ``{"status": "failed", "error": {"type",
        "message"}, ...}``, with ``started``, ``finished``, ``seconds`` and ``resumed``. An exception
        of the function (or a row that is not a dict of scalars) gives a failed outcome and no
        marker; Ctrl-C and other ``BaseException`` propagate.
    """
    run_dir = Path(out) / point.name
    resumed = run_dir.is_dir() and any(run_dir.iterdir())
    started, clock = _now(), time.perf_counter()
    try:
        function = resolve(target)
        row = function(point.as_set_arguments(), run_dir, resumed, **dict(common or {}))
        row = _plain_row(row, {*RESERVED_COLUMNS, *(key for key, _ in point.overrides)})
    except Exception as exc:
        return {
            "status": "failed",
            "error": {"type": type(exc).__name__, "message": " ".join(str(exc).split())},
            "started": started,
            "finished": _now(),
            "seconds": round(time.perf_counter() - clock, 3),
            "resumed": resumed,
        }
    outcome = {
        "status": "done",
        "row": row,
        "started": started,
        "finished": _now(),
        "seconds": round(time.perf_counter() - clock, 3),
        "resumed": resumed,
    }
    marker = {"name": point.name, "overrides": [list(pair) for pair in point.overrides], "target": target, **outcome}
    write_json_atomic(run_dir / DONE_MARKER, marker)
    return outcome


def read_marker(out: Path, point: SweepPoint) -> dict[str, Any] | None:
    """The finished outcome stored in ``out/<name>/sweep-done.json``, or None when the point has not finished.

    Parameters
    ----------
    out : Path
        The sweep directory.
    point : SweepPoint
        The point.

    Returns
    -------
    dict or None
        The marker: ``name``, ``overrides``, ``target``, ``status``, ``row``, timestamps.

    Raises
    ------
    DataFormatError
        The marker is unreadable or belongs to other overrides.
    """
    path = Path(out) / point.name / DONE_MARKER
    if not path.is_file():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
        overrides = tuple(tuple(pair) for pair in marker["overrides"])
        row = marker["row"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataFormatError(
            f"{path}: not a readable sweep marker ({exc}); delete it to run the point again"
        ) from None
    if overrides != point.overrides or not isinstance(row, dict):
        raise DataFormatError(f"{path}: records the overrides {overrides}, not those of point {point.name!r}")
    return marker


# --------------------------------------------------------------------------------------------
# the record of the sweep (sweep.json, summary.csv, summary.md), kept by the driver


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=os.fspath))
    except (TypeError, ValueError):
        return repr(value)


def _without_spread_keys(value: Any) -> Any:
    """``value`` without the keys of :data:`SPREAD_KEYS`, at any depth of its mappings."""
    if isinstance(value, dict):
        return {key: _without_spread_keys(item) for key, item in value.items() if key not in SPREAD_KEYS}
    return value


def _grid_text(overrides: Sequence[Mapping[str, str]]) -> str:
    """Points as ``key=v1,v2 key=...`` (each key's values in the order they occur)."""
    axes: dict[str, list[str]] = {}
    for point in overrides:
        for key, value in point.items():
            if value not in axes.setdefault(key, []):
                axes[key].append(value)
    text = " ".join(f"{key}={','.join(values)}" for key, values in axes.items())
    return text if len(text) <= 200 else text[:197] + "..."


def _check_same_sweep(
    out: Path,
    stored: Mapping[str, Any],
    points: list[SweepPoint],
    settings: Mapping[str, Any],
    labels: Mapping[str, str],
) -> None:
    """Refuse to continue the sweep in ``out`` with other settings or other points than it was started with."""
    again = "use the settings it was started with, or another --out"
    if "identity" in stored:
        recorded, current = stored["identity"], settings["identity"]
    else:  # a sweep.json written before identities were stored: its common arguments
        recorded, current = _without_spread_keys(stored.get("common")), _without_spread_keys(settings["common"])
    if recorded is not None:
        # a setting the record lacks was added to the package since: the sweep ran with its default
        found = differences(recorded, current, where_the_work_runs, new_keys=False)
        named = [Difference(labels.get(d.key, d.key), d.stored, d.current) for d in found]
        refuse_changes(named, str(out), f"{SPREAD_TEXT} and where the work runs ({PLACEMENT_TEXT})")
    entries = stored.get("points")
    if isinstance(entries, list):
        try:
            before = [{str(k): str(v) for k, v in entry["overrides"].items()} for entry in entries]
        except (AttributeError, KeyError, TypeError):
            raise DataFormatError(f"{out / SWEEP_FILE}: its points are not readable; choose another --out") from None
        now = [dict(point.overrides) for point in points]
        if sorted(map(_sorted_items, before)) != sorted(map(_sorted_items, now)):
            grid = labels.get("points", "the grid")
            raise InvalidArgumentError(
                f"--resume: {out} was started with {grid} {_grid_text(before)}, not {_grid_text(now)}; {again}"
            )


def _sorted_items(overrides: Mapping[str, str]) -> list[tuple[str, str]]:
    return sorted(overrides.items())


class _Record:
    """The status of every point, written to ``sweep.json`` whenever one ends."""

    def __init__(
        self, out: Path, target: str, points: list[SweepPoint], settings: dict[str, Any], labels: Mapping[str, str]
    ) -> None:
        self.out, self.target, self.points = out, target, points
        self.settings = settings
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.created = _now()
        self.interrupted = False
        self.finished: str | None = None
        self.ran: list[str] = []
        self.reused: list[str] = []
        previous = out / SWEEP_FILE
        if previous.is_file():
            try:
                stored = json.loads(previous.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DataFormatError(f"{previous}: not a readable sweep record ({exc})") from None
            if stored.get("target") != target:
                raise InvalidArgumentError(
                    f"--out: {out} holds a sweep of {stored.get('target')!r}, not {target!r}; choose another --out"
                )
            _check_same_sweep(out, stored, points, settings, labels)
            self.created = stored.get("created", self.created)

    def reuse(self, point: SweepPoint, marker: dict[str, Any]) -> None:
        self.outcomes[point.name] = {key: marker[key] for key in marker if key not in ("name", "overrides", "target")}
        self.reused.append(point.name)

    def finish(self, point: SweepPoint, outcome: dict[str, Any]) -> None:
        self.outcomes[point.name] = outcome
        self.ran.append(point.name)
        self.write_state()

    def status(self, point: SweepPoint) -> str:
        return self.outcomes.get(point.name, {}).get("status", "pending")

    def counts(self) -> tuple[int, int]:
        done = sum(outcome["status"] == "done" for outcome in self.outcomes.values())
        failed = sum(outcome["status"] == "failed" for outcome in self.outcomes.values())
        return done, failed

    def write_state(self) -> None:
        points = []
        for point in self.points:
            outcome = self.outcomes.get(point.name, {})
            entry = {"name": point.name, "overrides": dict(point.overrides), "status": self.status(point)}
            entry["reused"] = point.name in self.reused
            for key in ("started", "finished", "seconds", "resumed", "error"):
                if key in outcome:
                    entry[key] = outcome[key]
            points.append(entry)
        done, failed = self.counts()
        state = {
            "format": FORMAT_VERSION,
            "maker": version_stamp(),
            "target": self.target,
            **self.settings,
            "created": self.created,
            "updated": _now(),
            "finished": self.finished,
            "interrupted": self.interrupted,
            "counts": {"points": len(self.points), "done": done, "failed": failed},
            "points": points,
        }
        write_json_atomic(self.out / SWEEP_FILE, state)

    def summary(self) -> pd.DataFrame:
        keys = list(dict.fromkeys(key for point in self.points for key, _ in point.overrides))
        rows = []
        for point in self.points:
            row = {"name": point.name, **dict(point.overrides), "status": self.status(point)}
            row.update(self.outcomes.get(point.name, {}).get("row", {}))
            rows.append(row)
        columns = list(dict.fromkeys(["name", *keys, "status", *(key for row in rows for key in row)]))
        return pd.DataFrame(rows, columns=columns)

    def failed(self) -> list[FailedPoint]:
        return [
            FailedPoint(point.name, point.overrides, outcome["error"]["type"], outcome["error"]["message"])
            for point in self.points
            if (outcome := self.outcomes.get(point.name, {})).get("status") == "failed"
        ]

    def write_summary(self) -> pd.DataFrame:
        table = self.summary()
        write_text_atomic(self.out / SUMMARY_CSV, table.to_csv(index=False))
        write_text_atomic(self.out / SUMMARY_MD, self._markdown(table))
        return table

    def _markdown(self, table: pd.DataFrame) -> str:
        def cell(value: Any) -> str:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return ""
            if isinstance(value, float):
                return f"{value:.4g}"
            return str(value).replace("|", "\\|")

        done, failed = self.counts()
        lines = [
            f"# Sweep of `{self.target}`",
            "",
            f"{len(self.points)} points: {done} done, {failed} failed, {len(self.points) - done - failed} pending.",
            "",
            "| " + " | ".join(map(cell, table.columns)) + " |",
            "|" + "---|" * len(table.columns),
        ]
        lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in table.itertuples(index=False)]
        problems = self.failed()
        if problems:
            lines += ["", "## Failed", ""]
            lines += [f"- `{problem.name}`: {problem.error_type}: {problem.message}" for problem in problems]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# backends


def _worker_environment(threads: int) -> dict[str, str]:
    """Variables for a worker: its torch thread count, and no rich bar beside the driver's."""
    env = {"OMP_NUM_THREADS": str(threads)}
    if not os.environ.get(THREADS_ENV, "").strip():  # a count the user chose is kept
        env[THREADS_ENV] = str(threads)
    if progress_mode() != "lines":
        env["REPSCOPE_PROGRESS"] = "off"  # the workers' bars would fight over the driver's terminal
    return env


def _configure_worker(env: dict[str, str]) -> None:
    """The start of a local worker process (after :mod:`repscope.pools` made it ignore Ctrl-C and end with
    the driver): its environment, and torch's threads where torch is loaded already."""
    os.environ.update(env)
    if "torch" in sys.modules:
        configure_torch_threads()


def _failed_in_worker(error: BaseException) -> dict[str, Any]:
    """The outcome of a point whose worker process died (BrokenProcessPool) or called ``sys.exit``."""
    text = " ".join(str(error).split()) or "the worker process ended"
    return {"status": "failed", "error": {"type": type(error).__name__, "message": text}}


def _run_local(pending: list[SweepPoint], target: str, out: Path, common: dict, workers: int, finish: Callable) -> None:
    threads = max(1, usable_cores() // workers)
    run = functools.partial(run_point, target, out=out, common=common)
    # spawned, not forked: a driver that trained already holds torch's threads, which a fork would copy broken.
    # A point stopped by Ctrl-C leaves no marker and runs again (resumed) next time.
    with unordered_map(
        run,
        pending,
        workers,
        start_method="spawn",
        setup=_configure_worker,
        setup_args=(_worker_environment(threads),),
        on_worker_failure=_failed_in_worker,
    ) as finished:
        for point, outcome in finished:
            finish(point, outcome)


@contextlib.contextmanager
def _environment(restore: Sequence[str] = (), **values: str) -> Iterator[None]:
    """Set environment variables inside the block (a value the user set is kept), then restore them
    and those named in ``restore`` (which the block may set)."""
    saved = {name: os.environ.get(name) for name in [*values, *restore]}
    for name, value in values.items():
        os.environ.setdefault(name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_ray_token: list[str] = []


def _local_ray_token() -> str:
    if not _ray_token:
        _ray_token.append(secrets.token_hex(32))
    return _ray_token[0]


def ray_trial(
    config: dict, *, target: str, points: list[SweepPoint], out: str, common: dict, env: dict[str, str]
) -> None:
    """The Ray Tune function trainable: run one point and report its outcome as JSON text.

    Parameters
    ----------
    config : dict
        The trial's config: ``{"point": index into points}``.
    target, points, out, common
        As :func:`run_point` (bound with ``tune.with_parameters``).
    env : dict
        Environment variables of the trial (torch threads, progress display).
    """
    from ray import tune  # noqa: PLC0415 -- Ray is an optional extra

    os.environ.update(env)
    if "torch" in sys.modules:
        configure_torch_threads()
    index = int(config["point"])
    outcome = run_point(target, points[index], Path(out), common)
    tune.report({"sweep_point": index, "sweep_outcome": json.dumps(outcome)})


@dataclass(frozen=True)
class _RayPlacement:
    """Where and how wide a Ray sweep runs (the ``--backend ray`` options of :func:`run_sweep`)."""

    workers: int | None  # trials at once; None: as many as the CPUs allow
    address: str | None
    cpus_per_run: float
    gpus_per_run: float | None
    runtime_env: dict | None


def _ray_environment(ray: Any, address: str | None) -> dict[str, str]:
    """The variables a Ray sweep runs under: no Ctrl-C handler or output of Tune's own, a local token."""
    # Tune's own Ctrl-C handler would end fit() quietly: the interrupt must reach the caller
    quiet = {"TUNE_DISABLE_SIGINT_HANDLER": "1", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"}
    quiet.update(RAY_USAGE_STATS_ENABLED="0", RAY_AIR_NEW_OUTPUT="0")  # the old reporter is silent at verbose=0
    if address is None and not ray.is_initialized() and not _RAY_AUTH.intersection(os.environ):
        # Recent Ray turns token authentication on for a new local instance (setting RAY_AUTH_MODE)
        # and saves a new token in ~/.ray/auth_token; a token in the environment of the instance's
        # processes keeps the authentication without writing to the home directory. One token per
        # process: Ray caches the token it read.
        quiet["RAY_AUTH_TOKEN"] = _local_ray_token()
    return quiet


def _start_ray(ray: Any, placement: _RayPlacement) -> bool:
    """Start a local Ray instance or join the cluster at the address, unless Ray runs already; whether it
    was started here (and so is shut down at the end)."""
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if placement.runtime_env:
        options["runtime_env"] = placement.runtime_env
    address, concurrent, cpus_per_run = placement.address, placement.workers, placement.cpus_per_run
    if address is None:
        cpus = concurrent * cpus_per_run if concurrent else max(usable_cores(), cpus_per_run)
        ray.init(num_cpus=max(1, math.ceil(cpus)), **options)
        return True
    try:
        ray.init(address=address, **options)
    except ConnectionError as exc:  # Ray's own message ends in a traceback otherwise
        raise InvalidArgumentError(
            f"--address {address}: no Ray cluster answers there ({exc}); start one first "
            "(`ray start --head` on its head machine) or leave --address out for a local instance"
        ) from None
    return True


def _ray_reporter(tune: Any, pending: list[SweepPoint], finish: Callable) -> Any:
    """A Tune callback that records each point as its trial reports or dies (in the driver, as trials end)."""

    class Reporter(tune.Callback):
        """Records each point as its trial reports or dies (in the driver, as trials end)."""

        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
            if "sweep_outcome" in result:
                finish(pending[int(result["sweep_point"])], json.loads(result["sweep_outcome"]))

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            error = trial.get_error() if hasattr(trial, "get_error") else None
            text = " ".join(str(error).split())[-2000:] if error is not None else "the Ray trial failed"
            outcome = {"status": "failed", "error": {"type": type(error).__name__ if error else "TuneError"}}
            outcome["error"]["message"] = text
            finish(pending[int(trial.config["point"])], outcome)

    return Reporter()


def _ray_tuner(
    tune: Any,
    pending: list[SweepPoint],
    target: str,
    out: Path,
    common: dict,
    finish: Callable,
    placement: _RayPlacement,
) -> Any:
    """The Tune run of the pending points: one trial per point, its results under ``out/ray``."""
    storage = check_writable_dir(out / RAY_DIR)
    threads = max(1, int(placement.cpus_per_run))
    trainable = tune.with_parameters(
        ray_trial, target=target, points=pending, out=str(out), common=common, env=_worker_environment(threads)
    )
    gpus = {"gpu": placement.gpus_per_run} if placement.gpus_per_run else {}
    return tune.Tuner(
        tune.with_resources(trainable, {"cpu": placement.cpus_per_run, **gpus}),
        param_space={"point": tune.grid_search(list(range(len(pending))))},
        # one process runs point after point, as the local pool's workers do (starting
        # a Ray actor per point doubled the time of short runs)
        tune_config=tune.TuneConfig(num_samples=1, max_concurrent_trials=placement.workers, reuse_actors=True),
        run_config=tune.RunConfig(
            name=f"tune-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}",
            storage_path=str(storage),
            verbose=0,
            callbacks=[_ray_reporter(tune, pending, finish)],
            failure_config=tune.FailureConfig(max_failures=0),
        ),
    )


def _run_ray(
    pending: list[SweepPoint], target: str, out: Path, common: dict, finish: Callable, placement: _RayPlacement
) -> None:
    try:
        import ray  # noqa: PLC0415 -- optional extra, loaded only for --backend ray
        from ray import tune  # noqa: PLC0415
    except ImportError:
        raise InvalidArgumentError(RAY_MISSING) from None
    with _environment(restore=("RAY_AUTH_MODE",), **_ray_environment(ray, placement.address)):
        started_here = _start_ray(ray, placement)
        try:
            _ray_tuner(tune, pending, target, out, common, finish, placement).fit()
        finally:
            if started_here:
                ray.shutdown()


# --------------------------------------------------------------------------------------------
# the runner


def _run_nothing(finish: Callable) -> None:
    """The backend of a sweep with every point finished (Ray is not started for nothing)."""


def _check_target(target: str) -> None:
    """Refuse a target that is not an importable, callable ``"module:function"``."""
    if not isinstance(target, str) or not re.fullmatch(r"[\w.]+:[\w.]+", target):
        raise InvalidArgumentError(f"target: expected 'module:function', got {target!r}")
    try:
        function = resolve(target)
    except (ImportError, AttributeError) as exc:
        raise InvalidArgumentError(f"target: cannot import {target!r} ({exc})") from None
    if not callable(function):
        raise InvalidArgumentError(f"target: {target!r} is not callable")


def _check_placement(backend: str, address: str | None, cpus_per_run: float | None, gpus_per_run: float | None) -> None:
    """Refuse a backend or an option of where the work runs that does not fit it (naming the option)."""
    if backend not in ("local", "ray"):
        raise InvalidArgumentError(f"--backend: expected 'local' or 'ray', got {backend!r}")
    if backend == "local" and address is not None:
        raise InvalidArgumentError("--address: only with --backend ray")
    if backend == "local" and cpus_per_run is not None:
        raise InvalidArgumentError("--cpus-per-run: only with --backend ray")
    if cpus_per_run is not None and not (isinstance(cpus_per_run, numbers.Real) and cpus_per_run > 0):
        raise InvalidArgumentError(f"--cpus-per-run: expected a positive number, got {cpus_per_run!r}")
    if backend == "local" and gpus_per_run is not None:
        raise InvalidArgumentError("--gpus-per-run: only with --backend ray (local workers all see every GPU)")
    if gpus_per_run is not None and not (
        isinstance(gpus_per_run, numbers.Real)
        and not isinstance(gpus_per_run, bool)
        and (0 < gpus_per_run <= 1 or float(gpus_per_run).is_integer() and gpus_per_run > 0)
    ):
        raise InvalidArgumentError(
            f"--gpus-per-run: expected a share of one GPU in (0, 1] or a whole number of GPUs, got {gpus_per_run!r}"
        )
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise InvalidArgumentError(RAY_MISSING)  # before the sweep's folder and records are written


def _start_record(
    out: Path, target: str, points: list[SweepPoint], settings: dict[str, Any], labels: Mapping[str, str]
) -> tuple[_Record, list[SweepPoint]]:
    """The record of the sweep in ``out`` (a continued one checked against its start) with the finished points
    re-used, and the points still to run, in grid order."""
    record = _Record(out, target, points, settings, labels)
    pending = []
    for point in points:
        marker = read_marker(out, point)
        if marker is None:
            pending.append(point)
        else:
            record.reuse(point, marker)
    return record, pending


def _run_pending(
    record: _Record, description: str, progress: bool | None, run: Callable[[Callable], None]
) -> pd.DataFrame:
    """Run the pending points with ``run(finish)`` under the sweep's bar, recording each as it ends and an
    interruption; return the summary table written at the end."""
    total = len(record.points)
    # the bar and the lines show done/total themselves; the label adds the failures only. The reused
    # points start the count: the time left is estimated from the runs of this call
    with progress_bar(description, total=total, enabled=progress, initial=len(record.reused)) as update:

        def finish(point: SweepPoint, outcome: dict[str, Any]) -> None:
            record.finish(point, outcome)
            done, failed = record.counts()
            label = description + (f" ({failed} failed)" if failed else "")
            update(done + failed, description=label)

        update(len(record.reused))
        record.write_state()
        try:
            run(finish)
        except KeyboardInterrupt:
            record.interrupted = True
            done, failed = record.counts()
            _interrupted.append(InterruptedSweep(record.out, done, failed, total))
            raise
        else:
            record.finished = _now()
        finally:
            record.write_state()
            table = record.write_summary()
    return table


def run_sweep(
    points: Sequence[SweepPoint],
    target: str,
    out: str | os.PathLike,
    *,
    common: Mapping[str, Any] | None = None,
    workers: int | None = None,
    backend: Literal["local", "ray"] = "local",
    address: str | None = None,
    cpus_per_run: float | None = None,
    gpus_per_run: float | None = None,
    runtime_env: dict[str, Any] | None = None,
    description: str = "sweep",
    progress: bool | None = None,
    identity: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> SweepResult:
    """Run every point of a sweep that has not finished; write ``sweep.json`` and the summary.

    Parameters
    ----------
    points : sequence of SweepPoint
        The points (usually :func:`expand_grid`), with distinct names.
    target : str
        ``"module:function"``, imported by name in every worker; called as
        ``function(overrides: list[str], run_dir: Path, resume: bool, **common) -> dict``.
        ``run_dir`` is ``out / point.name`` (created by the function); ``resume`` is True when a
        previous, unfinished attempt left files there. The returned dict is the point's summary row:
        string keys, scalar values (numbers, strings, booleans, None).
    out : path
        The sweep directory (made when missing; an existing sweep of the same target is continued).
    common : dict, optional
        Keyword arguments passed to every call (picklable with more than one worker).
    workers : int, optional
        Points run at once. Local backend: 1 (default) runs them in this process one after the
        other; ``N > 1`` on ``N`` spawned processes, each with ``max(1, cores // N)`` torch threads;
        ``-1`` every core (:func:`~repscope.resources.resolve_jobs`). Ray: at most ``N`` trials at
        once (default: as many as the cluster's CPUs allow).
    backend : {"local", "ray"}
        ``"ray"`` runs each point as a Ray Tune trial (``pip install 'repscope[ray]'``).
    address : str, optional
        Ray only: the cluster to join (``"auto"``, ``"ray://host:10001"``); None starts a local
        instance with ``workers * cpus_per_run`` CPUs (every core when ``workers`` is None).
    cpus_per_run : float, optional
        Ray only: CPUs each trial reserves (default 1); its torch threads follow.
    gpus_per_run : float, optional
        Ray only: the share of a GPU each trial reserves (``0.25``: four trials on one GPU; default
        none, and Ray then hides the GPUs from the trials). The local backend's workers all see every
        GPU: ``--workers 4`` puts four runs on one GPU.
    runtime_env : dict, optional
        Ray only: the ``runtime_env`` of ``ray.init`` (e.g. ``{"env_vars": {"PYTHONPATH": ...}}``
        for a target outside installed packages).
    description : str
        What the progress bar names (``"sweep"``; `` (2 failed)`` is added once runs fail).
    progress : bool, optional
        False shows no bar; None follows :func:`repscope.progress.progress_mode`.
    identity : dict, optional
        The settings the points' results depend on (JSON-able), stored in ``sweep.json``; default
        ``common`` without the keys of :data:`SPREAD_KEYS` (at any depth). A sweep continued in ``out``
        must have the identity and the points it was started with (in any order): every setting that
        differs (as a dotted key, with both values) or the grid is named, and nothing runs. Where the
        work runs may differ (:func:`repscope.resume_check.where_the_work_runs`: the keys of
        :data:`SPREAD_KEYS`, and a ``trainer`` section's accelerator, devices, logger, ...). A setting
        the stored record lacks (added to the package since) is not compared; one it holds that is
        absent now is a difference.
    labels : dict, optional
        What the messages call a dotted key of ``identity``, and ``"points"`` (default ``"the grid"``).

    Returns
    -------
    SweepResult
        Status of every point, the summary table, the failed points.

    Raises
    ------
    InvalidArgumentError
        Naming the argument: a malformed or unimportable target, duplicate point names, a bad
        ``workers`` / ``backend`` / ``address`` / ``cpus_per_run``, Ray missing, ``out`` holding a
        sweep of another target, or one started with another identity or other points.
    DataFormatError
        A point's ``sweep-done.json`` is unreadable or records other overrides.
    KeyboardInterrupt
        Ctrl-C: the workers are stopped, ``sweep.json`` and the summary record what finished
        (``"interrupted": true``), the sweep is noted in :func:`interrupted_sweeps` (the command's
        ``--resume`` hint), and the interrupt propagates.
    """
    points = list(points)
    _check_target(target)
    names = [point.name for point in points]
    if len(set(names)) != len(names):
        raise InvalidArgumentError("points: two points have the same name; build them with expand_grid")
    _check_placement(backend, address, cpus_per_run, gpus_per_run)
    resolved = None if workers is None else resolve_jobs(workers, "--workers")
    common = dict(common or {})

    out = check_writable_dir(Path(out).absolute())
    settings = {
        "backend": backend,
        "workers": workers,
        "address": address,
        "cpus_per_run": cpus_per_run,
        "gpus_per_run": gpus_per_run,
        "common": _jsonable(common),
        "identity": _jsonable(dict(identity)) if identity is not None else _without_spread_keys(_jsonable(common)),
    }
    record, pending = _start_record(out, target, points, settings, dict(labels or {}))
    if backend == "local":
        run = functools.partial(_run_local, pending, target, out, common, resolved or 1)
    elif pending:
        placement = _RayPlacement(resolved, address, cpus_per_run or 1, gpus_per_run, runtime_env)
        run = functools.partial(_run_ray, pending, target, out, common, placement=placement)
    else:
        run = _run_nothing
    table = _run_pending(record, description, progress, run)

    return SweepResult(
        out=out,
        points=points,
        status={point.name: record.status(point) for point in points},
        summary=table,
        failed=record.failed(),
        ran=list(record.ran),
        reused=list(record.reused),
    )


__all__ = [
    "DONE_MARKER",
    "FailedPoint",
    "InterruptedSweep",
    "describe_interrupted_sweep",
    "SweepPoint",
    "SweepResult",
    "expand_grid",
    "interrupted_sweeps",
    "point_name",
    "read_marker",
    "run_point",
    "run_sweep",
]
