"""One rule for the outputs of every verb (``--out/-o``).

* A missing output, or an empty directory, is written.
* An existing non-empty output (a file, or a directory holding anything) is refused with
  :class:`~repscope.errors.OutputExistsError`: ``--out PATH: exists; pass --overwrite to replace
  it`` — followed by ``, or --resume to continue it`` only for verbs that can resume.
* ``--overwrite`` replaces it; with :func:`output_target` the new output is written under a
  temporary sibling name and takes the place of the old one only once it is complete, so a failed
  or interrupted run leaves the old output as it was.
* ``--resume`` (verbs that can resume) continues it; ``--overwrite`` and ``--resume`` together are
  an error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from repscope.errors import InvalidArgumentError, OutputExistsError

Kind = Literal["file", "directory"]
TEMP_PREFIX = ".tmp-"  # the prefix of repscope.fileio: later runs ignore such names
# outputs a command left incomplete when it stopped (interrupted or failed), for its last message
_incomplete: list[tuple[Path, str, bool]] = []
# outputs whose writer stopped before writing anything there: (path, option, whether an old output was kept)
_untouched: list[tuple[Path, str, bool]] = []


def _occupied(path: Path) -> bool:
    """Whether ``path`` holds an output: a file, a link, or a directory that is not empty."""
    if path.is_symlink():
        return True
    if path.is_dir():
        try:
            return any(path.iterdir())
        except OSError:
            return True
    return path.exists()


def existing_output_message(path: str | os.PathLike, option: str = "--out", can_resume: bool = False) -> str:
    """The message of the rule: ``--out PATH: exists; pass --overwrite to replace it[, or --resume to continue it]``."""
    text = f"{option} {path}: exists; pass --overwrite to replace it"
    return text + (", or --resume to continue it" if can_resume else "")


def prepare_output(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    resume: bool | None = None,
    kind: Kind = "file",
    option: str = "--out",
) -> Path:
    """Check ``path`` against the output rule and return it as a ``Path``; nothing is written.

    Parameters
    ----------
    path
        The output the verb will write.
    overwrite
        ``--overwrite`` was given: an existing output may be replaced.
    resume
        None for verbs that cannot resume; otherwise whether ``--resume`` was given. An existing
        output is accepted when it is true; the message of a refusal mentions ``--resume`` only when
        it is not None.
    kind
        ``"file"`` or ``"directory"``: the type of output the verb writes. An existing path of the
        other type is refused even with ``--overwrite`` (a directory is never replaced by a file).
    option
        The option that named the path, for the messages.

    Raises
    ------
    OutputExistsError
        The output exists and holds something, and neither ``overwrite`` nor ``resume`` allows it.
    InvalidArgumentError
        ``overwrite`` and ``resume`` together, or an unknown ``kind``.
    """
    if kind not in ("file", "directory"):
        raise InvalidArgumentError(f"kind: must be 'file' or 'directory', got {kind!r}")
    if overwrite and resume:
        raise InvalidArgumentError("--overwrite and --resume: choose one (replace the output, or continue it)")
    path = Path(path)
    if kind == "directory" and path.exists() and not path.is_dir():
        raise OutputExistsError(f"{option} {path}: exists and is not a directory; choose another {option}")
    if kind == "file" and path.is_dir() and not path.is_symlink():
        raise OutputExistsError(f"{option} {path}: is a directory; {option} names a file here")
    if not _occupied(path) or resume or overwrite:
        return path
    raise OutputExistsError(existing_output_message(path, option, can_resume=resume is not None))


def _temporary_sibling(path: Path, kind: Kind) -> Path:
    """A new name next to ``path`` (same suffix) that nothing holds yet; for a directory, an empty one."""
    parent = path.parent
    if kind == "directory":
        return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{path.name}.", dir=parent))
    handle, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{path.stem}.", suffix=path.suffix, dir=parent)
    os.close(handle)
    os.unlink(name)  # writers create the file themselves (atomically)
    return Path(name)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def replace_output(new: Path, path: Path) -> None:
    """Put the complete output ``new`` at ``path``; what was there is removed afterwards."""
    if path.is_dir() and not path.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{path.name}.old-", dir=path.parent))
        os.rename(path, old / path.name)
        os.rename(new, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, path)


@contextlib.contextmanager
def output_target(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    resume: bool | None = None,
    kind: Kind = "file",
    option: str = "--out",
) -> Iterator[Path]:
    """Apply :func:`prepare_output`, then yield the path to write.

    When an existing output is to be replaced (``overwrite``), the yielded path is a temporary
    sibling (same suffix; an empty directory for ``kind="directory"``), which replaces ``path`` when
    the block ends without error and is removed otherwise — the old output stays until the new
    one is whole. In every other case ``path`` itself is yielded.
    """
    path = prepare_output(path, overwrite=overwrite, resume=resume, kind=kind, option=option)
    if not (overwrite and _occupied(path)):
        try:
            yield path
        except BaseException:
            if _occupied(path):
                _incomplete.append((path, option, resume is not None))
            else:
                _untouched.append((path, option, False))
            raise
        return
    try:
        target = _temporary_sibling(path, kind)
    except OSError as exc:
        raise OutputExistsError(f"{option} {path}: cannot write next to it ({exc.strerror or exc})") from None
    try:
        yield target
    except BaseException:
        _remove(target)
        _untouched.append((path, option, True))
        raise
    if not target.exists():  # the writer wrote nothing: keep the old output
        return
    replace_output(target, path)


def incomplete_outputs() -> list[tuple[Path, str, bool]]:
    """Outputs written in place by :func:`output_target` whose writer stopped before the end.

    Returns
    -------
    list of (pathlib.Path, str, bool)
        Each output's path, the option that named it and whether its verb can resume it, in the
        order they stopped.
    """
    return list(_incomplete)


def untouched_outputs() -> list[tuple[Path, str, bool]]:
    """Outputs of :func:`output_target` whose writer stopped before anything was written at their path
    (a verb that writes its output only once complete, or a replacement under a temporary name).

    Returns
    -------
    list of (pathlib.Path, str, bool)
        Each output's path, the option that named it and whether an old output there was kept as it
        was (``--overwrite``), in the order they stopped.
    """
    return list(_untouched)


__all__ = [
    "existing_output_message",
    "incomplete_outputs",
    "untouched_outputs",
    "output_target",
    "prepare_output",
    "replace_output",
]
