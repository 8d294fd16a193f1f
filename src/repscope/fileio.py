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
import os
import tempfile
from collections.abc import Iterator
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
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays, paths: the types our tables and configs hold
    if hasattr(value, "tolist"):
        return value.tolist()
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
