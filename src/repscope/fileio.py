"""Atomic file writes: a half-written file never takes the name of a whole one.

Every writer in repscope goes through :func:`atomic_write` (or the helpers built on it): data go
to a temporary file in the destination directory, which is flushed, fsynced and renamed over the
destination only once complete. An interrupted run therefore leaves either the previous file or
nothing, plus at most a ``.tmp-*`` file that later runs ignore.

A destination that cannot be written (a read-only directory, a file standing where a directory
should be, a full disk) raises :class:`OutputWriteError`, a :class:`~repscope.errors.RepscopeError`
naming the path, which the CLI prints in one line; it is also an ``OSError``, so code that
catches those keeps working.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from repscope.errors import RepscopeError

TEMP_PREFIX = ".tmp-"


class OutputWriteError(RepscopeError, OSError):
    """An output file or directory cannot be written: permission, read-only file system, a file
    where a directory is expected, no space left. The message names the path."""


def output_error(path: str | os.PathLike, exc: OSError, action: str = "cannot write") -> OutputWriteError:
    """``exc`` (raised while writing ``path``) as one :class:`OutputWriteError` line naming the path
    and, when it differs, the file or directory the system refused."""
    reason = exc.strerror or exc.__class__.__name__
    culprit = exc.filename if exc.filename is not None else None
    where = (
        f" ({culprit}: {reason})" if culprit is not None and os.fspath(culprit) != os.fspath(path) else f" ({reason})"
    )
    return OutputWriteError(f"{os.fspath(path)}: {action}{where}")


def make_output_dir(path: str | os.PathLike) -> Path:
    """``mkdir -p path``, a failure raised as :class:`OutputWriteError` naming it."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:  # a file (or a broken link) holds the name
        raise output_error(path, exc, "cannot create the directory") from None
    except OSError as exc:
        raise output_error(path, exc, "cannot create the directory") from None
    return path


def check_writable_dir(directory: str | os.PathLike) -> Path:
    """Create ``directory`` if needed and prove a file can be made in it (made and removed at
    once), so that a long computation fails before it starts rather than at its first write."""
    directory = make_output_dir(directory)
    try:
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX + "probe.", dir=directory)
    except OSError as exc:
        raise output_error(directory, exc) from None
    os.close(fd)
    os.unlink(probe)
    return directory


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing and rename it to ``path`` on success."""
    path = Path(path)
    make_output_dir(path.parent)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX + path.name + ".", dir=path.parent)
    except OSError as exc:
        raise output_error(path, exc) from None
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                raise output_error(path, exc) from None
        try:
            # mkstemp creates the file private (0600); give it the mode a plain open() would
            os.chmod(tmp_name, 0o666 & ~current_umask())
            os.replace(tmp_name, path)
        except OSError as exc:
            raise output_error(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


_current_umask = current_umask


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_write(path, "wb") as handle:
        try:
            handle.write(data)
        except OSError as exc:  # no space left, file too large
            raise output_error(path, exc) from None
    return Path(path)


def save_npy_atomic(path: str | os.PathLike, array: Any) -> None:
    """``numpy.save`` to ``path`` through a temporary name, so a reader never sees half an array."""
    import numpy as np  # noqa: PLC0415 -- this module stays light for the CLI's start-up

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    write_bytes_atomic(path, buffer.getvalue())


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as strict JSON (see :func:`dumps_json`) through a temporary name."""
    write_text_atomic(path, dumps_json(obj) + "\n")


NOT_FINITE_SUFFIX = "_not_finite"


def dumps_json(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as strict JSON, which every reader accepts.

    Python's ``json`` writes NaN and infinities as the bare tokens ``NaN`` and ``Infinity``, which are
    not JSON (other languages' readers, ``jq`` and browsers refuse the file). Here a non-finite number
    becomes ``null``, and a key ``<name>_not_finite`` beside it says what it was: ``"nan"``, ``"inf"``
    or ``"-inf"`` for a number, or, for a list holding some, the positions and values
    (``{"[0][2]": "nan"}``). A bare non-finite number (not inside a mapping) is written as ``null``.

    Parameters
    ----------
    obj : Any
        Mappings, sequences, numbers, strings, numpy scalars and arrays, paths.
    indent : int or None, default=2
        Indentation, as ``json.dumps`` takes it.

    Returns
    -------
    str
        The JSON text (``allow_nan=False``: it never holds ``NaN`` or ``Infinity``).
    """
    return json.dumps(finite_json(obj), indent=indent, sort_keys=False, allow_nan=False)


def finite_json(obj: Any) -> Any:
    """``obj`` converted to plain JSON types with non-finite numbers as ``None`` and noted beside them.

    Parameters
    ----------
    obj : Any
        What :func:`dumps_json` accepts.

    Returns
    -------
    Any
        Dicts, lists, strings, ints, finite floats, bools and ``None`` only; see :func:`dumps_json`
        for the ``<name>_not_finite`` notes.
    """
    value, _ = _finite(obj)
    return value


def _finite(obj: Any) -> tuple[Any, Any]:
    """(``obj`` cleaned, note) where the note is None when every number in ``obj`` was finite."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str | int):
        return obj, None
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj, None
        return None, "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, Mapping):
        cleaned: dict[str, Any] = {}
        names = {key if isinstance(key, str) else _json_key(key) for key in obj}
        for key, item in obj.items():
            value, note = _finite(item)
            name = key if isinstance(key, str) else _json_key(key)
            cleaned[name] = value
            if note is not None and f"{name}{NOT_FINITE_SUFFIX}" not in names:
                cleaned[f"{name}{NOT_FINITE_SUFFIX}"] = note  # right after the value it explains
        return cleaned, None
    if isinstance(obj, list | tuple):
        items = []
        positions: dict[str, Any] = {}
        for index, item in enumerate(obj):
            value, note = _finite(item)
            items.append(value)
            if isinstance(note, dict):
                positions.update({f"[{index}]{where}": what for where, what in note.items()})
            elif note is not None:
                positions[f"[{index}]"] = note
        return items, positions or None
    converted = _json_default(obj)  # numpy scalars and arrays, paths; anything else is a TypeError
    return _finite(converted)


def _json_key(key: Any) -> str:
    # json.dumps turns int, float, bool and None keys into strings; numpy scalars need .item() first
    if hasattr(key, "item"):
        key = key.item()
    return json.dumps(key) if not isinstance(key, str) else key


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays, paths: the types our tables and configs hold
    if hasattr(value, "tolist"):
        plain = value.tolist()
        if hasattr(plain, "dtype"):  # long double stays a numpy scalar in tolist(): recursing never ends
            if plain.dtype.kind != "f":
                raise TypeError(f"cannot write {type(plain).__name__} to JSON")
            return float(plain)  # the nearest double (beyond its range: infinite, noted as such)
        return plain
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def gzip_bytes(data: bytes) -> bytes:
    """Gzip with a zero timestamp and no file name, so equal data give equal bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", filename="", mtime=0, compresslevel=6) as handle:
        handle.write(data)
    return buffer.getvalue()


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
