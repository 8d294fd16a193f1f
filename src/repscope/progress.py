"""Progress bars: rich on a terminal, silent in CI logs and pipes."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


def interactive() -> bool:
    return sys.stderr.isatty()


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None, enabled: bool | None = None) -> Iterator[Callable[[int, int | None], None]]:
    """Yield ``update(done, total=None)``; shows a bar only when stderr is a terminal."""
    if enabled is None:
        enabled = interactive()
    if not enabled:
        yield lambda done, new_total=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def update(done: int, new_total: int | None = None) -> None:
            if new_total is not None:
                progress.update(task, total=new_total)
            progress.update(task, completed=done)

        yield update
