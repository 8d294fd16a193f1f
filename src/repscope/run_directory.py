"""The run directory that every study and training run writes.

Layout (see the design's "Run directory" convention)::

    <run>/
        config.yaml      the validated config as run, plus ``repscope_version``
        metrics.json     the headline numbers by name
        tables/*.csv     one CSV per table
        figures/*.png    one PNG per figure
        report.html      the self-contained report
        checkpoints/     where training happened

Every file goes through :mod:`repscope.fileio`, so an interrupted run leaves either a whole file or
none under its final name. A directory that already holds results is never written into unless the
caller asks to resume it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import pandas as pd
import yaml

from repscope import __version__
from repscope.config import read_yaml_mapping
from repscope.errors import DataFormatError, InvalidArgumentError, OutputExistsError
from repscope.fileio import TEMP_PREFIX, make_output_dir, write_bytes_atomic, write_json_atomic, write_text_atomic
from repscope.outputs import CommandInput, prepare_output
from repscope.report.figures import save_png_bytes

TIMESTAMP_FORMAT = "%Y%m%d-%H%M%S"
FIGURE_DPI = 110
CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.json"

# Names become single file names: a letter or digit first (no hidden or temporary names), then
# letters, digits, '_', '-', '.'; '..' is refused separately.
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def validate_name(value: Any, argument: str = "name") -> str:
    """Return ``value`` if it is a safe single file name, else raise naming ``argument``."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{argument}: expected a string, got {type(value).__name__}")
    if not value:
        raise InvalidArgumentError(f"{argument}: must not be empty")
    if "/" in value or "\\" in value or os.sep in value:
        raise InvalidArgumentError(f"{argument}: {value!r} must be a plain name without path separators")
    if ".." in value:
        raise InvalidArgumentError(f"{argument}: {value!r} must not contain '..'")
    if not _NAME_PATTERN.fullmatch(value):
        raise InvalidArgumentError(
            f"{argument}: {value!r} must start with a letter or digit and hold only letters, digits, '_', '-' and '.'"
        )
    return value


def to_plain(value: Any, where: str = "config") -> Any:
    """Convert ``value`` to plain Python types that YAML and JSON write without tags.

    numpy scalars and arrays become Python numbers and lists, paths become strings, tuples and sets
    become lists, dataclasses and pydantic models become dicts, enums become their value. Mapping
    keys keep their insertion order. Anything else raises :class:`InvalidArgumentError` naming the
    dotted key where it was found.
    """
    if isinstance(value, enum.Enum):
        return to_plain(value.value, where)
    if value is None or isinstance(value, str):
        return None if value is None else str(value)
    # bool before int (bool is an int); subclasses are normalised to the plain type
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        # float32(0.1).item() is 0.10000000149011612; its shortest repr is what the user wrote
        return float(np.format_float_positional(value, unique=True))
    if isinstance(value, np.generic):
        return to_plain(value.item(), where)
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist(), where)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        plain: dict[Any, Any] = {}
        for key, item in value.items():
            plain_key = to_plain(key, where) if isinstance(key, (np.generic, enum.Enum, str, int, float)) else key
            if not isinstance(plain_key, (str, int, float, bool)):
                raise InvalidArgumentError(f"{where}: key {key!r} must be a string or a number")
            plain[plain_key] = to_plain(item, f"{where}.{key}")
        return plain
    if isinstance(value, (list, tuple)):
        return [to_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return [to_plain(item, f"{where}[]") for item in sorted(value, key=repr)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_plain(dataclasses.asdict(value), where)
    if hasattr(value, "model_dump"):  # pydantic v2 models
        return to_plain(value.model_dump(mode="python"), where)
    raise InvalidArgumentError(f"{where}: cannot write a value of type {type(value).__name__} ({value!r:.60})")


class RunDirectory:
    """A run's output folder: config, metrics, tables, figures, report and checkpoints.

    Build one with :meth:`create`. The writes it made are recorded in :attr:`tables` and
    :attr:`figures` (name -> path, in write order) so a report can list them.
    """

    def __init__(self, root: Path, kind: str) -> None:
        self.root = Path(root)
        self.kind = kind
        self._tables: dict[str, Path] = {}
        self._figures: dict[str, Path] = {}

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        kind: str,
        out: Path | str | None = None,
        root: Path | str = Path("runs"),
        now: datetime | None = None,
        resume: bool = False,
        resumable: bool = False,
        inputs: Iterable[CommandInput] = (),
    ) -> RunDirectory:
        """Create (or, with ``resume=True``, reopen) a run directory.

        Parameters
        ----------
        kind
            What runs, e.g. ``"demo"`` or ``"morpho-diversity"``; names the default folder.
        out
            The folder to write. Created when missing; used when empty. When it holds files,
            :class:`OutputExistsError` is raised and nothing is touched, unless ``resume`` is true.
        root
            Parent of the default folder ``root/<kind>-<YYYYmmdd-HHMMSS>`` used when ``out`` is
            None; ``-2``, ``-3``, ... is appended when that name is taken.
        now
            The time that names the default folder (default: the current local time).
        resume
            Continue a run in ``out``: its existing tables and figures are recorded as written.
        resumable
            Whether the caller can continue a run (the refusal then suggests ``--resume``).
        inputs
            What the caller reads (:class:`~repscope.outputs.CommandInput`): an ``out`` that is one,
            holds one or lies inside one is refused unless ``resume``
            (:class:`~repscope.errors.OutputOntoInputError`), and nothing is touched.

        Returns
        -------
        RunDirectory
        """
        validate_name(kind, "kind")
        if out is None:
            if resume:
                raise InvalidArgumentError("resume: continuing a run needs out, the run directory to continue")
            return cls(_claim_new_directory(Path(root), kind, now or datetime.now()), kind)

        out = Path(out)
        if not resume:
            cls.check_free(out, resumable=resumable, inputs=inputs)
        elif out.exists() and not out.is_dir():
            raise OutputExistsError(f"out: {out} exists and is not a directory; choose another --out")
        if out.is_dir() and any(out.iterdir()):
            run = cls(out, kind)
            run._record_existing()
            return run
        make_output_dir(out)  # a read-only or full disk: one error naming the folder
        return cls(out, kind)

    @staticmethod
    def check_free(out: Path | str, resumable: bool = False, inputs: Iterable[CommandInput] = ()) -> None:
        """Refuse ``out`` when it is a file or a directory holding files (nothing is touched), with
        the one output rule's message (:mod:`repscope.outputs`): ``--overwrite`` replaces it, and
        ``--resume`` continues it where the command can continue a run (``resumable``); and when it is
        one of ``inputs``, holds one or lies inside one."""
        prepare_output(out, resume=False if resumable else None, kind="directory", inputs=inputs)

    def _record_existing(self) -> None:
        for name, suffix, record in (("tables", ".csv", self._tables), ("figures", ".png", self._figures)):
            folder = self.root / name
            if folder.is_dir():
                for file in sorted(folder.glob(f"*{suffix}")):
                    if not file.name.startswith(TEMP_PREFIX):
                        record[file.name[: -len(suffix)]] = file

    # -- paths ------------------------------------------------------------------------------

    def path(self, *parts: str | os.PathLike) -> Path:
        """The path of ``parts`` inside the run directory (nothing is created).

        Raises :class:`InvalidArgumentError` for absolute parts or ``..`` segments, which would
        leave the run directory.
        """
        relative = PurePath(*parts) if parts else PurePath()
        if relative.is_absolute() or relative.anchor:
            raise InvalidArgumentError(f"parts: {os.fspath(relative)!r} must be relative to the run directory")
        if any(segment == ".." for segment in relative.parts):
            raise InvalidArgumentError(f"parts: {os.fspath(relative)!r} must not contain '..'")
        return self.root / relative

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def metrics_path(self) -> Path:
        return self.root / METRICS_FILE

    @property
    def report_path(self) -> Path:
        return self.root / "report.html"

    @property
    def checkpoints(self) -> Path:
        """The ``checkpoints/`` folder, created on first use."""
        folder = self.root / "checkpoints"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def tables(self) -> dict[str, Path]:
        """Tables written (or found on resume): name -> path, in write order."""
        return dict(self._tables)

    @property
    def figures(self) -> dict[str, Path]:
        """Figures written (or found on resume): name -> path, in write order."""
        return dict(self._figures)

    # -- writers ----------------------------------------------------------------------------

    def write_config(self, config: Mapping[str, Any]) -> Path:
        """Write ``config.yaml``: ``config`` in insertion order, plus ``repscope_version``.

        numpy scalars, arrays, paths and tuples are written as plain YAML (see :func:`to_plain`);
        an unsupported value raises before anything is written.
        """
        if not isinstance(config, Mapping):
            raise InvalidArgumentError(f"config: expected a mapping, got {type(config).__name__}")
        plain = to_plain(config, "config")
        plain["repscope_version"] = __version__
        text = yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, default_flow_style=False)
        write_text_atomic(self.config_path, text)
        return self.config_path

    def write_metrics(self, metrics: Mapping[str, Any]) -> Path:
        """Write ``metrics.json``: the headline numbers by name (nested mappings allowed).

        Non-finite floats are written as JSON ``NaN`` / ``Infinity``, which Python and pandas read
        back as such.
        """
        if not isinstance(metrics, Mapping):
            raise InvalidArgumentError(f"metrics: expected a mapping, got {type(metrics).__name__}")
        write_json_atomic(self.metrics_path, to_plain(metrics, "metrics"))
        return self.metrics_path

    def write_table(self, name: str, df: Any, index: bool = False) -> Path:
        """Write ``tables/<name>.csv`` (without the index unless ``index``) and record it.

        Floats are written at full precision, so ``pandas.read_csv`` gives back the same values.
        """
        name = validate_name(_strip_suffix(name, ".csv"), "name")
        if not isinstance(df, pd.DataFrame):
            raise InvalidArgumentError(f"df: expected a pandas.DataFrame, got {type(df).__name__}")
        target = self.root / "tables" / f"{name}.csv"
        write_text_atomic(target, df.to_csv(index=index, lineterminator="\n"))
        self._tables[name] = target
        return target

    def save_figure(self, name: str, fig: Any, dpi: int = FIGURE_DPI) -> Path:
        """Write ``figures/<name>.png`` of a matplotlib figure, close the figure, return the path."""
        name = validate_name(_strip_suffix(name, ".png"), "name")
        if not hasattr(fig, "savefig"):
            raise InvalidArgumentError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
        target = self.root / "figures" / f"{name}.png"
        try:
            write_bytes_atomic(target, save_png_bytes(fig, dpi=dpi))
        finally:
            _close_figure(fig)
        self._figures[name] = target
        return target

    def write_report(self, report: Any) -> Path:
        """Write ``report.html`` from a :class:`repscope.report.Report`."""
        return report.write(self.report_path)

    def __repr__(self) -> str:
        return f"RunDirectory({os.fspath(self.root)!r}, kind={self.kind!r})"

    def __fspath__(self) -> str:
        return os.fspath(self.root)


# --------------------------------------------------------------------------------------------
# reading back (a training run's typed reader is repscope.train.reader.open_run)


def read_config(run_dir: Path | str) -> dict[str, Any]:
    """The ``config.yaml`` mapping of any run directory, as written (the caller validates it against its
    own schema).

    Parameters
    ----------
    run_dir : pathlib.Path or str
        The run directory.

    Returns
    -------
    dict
        The top-level mapping, ``repscope_version`` included; empty for an empty file.

    Raises
    ------
    InvalidArgumentError
        When ``run_dir`` holds no ``config.yaml``.
    DataFormatError
        When the file is unreadable, not UTF-8, not YAML or not a mapping (the message names it).
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise InvalidArgumentError(f"{run_dir}: no {CONFIG_FILE}; not a run directory")
    return read_yaml_mapping(path)


def read_metrics(run_dir: Path | str) -> dict[str, Any]:
    """The ``metrics.json`` of any run directory: its headline numbers by name.

    Parameters
    ----------
    run_dir : pathlib.Path or str
        The run directory.

    Returns
    -------
    dict
        The JSON object (``NaN`` / ``Infinity`` read back as floats); empty when the run wrote no
        ``metrics.json`` (it has not finished).

    Raises
    ------
    DataFormatError
        When the file is unreadable, not JSON or not a JSON object (the message names it).
    """
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return {}
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(metrics, dict):
        raise DataFormatError(f"{path}: not a JSON object of metrics, found {type(metrics).__name__}")
    return metrics


def _claim_new_directory(root: Path, kind: str, now: datetime) -> Path:
    """Create and return ``root/<kind>-<time>`` or the first free ``-2``, ``-3``, ... variant.

    ``mkdir`` without ``exist_ok`` is the claim, so two runs started in the same second (even in
    two processes) get two directories.
    """
    root.mkdir(parents=True, exist_ok=True)
    base = f"{kind}-{now.strftime(TIMESTAMP_FORMAT)}"
    for attempt in range(1, 10_000):
        candidate = root / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise OutputExistsError(f"root: no free run directory name for {base} in {root}")


def _strip_suffix(name: Any, suffix: str) -> Any:
    # "results.csv" and "results" both name tables/results.csv
    if isinstance(name, str) and name.lower().endswith(suffix) and len(name) > len(suffix):
        return name[: -len(suffix)]
    return name


def _close_figure(fig: Any) -> None:
    # Only figures made through pyplot are registered anywhere; closing them frees pyplot's
    # reference. pyplot is not imported here, so a user's backend choice is left alone.
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        try:
            pyplot.close(fig)
        except Exception:  # a figure pyplot does not know: nothing to release
            pass


__all__ = [
    "RunDirectory",
    "read_config",
    "read_metrics",
    "validate_name",
    "to_plain",
    "CONFIG_FILE",
    "METRICS_FILE",
    "FIGURE_DPI",
    "TIMESTAMP_FORMAT",
]
