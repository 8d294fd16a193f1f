"""The ``--seed`` options of every command, checked by the one seed rule.

Each ``--seed`` (and ``--texture-seed``) option takes ``callback=check_seed_option``, so a seed outside
``[0, 2**32 - 1]`` is refused in one line before the command starts, with the message every config
``seed`` key gives (:func:`repscope.validation.check_seed`). This module imports nothing heavy: the CLI
starts without numpy.
"""

from __future__ import annotations

from typing import Any


def check_seed_option(ctx: Any, param: Any, value: Any) -> Any:
    """Click callback of a seed option: ``value`` checked by :func:`repscope.validation.check_seed`.

    Parameters
    ----------
    ctx : click.Context
        Unused (click passes it).
    param : click.Parameter
        The option; its longest flag (``--seed``) names it in the message.
    value : int or None
        The parsed value (None when the option has no default and was not given).

    Returns
    -------
    int or None
        ``value`` unchanged.

    Raises
    ------
    repscope.errors.InvalidArgumentError
        ``--seed: expected an integer in [0, 4294967295], got -1`` (the CLI prints it in one line, exit 1).
    """
    if value is None:
        return value
    from repscope.validation import check_seed  # noqa: PLC0415 -- numpy only once a command runs

    flags = [opt for opt in getattr(param, "opts", []) if opt.startswith("--")]
    return check_seed(value, max(flags, key=len) if flags else str(param.name))


__all__ = ["check_seed_option"]
