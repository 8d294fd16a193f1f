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

:func:`TrainingProgress` is a Lightning callback that reports a ``Trainer.fit`` through the same
display or lines (create the ``Trainer`` with ``enable_progress_bar=False``), and turns Lightning's
own handling of Ctrl-C (a message and ``sys.exit(1)``) back into a ``KeyboardInterrupt``, so the
command ends with ``repscope: interrupted`` and exit status 130.

Ctrl-C is never lost: Python drops an exception raised inside a finalizer (``__del__``, a weakref
callback, a generator closed by the garbage collector), printing ``Exception ignored in ...``; a SIGINT
that lands there raised its ``KeyboardInterrupt`` into nothing and the work ran on. While a bar is open
the SIGINT handler is wrapped (main thread and process only) to note each interrupt; an interrupt noted
whose ``KeyboardInterrupt`` has not come out through a bar is raised again at the next update of any
bar (every training batch, every step of a long loop), so the command still stops.

Lightning is imported only when ``TrainingProgress`` is first used (a module ``__getattr__``), so the
modules that only draw bars do not load it.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any, TextIO, TypeVar

MODES = ("bar", "lines", "off")
DEFAULT_EVERY_SECONDS = 5.0
# a command silent outside any bar says it is working after this long, then every interval
FIRST_COMMAND_LINE_SECONDS = 8.0
# a bar with a nested bar open writes only after this many intervals without any bar's line
NESTED_GRACE = 1.5

Update = Callable[..., None]
Item = TypeVar("Item")


def interactive() -> bool:
    """Whether stderr is a terminal (rich bars) rather than a file or pipe (progress lines)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


_silenced = 0
_open_bars = 0  # bars open in this process (their own timers speak for the command)
_any_bar_last_line: float | None = None  # when a bar of this process last wrote a line (None: never)

# while a command runs (command_progress), when it last wrote a progress line; None outside a command
_command_last_line: float | None = None


def _restart_command_clock() -> None:
    global _command_last_line
    if _command_last_line is not None:
        _command_last_line = time.monotonic()


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
    global _command_last_line
    started = time.monotonic()
    previous, _command_last_line = _command_last_line, started
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
        _command_last_line = previous


def _command_beat(description: str, started: float, stop: threading.Event) -> None:
    """The line of a command silent outside any bar (see :func:`command_progress`)."""
    global _command_last_line
    interval = default_every_seconds()
    if interval <= 0:
        return
    while True:
        # before the command's first line a little longer (8 s, or twice a short interval): a command that
        # fails at once after its imports stays one error line
        due = min(FIRST_COMMAND_LINE_SECONDS, 2 * interval) if _command_last_line == started else interval
        if stop.wait(max(0.05, due - _command_silent_for())):
            return
        if _DISPLAY.active or _open_bars or _command_silent_for() < due:
            continue  # a bar is on screen or keeps its own lines, or a line was written meanwhile
        now = time.monotonic()
        try:
            sys.stderr.write(f"{description}: {format_seconds(now - started)} elapsed\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            return
        _command_last_line = now


def _command_silent_for(now: float | None = None) -> float:
    """Seconds since the running command last wrote a progress line, at ``now`` (default: the clock, read
    only inside a command); 0 outside a command."""
    last = _command_last_line
    if last is None:
        return 0.0
    return (time.monotonic() if now is None else now) - last


@contextlib.contextmanager
def quiet_progress(quiet: bool = True) -> Iterator[None]:
    """Inside, with ``quiet`` true, every progress bar and line of this process stays silent
    (a library call asked for no progress, e.g. ``train_classifiers(progress=False)``)."""
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


def default_every_seconds() -> float:
    """Seconds between two progress lines: ``REPSCOPE_PROGRESS_SECONDS`` or 5."""
    try:
        value = float(os.environ.get("REPSCOPE_PROGRESS_SECONDS", DEFAULT_EVERY_SECONDS))
    except ValueError:
        return DEFAULT_EVERY_SECONDS
    return value if value >= 0 and math.isfinite(value) else DEFAULT_EVERY_SECONDS


def format_seconds(seconds: float) -> str:
    """``3.1 s``, ``42 s``, ``2 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(int(round(seconds)), 60)
        return f"{minutes} min {rest:02d} s"
    hours, rest = divmod(int(round(seconds)) // 60, 60)
    return f"{hours} h {rest:02d} min"


def progress_line(
    description: str, done: int, total: int | None, elapsed: float, final: bool = False, initial: int = 0
) -> str:
    """The text of one progress line (see the module docstring for the format).

    Parameters
    ----------
    description : str
        What the loop does.
    done : int
        Steps done, counting the ``initial`` ones.
    total : int or None
        Number of steps, when known.
    elapsed : float
        Seconds since the loop started in this process.
    final : bool
        The closing ``... done in`` line.
    initial : int
        Steps done before this process (a resumed loop): the time left is ``elapsed * (total - done) /
        (done - initial)``, the rate of this process only; none is given before a step is done here.

    Returns
    -------
    str
        The line, without a newline.
    """
    if final:
        counted = f"{done}/{total}" if total else f"{done}"
        return f"{description}: {counted} done in {format_seconds(elapsed)}"
    if total:
        fraction = min(1.0, done / total)
        text = f"{description}: {done}/{total} ({100 * fraction:.0f}%), {format_seconds(elapsed)} elapsed"
        if initial < done < total:
            text += f", ~{format_seconds(elapsed * (total - done) / (done - initial))} left"
        elif done >= total:  # every step counted, the block still open: the work after the count
            text += ", finishing"
        return text
    return f"{description}: {done} done, {format_seconds(elapsed)} elapsed"


def stopped_line(description: str, done: int, total: int | None, elapsed: float, how: str = "interrupted") -> str:
    """The last line of a loop that did not finish: ``<description>: interrupted at 20/138 after 3.1 s``.

    Parameters
    ----------
    description : str
        What the loop does.
    done : int
        Steps done when it stopped.
    total : int or None
        Number of steps, when known.
    elapsed : float
        Seconds it ran in this process.
    how : str
        What stopped it (``interrupted``, ``stopped by an error``).

    Returns
    -------
    str
        The line, without a newline.
    """
    counted = f"{done}/{total}" if total else f"{done}"
    return f"{description}: {how} at {counted} after {format_seconds(elapsed)}"


# --------------------------------------------------------------------------------------------
# the shared rich display


# what the bar's other columns need: a bar of ~15 cells, "12345/12345", two times, the gaps
NUMBERS_WIDTH = 42


def _make_console() -> Any:
    from rich.console import Console  # noqa: PLC0415 -- rich loads with the first bar, not with every command

    return Console(stderr=True)


class _SharedDisplay:
    """One rich ``Progress`` for the whole process, started by the first bar, stopped by the last."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._progress: Any = None
        self._users = 0

    @property
    def active(self) -> bool:
        return self._progress is not None

    def acquire(self) -> Any:
        with self._lock:
            if self._progress is None:
                from rich.progress import (  # noqa: PLC0415 -- with the first bar
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
                from rich.table import Column  # noqa: PLC0415
                from rich.text import Text  # noqa: PLC0415

                console = _make_console()
                # on a narrow terminal rich would squash the counts and times to "0:0…": the
                # description gives way instead (cut with an ellipsis), the numbers stay whole
                description = Column(
                    no_wrap=True, overflow="ellipsis", max_width=max(12, console.width - NUMBERS_WIDTH)
                )

                class RunningTimeColumn(TimeElapsedColumn):
                    """The elapsed time, still running at n of n while the block is open: rich stops
                    it there, and the work after the last count (writing a build's files) froze the
                    screen for 18 s."""

                    def render(self, task: Any) -> Any:
                        if task.elapsed is None:
                            return super().render(task)
                        return Text(str(timedelta(seconds=int(task.elapsed))), style="progress.elapsed")

                progress = Progress(
                    TextColumn("{task.description}", table_column=description),
                    BarColumn(bar_width=None),
                    MofNCompleteColumn(),
                    RunningTimeColumn(),
                    TimeRemainingColumn(),
                    console=console,
                    transient=True,
                )
                progress.start()
                self._progress = progress
            self._users += 1
            return self._progress

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users > 0 or self._progress is None:
                return
            progress, self._progress, self._users = self._progress, None, 0
        _restart_command_clock()  # the bars were on screen until now
        try:
            progress.stop()
        except Exception:  # a display torn down by an interrupt must not hide the interrupt
            if sys.exc_info()[0] is None:
                raise


_DISPLAY = _SharedDisplay()


class _InterruptGuard:
    """Notes SIGINTs while bars are open, so an interrupt dropped in a finalizer is raised again."""

    def __init__(self) -> None:
        self.depth = 0
        self.pending = False
        self.count = 0  # SIGINTs noted so far (never reset): a bar compares it with its value at the start
        self._previous: Any = None
        self._pid: int | None = None

    def enter(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        if self.depth == 0:
            current = signal.getsignal(signal.SIGINT)
            if not callable(current):  # SIG_IGN / SIG_DFL / not set from Python: nothing raises
                return False
            self._previous, self._pid, self.pending = current, os.getpid(), False
            signal.signal(signal.SIGINT, self._handle)
        self.depth += 1
        return True

    def exit(self, error: BaseException | None) -> None:
        if isinstance(error, KeyboardInterrupt):
            self.pending = False  # it came out: nothing was lost
        self.depth -= 1
        if self.depth == 0:
            previous, self._previous, self.pending = self._previous, None, False
            with contextlib.suppress(ValueError, TypeError):
                if signal.getsignal(signal.SIGINT) == self._handle:
                    signal.signal(signal.SIGINT, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if os.getpid() == self._pid and self._previous is not None:
            self.pending = True
            self.count += 1
        previous = self._previous if self._previous is not None else signal.default_int_handler
        previous(signum, frame)

    def check(self) -> None:
        if self.pending and os.getpid() == self._pid:
            self.pending = False
            raise KeyboardInterrupt


_GUARD = _InterruptGuard()


class _Bar:
    """One bar: a task of the shared display, or a series of progress lines, or nothing."""

    def __init__(
        self,
        description: str,
        total: int | None,
        mode: str,
        every_seconds: float,
        stream: TextIO | None = None,
        initial: int = 0,
    ) -> None:
        self.description = description
        self.total = total
        self.mode = mode
        self.every_seconds = every_seconds
        self.stream = stream
        self.initial = initial
        self.done = initial
        self.started = time.monotonic()
        self._interrupts = _GUARD.count
        self._updated = False  # whether the loop ever gave a count (else no "0 done" is claimed)
        self._lock = threading.Lock()  # the update and the heartbeat write lines one at a time
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._last_line = self.started
        self._lines = 0
        self._depth = 0  # open line bars, this one included, when it opened: a later one is nested in it
        self._task: Any = None
        self._progress: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # a copy (Ray Tune pickles its callbacks, and so the update function a sweep's callback holds)
        # draws nothing: no lock, timer thread or display travels
        state = dict(self.__dict__)
        state.update(mode="off", _lock=None, _stop=None, _heartbeat=None, _progress=None, _task=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._stop.set()

    # -- lifetime ---------------------------------------------------------------------------

    def open(self) -> None:
        if self.mode == "bar":
            self._progress = _DISPLAY.acquire()
            # the steps done before start the bar: rich's speed (and time left) counts only later steps
            self._task = self._progress.add_task(self.description, total=self.total, completed=self.initial)
        elif self.mode == "lines":
            # a step that updates rarely (or never: one long call) still gets a line every interval (a bar
            # asking for a line at every update, every_seconds 0, gets them at the default interval)
            interval = self.every_seconds if self.every_seconds > 0 else default_every_seconds()
            if interval > 0:
                self._heartbeat = threading.Thread(
                    target=self._beat, args=(interval,), name="repscope-progress", daemon=True
                )
                self._heartbeat.start()

    def _beat(self, interval: float) -> None:
        # the first line is due an interval after the bar opened, or sooner in a command already silent
        wait = interval - _command_silent_for()
        while not self._stop.wait(max(0.05, wait)):
            with self._lock:
                if self._stop.is_set():
                    return
                now = time.monotonic()
                since = now - self._last_line
                # the bar's own interval, or the whole command's silence (a bar opened late in it)
                quiet, due = max(since, _command_silent_for(now)), interval
                if _open_bars > self._depth:
                    # a bar nested in this one is open: while lines come (its own or any other bar's) they
                    # speak for this one too, which repeating its unchanged count between them only doubles.
                    # Half an interval's grace: the nested bar writes at its next update, a batch late.
                    last_any = _any_bar_last_line if _any_bar_last_line is not None else self.started
                    quiet, due = min(quiet, now - last_any), NESTED_GRACE * interval
                if quiet >= due:
                    self._last_line = now
                    self._write(self._line(now), now)
                    quiet = 0.0
                wait = due - quiet

    def _line(self, now: float) -> str:
        if not self._updated and not self.total:
            return f"{self.description}: {format_seconds(now - self.started)} elapsed"  # no count given
        return progress_line(self.description, self.done, self.total, now - self.started, initial=self.initial)

    def _ending(self, completed: bool, error: BaseException | None) -> str | None:
        """``interrupted``, ``stopped by an error`` or None (finished, or left early on purpose)."""
        if completed:
            return None
        # a loop over track() sees GeneratorExit when a Ctrl-C in the caller's loop body closes it
        if isinstance(error, KeyboardInterrupt) or _GUARD.count != self._interrupts:
            return "interrupted"
        if isinstance(error, Exception):
            return "stopped by an error"
        return None  # GeneratorExit (a loop left with break), SystemExit

    def close(self, completed: bool, error: BaseException | None = None) -> None:
        self._stop.set()
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout=1.0)
        ending = self._ending(completed, error)
        elapsed = time.monotonic() - self.started
        # a loop shown long enough to be seen; an interrupted one always says where it stopped, a failed one
        # only then (a mistake found at once stays the command's one error line)
        # or the command has been silent that long: a short step ending a long silence says so
        shown = (
            bool(self._lines)
            or elapsed >= self.every_seconds
            or (self.every_seconds > 0 and _command_silent_for() >= self.every_seconds)
        )
        said = ending == "interrupted" or (ending is not None and shown)
        if self.mode == "bar" and self._progress is not None:
            progress, self._progress = self._progress, None
            try:
                progress.remove_task(self._task)
            except KeyError:
                pass
            finally:
                try:
                    if said and ending is not None:  # the bar vanishes (transient): a line says where it stopped
                        with contextlib.suppress(Exception):
                            progress.console.print(
                                stopped_line(self.description, self.done, self.total, elapsed, ending),
                                markup=False,
                                highlight=False,
                                soft_wrap=True,
                            )
                finally:
                    _DISPLAY.release()
        elif self.mode == "lines":
            if completed and shown and not self._updated:  # a loop that gave no count: its time only
                self._write(f"{self.description}: done in {format_seconds(elapsed)}", self.started + elapsed)
            elif completed and shown:
                self._write(
                    progress_line(self.description, self.done, self.total, elapsed, final=True), self.started + elapsed
                )
            elif said and ending is not None:
                self._write(
                    stopped_line(self.description, self.done, self.total, elapsed, ending), self.started + elapsed
                )

    # -- updates ----------------------------------------------------------------------------

    def update(self, done: int, total: int | None = None, description: str | None = None) -> None:
        _GUARD.check()  # a Ctrl-C dropped in a finalizer since the last update stops the work here
        if total is not None:
            self.total = int(total)
        if description is not None:
            self.description = str(description)
        self.done = int(done)
        self._updated = True
        if self.mode == "bar" and self._progress is not None:
            fields: dict[str, Any] = {"completed": self.done}
            if total is not None:
                fields["total"] = self.total
            if description is not None:
                fields["description"] = self.description
            self._progress.update(self._task, **fields)
        elif self.mode == "lines":
            with self._lock:
                now = time.monotonic()
                if now - self._last_line >= self.every_seconds and not (self.total and self.done >= self.total):
                    self._last_line = now
                    self._write(self._line(now), now)

    def _write(self, text: str, now: float) -> None:
        """Write one line, ``now`` being the clock reading it reports (not read again: one reading a line)."""
        global _command_last_line, _any_bar_last_line
        stream = self.stream or sys.stderr
        self._lines += 1
        _any_bar_last_line = now
        if _command_last_line is not None:
            _command_last_line = now
        try:
            # one write of the line and its newline: print() writes them apart, and a Ctrl-C between the
            # two left the line open, so that "repscope: interrupted" was glued to its end
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed pipe must not end the computation
            pass


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
    bar = _Bar(str(description), None if total is None else int(total), mode, seconds, initial=int(initial))
    global _open_bars
    guarded = _GUARD.enter()
    error: BaseException | None = None
    completed = False
    counted = bar.mode == "lines"
    _open_bars += counted
    bar._depth = _open_bars
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
            _open_bars -= counted
            if guarded:
                _GUARD.exit(error)


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


# --------------------------------------------------------------------------------------------
# Lightning


def _training_progress_class() -> type:
    from lightning.pytorch.callbacks import Callback  # noqa: PLC0415 -- Lightning only when TrainingProgress is used

    class TrainingProgress(Callback):
        """Report a ``Trainer.fit`` as one bar (terminal) or progress lines (elsewhere).

        The bar reads ``{description}: epoch e of E``, counting batches over all epochs; lines
        add the elapsed and remaining time. Pass it to a ``Trainer`` created with
        ``enable_progress_bar=False``. A resumed fit starts the count at the batches done before
        (``initial`` of :func:`progress_bar`), so its time left follows this process's rate only.

        Ctrl-C: Lightning catches ``KeyboardInterrupt`` during ``fit``, logs a message, sets SIGINT
        to be ignored and calls ``sys.exit(1)``. This callback's ``on_exception`` restores the
        default SIGINT handler and raises ``KeyboardInterrupt`` again, so that the caller (the CLI)
        sees an interrupt and exits with status 130.
        """

        def __init__(self, description: str, every_seconds: float | None = None, enabled: bool | None = None) -> None:
            super().__init__()
            self.description = str(description)
            self.every_seconds = every_seconds
            self.enabled = enabled
            self._stack: contextlib.ExitStack | None = None
            self._update: Update | None = None
            self._per_epoch: int | None = None
            self._epochs: int | None = None

        # -- helpers ------------------------------------------------------------------------

        def _label(self, epoch: int) -> str:
            if self._epochs:
                return f"{self.description}: epoch {epoch + 1} of {self._epochs}"
            return f"{self.description}: epoch {epoch + 1}"

        def _close(self, error: BaseException | None = None) -> None:
            stack, self._stack, self._update = self._stack, None, None
            if stack is not None:
                if error is None:
                    stack.close()
                else:  # the bar ends as stopped (no "done" line), and knows a Ctrl-C came out
                    stack.__exit__(type(error), error, error.__traceback__)

        # -- hooks --------------------------------------------------------------------------

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self._close()
            batches = trainer.num_training_batches
            self._per_epoch = (
                int(batches)
                if isinstance(batches, int) or (isinstance(batches, float) and math.isfinite(batches))
                else None
            )
            epochs = trainer.max_epochs
            self._epochs = int(epochs) if epochs is not None and epochs > 0 else None
            total = self._per_epoch * self._epochs if self._per_epoch and self._epochs else None
            max_steps = getattr(trainer, "max_steps", -1)
            if max_steps is not None and max_steps > 0:
                total = min(total, max_steps) if total else max_steps
            # a resumed fit starts with the epochs (batches) of the checkpoint done: not this process's work
            initial = self._done(trainer, trainer.current_epoch, -1)
            self._stack = contextlib.ExitStack()
            self._update = self._stack.enter_context(
                progress_bar(
                    self._label(trainer.current_epoch),
                    total=total,
                    enabled=self.enabled,
                    every_seconds=self.every_seconds,
                    initial=initial,
                )
            )
            self._update(initial)

        def _done(self, trainer: Any, epoch: int, batch_idx: int) -> int:
            if self._per_epoch:
                return epoch * self._per_epoch + batch_idx + 1
            return int(trainer.global_step)

        def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
            if self._update is not None:
                self._update(
                    self._done(trainer, trainer.current_epoch, -1), description=self._label(trainer.current_epoch)
                )

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            if self._update is not None:
                self._update(self._done(trainer, trainer.current_epoch, batch_idx))

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self._close()

        def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
            self._close()

        def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
            self._close(exception)
            if isinstance(exception, KeyboardInterrupt):
                with contextlib.suppress(ValueError):  # not the main thread: nothing to restore
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                raise KeyboardInterrupt from None

    TrainingProgress.__module__ = __name__
    return TrainingProgress


_lazy: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    # ``from repscope.progress import TrainingProgress`` imports Lightning only then
    if name == "TrainingProgress":
        if name not in _lazy:
            _lazy[name] = _training_progress_class()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [  # noqa: F822 -- TrainingProgress is made on first access (module __getattr__)
    "TrainingProgress",
    "quiet_progress",
    "command_progress",
    "default_every_seconds",
    "format_seconds",
    "interactive",
    "progress_bar",
    "progress_line",
    "progress_mode",
    "stopped_line",
    "track",
]
