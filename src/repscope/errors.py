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


class ChecksumError(RepscopeError):
    """A downloaded or stored file does not match its expected checksum."""
