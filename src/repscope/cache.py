"""Things built once and cached under ``$REPSCOPE_HOME`` (Morpho-MNIST builds, attribute classifiers).

One mechanism for all of them: a file lock beside the cached folder makes a second process wait for
the first one's build instead of building too, and a folder is built under a temporary sibling name
(:func:`temporary_sibling`) and put in place only when complete (:func:`repscope.fileio.replace_directory`),
so a crash never leaves a half cache that looks whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from repscope.fileio import TEMP_PREFIX


@contextlib.contextmanager
def exclusive_lock(directory: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of ``directory`` (the file ``.<name>.lock`` beside it) while inside."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def temporary_sibling(directory: Path) -> Path:
    """A new empty folder beside ``directory`` to build into (removed by :func:`remove_leftovers`)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{directory.name}.", dir=directory.parent))


def remove_leftovers(directory: Path) -> None:
    """Temporary folders of builds of ``directory`` that crashed (call it under the lock only)."""
    for stale in directory.parent.glob(f"{TEMP_PREFIX}{directory.name}.*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


__all__ = ["exclusive_lock", "temporary_sibling", "remove_leftovers"]
