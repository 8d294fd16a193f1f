"""Errors raised on bad input. The CLI prints them in one line and exits non-zero."""

from __future__ import annotations


class RepscopeError(Exception):
    """Base class of every error a user can act on (bad file, argument, key or value)."""


class DataFormatError(RepscopeError, ValueError):
    """A data file is corrupt, truncated or of the wrong format."""


class SourceNotFoundError(RepscopeError, FileNotFoundError):
    """A named data source is not available on this machine; the message says how to get it."""


class InvalidArgumentError(RepscopeError, ValueError):
    """An argument has a wrong value, shape or dtype; the message names the argument."""


class OutputExistsError(RepscopeError, FileExistsError):
    """Writing would overwrite existing results."""


class OutputOntoInputError(OutputExistsError):
    """An output would be written onto the command's own input: it is the input, holds it, or lies inside it."""


class ChecksumError(RepscopeError):
    """A downloaded or stored file does not match its expected checksum."""


# the most characters of a user's value an error message repeats: a caption line or a name can be megabytes
# long on one line, and the one-line error must stay readable
ECHO_LIMIT = 80


def shown(value: object, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters.

    Every error that repeats a user's value (a caption line, a model name, a config value, a record
    field) shows it through this function, so that a megabyte-long value gives a one-line message.

    Parameters
    ----------
    value : object
        The value as the user gave it.
    limit : int, default=80
        Most characters of ``value`` shown.

    Returns
    -------
    str
        ``repr(value)`` when it is at most ``limit`` characters long; otherwise its first ``limit``
        characters, an ellipsis and the value's length: ``'aaaa'… (10000000 characters)`` for a string,
        ``[0, 1, 2, ...] (200000 items)`` for a list, tuple, set or mapping (at most 12 items shown).
    """
    import reprlib  # noqa: PLC0415

    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"
    # reprlib never builds the whole repr of a long or deeply nested container
    brief = reprlib.Repr()
    brief.maxlevel, brief.maxstring, brief.maxother = 3, limit, limit
    brief.maxlist = brief.maxtuple = 12
    brief.maxdict = brief.maxset = 8
    text = brief.repr(value)
    if len(text) <= limit and "..." not in text:
        return text
    unit = "bytes" if isinstance(value, bytes | bytearray) else "items"
    size = f" ({len(value)} {unit})" if hasattr(value, "__len__") else ""
    return (f"{text[:limit]}…" if len(text) > limit else text) + size


# a word of an error message longer than this is a user's value no message cut (a path has at most 4,096
# characters, and hardly ever a thousand)
LONGEST_WORD = 1024


def one_line(message: str) -> str:
    """``message`` as the one line the CLI prints after ``repscope: error:``.

    Runs of whitespace (line breaks included) become one space, and a word longer than
    :data:`LONGEST_WORD` characters, a value some message repeats whole, is cut as :func:`shown` cuts a
    string: its first :data:`ECHO_LIMIT` characters, an ellipsis and its length.

    Parameters
    ----------
    message : str
        The error's text.

    Returns
    -------
    str
        One line.
    """
    words = message.split()
    return " ".join(
        word if len(word) <= LONGEST_WORD else f"{word[:ECHO_LIMIT]}… ({len(word)} characters)" for word in words
    )
