"""The ``repscope`` command: ``repscope <area> <verb>``.

Each area lives in its own module with a ``typer.Typer`` named ``app``; heavy imports happen
inside the commands so that ``repscope --help`` stays fast. A :class:`RepscopeError` raised by
any command is printed as one line on stderr and the process exits with status 1.
"""

from __future__ import annotations

import sys

import typer

from repscope.errors import RepscopeError

app = typer.Typer(
    name="repscope",
    help="Quantitative assessment of learned representations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _register_areas() -> None:
    from repscope.cli import data as data_cli
    from repscope.cli import demo as demo_cli
    from repscope.cli import morpho as morpho_cli
    from repscope.cli import sprites as sprites_cli
    from repscope.cli import train as train_cli

    app.add_typer(data_cli.app, name="data", help="Data sources: inspect, download.")
    app.add_typer(morpho_cli.app, name="morpho", help="Morpho-MNIST: measure, perturb, build datasets.")
    app.add_typer(sprites_cli.app, name="sprites",
                  help="dSprites and CdSprites+: generate, show, convert (h5), classify, evaluate coherency.")
    app.command(name="train", help=train_cli.train_command.__doc__)(train_cli.train_command)
    app.command(name="demo", help=demo_cli.demo.__doc__)(demo_cli.demo)


_register_areas()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script."""
    try:
        app(args=argv, prog_name="repscope")
    except RepscopeError as exc:
        message = " ".join(str(exc).split())  # one line, whatever the message holds
        print(f"repscope: error: {message}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        print("repscope: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
