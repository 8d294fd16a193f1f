"""Worker processes for loops over many tasks (the morphometry and build loops, the sweeps), stopped cleanly by Ctrl-C.

``concurrent.futures`` alone handles Ctrl-C badly: the terminal sends SIGINT to the whole process
group, each worker turns it into a ``KeyboardInterrupt`` that is sent back as the result of the
task it was running and then takes the next task, while the parent, leaving the ``with`` block,
waits for every queued task. Here the workers ignore SIGINT, and the parent, on Ctrl-C, cancels
the tasks not started yet and terminates the workers, so the command ends within a moment; on
any other exception it cancels the pending tasks and waits for the running ones. Results already
saved by the caller (the build's chunks) stay, so an interrupted build resumes from them.

Two ways to spread a loop: :func:`ordered_map` gives the results in the order of the tasks (the
morphometry and build loops); :func:`unordered_map` gives each task with its result as it finishes, on
workers started as asked (the sweeps spawn theirs) with a setup in each, and can turn a task that failed
in its worker (it raised, or the worker died) into a result, so the other tasks go on (a sweep's failed point).

A parent ended without a word (SIGTERM or SIGKILL from a job scheduler, a closed ssh session, a
timeout) cannot stop its pool; the workers end with it instead: each asks the kernel for SIGTERM
when its parent dies (:func:`repscope.resources.die_with_parent`, Linux), exits at once when the
parent is already gone as it starts, and after each task when a library handled the SIGTERM.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from repscope.resources import exit_if_orphaned, start_worker

Result = TypeVar("Result")


def pool_context() -> Any:
    """The multiprocessing context the worker pools start their processes with.

    Returns
    -------
    multiprocessing.context.BaseContext
        The ``"fork"`` context where the platform offers it, else ``"spawn"``.
    """
    # fork starts workers in milliseconds with the parent's imports; fall back where absent
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def stop_now(executor: ProcessPoolExecutor) -> None:
    """Stop a process pool at once, on Ctrl-C: cancel the tasks not started and end the workers.

    ``executor.shutdown(wait=False)`` alone leaves the running tasks to finish; here the workers
    get SIGTERM, then SIGKILL if they outlive it (a handler inherited from the parent, or a lock
    held across a fork), so the command ends within a moment. A running task's result is lost.

    Parameters
    ----------
    executor : concurrent.futures.ProcessPoolExecutor
        The pool; it takes no more work afterwards.
    """
    # the processes and the manager thread are read first: shutdown forgets them
    workers = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(timeout=2)
    for process in workers:
        if process.is_alive():
            process.kill()
            process.join()
    # the manager thread reaps the dead workers as well; until it is done, a worker it reaped can
    # still look alive to this thread (multiprocessing.active_children), so wait for it
    if manager is not None:
        manager.join(timeout=5)


def _start_pool_worker(parent_pid: int, setup: Callable[..., None] | None, setup_args: tuple) -> None:
    # Ctrl-C is the parent's to handle: it stops handing out work (see the module docstring)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a SIGTERM or SIGKILL of the parent ends the worker too (it cannot stop the pool itself)
    start_worker(parent_pid)
    if setup is not None:
        setup(*setup_args)


def _call_in_worker(function: Callable[[Any], Result], task: Any) -> Result:
    try:
        return function(task)
    finally:
        exit_if_orphaned()  # the parent died while the task ran and the task outlived the SIGTERM


@contextlib.contextmanager
def _worker_processes(
    workers: int, start_method: str | None, setup: Callable[..., None] | None, setup_args: tuple
) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes that ignore SIGINT and end with this one; Ctrl-C in the block stops it."""
    context = pool_context() if start_method is None else multiprocessing.get_context(start_method)
    executor = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_start_pool_worker,
        initargs=(os.getpid(), setup, setup_args),
    )
    try:
        yield executor
    except KeyboardInterrupt:
        # stop at once: the running tasks' results are lost, never half-written (their writes
        # are atomic), and the results the caller saved stay for a resume
        stop_now(executor)
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def ordered_map(function: Callable[[Any], Result], tasks: Sequence[Any], jobs: int) -> Iterator[Iterator[Result]]:
    """A context giving ``function(task)`` for every task, in order, computed on
    ``min(jobs, len(tasks))`` processes (in this process for ``jobs`` 1 or a single task)::

        with ordered_map(work, tasks, jobs) as results:
            for task, result in zip(tasks, results):
                ...

    A context rather than a generator so that a Ctrl-C raised anywhere in the ``with`` body (in a
    progress update as well as while waiting for a result) reaches the pool: the pending tasks are
    cancelled and the workers terminated. On leaving the context otherwise, pending tasks are
    cancelled and running ones awaited. The workers end with this process, also when it is killed
    (see the module docstring); create the pool from the main thread, whose end the kernel's
    parent-death signal follows.

    Parameters
    ----------
    function : callable
        Called as ``function(task)``; with more than one process it and the tasks must be picklable.
    tasks : sequence
        The tasks, in the order the results come.
    jobs : int
        Number of worker processes at most; ``<= 1`` computes everything in this process.

    Yields
    ------
    iterator
        ``function(task)`` for each task, in the order of ``tasks``, computed lazily in this process or
        as the workers finish.
    """
    if jobs <= 1 or len(tasks) <= 1:
        yield (function(task) for task in tasks)
        return
    with _worker_processes(min(jobs, len(tasks)), None, None, ()) as executor:
        yield executor.map(functools.partial(_call_in_worker, function), tasks)


@contextlib.contextmanager
def unordered_map(
    function: Callable[[Any], Result],
    tasks: Sequence[Any],
    jobs: int,
    *,
    start_method: str | None = None,
    setup: Callable[..., None] | None = None,
    setup_args: tuple = (),
    on_worker_failure: Callable[[BaseException], Result] | None = None,
) -> Iterator[Iterator[tuple[Any, Result]]]:
    """A context giving ``(task, function(task))`` for every task as the tasks finish, computed on
    ``min(jobs, len(tasks))`` processes (in this process, in order, for ``jobs`` 1 or a single task)::

        with unordered_map(run, points, jobs, on_worker_failure=failed) as finished:
            for point, outcome in finished:
                record(point, outcome)  # as each one ends: the caller keeps its own record

    Ctrl-C anywhere in the ``with`` body, the end of the workers with this process and the rest are as
    :func:`ordered_map`. Each worker process runs task after task.

    Parameters
    ----------
    function : callable
        Called as ``function(task)``; with more than one process it, the tasks and ``setup`` must be
        picklable (``start_method="spawn"`` imports them by name in a new interpreter).
    tasks : sequence
        The tasks.
    jobs : int
        Number of worker processes at most; ``<= 1`` computes everything in this process.
    start_method : str, optional
        How the workers start (``"spawn"``: a fresh interpreter, for work whose threads, as torch's,
        must not be forked); default :func:`pool_context`.
    setup : callable, optional
        Called as ``setup(*setup_args)`` once in each worker process as it starts (its environment,
        its thread counts); not called in this process.
    setup_args : tuple
        The arguments of ``setup``.
    on_worker_failure : callable, optional
        Turns the exception of a task that failed in a worker process (it raised, called
        ``sys.exit``, or the process died) into that task's result, so that the other tasks go on;
        None lets the exception propagate. In this process a task's exception always propagates.

    Yields
    ------
    iterator of (task, result)
        Each task with its result, in the order they finish (tasks finishing together in the order of
        ``tasks``).
    """
    if jobs <= 1 or len(tasks) <= 1:
        yield ((task, function(task)) for task in tasks)
        return
    with _worker_processes(min(jobs, len(tasks)), start_method, setup, setup_args) as executor:
        futures = {executor.submit(_call_in_worker, function, task): index for index, task in enumerate(tasks)}
        yield _as_finished(futures, tasks, on_worker_failure)


def _as_finished(
    futures: dict[Future, int], tasks: Sequence[Any], on_worker_failure: Callable[[BaseException], Any] | None
) -> Iterator[tuple[Any, Any]]:
    """``(task, result)`` as the futures end; ``futures`` maps each to the index of its task."""
    waiting = set(futures)
    while waiting:
        ended, waiting = wait(waiting, return_when=FIRST_COMPLETED)
        for future in sorted(ended, key=futures.__getitem__):
            try:
                result = future.result()
            except (Exception, SystemExit) as exc:  # a worker that died (BrokenProcessPool), sys.exit
                if on_worker_failure is None:
                    raise
                result = on_worker_failure(exc)
            yield tasks[futures[future]], result


__all__ = ["ordered_map", "pool_context", "stop_now", "unordered_map"]
