"""``repscope data``: data sources (placeholder until the data verbs land)."""

import typer

app = typer.Typer(no_args_is_help=True)
