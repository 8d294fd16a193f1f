"""Reading an npz archive that anyone may have written, without ever unpickling.

``numpy.load(path, allow_pickle=False)`` already refuses object arrays, but it hands a member that is
not a ``.npy`` file back as raw bytes, and a text file or a single ``.npy`` fails with messages that do
not say what is wrong. :func:`read_npz_arrays` looks at the first bytes, reads every member, and
refuses anything that is not a plain array in one line naming the file and the member.

Before anything is allocated, every array's header is read and checked against the file
(:func:`check_npy_file`, :func:`check_npz_file`: a header declaring more bytes than the file or zip
member holds is "truncated or corrupt") and against the memory the machine has
(:func:`repscope.validation.memory_budget`): numpy allocates what a header declares before reading,
so a few bytes declaring a terabyte array would otherwise end in a ``MemoryError``.
:func:`load_array_file` is ``numpy.load(path, allow_pickle=False)`` after those checks.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from repscope import validation
from repscope.errors import DataFormatError
from repscope.fileio import bytes_text
from repscope.validation import check_array_header

NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive's first bytes (a file, or an empty archive)
NPY_MAGIC = b"\x93NUMPY"


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160]


def read_npz_arrays(path: str | Path, expected: str, how_to_write: str = "numpy.savez") -> dict[str, np.ndarray]:
    """Every member of the npz ``path`` as an array.

    Parameters
    ----------
    path : str or pathlib.Path
        An existing file.
    expected : str
        What the archive must hold, for the message given to a single ``.npy`` (e.g. ``"'factors' (N, K)
        integer classes and 'codes' (N, L)"``).
    how_to_write : str, default="numpy.savez"
        What writes a valid archive, for the message given to a member that is not an array.

    Returns
    -------
    dict of str to numpy.ndarray
        The members by name, read with ``allow_pickle=False``.

    Raises
    ------
    DataFormatError
        When the file is a single ``.npy``, does not start with a zip header (text, a pickle), cannot be
        read as an npz, or has a member that is not a ``.npy`` array (numpy hands such a member back as
        raw bytes: a pickle, text) or holds object arrays. The message names the file and the member.
    """
    path = Path(path)
    head = _first_bytes(path)
    if head.startswith(NPY_MAGIC):
        raise DataFormatError(f"{path}: a single .npy array, not an .npz archive; the npz must hold {expected}")
    if not head.startswith(NPZ_MAGIC):
        raise DataFormatError(f"{path}: not an npz archive (it does not start with a zip header: text or a pickle?)")
    check_npz_file(path)
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                try:
                    value = archive[key]
                except ValueError as exc:
                    if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
                        raise DataFormatError(
                            f"{path}: member {key!r} holds object arrays, which only unpickling could read; refused"
                        ) from None
                    raise DataFormatError(f"{path}: member {key!r} cannot be read ({_short(exc)})") from None
                except (OSError, zipfile.BadZipFile, EOFError) as exc:
                    raise DataFormatError(f"{path}: member {key!r} cannot be read ({_short(exc)})") from None
                if not isinstance(value, np.ndarray):
                    raise DataFormatError(
                        f"{path}: member {key!r} is not a .npy array (raw bytes: a pickle or text?); "
                        f"write the archive with {how_to_write}"
                    )
                arrays[key] = value
    except DataFormatError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFormatError(f"{path}: not a readable .npz archive ({_short(exc)})") from None
    return arrays


def _first_bytes(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(len(NPY_MAGIC))
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_npy_header(handle: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """The shape, dtype and data offset a ``.npy`` stream declares, read without reading its data.

    Parameters
    ----------
    handle : binary file object
        Positioned at the start of the ``.npy`` data (a file, or a zip member).
    where : str
        The file (and member), for the message.

    Returns
    -------
    (shape, dtype, offset)
        ``offset`` is the header's length in bytes: where the array data start.

    Raises
    ------
    DataFormatError
        When the magic string or the header is malformed (format versions 1.0, 2.0 and 3.0 are read).
    """
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version in ((2, 0), (3, 0)):
            # 3.0 differs from 2.0 only by utf-8 field names, read here as latin-1: the sizes are the same
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f"format version {version[0]}.{version[1]} is not one numpy writes")
        offset = handle.tell()
    except (ValueError, EOFError, OSError, SyntaxError, TypeError, zipfile.BadZipFile) as exc:
        raise DataFormatError(f"{where}: not a readable .npy array, truncated or corrupt ({_short(exc)})") from None
    return tuple(int(size) for size in shape), dtype, offset


def check_npy_file(path: str | Path, in_memory: bool = True) -> tuple[tuple[int, ...], np.dtype]:
    """Check a ``.npy`` file's header against its size and the memory budget, before any allocation.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.npy`` file.
    in_memory : bool, default=True
        False when the array will be memory-mapped (only the file's size counts then).

    Returns
    -------
    (shape, dtype)
        What the header declares.

    Raises
    ------
    DataFormatError
        Naming the file: a malformed header, data shorter than the header declares ("truncated or
        corrupt"), or an array larger than :func:`repscope.validation.memory_budget` when ``in_memory``.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            shape, dtype, offset = read_npy_header(handle, str(path))
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    check_array_header(str(path), shape, dtype, size - offset, in_memory=in_memory)
    return shape, dtype


def check_npz_file(path: str | Path) -> int:
    """Check every member of an ``.npz`` before numpy allocates any: each ``.npy`` member's header against
    the member's uncompressed size as the zip declares it, and all the members together against the
    memory budget (a member that is not ``.npy``, which numpy hands back as raw bytes, by its size).

    Parameters
    ----------
    path : str or pathlib.Path
        A zip archive.

    Returns
    -------
    int
        The bytes all the members take once read.

    Raises
    ------
    DataFormatError
        Naming the file and the member: a malformed header, a member whose header declares more bytes
        than it holds ("truncated or corrupt"), a member or the archive larger than the memory budget,
        or an archive that is not a readable zip.
    """
    path = Path(path)
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                total += _check_npz_member(path, archive, info)
    except DataFormatError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise DataFormatError(f"{path}: not a readable .npz archive ({_short(exc)})") from None
    budget = validation.memory_budget()  # looked up when called: one budget, replaceable in one place
    if budget is not None and total > budget:
        raise DataFormatError(
            f"{path}: its members take {bytes_text(total)} once read, more than the {bytes_text(budget)} of memory "
            "available; refused before reading"
        )
    return total


def _check_npz_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    name = info.filename[: -len(".npy")] if info.filename.endswith(".npy") else info.filename
    where = f"{path}: member {name!r}"
    with archive.open(info) as member:
        is_array = info.filename.endswith(".npy") and member.read(len(NPY_MAGIC)) == NPY_MAGIC
    if not is_array:
        # numpy reads such a member whole, as bytes (refused afterwards as not an array): bound it too
        return check_array_header(where, (info.file_size,), np.dtype(np.uint8), None)
    with archive.open(info) as member:
        shape, dtype, offset = read_npy_header(member, where)
    return check_array_header(where, shape, dtype, max(info.file_size - offset, 0))


def check_array_file(path: str | Path, in_memory: bool = True) -> None:
    """:func:`check_npy_file` or :func:`check_npz_file`, as the file's first bytes say; a file that is
    neither, or cannot be opened, is left to the caller's own message (nothing is raised for it here).

    Parameters
    ----------
    path : str or pathlib.Path
        The file a caller is about to give ``numpy.load``.
    in_memory : bool, default=True
        False when a ``.npy`` will be memory-mapped.

    Raises
    ------
    DataFormatError
        See :func:`check_npy_file` and :func:`check_npz_file`.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(NPY_MAGIC))
    except OSError:
        head = b""  # a missing or unreadable file: the caller's own reading names it
    if head.startswith(NPY_MAGIC):
        check_npy_file(path, in_memory=in_memory)
    elif head.startswith(NPZ_MAGIC):
        check_npz_file(path)


def load_array_file(path: str | Path, mmap_mode: Any = None) -> Any:
    """``numpy.load(path, allow_pickle=False)`` once the file's headers passed the checks above.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.npy`` file or an ``.npz`` archive (told apart by their first bytes, not their names).
    mmap_mode : {None, "r", "r+", "c"}, default=None
        As ``numpy.load`` takes it (``.npy`` only); a memory-mapped array is checked against the file's
        size alone.

    Returns
    -------
    numpy.ndarray or numpy.lib.npyio.NpzFile
        What ``numpy.load`` returns (an ``NpzFile`` is to be closed: use it in a ``with`` block).

    Raises
    ------
    DataFormatError
        Naming the file (and member): see :func:`check_npy_file` and :func:`check_npz_file`; also a file
        that is neither, or that numpy cannot read.
    """
    path = Path(path)
    if not _first_bytes(path).startswith((NPY_MAGIC, *NPZ_MAGIC)):
        raise DataFormatError(f"{path}: neither a .npy array nor an .npz archive (text or a pickle?)")
    check_array_file(path, in_memory=mmap_mode is None)
    try:
        return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataFormatError(
            f"{path}: not a readable .npy / .npz file, truncated or corrupt ({_short(exc)})"
        ) from None


__all__ = [
    "check_array_file",
    "check_npy_file",
    "check_npz_file",
    "load_array_file",
    "read_npy_header",
    "read_npz_arrays",
]
