"""Progress of long loops: one rich display per process on a terminal, plain lines elsewhere.

* On a terminal (stderr is a TTY) every :func:`progress_bar` is a task of **one** shared rich
  ``Progress`` display. A bar opened while another runs (our generation bar inside a
  classification bar, a training bar inside both) adds a line to the same display instead of
  starting a second live display, so nested bars never fight over the terminal.
* Elsewhere (batch jobs, SLURM, pipes, CI logs) each bar prints a plain line to stderr at most
  every ``every_seconds`` (default 5 s, ``REPSCOPE_PROGRESS_SECONDS``), e.g.
  ``measuring 5000 digits: 1200/5000 (24%), 3.1 s elapsed, ~10 s left``, and a final
  ``... done in 12.3 s`` line once it ran that long (short loops stay silent). A step that updates
  rarely, or never (one long call inside ``with progress_bar(...)``), still gets its line every
  ``every_seconds`` from a background timer (``fitting svm on 4000 digits: 10 s elapsed``), and one that
  never gave a count ends with ``... done in 12.3 s``, claiming no ``0 done``. A bar with another
  opened inside it (``3 factor classifiers`` around each training) adds no timer lines while lines keep
  coming from the inner one, which speaks for both; only after an interval and a half without any line
  does it speak itself.
* A loop stopped by Ctrl-C never ends on a count that reads as finished: its last line (on a terminal
  too, where the bar itself vanishes) is ``measuring 5000 digits: interrupted at 1200/5000 after 3.1 s``;
  one that raised an error after ``every_seconds`` or more ends with ``... stopped by an error at
  1200/5000 after 3.1 s`` (a mistake found at once stays the command's one error line).
* ``REPSCOPE_PROGRESS=bar|lines|off`` overrides the choice.

Two ways to report a loop::

    for digit in track(digits, f"measuring {len(digits)} digits"):  # total from len(), or total=
        ...

    with progress_bar("rendering 400 images", total=400) as update:  # any loop: update(done)
        for done, image in enumerate(render(), start=1):
            update(done)

A loop that continues earlier work (a resumed training, a sweep whose finished runs are skipped)
passes ``initial``, the steps done before this process: the count starts there, and the time left
uses only the rate of the steps done since (``elapsed * (total - done) / (done - initial)``), not the
earlier ones, which took no time here.

Where the pieces live: :mod:`repscope.progress_display` shows a bar (the one rich display of the
process, or the lines and their timer), :mod:`repscope.progress_text` words the lines,
:mod:`repscope.interrupts` keeps a Ctrl-C from being lost while a bar is open (one dropped in a finalizer
is raised again at the next update of any bar), and :class:`repscope.train.progress_callback.TrainingProgress`
reports a Lightning ``Trainer.fit`` through the same bars. Rich is loaded with the first bar on a terminal,
Lightning never by this module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from repscope.interrupts import interrupt_guard
from repscope.progress_display import DISPLAY, Bar, clock, default_every_seconds
from repscope.progress_text import format_seconds, progress_line, stopped_line

MODES = ("bar", "lines", "off")
# a command silent outside any bar says it is working after this long, then every interval
FIRST_COMMAND_LINE_SECONDS = 8.0

Update = Callable[..., None]
Item = TypeVar("Item")


def interactive() -> bool:
    """Whether stderr is a terminal (rich bars) rather than a file or pipe (progress lines)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


_silenced = 0  # quiet_progress blocks open: every bar and line stays silent


@contextlib.contextmanager
def command_progress(description: str | None = None) -> Iterator[None]:
    """Bound the silence of a whole command, not only of each bar, while it runs (the CLI's entry point).

    Each bar's timer and its end line also look at when the *command* last wrote a progress line: a
    bar whose command has been silent for ``every_seconds`` writes its line at once (a step of a
    second's work that ends a long silence says it finished), so that a run of short steps, each too
    short for a line of its own, cannot add up to a long silence. Outside a command each bar keeps
    only its own clock. With ``description``, work outside any bar (imports, loading data, a step that
    reports nothing) gets a line ``<description>: 12 s elapsed`` whenever the command has been silent
    for the interval (the first time: :data:`FIRST_COMMAND_LINE_SECONDS`, or twice a shorter interval)
    and no bar is on screen.

    Parameters
    ----------
    description : str, optional
        What the command is (``repscope zeroshot study``), for its lines outside any bar.

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager; the command's clock starts on entry and is put back on exit.
    """
    started = clock.now()
    previous, clock.command_last_line = clock.command_last_line, started
    stop = threading.Event()
    beat = None
    if description and progress_mode() != "off" and not _silenced:
        beat = threading.Thread(
            target=_command_beat, args=(description, started, stop), name="repscope-command", daemon=True
        )
        beat.start()
    try:
        yield
    finally:
        stop.set()
        if beat is not None:
            beat.join(timeout=1.0)
        clock.command_last_line = previous


def _command_beat(description: str, started: float, stop: threading.Event) -> None:
    """The line of a command silent outside any bar (see :func:`command_progress`)."""
    interval = default_every_seconds()
    if interval <= 0:
        return
    while True:
        # before the command's first line a little longer (8 s, or twice a short interval): a command that
        # fails at once after its imports stays one error line
        due = min(FIRST_COMMAND_LINE_SECONDS, 2 * interval) if clock.command_last_line == started else interval
        if stop.wait(max(0.05, due - clock.command_silent_for())):
            return
        if DISPLAY.active or clock.open_bars or clock.command_silent_for() < due:
            continue  # a bar is on screen or keeps its own lines, or a line was written meanwhile
        now = clock.now()
        try:
            sys.stderr.write(f"{description}: {format_seconds(now - started)} elapsed\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            return
        clock.command_last_line = now


@contextlib.contextmanager
def quiet_progress(quiet: bool = True) -> Iterator[None]:
    """Inside, with ``quiet`` true, every progress bar and line of this process stays silent
    (a library call asked for no progress, e.g. ``train_judges(progress=False)``)."""
    global _silenced
    _silenced += bool(quiet)
    try:
        yield
    finally:
        _silenced -= bool(quiet)


def progress_mode() -> str:
    """``bar``, ``lines`` or ``off``: ``off`` inside :func:`quiet_progress`, ``REPSCOPE_PROGRESS``
    when set, else ``bar`` on a terminal."""
    if _silenced:
        return "off"
    chosen = os.environ.get("REPSCOPE_PROGRESS", "").strip().lower()
    if chosen in MODES:
        return chosen
    return "bar" if interactive() else "lines"


@contextlib.contextmanager
def progress_bar(
    description: str,
    total: int | None = None,
    enabled: bool | None = None,
    every_seconds: float | None = None,
    initial: int = 0,
) -> Iterator[Update]:
    """Show the progress of a loop; yield ``update(done, total=None, description=None)``.

    Parameters
    ----------
    description
        What the loop does, with its size and model where it has them (``measuring 5000 digits``,
        ``training AttributeCNN shape (1 of 3)``); shown on the bar and at the start of each line.
    total
        Number of steps, when known (``update`` may set it later).
    enabled
        False shows nothing; None or True follow :func:`progress_mode` (``off`` shows nothing).
    every_seconds
        Seconds between progress lines when stderr is not a terminal (default
        :func:`default_every_seconds`).
    initial
        Steps done before this process (a resumed training, a sweep's finished runs): the count starts
        there, and the time left is estimated from the steps done since only.

    Yields
    ------
    callable
        ``update(done, total=None, description=None)``: ``done`` counts all steps, ``initial`` included.

    A bar opened inside another one joins the same display (a second line); nothing nests live
    displays, so any depth of nesting is safe. A block left by Ctrl-C ends with an ``interrupted at
    n/m`` line, one left by an error with ``stopped by an error at n/m`` (see the module docstring).
    """
    mode = "off" if enabled is False else progress_mode()
    seconds = default_every_seconds() if every_seconds is None else float(every_seconds)
    bar = Bar(str(description), None if total is None else int(total), mode, seconds, initial=int(initial))
    guarded = interrupt_guard.enter()
    error: BaseException | None = None
    completed = False
    counted = bar.mode == "lines"
    clock.open_bars += counted
    bar._depth = clock.open_bars
    try:
        bar.open()
        yield bar.update
        completed = True
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            bar.close(completed, error)
        finally:
            # only after the bar's end line: a command line in between would repeat what that line says
            clock.open_bars -= counted
            if guarded:
                interrupt_guard.exit(error)


def track(
    iterable: Iterable[Item],
    description: str,
    total: int | None = None,
    *,
    enabled: bool | None = None,
    every_seconds: float | None = None,
    initial: int = 0,
) -> Iterator[Item]:
    """Yield the items of ``iterable`` while a :func:`progress_bar` counts them: a loop reported in one line.

    ::

        for digit in track(digits, f"measuring {len(digits)} digits"):
            ...

    Parameters
    ----------
    iterable : iterable
        The items; when ``total`` is None and it has a ``len()``, the total is that plus ``initial``.
    description : str
        What the loop does (see :func:`progress_bar`).
    total : int, optional
        Number of items, ``initial`` included (default ``initial + len(iterable)`` when defined, else
        unknown: ``n done`` lines).
    enabled : bool, optional
        As :func:`progress_bar`.
    every_seconds : float, optional
        As :func:`progress_bar`.
    initial : int
        Items handled before this process (a resumed loop whose ``iterable`` holds only the rest): the
        count starts there, the time left uses this process's rate only.

    Yields
    ------
    object
        Each item of ``iterable``; the count goes up as the next one is asked for, so that an item is
        counted once the loop body is done with it.

    A Ctrl-C in the loop body ends the bar with its ``interrupted at n/m`` line; a loop left with
    ``break`` ends it silently.
    """
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
        else:
            total += int(initial)
    done = int(initial)
    bar = progress_bar(description, total=total, enabled=enabled, every_seconds=every_seconds, initial=done)
    with bar as update:
        for item in iterable:
            yield item
            done += 1
            update(done)


__all__ = [
    "Update",
    "command_progress",
    "default_every_seconds",
    "format_seconds",
    "interactive",
    "progress_bar",
    "progress_line",
    "progress_mode",
    "quiet_progress",
    "stopped_line",
    "track",
]
