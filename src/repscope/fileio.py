"""Atomic file writes: a half-written file never takes the name of a whole one.

Every writer in repscope goes through this module: :func:`atomic_write` (or the helpers built on it)
when it writes through a Python file object, :func:`atomic_path` when a library writes the file
itself (h5py, a checkpoint, a memory map), :func:`replace_directory` for a whole folder. Data go to a
temporary name in the destination directory, which is renamed over the destination only once
complete (``tests/test_one_way_to_write.py`` fails on a rename anywhere else). An interrupted run therefore
leaves either the previous file or nothing, plus at most a ``.tmp-*`` file that later runs ignore.

A destination that cannot be written (a read-only directory, a file standing where a directory
should be, a full disk, a file name longer than the file system allows) raises
:class:`OutputWriteError`, a :class:`~repscope.errors.RepscopeError` naming the path, which the CLI
prints in one line; it is also an ``OSError``, so code that catches those keeps working. A full disk
is named with the space the output needs where the writer knows it (:func:`output_error`).

Large outputs written through a memory map (a dataset's ``images.npy``) take their blocks first
(:func:`reserve_space`): a memory-mapped page that the file system cannot back ends the process with
SIGBUS and no message, where a refused reservation is one line naming the path and the sizes.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from repscope.errors import RepscopeError

TEMP_PREFIX = ".tmp-"


class OutputWriteError(RepscopeError, OSError):
    """An output file or directory cannot be written: permission, read-only file system, a file
    where a directory is expected, no space left. The message names the path."""


# the errors of a destination that the user resolves outside repscope: space, permissions, names
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
WRITE_REFUSED_ERRNOS = NO_SPACE_ERRNOS | {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG}
# a file name's most bytes where the file system does not say (Linux's NAME_MAX)
DEFAULT_NAME_MAX = 255


def output_error(
    path: str | os.PathLike, exc: OSError, action: str = "cannot write", needed: int | None = None
) -> OutputWriteError:
    """``exc`` (raised while writing ``path``) as one :class:`OutputWriteError` line.

    Parameters
    ----------
    path : str or os.PathLike
        The output being written, named first.
    exc : OSError
        What the system raised; the file or directory it names is added when it differs from ``path``.
    action : str, default="cannot write"
        What failed, after the path.
    needed : int, optional
        Bytes the output needs, stated with the free space of its disk when ``exc`` is a full disk
        or quota (ENOSPC, EDQUOT, EFBIG).

    Returns
    -------
    OutputWriteError
        ``PATH: cannot write (CULPRIT: No space left on device; the output needs 1.2 GB, 10.0 MB free
        at DIR)``; for a name too long, the longest name's length and the file system's limit.
    """
    reason = exc.strerror or exc.__class__.__name__
    culprit = exc.filename if exc.filename is not None else None
    if exc.errno in NO_SPACE_ERRNOS:
        reason += _space_note(Path(path), needed)
    elif exc.errno == errno.ENAMETOOLONG:
        reason += _name_length_note(Path(culprit if culprit is not None else path))
    where = (
        f" ({culprit}: {reason})" if culprit is not None and os.fspath(culprit) != os.fspath(path) else f" ({reason})"
    )
    error = OutputWriteError(f"{os.fspath(path)}: {action}{where}")
    error.errno = exc.errno  # a caller that names the output otherwise still knows what the system said
    return error


def os_error_line(exc: OSError) -> str:
    """A destination's refusal (:func:`is_write_refusal`) caught nowhere nearer, as one line for the CLI:
    ``PATH: No space left on device; 10.0 MB free at DIR``, ``PATH: File name too long: a name of 300
    bytes, the file system allows 255``, ``PATH: Read-only file system``.

    Parameters
    ----------
    exc : OSError
        The error; the file it names (the destination of a rename or copy when there are two) leads.

    Returns
    -------
    str
        One line (the CLI prefixes ``repscope: error:``).
    """
    target = exc.filename2 if exc.filename2 is not None else exc.filename
    reason = exc.strerror or exc.__class__.__name__
    path = Path(os.fsdecode(target)) if target is not None else None
    if exc.errno in NO_SPACE_ERRNOS:
        reason += _space_note(path if path is not None else Path.cwd(), None)
    elif exc.errno == errno.ENAMETOOLONG and path is not None:
        reason += _name_length_note(path)
    return f"{path}: {reason}" if path is not None else reason


def is_write_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is a destination's refusal the user resolves (full disk or quota, read-only file
    system, permission, a name too long): an :class:`OutputWriteError`, or an ``OSError`` whose errno is in
    :data:`WRITE_REFUSED_ERRNOS`."""
    return isinstance(exc, OutputWriteError) or (isinstance(exc, OSError) and exc.errno in WRITE_REFUSED_ERRNOS)


def write_refusal_text(exc: OSError) -> str:
    """The one line of a refusal that :func:`is_write_refusal` accepts: an :class:`OutputWriteError`'s own
    message, else :func:`os_error_line`."""
    return str(exc) if isinstance(exc, OutputWriteError) else os_error_line(exc)


def format_bytes(count: int | float) -> str:
    """``count`` bytes for a reader, in decimal units: ``512 bytes``, ``12.3 MB``, ``12.3 PB``."""
    value = float(count)
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1000 or unit == "PB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def bytes_text(count: int) -> str:
    """``count`` bytes exactly and for a reader: ``12,288,000 bytes (12.3 MB)``."""
    return f"{int(count):,} bytes ({format_bytes(count)})"


def existing_ancestor(path: str | os.PathLike) -> Path:
    """The nearest of ``path`` and its parents that exists (the disk a new output lands on)."""
    path = Path(os.path.abspath(path))
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:  # a part of the name too long: try its parents
            continue
    return Path(path.anchor or os.sep)


def free_bytes(path: str | os.PathLike) -> int | None:
    """Bytes an unprivileged writer may still use on the disk holding ``path`` (None if unknown)."""
    try:
        return int(shutil.disk_usage(existing_ancestor(path)).free)
    except OSError:
        return None


def _space_note(path: Path, needed: int | None) -> str:
    free = free_bytes(path)
    parts = [] if needed is None else [f"the output needs {format_bytes(needed)}"]
    if free is not None:
        parts.append(f"{format_bytes(free)} free at {existing_ancestor(path.parent)}")
    return "; " + ", ".join(parts) if parts else ""


def _name_length_note(path: Path) -> str:
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    try:
        limit = os.pathconf(existing_ancestor(path.parent), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = DEFAULT_NAME_MAX
    return f": a name of {longest} bytes, the file system allows {limit}"


def check_free_space(directory: str | os.PathLike, needed: int, what: str) -> None:
    """Refuse, before any work, an output that the disk holding ``directory`` cannot take.

    Parameters
    ----------
    directory : str or os.PathLike
        Where the output will be written (it need not exist yet: its nearest existing parent is asked).
    needed : int
        Bytes the output needs.
    what : str
        The output, for the message (``"a dataset of 10 images of 64x64x3"``).

    Raises
    ------
    OutputWriteError
        ``WHAT needs N bytes (12.3 PB); the disk at DIR has M bytes (70.1 GB) free``, when ``needed``
        is more than the free space. A disk whose free space cannot be read is not refused here.
    """
    free = free_bytes(directory)
    if free is not None and needed > free:
        raise OutputWriteError(
            f"{what} needs {bytes_text(needed)}; the disk at {existing_ancestor(directory)} has {bytes_text(free)} free"
        )


def reserve_space(path: str | os.PathLike, size: int, name: str | os.PathLike | None = None) -> None:
    """Give the existing file ``path`` all its blocks up to ``size`` bytes now, before it is written.

    A memory-mapped file is created sparse; writing a page the disk cannot back kills the process with
    SIGBUS. ``os.posix_fallocate`` takes the blocks at once, so a full disk is refused here in one
    line; where the system or file system cannot allocate ahead, the disk's free space is checked
    instead (:func:`check_free_space`).

    Parameters
    ----------
    path : str or os.PathLike
        An existing file (e.g. just created by ``numpy.lib.format.open_memmap``).
    size : int
        The file's final size in bytes.
    name : str or os.PathLike, optional
        The output named in the message (default ``path``): the final name of a file written under a
        temporary one.

    Raises
    ------
    OutputWriteError
        Naming the output, the bytes it needs and the disk's free space, when the blocks cannot be had.
    """
    name = path if name is None else name
    allocate = getattr(os, "posix_fallocate", None)
    if allocate is not None:
        try:
            with open(path, "r+b") as handle:
                allocate(handle.fileno(), 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise output_error(name, exc, needed=size) from None
    # a sparse file has its full size already: what it still needs is what its blocks do not hold
    held = Path(path).stat().st_blocks * 512
    check_free_space(Path(path).parent, max(size - held, 0), f"{os.fspath(name)}:")


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


def check_can_create(path: str | os.PathLike, label: str | None = None) -> None:
    """Refuse now, creating nothing, an output that the file system will refuse later.

    The names ``path`` still has to create are checked against the file system's longest name, and a
    file is made and removed at once in the nearest existing folder above ``path`` (never inside an
    existing output): a read-only file system or a folder without write permission is refused before
    the command's work rather than after it.

    Parameters
    ----------
    path : str or os.PathLike
        The output (a file or a folder; it may exist, e.g. an empty folder or a run to resume).
    label : str, optional
        How the message names it (e.g. ``"--out runs/x"``); default the path.

    Raises
    ------
    OutputWriteError
        ``LABEL: cannot write (File name too long: a name of 300 bytes, the file system allows 255)``,
        ``LABEL: cannot write (DIR/.tmp-probe.x: Read-only file system)``.
    """
    label = os.fspath(path) if label is None else label
    full = Path(os.path.abspath(path))
    ancestor = existing_ancestor(full)
    if ancestor == full:
        ancestor = existing_ancestor(full.parent)
    if not ancestor.is_dir():
        return  # a file stands where a folder is needed: the output rule names that
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = DEFAULT_NAME_MAX
    for part in full.relative_to(ancestor).parts:
        if len(os.fsencode(part)) > limit:
            raise OutputWriteError(
                f"{label}: cannot write (File name too long: a name of {len(os.fsencode(part))} bytes, "
                f"the file system allows {limit})"
            )
    try:
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX + "probe.", dir=ancestor)
    except OSError as exc:
        # the folder, not the probe's random name, is what the user can change
        raise output_error(label, OSError(exc.errno, exc.strerror, os.fspath(ancestor))) from None
    os.close(fd)
    os.unlink(probe)


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
            try:
                yield handle
            except OSError as exc:  # a full disk while the caller wrote (a zip archive, a checkpoint)
                if isinstance(exc, RepscopeError) or exc.errno not in NO_SPACE_ERRNOS:
                    raise
                raise output_error(path, exc) from None
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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, directory: bool = False) -> Iterator[Path]:
    """A temporary sibling of ``path`` to write, renamed to ``path`` on success, removed on failure.

    For writers that open the file themselves (h5py, ``torch.save``, a memory map, a zip writer).
    The temporary name starts with ``.tmp-`` (:data:`TEMP_PREFIX`) and keeps the suffix, so a
    library that picks the format by suffix still sees it. With ``directory=True`` the yielded path
    is a new empty folder, which replaces a folder at ``path`` (:func:`replace_directory`). The
    file's mode is what a plain ``open()`` would give. A destination that cannot be written raises
    :class:`OutputWriteError` naming ``path``.
    """
    path = Path(path)
    make_output_dir(path.parent)
    try:
        if directory:
            temporary = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{path.name}.", dir=path.parent))
            # mkdtemp makes the folder private (0700); give it the mode a plain mkdir() would
            os.chmod(temporary, 0o777 & ~current_umask())
        else:
            fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{path.stem}.", suffix=path.suffix, dir=path.parent)
            os.close(fd)
            temporary = Path(name)
    except OSError as exc:
        raise output_error(path, exc) from None
    try:
        yield temporary
        try:
            if directory:
                replace_directory(temporary, path)
            else:
                # mkstemp creates the file private (0600); give it the mode a plain open() would
                os.chmod(temporary, 0o666 & ~current_umask())
                os.replace(temporary, path)
        except OSError as exc:
            raise output_error(path, exc) from None
    except BaseException:
        _remove_path(temporary)
        raise


def replace_directory(built: str | os.PathLike, directory: str | os.PathLike) -> None:
    """Put the finished folder ``built`` at ``directory``; a folder or file there is removed after.

    Two renames on one file system: the old folder first moves into a ``.tmp-<name>.old-*`` sibling,
    then ``built`` takes the name, so at every moment ``directory`` is either the old whole folder or
    the new whole one (an interrupted swap leaves the old one under the ``.tmp-`` name, which later
    runs ignore).
    """
    built, directory = Path(built), Path(directory)
    if directory.is_dir() and not directory.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{directory.name}.old-", dir=directory.parent))
        os.rename(directory, old / directory.name)
        os.rename(built, directory)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(built, directory)


def rename(source: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Give the whole file or folder ``source`` the name ``target`` (one rename, same file system).

    For what is complete already and only moves (a run set aside under a new name, a finished file
    into its folder); a write goes through :func:`atomic_write` or :func:`atomic_path`. A refusal by
    the file system raises :class:`OutputWriteError` naming ``target``.
    """
    target = Path(target)
    try:
        os.replace(source, target)
    except OSError as exc:
        raise output_error(target, exc) from None
    return target


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


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
