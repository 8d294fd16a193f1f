"""Options and commands renamed so that one concept has one name everywhere: an old name gets its new one.

Click refuses an option it does not know with ``No such option`` and, at best, a guess by spelling;
``--jobs`` is not spelt like ``--workers``. A command given an option of :data:`RENAMED_OPTIONS` that
it now takes under the new name is refused in one line naming both, as a renamed config key is
(:data:`repscope.config.RENAMED_KEYS`)::

    repscope: error: repscope morpho measure: unknown option --jobs (renamed --workers)

with exit status 2, as every usage error. An old name on a command that never had the option (no
new name among its options) keeps Click's message.

A command renamed (:data:`RENAMED_COMMANDS`) keeps its old name as a hidden command of its group
(:func:`add_renamed_commands`) that runs nothing and answers, whatever it is given, in one line::

    repscope: error: repscope disentangle classifiers: renamed repscope disentangle train-judges
"""

from __future__ import annotations

import sys
from typing import IO, Any

import typer
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
    "--classifiers": "--judges",
}

# (group, old command) -> new command, for every command renamed since 0.1.0
RENAMED_COMMANDS: dict[tuple[str, str], str] = {
    ("disentangle", "classifiers"): "train-judges",
    ("sprites", "train-classifiers"): "train-judges",
}

# a renamed command takes anything (--help included) and answers with its one line
_ANY_ARGUMENTS = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


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


def add_renamed_commands(app: Any, group: str) -> None:
    """Register on ``app`` (the typer app of ``group``) every old name of :data:`RENAMED_COMMANDS` in that group,
    as a hidden command that runs nothing and is refused with the one line naming its new name.

    Parameters
    ----------
    app : typer.Typer
        The app of the group (``repscope disentangle``'s).
    group : str
        The group's word on the command line, as in :data:`RENAMED_COMMANDS` (``disentangle``).
    """
    for (owner, old), new in RENAMED_COMMANDS.items():
        if owner == group:
            app.command(old, hidden=True, add_help_option=False, context_settings=dict(_ANY_ARGUMENTS))(
                _renamed_command(new)
            )


def _renamed_command(new: str) -> Any:
    """The callback of a command renamed ``new``: a usage error naming both names, whatever the arguments."""

    def renamed(ctx: typer.Context) -> None:
        parent = ctx.parent.command_path if ctx.parent is not None else ""
        raise RenamedOptionError(f"{ctx.command_path}: renamed {' '.join(filter(None, [parent, new]))}", ctx=ctx)

    return renamed


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


__all__ = [
    "RENAMED_COMMANDS",
    "RENAMED_OPTIONS",
    "RenamedOptionError",
    "RenamedOptionsGroup",
    "add_renamed_commands",
    "renamed_option_message",
]
