"""The words of progress: ``measuring 5000 digits: 1200/5000 (24%), 3.1 s elapsed, ~10 s left``.

Pure functions of counts and seconds, shared by the progress lines of :mod:`repscope.progress` and the
line a bar on a terminal leaves when it is interrupted.
"""

from __future__ import annotations


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
    """The text of one progress line (see :mod:`repscope.progress` for the format).

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


__all__ = ["format_seconds", "progress_line", "stopped_line"]
