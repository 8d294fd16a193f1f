"""Reading an npz archive that anyone may have written, without ever unpickling.

``numpy.load(path, allow_pickle=False)`` already refuses object arrays, but it hands a member that is
not a ``.npy`` file back as raw bytes, and a text file or a single ``.npy`` fails with messages that do
not say what is wrong. :func:`read_npz_arrays` looks at the first bytes, reads every member, and
refuses anything that is not a plain array in one line naming the file and the member.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from repscope.errors import DataFormatError

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
    with path.open("rb") as handle:
        head = handle.read(len(NPY_MAGIC))
    if head.startswith(NPY_MAGIC):
        raise DataFormatError(f"{path}: a single .npy array, not an .npz archive; the npz must hold {expected}")
    if not head.startswith(NPZ_MAGIC):
        raise DataFormatError(f"{path}: not an npz archive (it does not start with a zip header: text or a pickle?)")
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
