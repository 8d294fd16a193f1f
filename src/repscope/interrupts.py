"""Ctrl-C is never lost while a progress bar is open.

Python drops an exception raised inside a finalizer (``__del__``, a weakref callback, a generator closed
by the garbage collector), printing ``Exception ignored in ...``; a SIGINT that lands there raised its
``KeyboardInterrupt`` into nothing and the work ran on. While a bar is open the SIGINT handler is
wrapped (main thread and process only) to note each interrupt; an interrupt noted whose
``KeyboardInterrupt`` has not come out through a bar is raised again at the next update of any bar
(every training batch, every step of a long loop), so the command still stops.

:data:`interrupt_guard` is the one guard of the process; :func:`repscope.progress.progress_bar` enters
and leaves it, and each update of a bar calls its :meth:`~InterruptGuard.check`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any


class InterruptGuard:
    """Notes SIGINTs while bars are open, so an interrupt dropped in a finalizer is raised again.

    Attributes
    ----------
    depth : int
        Bars open inside the guard (it wraps the handler while one is).
    pending : bool
        A SIGINT was noted whose ``KeyboardInterrupt`` has not come out through a bar yet.
    count : int
        SIGINTs noted so far, never reset: a bar compares it with its value at the start to tell
        whether it was interrupted.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.pending = False
        self.count = 0
        self._previous: Any = None
        self._pid: int | None = None

    def enter(self) -> bool:
        """Start watching SIGINT for one more bar; whether this call watches (main thread, a Python handler).

        Returns
        -------
        bool
            True when the caller must call :meth:`exit` at the end of its bar.
        """
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
        """End one bar's watch; ``error`` is what ended the bar (a ``KeyboardInterrupt`` came out: none is lost).

        Parameters
        ----------
        error : BaseException or None
            The exception that left the bar's block, if any.
        """
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
        """Raise ``KeyboardInterrupt`` for a SIGINT noted whose exception was dropped (in a finalizer).

        Raises
        ------
        KeyboardInterrupt
            When such an interrupt is pending in this process.
        """
        if self.pending and os.getpid() == self._pid:
            self.pending = False
            raise KeyboardInterrupt


interrupt_guard = InterruptGuard()

__all__ = ["InterruptGuard", "interrupt_guard"]
