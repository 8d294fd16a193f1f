"""Worker processes for the morphometry loops, stopped cleanly by Ctrl-C.

``concurrent.futures`` alone handles Ctrl-C badly: the terminal sends SIGINT to the whole process
group, each worker turns it into a ``KeyboardInterrupt`` that is sent back as the result of the
task it was running and then takes the next task, while the parent, leaving the ``with`` block,
waits for every queued task. Here the workers ignore SIGINT, and the parent, on any exception
(Ctrl-C included), cancels the tasks not started yet and waits only for the running ones (at most
one chunk per worker), whose results are kept: an interrupted build then resumes from them.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

Result = TypeVar("Result")


def pool_context() -> Any:
    # fork starts workers in milliseconds with the parent's imports; fall back where absent
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _ignore_interrupts() -> None:
    # Ctrl-C is the parent's to handle: it stops handing out work (see the module docstring)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ordered_map(function: Callable[[Any], Result], tasks: Sequence[Any], jobs: int) -> Iterator[Result]:
    """``function(task)`` for every task, in order, on ``min(jobs, len(tasks))`` processes.

    A ``jobs`` of 1 (or a single task) runs in this process. When the caller stops early or an
    exception (KeyboardInterrupt included) reaches it, pending tasks are cancelled.
    """
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield function(task)
        return
    executor = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=pool_context(),
                                   initializer=_ignore_interrupts)
    try:
        yield from executor.map(function, tasks)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
