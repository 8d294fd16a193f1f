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
* An output never lands on the command's own input: each verb declares what it reads
  (:class:`CommandInput`), and an output that is an input, holds one or lies inside an input directory
  is refused (:class:`~repscope.errors.OutputOntoInputError`) before the rule above and before anything
  is written, ``--overwrite`` or not: ``--out runs/x: is the run given as RUN_DIR (runs/x); choose
  another --out``. ``--resume`` continues its own output, which is then no clash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from repscope.errors import InvalidArgumentError, OutputExistsError, OutputOntoInputError
from repscope.fileio import (
    TEMP_PREFIX,
    OutputWriteError,
    check_can_create,
    is_write_refusal,
    replace_directory,
    write_refusal_text,
)

Kind = Literal["file", "directory"]
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


@dataclasses.dataclass(frozen=True)
class CommandInput:
    """A file or folder a command reads, which its output must not replace.

    Parameters
    ----------
    path
        The input as given (a run directory, a repository, a dataset folder, an npz, a config file).
        An input not on disk (a registered name, a missing file) cannot be destroyed and clashes with
        nothing.
    given_as
        The argument or option that named it, for the message: ``"RUN_DIR"``, ``"--model"``,
        ``"data.params.data_dir in CONFIG"``.
    what
        What it is, for the message: ``"the run"``, ``"the repository"``.
    room
        Names directly inside the input where the command's own output belongs (``mmvae evaluate``
        writes ``RUN_DIR/evaluation`` by default): an output at or below one of them is no clash.
    """

    path: str | os.PathLike
    given_as: str
    what: str = "the input"
    room: tuple[str, ...] = ()


# keys of a config or of --data-param whose value names a file or folder the command reads (a value with a
# path separator counts as well)
_PATH_KEY_NAMES = ("source", "folder", "checkpoint", "path", "file", "repo")
_PATH_KEY_ENDINGS = ("_dir", "_path", "_file", "_folder", "_checkpoint")


def inputs_in_mapping(data: Any, given_as: str, prefix: str = "") -> list[CommandInput]:
    """The inputs a config (or a ``--data-param`` mapping) names: each string value under a key that names
    a path (``data_dir``, ``source``, ``checkpoint``, ...) or holding a path separator, as a
    :class:`CommandInput`.

    Parameters
    ----------
    data
        The mapping, as plain values (nested mappings and lists are searched).
    given_as
        How the message names it, with ``{key}`` for the dotted key: ``"{key} in the config"``,
        ``"--data-param {key}"``.
    prefix
        The dotted key of ``data`` itself.

    Returns
    -------
    list of CommandInput
        Values that are not on disk are kept: they clash with nothing.
    """
    if isinstance(data, Mapping):
        keyed = [(f"{prefix}.{key}" if prefix else str(key), value) for key, value in data.items()]
    elif isinstance(data, (list, tuple)):
        keyed = [(f"{prefix}[{index}]", value) for index, value in enumerate(data)]
    else:
        keyed = None
    if keyed is not None:
        return [found for key, value in keyed for found in inputs_in_mapping(value, given_as, key)]
    if not isinstance(data, str) or not data:
        return []
    name = prefix.rsplit(".", 1)[-1].split("[", 1)[0]
    if "/" in data or os.sep in data or name in _PATH_KEY_NAMES or name.endswith(_PATH_KEY_ENDINGS):
        return [CommandInput(os.path.expanduser(data), given_as.format(key=prefix))]
    return []


def _identity(path: Path) -> tuple[int, int] | None:
    """What makes two paths the same file or folder (links followed; case-insensitive file systems and
    bind mounts included), or None when nothing is there."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _places(path: str | os.PathLike) -> list[Path]:
    """``path`` with every link followed, and with the links above it followed but not a link it is
    itself: a link inside an input is part of it, wherever it points. A path that does not exist yet
    is resolved through its nearest existing parent. A ``..`` is taken after the link before it, as the
    file system takes it (``link/..`` is the folder holding the link's target), never by the text."""
    resolve = os.path.realpath
    text = os.fspath(path)
    head, name = os.path.split(text.rstrip("/" + os.sep) or text)
    places = [Path(resolve(text))]
    if name not in ("", os.curdir, os.pardir):
        places.append(Path(resolve(head or os.curdir)) / name)
    return list(dict.fromkeys(places))


def _clash(out: str | os.PathLike, given: CommandInput) -> str | None:
    """How ``out`` would land on ``given``: ``"is"``, ``"holds"``, ``"lies inside"``, or None."""
    source = _identity(Path(given.path))
    if source is None:
        return None
    target = _identity(Path(out))
    if target is not None and target == source:
        return "is"
    if target is not None and any(
        _identity(parent) == target for place in _places(given.path) for parent in place.parents
    ):
        return "holds"
    for place in _places(out):
        # walk up from out: the first ancestor that is the input decides, by the name just below it
        for below, parent in zip((place, *place.parents), place.parents):
            if _identity(parent) == source:
                return None if below.name in given.room else "lies inside"
    return None


def refuse_output_onto_inputs(path: str | os.PathLike, inputs: Iterable[CommandInput], option: str = "--out") -> None:
    """Refuse an output that is one of the command's ``inputs``, holds one, or lies inside one.

    Paths are compared as the file system sees them (links followed, an output that does not exist
    yet through its nearest existing parent), so ``runs/x``, ``./runs/../runs/x`` and a link to it are
    one place, while ``runs/x2`` is another. Nothing is written.

    Parameters
    ----------
    path
        The output the command will write.
    inputs
        What the command reads (:class:`CommandInput`).
    option
        The option that named the output, for the message.

    Raises
    ------
    OutputOntoInputError
        ``{option} PATH: is|holds|lies inside WHAT given as GIVEN_AS (INPUT); choose another {option}``.
    """
    for given in inputs:
        relation = _clash(path, given)
        if relation is not None:
            raise OutputOntoInputError(
                f"{option} {os.fspath(path)}: {relation} {given.what} given as {given.given_as} "
                f"({os.fspath(given.path)}); choose another {option}"
            )


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
    inputs: Iterable[CommandInput] = (),
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
    inputs
        What the command reads (:class:`CommandInput`): an output that is one, holds one or lies inside
        one is refused first (:func:`refuse_output_onto_inputs`), ``overwrite`` or not; with ``resume``
        the output is the run being continued, not a clash.

    Raises
    ------
    OutputOntoInputError
        The output is an input, holds one or lies inside one.
    OutputExistsError
        The output exists and holds something, and neither ``overwrite`` nor ``resume`` allows it.
    InvalidArgumentError
        ``overwrite`` and ``resume`` together, or an unknown ``kind``.
    """
    if kind not in ("file", "directory"):
        raise InvalidArgumentError(f"kind: must be 'file' or 'directory', got {kind!r}")
    if overwrite and resume:
        raise InvalidArgumentError("--overwrite and --resume: choose one (replace the output, or continue it)")
    if not resume:
        refuse_output_onto_inputs(path, inputs, option)
    path = Path(path)
    check_can_create(path, f"{option} {path}")  # a read-only disk or a name too long: refused before any work
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


@contextlib.contextmanager
def output_target(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    resume: bool | None = None,
    kind: Kind = "file",
    option: str = "--out",
    inputs: Iterable[CommandInput] = (),
) -> Iterator[Path]:
    """Apply :func:`prepare_output` (``inputs`` included), then yield the path to write.

    When an existing output is to be replaced (``overwrite``), the yielded path is a temporary
    sibling (same suffix; an empty directory for ``kind="directory"``), which replaces ``path`` when
    the block ends without error and is removed otherwise — the old output stays until the new
    one is whole. In every other case ``path`` itself is yielded; when the disk refuses a write there
    (full, read-only: :func:`repscope.fileio.is_write_refusal`) and ``path`` held nothing before, what the
    block wrote is removed and the error says so.
    """
    path = prepare_output(path, overwrite=overwrite, resume=resume, kind=kind, option=option, inputs=inputs)
    if not (overwrite and _occupied(path)):
        fresh = not _occupied(path)
        try:
            yield path
        except BaseException as exc:
            if fresh and is_write_refusal(exc) and _occupied(path):
                # a full or read-only disk: what this command began is removed (it frees the space), nothing older
                _remove(path)
                _untouched.append((path, option, False))
                removed = f"{option} {path}: the incomplete output was removed"
                raise OutputWriteError(f"{write_refusal_text(exc)}; {removed}") from None
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
    replace_directory(target, path)


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
    "CommandInput",
    "existing_output_message",
    "incomplete_outputs",
    "inputs_in_mapping",
    "untouched_outputs",
    "output_target",
    "prepare_output",
    "refuse_output_onto_inputs",
]
