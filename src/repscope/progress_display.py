"""How a bar is shown: a task of the one rich display of the process (on a terminal), or a series of
progress lines (elsewhere), each bar with its own timer.

:class:`Bar` is one bar of :func:`repscope.progress.progress_bar`; :data:`DISPLAY` the rich ``Progress``
that every bar of the process joins, started by the first bar and stopped by the last; :data:`clock`
when this process's progress last spoke (any bar's line, the command's line) and how many line bars
are open, which bounds the silence of a whole command (:func:`repscope.progress.command_progress`) and
keeps a bar with another nested in it from repeating its unchanged count.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from datetime import timedelta
from typing import Any, TextIO

from repscope.interrupts import interrupt_guard
from repscope.progress_text import format_seconds, progress_line, stopped_line

DEFAULT_EVERY_SECONDS = 5.0
# a bar with a nested bar open writes only after this many intervals without any bar's line
NESTED_GRACE = 1.5


class ProgressClock:
    """When the progress of this process last spoke, and how many line bars are open.

    Attributes
    ----------
    open_bars : int
        Bars open in this process that write lines (their own timers speak for the command).
    any_bar_last_line : float or None
        When a bar of this process last wrote a line (None: never).
    command_last_line : float or None
        While a command runs (:func:`repscope.progress.command_progress`), when it last wrote a progress
        line; None outside a command.
    """

    def __init__(self) -> None:
        self.open_bars = 0
        self.any_bar_last_line: float | None = None
        self.command_last_line: float | None = None

    @staticmethod
    def now() -> float:
        """The clock every bar and command line reads (``time.monotonic``)."""
        return time.monotonic()

    def command_silent_for(self, now: float | None = None) -> float:
        """Seconds since the running command last wrote a progress line, at ``now`` (default: the clock, read
        only inside a command); 0 outside a command."""
        last = self.command_last_line
        if last is None:
            return 0.0
        return (time.monotonic() if now is None else now) - last

    def restart_command_clock(self) -> None:
        """Count the command's silence from now (the bars were on screen until now)."""
        if self.command_last_line is not None:
            self.command_last_line = time.monotonic()


clock = ProgressClock()


def default_every_seconds() -> float:
    """Seconds between two progress lines: ``REPSCOPE_PROGRESS_SECONDS`` or 5."""
    try:
        value = float(os.environ.get("REPSCOPE_PROGRESS_SECONDS", DEFAULT_EVERY_SECONDS))
    except ValueError:
        return DEFAULT_EVERY_SECONDS
    return value if value >= 0 and math.isfinite(value) else DEFAULT_EVERY_SECONDS


# --------------------------------------------------------------------------------------------
# the shared rich display


# what the bar's other columns need: a bar of ~15 cells, "12345/12345", two times, the gaps
NUMBERS_WIDTH = 42


def _make_console() -> Any:
    from rich.console import Console  # noqa: PLC0415 -- rich loads with the first bar, not with every command

    return Console(stderr=True)


class SharedDisplay:
    """One rich ``Progress`` for the whole process, started by the first bar, stopped by the last."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._progress: Any = None
        self._users = 0

    @property
    def active(self) -> bool:
        """Whether the display is on screen (a bar in ``bar`` mode is open)."""
        return self._progress is not None

    def acquire(self) -> Any:
        """Join the display, starting it for the first bar; return rich's ``Progress`` to add a task to."""
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
        """Leave the display; the last bar to leave stops it."""
        with self._lock:
            self._users -= 1
            if self._users > 0 or self._progress is None:
                return
            progress, self._progress, self._users = self._progress, None, 0
        clock.restart_command_clock()  # the bars were on screen until now
        try:
            progress.stop()
        except Exception:  # a display torn down by an interrupt must not hide the interrupt
            if sys.exc_info()[0] is None:
                raise


DISPLAY = SharedDisplay()


class Bar:
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
        self._interrupts = interrupt_guard.count
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
        """Show the bar: a task of the shared display, or the timer of its lines."""
        if self.mode == "bar":
            self._progress = DISPLAY.acquire()
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
        wait = interval - clock.command_silent_for()
        while not self._stop.wait(max(0.05, wait)):
            with self._lock:
                if self._stop.is_set():
                    return
                now = time.monotonic()
                since = now - self._last_line
                # the bar's own interval, or the whole command's silence (a bar opened late in it)
                quiet, due = max(since, clock.command_silent_for(now)), interval
                if clock.open_bars > self._depth:
                    # a bar nested in this one is open: while lines come (its own or any other bar's) they
                    # speak for this one too, which repeating its unchanged count between them only doubles.
                    # Half an interval's grace: the nested bar writes at its next update, a batch late.
                    last_any = clock.any_bar_last_line if clock.any_bar_last_line is not None else self.started
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
        if isinstance(error, KeyboardInterrupt) or interrupt_guard.count != self._interrupts:
            return "interrupted"
        if isinstance(error, Exception):
            return "stopped by an error"
        return None  # GeneratorExit (a loop left with break), SystemExit

    def close(self, completed: bool, error: BaseException | None = None) -> None:
        """End the bar: its ``done`` line, or where it stopped (``interrupted``, ``stopped by an error``).

        Parameters
        ----------
        completed : bool
            Whether the block ran to its end.
        error : BaseException, optional
            What left the block otherwise.
        """
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
            or (self.every_seconds > 0 and clock.command_silent_for() >= self.every_seconds)
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
                    DISPLAY.release()
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
        """Set the count (and the total or description); a line when the interval has passed.

        Parameters
        ----------
        done : int
            Steps done, the ``initial`` ones included.
        total : int, optional
            A new number of steps.
        description : str, optional
            A new description.
        """
        interrupt_guard.check()  # a Ctrl-C dropped in a finalizer since the last update stops the work here
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
        stream = self.stream or sys.stderr
        self._lines += 1
        clock.any_bar_last_line = now
        if clock.command_last_line is not None:
            clock.command_last_line = now
        try:
            # one write of the line and its newline: print() writes them apart, and a Ctrl-C between the
            # two left the line open, so that "repscope: interrupted" was glued to its end
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed pipe must not end the computation
            pass


__all__ = [
    "DEFAULT_EVERY_SECONDS",
    "DISPLAY",
    "NESTED_GRACE",
    "Bar",
    "ProgressClock",
    "SharedDisplay",
    "clock",
    "default_every_seconds",
]
