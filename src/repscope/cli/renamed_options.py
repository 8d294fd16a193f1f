"""Options renamed so that one concept has one name in every command: an old name gets its new one.

Click refuses an option it does not know with ``No such option`` and, at best, a guess by spelling;
``--jobs`` is not spelt like ``--workers``. A command given an option of :data:`RENAMED_OPTIONS` that
it now takes under the new name is refused in one line naming both, as a renamed config key is
(:data:`repscope.config.RENAMED_KEYS`)::

    repscope: error: repscope morpho measure: unknown option --jobs (renamed --workers)

with exit status 2, as every usage error. An old name on a command that never had the option (no
new name among its options) keeps Click's message.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from typer.core import TyperGroup

try:  # typer parses with its own copy of click from 0.2x on
    from typer._click import exceptions as click_exceptions
    from typer._click.utils import echo
except ImportError:  # an older typer parses with click itself
    from click import exceptions as click_exceptions
    from click.utils import echo

# old name -> new name, for every option renamed since 0.1.0
RENAMED_OPTIONS: dict[str, str] = {
    "--jobs": "--workers",
    "-j": "--workers",
    "--max-epochs": "--epochs",
    "--size": "--train-size",
    "--max-train": "--train-size",
    "--max-test": "--test-size",
}


class RenamedOptionError(click_exceptions.UsageError):
    """An option given under its former name; shown as the one ``repscope: error:`` line of the CLI."""

    def show(self, file: IO[Any] | None = None) -> None:
        echo(f"repscope: error: {self.format_message()}", file=file if file is not None else sys.stderr)


def renamed_option_message(error: click_exceptions.NoSuchOption) -> str | None:
    """The line for an unknown option that is a renamed one of the command, else None.

    Parameters
    ----------
    error : NoSuchOption
        Click's refusal (typer's copy of click's); its context is the command that was given the option.

    Returns
    -------
    str or None
        ``repscope morpho measure: unknown option --jobs (renamed --workers)`` when the option is in
        :data:`RENAMED_OPTIONS` and the command takes the new name; None otherwise.
    """
    new = RENAMED_OPTIONS.get(error.option_name)
    context = error.ctx
    if new is None or context is None:
        return None
    if not any(new in getattr(param, "opts", ()) for param in context.command.params):
        return None
    return f"{context.command_path}: unknown option {error.option_name} (renamed {new})"


class RenamedOptionsGroup(TyperGroup):
    """The root group of the ``repscope`` app: a subcommand's unknown option is looked up among the
    renamed ones before Click's message is shown (the subcommands parse their options inside this
    group's ``invoke``)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except click_exceptions.NoSuchOption as error:
            message = renamed_option_message(error)
            if message is None:
                raise
            raise RenamedOptionError(message, ctx=error.ctx) from None


__all__ = ["RENAMED_OPTIONS", "RenamedOptionError", "RenamedOptionsGroup", "renamed_option_message"]
